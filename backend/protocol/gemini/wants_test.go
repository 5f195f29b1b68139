package gemini

import (
	"testing"

	"freelane/backend/llm"
)

// Thinking is something a request wants, never needs.
func TestThinkingIsAWant(t *testing.T) {
	for _, c := range []struct {
		name, config string
		wants        llm.Caps
	}{
		{"none", `{}`, 0},
		{"budget", `{"thinkingConfig":{"thinkingBudget":1024}}`, llm.CapReasoning},
		{"dynamic", `{"thinkingConfig":{"thinkingBudget":-1}}`, llm.CapReasoning},
		{"off", `{"thinkingConfig":{"thinkingBudget":0}}`, 0},
		{"level", `{"thinking_config":{"thinking_level":"high"}}`, llm.CapReasoning},
		{"thoughts", `{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":0}}`, llm.CapReasoning},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"generationConfig":` + c.config + `,"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
			r, err := ParseRequestFor(llm.Chat, "gemini-2.5-pro", false, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Wants != c.wants || r.Needs.Has(llm.CapReasoning) {
				t.Errorf("wants %b needs %b, want wants %b", r.Wants, r.Needs, c.wants)
			}
		})
	}
}
