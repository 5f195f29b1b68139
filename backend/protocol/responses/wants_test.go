package responses

import (
	"testing"

	"freelane/backend/llm"
)

// A reasoning effort is something a request wants, never needs, and a
// continued conversation keeps what its request wants.
func TestReasoningIsAWant(t *testing.T) {
	for _, c := range []struct {
		name, reasoning string
		wants           llm.Caps
	}{
		{"none", `null`, 0},
		{"effort", `{"effort":"medium","summary":"auto"}`, llm.CapReasoning},
		{"effort none", `{"effort":"none"}`, 0},
		{"summary only", `{"summary":"auto"}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Codec.ParseRequest(llm.Chat, []byte(`{"model":"m","reasoning":`+c.reasoning+`,"input":"hi"}`))
			if err != nil {
				t.Fatal(err)
			}
			if r.Wants != c.wants || r.Needs.Has(llm.CapReasoning) {
				t.Errorf("wants %b needs %b, want wants %b", r.Wants, r.Needs, c.wants)
			}
			r.Task, r.Gear = "think", "manual"
			out, err := WithHistory(r, []byte(`[{"type":"message","role":"user","content":"before"}]`))
			if err != nil {
				t.Fatal(err)
			}
			if out.Wants != c.wants || out.Task != "think" || out.Gear != "manual" {
				t.Errorf("continued: wants %b task %q gear %q", out.Wants, out.Task, out.Gear)
			}
		})
	}
}
