package llm

import (
	"strings"
	"testing"
)

// TestCappedBoundsTheDecision: a hostile model name and a long reason are
// cut in the trace that is kept, and the router's own decision, shared
// with the request still being answered, is left as it was.
func TestCappedBoundsTheDecision(t *testing.T) {
	d := &Decision{Requested: strings.Repeat("m", 5000)}
	for range MaxDecisionCandidates + 5 {
		d.Candidates = append(d.Candidates, Candidate{Backend: "p/m", Reason: strings.Repeat("r", 2000)})
	}
	got := Trace{Decision: d}.Capped().Decision
	if len(got.Requested) > MaxTraceModel+4 || len(got.Candidates) != MaxDecisionCandidates || got.More != 5 ||
		len(got.Candidates[0].Reason) > MaxTraceReason+4 {
		t.Fatalf("capped decision: requested %d bytes, %d candidates (+%d), reason %d bytes",
			len(got.Requested), len(got.Candidates), got.More, len(got.Candidates[0].Reason))
	}
	if len(d.Requested) != 5000 || len(d.Candidates) != MaxDecisionCandidates+5 || len(d.Candidates[0].Reason) != 2000 {
		t.Fatal("Capped changed the decision it was given")
	}
	small := &Decision{Requested: "auto", Candidates: []Candidate{{Backend: "p/m", Reason: "listed order"}}}
	if got := (Trace{Decision: small}).Capped().Decision; got != small {
		t.Fatal("a small decision was copied")
	}
}
