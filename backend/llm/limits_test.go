package llm

import (
	"errors"
	"strings"
	"testing"
)

func TestModelNameLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		model string
		ok    bool
	}{
		{"at the limit", strings.Repeat("a", MaxModelName), true},
		{"one over", strings.Repeat("a", MaxModelName+1), false},
		{"escaped within the limit", strings.Repeat(`\u0061`, MaxModelName), true},
		{"escaped over the limit", strings.Repeat(`\u0061`, MaxModelName+1), false},
		{"huge", strings.Repeat("a", 1<<20), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRequest(Chat, []byte(`{"model":"`+c.model+`","messages":[{"role":"user","content":"hi"}]}`))
			var bad *BadRequestError
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

func TestTraceCapped(t *testing.T) {
	in := Trace{
		Model:    strings.Repeat("m", 10*MaxTraceModel),
		Error:    strings.Repeat("é", MaxTraceError),
		Attempts: []Attempt{{Reason: "short"}, {Reason: strings.Repeat("r", 10*MaxTraceReason)}},
	}
	out := in.Capped()
	// Each field keeps at most its bound plus the three-byte ellipsis.
	if len(out.Model) > MaxTraceModel+3 || len(out.Error) > MaxTraceError+3 || len(out.Attempts[1].Reason) > MaxTraceReason+3 {
		t.Fatalf("not capped: model %d, error %d, reason %d bytes", len(out.Model), len(out.Error), len(out.Attempts[1].Reason))
	}
	if out.Attempts[0].Reason != "short" || len(in.Attempts[1].Reason) != 10*MaxTraceReason {
		t.Fatal("Capped changed a short reason or the caller's attempts")
	}
}
