package gemini

import (
	"strings"
	"testing"
)

// Gemini's calls come without ids; two answers that each make a call must
// still give the calls different ids, or a conversation carried on with
// an Anthropic backend repeats a tool_use id, which Anthropic refuses.
func TestAnswerCallIDsDiffer(t *testing.T) {
	saved := answerCallPrefix
	defer func() { answerCallPrefix = saved }()
	answerCallPrefix = randomCallPrefix

	body := []byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}},{"functionCall":{"name":"g","args":{}}}]},"finishReason":"STOP"}]}`)
	seen := map[string]bool{}
	for range 3 {
		a := mustDecode(t, body)
		for _, p := range a.Parts {
			id := p.ToolCall.ID
			if seen[id] || !strings.HasPrefix(id, "call_") {
				t.Fatalf("call id %q repeats or lacks the prefix (seen %v)", id, seen)
			}
			seen[id] = true
		}
	}
	// A stream's calls too, across streams, and within one.
	for range 2 {
		d := Codec.NewStreamDecoder()
		deltas, _, err := d.Decode(nil, nil, body)
		if err != nil {
			t.Fatal(err)
		}
		for _, dl := range deltas {
			if dl.ID == "" {
				continue
			}
			if seen[dl.ID] {
				t.Fatalf("stream call id %q repeats", dl.ID)
			}
			seen[dl.ID] = true
		}
	}
	if len(seen) != 10 {
		t.Errorf("%d distinct ids, want 10", len(seen))
	}
	// A call that has an id keeps it.
	a := mustDecode(t, []byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"own-1","name":"f","args":{}}}]}}]}`))
	if a.Parts[0].ToolCall.ID != "own-1" {
		t.Errorf("id %q, want own-1", a.Parts[0].ToolCall.ID)
	}
}
