package responses

import (
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

func TestNewResponseIDIsRandomAndShort(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewResponseID()
		hexPart, ok := strings.CutPrefix(id, "resp_")
		if b, err := hex.DecodeString(hexPart); !ok || err != nil || len(b) != 16 || len(id) > MaxIDLength {
			t.Fatalf("id %q", id)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
	}
}

// decodedWithout decodes a JSON object and drops the members named, so two
// bodies can be compared apart from what was meant to change.
func decodedWithout(t *testing.T, b []byte, path ...string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	cur := m
	for i, p := range path {
		if i == len(path)-1 {
			delete(cur, p)
			break
		}
		next, _ := cur[p].(map[string]any)
		if next == nil {
			break
		}
		cur = next
	}
	return m
}

func TestSetIDReplacesOnlyTheID(t *testing.T) {
	const id = "resp_0123456789abcdef0123456789abcdef"
	for name, c := range map[string]struct{ in, want string }{
		"upstream id": {`{"id":"resp_fixed","object":"response","output":[{"id":"msg_1","type":"message"}]}`,
			`{"id":"` + id + `","object":"response","output":[{"id":"msg_1","type":"message"}]}`},
		"spaces kept": {"{ \"object\" : \"response\" ,\n \"id\" : \"x\" }", "{ \"object\" : \"response\" ,\n \"id\" : \"" + id + "\" }"},
		// JSON decoders take the last of repeated members; both go.
		"repeated":     {`{"id":"a","id":"resp_fixed"}`, `{"id":"` + id + `","id":"` + id + `"}`},
		"escaped key":  {`{"\u0069d":"resp_fixed","object":"response"}`, `{"\u0069d":"` + id + `","object":"response"}`},
		"not a string": {`{"id":null,"object":"response"}`, `{"id":"` + id + `","object":"response"}`},
		"missing":      {`{"object":"response"}`, `{"id":"` + id + `","object":"response"}`},
		"empty":        {`{}`, `{"id":"` + id + `"}`},
		"an array":     {`[{"id":"x"}]`, `[{"id":"x"}]`},
		"not JSON":     {`{"id":"x",`, `{"id":"x",`},
	} {
		t.Run(name, func(t *testing.T) {
			in := []byte(c.in)
			got := SetID(in, id)
			if string(got) != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if string(in) != c.in {
				t.Fatalf("the input was changed: %s", in)
			}
		})
	}
	same := []byte(`{"id":"` + id + `","object":"response"}`)
	if got := SetID(same, id); &got[0] != &same[0] {
		t.Error("a body that has the id already was copied")
	}
}

// Events as OpenAI's servers write them, with the upstream's id: those that
// carry the response get FreeLane's id and nothing else changes; the others
// are passed on as the very same bytes.
func TestSetEventIDRewritesTheEventsThatCarryTheResponse(t *testing.T) {
	const id = "resp_0123456789abcdef0123456789abcdef"
	carrying := map[string]string{
		"created":     `{"type":"response.created","sequence_number":0,"response":{"id":"resp_fixed","object":"response","created_at":1,"status":"in_progress","model":"gpt","output":[]}}`,
		"in_progress": `{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_fixed","object":"response","status":"in_progress","output":[]}}`,
		"completed":   `{"type":"response.completed","sequence_number":9,"response":{"id":"resp_fixed","object":"response","status":"completed","output":[{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"the \"response\" was"}]}]}}`,
		"failed":      `{"type":"response.failed","sequence_number":3,"response":{"id":"resp_fixed","status":"failed","error":{"code":"x","message":"y"}}}`,
		"incomplete":  `{"type":"response.incomplete","sequence_number":3,"response":{"status":"incomplete","id":"resp_fixed"}}`,
		"queued":      `{"response":{"id":"resp_fixed","status":"queued"},"type":"response.queued","sequence_number":0}`,
		"escaped key": `{"type":"response.created","\u0072esponse":{"id":"resp_fixed"}}`,
	}
	for name, ev := range carrying {
		t.Run(name, func(t *testing.T) {
			got := SetEventID(Codec.EventName([]byte(ev)), []byte(ev), id)
			var r struct {
				Response struct {
					ID string `json:"id"`
				} `json:"response"`
			}
			if err := json.Unmarshal(got, &r); err != nil || r.Response.ID != id {
				t.Fatalf("%v: %s", err, got)
			}
			if strings.Contains(string(got), "resp_fixed") {
				t.Fatalf("the upstream's id is left: %s", got)
			}
			if !reflect.DeepEqual(decodedWithout(t, got, "response", "id"), decodedWithout(t, []byte(ev), "response", "id")) {
				t.Fatalf("more than the id changed:\n%s\n%s", ev, got)
			}
		})
	}
	t.Run("response_id", func(t *testing.T) {
		ev := []byte(`{"type":"response.custom","response_id":"resp_fixed","delta":"x"}`)
		got := SetEventID(Codec.EventName(ev), ev, id)
		if string(got) != `{"type":"response.custom","response_id":"`+id+`","delta":"x"}` {
			t.Fatalf("%s", got)
		}
	})
	for name, ev := range map[string]string{
		"delta":      `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello"}`,
		"item added": `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`,
		// A "response" deeper in the event is not the event's response.
		"nested":   `{"type":"response.output_item.done","item":{"response":{"id":"resp_fixed"}}}`,
		"not JSON": `{"type":"response.created","response":{"id":"resp_fixed"`,
	} {
		t.Run(name, func(t *testing.T) {
			in := []byte(ev)
			if got := SetEventID(Codec.EventName(in), in, id); &got[0] != &in[0] || string(got) != ev {
				t.Fatalf("changed: %s", got)
			}
		})
	}
}

// The ids a stream's own encoder writes are replaced in every event that
// names the response, and a decoder reading the stream back sees the
// answer unchanged.
func TestSetEventIDOnFreeLanesOwnStream(t *testing.T) {
	id := NewResponseID()
	for _, ev := range benchEvents(t) {
		got := SetEventID(Codec.EventName(ev), ev, id)
		var r struct {
			Type     string `json:"type"`
			Response *struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if err := json.Unmarshal(got, &r); err != nil {
			t.Fatal(err)
		}
		if r.Response != nil && r.Response.ID != id {
			t.Errorf("%s keeps id %s", r.Type, r.Response.ID)
		}
		if r.Response == nil && &got[0] != &ev[0] {
			t.Errorf("%s was copied", r.Type)
		}
	}
}

// benchEvents is a short stream as FreeLane's encoder writes it: created,
// in_progress, the item and part events, ten text deltas, and completed.
func benchEvents(tb testing.TB) [][]byte {
	tb.Helper()
	enc := Codec.NewStreamEncoder(protocol.ResponseOptions{Model: "m", Created: 1})
	var evs []llm.Event
	for range 10 {
		evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaText, Text: "a token "})
	}
	evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaFinish, Finish: llm.FinishStop})
	evs = enc.End(evs)
	out := make([][]byte, len(evs))
	for i, ev := range evs {
		out[i] = ev.Data
	}
	return out
}

// BenchmarkSetEventID is the id rewrite the relay does on each event of a
// Responses stream: a text delta (the bulk of any stream, passed on
// untouched), the response.created event (rewritten), and a whole stream
// of 18 events. Each includes reading the event's name, which the relay
// does anyway.
func BenchmarkSetEventID(b *testing.B) {
	id := NewResponseID()
	evs := benchEvents(b)
	var delta, created []byte
	for _, ev := range evs {
		switch Codec.EventName(ev) {
		case evTextDelta:
			delta = ev
		case evCreated:
			created = ev
		}
	}
	// What reading the name costs alone, which the relay paid before
	// there was a rewrite: the rewrite's own share is the difference.
	b.Run("delta name only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Codec.EventName(delta)
		}
	})
	b.Run("delta", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = SetEventID(Codec.EventName(delta), delta, id)
		}
	})
	b.Run("created", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = SetEventID(Codec.EventName(created), created, id)
		}
	})
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, ev := range evs {
				_ = SetEventID(Codec.EventName(ev), ev, id)
			}
		}
		b.ReportMetric(float64(len(evs)), "events/op")
	})
}

// BenchmarkSetID rewrites the id of a whole Response object.
func BenchmarkSetID(b *testing.B) {
	a := &llm.Answer{Parts: []llm.Part{{Kind: llm.PartText, Text: strings.Repeat("a token ", 500)}}}
	body, err := Codec.EncodeResponse(a, protocol.ResponseOptions{Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	id := NewResponseID()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_ = SetID(body, id)
	}
}
