package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"freelane/backend/dialects"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/redact"
	"freelane/backend/store"
)

// capture is the host of a dialect's own route that keeps the stream
// filter the route asks to stream with, instead of routing.
type capture struct {
	*host
	filter protocol.StreamFilter
}

func (c *capture) Stream(_ http.ResponseWriter, _ *http.Request, _ *llm.Request, f protocol.StreamFilter) {
	c.filter = f
}

// streamFilter serves body on the route of dialect name whose pattern is
// pattern, as the server s would, and returns the filter its stream would
// pass through.
func streamFilter(t testing.TB, s *Server, name llm.Dialect, pattern, body string) (protocol.Dialect, protocol.StreamFilter) {
	t.Helper()
	d, ok := s.o.Dialects.Lookup(name)
	if !ok {
		t.Fatalf("no dialect %s", name)
	}
	for _, rt := range d.Inbound.Routes {
		if rt.Pattern == pattern && rt.Serve != nil {
			c := &capture{host: &host{s: s, d: d}}
			rt.Serve(c, httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
			if c.filter == nil {
				t.Fatalf("%s did not stream", pattern)
			}
			return d, c.filter
		}
	}
	t.Fatalf("%s has no route %s that serves itself", name, pattern)
	return protocol.Dialect{}, nil
}

// An upstream that speaks the Responses API is relayed event by event; the
// stream gives each event that carries the response FreeLane's id, leaves
// the others byte for byte, and stores the response under that id, for its
// caller, with the configured key redacted.
func TestResponsesRelayRewritesEvents(t *testing.T) {
	const key = "sk-upstream-key-0123456789abcdef"
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "freelane.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	quiet := slog.New(slog.DiscardHandler)
	rs := store.NewResponseStore(db, store.ResponseOptions{Logger: quiet})
	s := New(Options{Answers: rs, Redactor: redact.New(redact.Key(key)), Logger: quiet, Dialects: dialects.Registry()})
	d, f := streamFilter(t, s, llm.DialectResponses, "POST /v1/responses",
		`{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":"hi"}]}`)

	// OpenAI's own events, as an upstream of this dialect sends them;
	// the second puts its type last.
	upstream := []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_fixed","object":"response","created_at":1,"status":"in_progress","model":"gpt-x","output":[]}}`,
		`{"sequence_number":1,"response":{"id":"resp_fixed","object":"response","status":"in_progress","model":"gpt-x","output":[]},"type":"response.in_progress"}`,
		`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"the key is ` + key + `"}`,
		`{"type":"response.completed","sequence_number":4,"response":{"id":"resp_fixed","object":"response","status":"completed","model":"gpt-x","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"the key is ` + key + `"}]}]}}`,
	}
	w := httptest.NewRecorder()
	sink := newSink(w, d, f, nil)
	for i, ev := range upstream {
		if err := sink.Send([]byte(ev), i == len(upstream)-1); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	sc := bufio.NewScanner(bytes.NewReader(w.Body.Bytes()))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			got = append(got, d)
		}
	}
	if len(got) != len(upstream) {
		t.Fatalf("%d events relayed of %d", len(got), len(upstream))
	}
	var first struct {
		Response struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	_ = json.Unmarshal([]byte(got[0]), &first)
	id := first.Response.ID
	if !strings.HasPrefix(id, "resp_") || id == "resp_fixed" {
		t.Fatalf("the first event has id %q, not FreeLane's", id)
	}
	for i, ev := range got {
		if want := strings.ReplaceAll(upstream[i], "resp_fixed", id); ev != want {
			t.Errorf("event %d:\n got  %s\n want %s", i, ev, want)
		}
	}

	owner := s.callerIdentity(httptest.NewRequest(http.MethodPost, "/", nil))
	st, ok, err := rs.Get(context.Background(), id, owner)
	if err != nil || !ok {
		t.Fatalf("not stored under FreeLane's id: %v %v", ok, err)
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(st.Response, &obj); obj.ID != id {
		t.Errorf("stored object has id %q", obj.ID)
	}
	for what, b := range map[string][]byte{"response": st.Response, "items": st.Items} {
		if bytes.Contains(b, []byte(key)) || !bytes.Contains(b, []byte(redact.KeyMarker)) {
			t.Errorf("stored %s: %s", what, b)
		}
	}
	if _, ok, _ := rs.Get(context.Background(), "resp_fixed", owner); ok {
		t.Error("found under the upstream's id")
	}
	if _, ok, _ := rs.Get(context.Background(), id, identityAnonymous); ok {
		t.Error("found by another caller")
	}

	// A stream broken after it started ends as the Responses API ends
	// one, continuing the stream's sequence numbers, not with the
	// codec's lone event.
	sink.Fail(&llm.Error{Message: "cut"})
	tail := w.Body.String()
	if !strings.Contains(tail, "event: response.failed\ndata: ") || !strings.Contains(tail, `"sequence_number":5`) ||
		!strings.Contains(tail, "event: error\ndata: ") || !strings.Contains(tail, `"sequence_number":6`) {
		t.Errorf("the broken stream ends with:\n%s", tail[strings.LastIndex(tail, "response.completed"):])
	}
}

// A dialect whose clients take a stream's error only as the bare object
// gets it so, and the others as an event.
func TestStreamErrorFraming(t *testing.T) {
	reg := dialects.Registry()
	for _, c := range []struct {
		name llm.Dialect
		bare bool
	}{{llm.DialectGemini, true}, {llm.DialectOpenAI, false}, {llm.DialectAnthropic, false}} {
		d, _ := reg.Lookup(c.name)
		w := httptest.NewRecorder()
		newSink(w, d, nil, nil).Fail(&llm.Error{Message: "cut"})
		body := w.Body.String()
		if bare := !strings.HasPrefix(body, "data: ") && !strings.HasPrefix(body, "event: "); bare != c.bare || !strings.Contains(body, "cut") {
			t.Errorf("%s: %q", c.name, body)
		}
	}
}

// discardWriter is a ResponseWriter that keeps nothing, so a benchmark
// measures the sink and not a growing buffer.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// WriteString is there because net/http's own writer has it.
func (d *discardWriter) WriteString(s string) (int, error) { return len(s), nil }
func (d *discardWriter) WriteHeader(int)                   {}
func (d *discardWriter) Flush()                            {}

// BenchmarkResponsesSinkSend is the relay's last step for a Responses
// client, per event: the event's name, the id rewrite and the SSE framing,
// over a stream of 200 text deltas as the encoder writes it, not stored
// (as Codex asks).
func BenchmarkResponsesSinkSend(b *testing.B) {
	s := New(Options{Logger: slog.New(slog.DiscardHandler), Dialects: dialects.Registry()})
	d, _ := s.o.Dialects.Lookup(llm.DialectResponses)
	enc := d.Codec.NewStreamEncoder(protocol.ResponseOptions{Model: "m", Created: 1})
	var evs []llm.Event
	for range 200 {
		evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaText, Text: "a token "})
	}
	evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaFinish, Finish: llm.FinishStop})
	evs = enc.End(evs)
	w := &discardWriter{h: http.Header{}}
	const req = `{"model":"m","stream":true,"store":false,"input":"hi"}`
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		_, f := streamFilter(b, s, llm.DialectResponses, "POST /v1/responses", req)
		b.StartTimer()
		sink := newSink(w, d, f, nil)
		for i, ev := range evs {
			if err := sink.Send(ev.Data, i == len(evs)-1); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}

// BenchmarkSinkSend is the same last step for a client whose events go
// out as the upstream sent them (OpenAI to OpenAI): the name and the SSE
// framing only.
func BenchmarkSinkSend(b *testing.B) {
	d, _ := dialects.Registry().Lookup(llm.DialectOpenAI)
	enc := d.Codec.NewStreamEncoder(protocol.ResponseOptions{Model: "m", Created: 1})
	var evs []llm.Event
	for range 200 {
		evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaText, Text: "a token "})
	}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		sink := newSink(w, d, nil, nil)
		for i, ev := range evs {
			if err := sink.Send(ev.Data, i == len(evs)-1); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}
