package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"freelane/backend/internal/goldenfile"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// indent formats JSON for a golden file.
func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return append(buf.Bytes(), '\n')
}

func pretty(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func readConversation(t *testing.T, name string) *llm.Conversation {
	t.Helper()
	var c llm.Conversation
	if err := json.Unmarshal(readFile(t, name), &c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &c
}

// sseEvents splits a stream file into the data of its events.
func sseEvents(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			out = append(out, append([]byte(nil), data...))
		}
	}
	return out
}

func writeSSE(events []llm.Event) []byte {
	var b bytes.Buffer
	for _, e := range events {
		b.WriteString("data: ")
		b.Write(e.Data)
		b.WriteString("\n\n")
	}
	return b.Bytes()
}

func TestGoldenRequests(t *testing.T) {
	for _, name := range []string{"request_multiturn", "request_reasoning"} {
		t.Run(name, func(t *testing.T) {
			c := readConversation(t, name+".conv.json")
			body, err := Codec.EncodeRequest(c, "gemini-2.5-flash", llm.Edits{})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".json", indent(t, body))
			checkGenaiRequest(t, body)
		})
	}
}

func TestGoldenClientRequest(t *testing.T) {
	body := readFile(t, "client_request.json")
	r, err := ParseRequestFor(llm.Chat, "gemini-2.5-flash", true, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "gemini-2.5-flash" || !r.Stream || r.MaxTokens != 2048 || r.Dialect != llm.DialectGemini ||
		!r.Needs.Has(llm.CapTools|llm.CapVision|llm.CapJSON) {
		t.Errorf("routing fields: model %q stream %v max %d dialect %s needs %b", r.Model, r.Stream, r.MaxTokens, r.Dialect, r.Needs)
	}
	if got := r.Body("ignored", llm.Edits{AddUsage: true}); !bytes.Equal(got, body) {
		t.Error("Rewrite without edits changed the body")
	}
	c, err := r.Conversation()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "client_request.conv.json", pretty(t, c))
	// The conversation goes back to the API as the same request, less what
	// the neutral model has no place for (safety settings, Google Search).
	again, err := Codec.EncodeRequest(c, "gemini-2.5-flash", llm.Edits{})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "client_request.reencoded.json", indent(t, again))
	checkGenaiRequest(t, again)
}

func TestGoldenAnswer(t *testing.T) {
	body := readFile(t, "answer_text_call.json")
	a, err := Codec.DecodeResponse(body)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "answer_text_call.answer.json", pretty(t, a))
	u, err := Codec.CheckAnswer(llm.Chat, body)
	if err != nil || u != (llm.Usage{PromptTokens: 112, CompletionTokens: 107, TotalTokens: 219}) {
		t.Errorf("CheckAnswer = %+v, %v", u, err)
	}
	out, err := Codec.EncodeResponse(a, protocol.ResponseOptions{ID: "resp-1", Model: "gemini-2.5-flash"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "answer_text_call.encoded.json", indent(t, out))
	checkGenaiResponse(t, out)
	back, err := Codec.DecodeResponse(out)
	if err != nil {
		t.Fatal(err)
	}
	back.ID, back.Model = a.ID, a.Model
	// The thoughts' share of the completion is not told apart on the way
	// out, so only the totals come back.
	if !equalJSON(t, back.Parts, a.Parts) || back.Finish != a.Finish || *back.Usage != *a.Usage {
		t.Errorf("round trip changed the answer:\n%s\nwant\n%s", pretty(t, back), pretty(t, a))
	}
}

func TestGoldenBlocked(t *testing.T) {
	body := readFile(t, "answer_blocked.json")
	_, err := Codec.DecodeResponse(body)
	_, checkErr := Codec.CheckAnswer(llm.Chat, body)
	var e *llm.Error
	for _, err := range []error{err, checkErr} {
		if !asError(err, &e) || e.Class != llm.Caller || e.Class.FailsOver() || e.Status != http.StatusBadRequest ||
			e.Code != "PROHIBITED_CONTENT" || e.Dialect != llm.DialectGemini {
			t.Fatalf("got %#v, want a caller error", err)
		}
	}
	golden(t, "answer_blocked.error.json", pretty(t, map[string]any{
		"class": e.Class, "status": e.Status, "code": e.Code, "message": e.Message, "body": json.RawMessage(e.Body),
	}))
	info, ok := Codec.DecodeError(e.Body)
	if !ok || info.Status != 400 || info.Type != "INVALID_ARGUMENT" || info.Message != e.Message {
		t.Errorf("the error body does not read back: %+v %v", info, ok)
	}
}

func TestGoldenError(t *testing.T) {
	body := readFile(t, "error_resource_exhausted.json")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := http.Header{"Content-Type": {"application/json; charset=UTF-8"}}
	e := llm.ClassifyResponse(http.StatusTooManyRequests, h, body, now, Dialect.Outbound.RateLimits)
	Codec.Classify(e, http.StatusTooManyRequests, h, body, now)
	info, ok := Codec.DecodeError(body)
	if !ok {
		t.Fatal("DecodeError refused the body")
	}
	golden(t, "error_resource_exhausted.classified.json", pretty(t, map[string]any{
		"class": e.Class, "retry_after": e.RetryAfter.String(), "code": e.Code, "dialect": e.Dialect,
		"message": e.Message, "decoded": info,
	}))
	if e.Class != llm.RateLimited || e.RetryAfter != 37*time.Second {
		t.Errorf("class %s retry %s", e.Class, e.RetryAfter)
	}
	golden(t, "error_resource_exhausted.encoded.json", indent(t, Codec.EncodeError(info)))
}

func TestGoldenStream(t *testing.T) {
	events := sseEvents(t, readFile(t, "stream.sse"))
	dec := Codec.NewStreamDecoder()
	var deltas []llm.Delta
	for _, data := range events {
		var end bool
		var err error
		deltas, end, err = dec.Decode(deltas, nil, data)
		if err != nil || end {
			t.Fatalf("Decode: end %v err %v", end, err)
		}
	}
	golden(t, "stream.deltas.json", pretty(t, deltas))

	classify := Codec.NewStreamDecoder()
	var kinds []llm.EventKind
	var last *llm.Usage
	for _, data := range events {
		k, u, err := classify.Classify(nil, data)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, k)
		last = u
	}
	if want := []llm.EventKind{llm.Content, llm.Content, llm.Content, llm.Content}; !equalJSON(t, kinds, want) {
		t.Errorf("Classify kinds %v, want %v", kinds, want)
	}
	if last == nil || *last != (llm.Usage{PromptTokens: 98, CompletionTokens: 83, TotalTokens: 181}) {
		t.Errorf("Classify usage %+v", last)
	}

	enc := Codec.NewStreamEncoder(protocol.ResponseOptions{ID: "resp-1", Model: "gemini-2.5-flash"})
	var out []llm.Event
	for _, d := range deltas {
		out = enc.Encode(out, d)
	}
	out = enc.End(out)
	golden(t, "stream.encoded.sse", writeSSE(out))
	for _, ev := range out {
		checkGenaiResponse(t, ev.Data)
	}
	// Decoding what was encoded gives the deltas again, but for the usage
	// reports the encoder folds into one.
	redec := Codec.NewStreamDecoder()
	var again []llm.Delta
	for _, ev := range out {
		again, _, _ = redec.Decode(again, nil, ev.Data)
	}
	if !equalJSON(t, withoutUsage(again), withoutUsage(deltas)) {
		t.Errorf("stream round trip:\n%s\nwant\n%s", pretty(t, again), pretty(t, deltas))
	}
}

func withoutUsage(ds []llm.Delta) []llm.Delta {
	var out []llm.Delta
	for _, d := range ds {
		if d.Kind != llm.DeltaUsage {
			out = append(out, d)
		}
	}
	return out
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func asError(err error, target **llm.Error) bool {
	e, ok := err.(*llm.Error)
	if ok {
		*target = e
	}
	return ok
}
