package anthropic

import (
	"testing"

	"freelane/backend/llm"
)

// Thinking is something a request wants, never needs: a chain of models
// without reasoning must still serve it.
func TestThinkingIsAWant(t *testing.T) {
	const msgs = `"max_tokens":2048,"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		name, body string
		wants      llm.Caps
	}{
		{"none", `{"model":"m",` + msgs + `}`, 0},
		{"enabled", `{"model":"m","thinking":{"type":"enabled","budget_tokens":1024},` + msgs + `}`, llm.CapReasoning},
		{"adaptive", `{"model":"m","thinking":{"type":"adaptive"},` + msgs + `}`, llm.CapReasoning},
		{"disabled", `{"model":"m","thinking":{"type":"disabled"},` + msgs + `}`, 0},
		{"null", `{"model":"m","thinking":null,` + msgs + `}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Codec.ParseRequest(llm.Chat, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Wants != c.wants || r.Needs.Has(llm.CapReasoning) {
				t.Errorf("wants %b needs %b, want wants %b", r.Wants, r.Needs, c.wants)
			}
		})
	}
}
