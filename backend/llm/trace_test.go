package llm

import (
	"strings"
	"testing"
)

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
