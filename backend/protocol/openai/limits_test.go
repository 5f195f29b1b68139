package openai

import (
	"errors"
	"strings"
	"testing"

	"freelane/backend/llm"
)

func TestModelNameLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		model string
		ok    bool
	}{
		{"at the limit", strings.Repeat("a", llm.MaxModelName), true},
		{"one over", strings.Repeat("a", llm.MaxModelName+1), false},
		{"escaped within the limit", strings.Repeat(`\u0061`, llm.MaxModelName), true},
		{"escaped over the limit", strings.Repeat(`\u0061`, llm.MaxModelName+1), false},
		{"huge", strings.Repeat("a", 1<<20), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRequest(llm.Chat, []byte(`{"model":"`+c.model+`","messages":[{"role":"user","content":"hi"}]}`))
			var bad *llm.BadRequestError
			switch {
			case c.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !c.ok && (!errors.As(err, &bad) || bad.Code != "model_too_long" || bad.Param != "model"):
				t.Fatalf("got %v, want a model_too_long refusal", err)
			case !c.ok && len(bad.Message) > 200:
				t.Fatalf("the refusal echoes the name: %d bytes", len(bad.Message))
			}
		})
	}
}
