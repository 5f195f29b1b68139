package openai

import (
	"testing"

	"freelane/backend/llm"
)

// A reasoning effort is something a request wants, never needs.
func TestReasoningIsAWant(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		name, body string
		wants      llm.Caps
	}{
		{"none", `{"model":"m",` + msgs + `}`, 0},
		{"effort", `{"model":"m","reasoning_effort":"high",` + msgs + `}`, llm.CapReasoning},
		{"effort none", `{"model":"m","reasoning_effort":"none",` + msgs + `}`, 0},
		{"effort null", `{"model":"m","reasoning_effort":null,` + msgs + `}`, 0},
		{"unified effort", `{"model":"m","reasoning":{"effort":"low"},` + msgs + `}`, llm.CapReasoning},
		{"unified budget", `{"model":"m","reasoning":{"max_tokens":2000},` + msgs + `}`, llm.CapReasoning},
		{"unified enabled", `{"model":"m","reasoning":{"enabled":true},` + msgs + `}`, llm.CapReasoning},
		{"unified off", `{"model":"m","reasoning":{"effort":"high","enabled":false},` + msgs + `}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseRequest(llm.Chat, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Wants != c.wants || r.Needs.Has(llm.CapReasoning) {
				t.Errorf("wants %b needs %b, want wants %b", r.Wants, r.Needs, c.wants)
			}
		})
	}
}
