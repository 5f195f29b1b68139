package router

import (
	"fmt"
	"strconv"

	"freelane/backend/llm"
)

// decide writes the ranking into the request's decision: the gear and
// strategy it was ranked with and every candidate's place and reason.
func (r *Router) decide(dec *llm.Decision, sel *selection) {
	dec.Gear = GearAuto
	if sel.manual {
		dec.Gear = GearManual
	}
	dec.Strategy = sel.strategy.String()
	dec.Fallback = sel.fallback
	if sel.fallback != "" {
		dec.Strategy = Priority.String()
	}
	n := min(len(sel.cands), llm.MaxDecisionCandidates)
	dec.Candidates = make([]llm.Candidate, 0, n)
	rank := 0
	for _, i := range sel.seq {
		c := &sel.cands[i]
		out := llm.Candidate{Backend: c.b.name, Tier: c.prio, Verdict: llm.VerdictOrdered}
		switch c.verdict {
		case excluded:
			out.Verdict = llm.VerdictExcluded
		case skipped:
			out.Verdict = llm.VerdictSkipped
			if sel.usable == 0 {
				// Nothing else may be called: the skipped ones are tried
				// in order anyway.
				out.Verdict = llm.VerdictOrdered
			}
		}
		if c.verdict != excluded {
			rank++
			out.Rank = rank
		}
		if c.skip != nil {
			out.Skip, out.Reason = c.skip.Word, c.skip.Reason
			if !c.skip.Until.IsZero() {
				u := c.skip.Until
				out.Until = &u
			}
		}
		if out.Reason == "" || c.verdict == skipped && sel.usable == 0 {
			out.Reason = joinReason(out.Reason, c.reason(sel))
		}
		if c.scored {
			s := *c.score
			out.Score = &s
		}
		if c.warm {
			out.Reason = joinReason("this session's prompt cache is warm here", out.Reason)
		}
		if len(dec.Candidates) < n {
			dec.Candidates = append(dec.Candidates, out)
		} else {
			dec.More++
		}
	}
	if sel.session {
		noteSession(dec, sel)
	}
}

func joinReason(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// reason says in words why c is in its place.
func (c *cand) reason(sel *selection) string {
	var s string
	switch c.why {
	case whyListed:
		// The rank says the place; constant words cost nothing per
		// request.
		s = "listed order"
	case whyWeighted:
		s = "weighted round robin"
	case whyDrained:
		s = "weight 0: drained, tried only after every other backend"
	case whyLatency:
		word := "latency"
		if sel.stream {
			word = "time to first token"
		}
		s = fmt.Sprintf("%.0f ms recent %s over %d calls", c.score.LatencyMS, word, c.score.Samples)
	case whyUntried:
		s = "untried lately: scored optimistically so it gets its chance"
	case whyCost:
		s = fmt.Sprintf("expected cost %.6f", c.score.ExpectedCost)
	case whyFree:
		s = "free"
	case whyPriceUnknown:
		s = "price unknown: no price is configured for this paid model, so it goes last"
	case whyScore:
		s = fmt.Sprintf("score %.2f", c.score.Total)
	case whyLacksWant:
		s = "lacks a capability the request would use: tried after those that have it"
	}
	if sel.strategy == RoundRobin && c.why == whyListed && sel.fallback == "" {
		s = "round robin: this request's turn order"
	}
	if c.nKeys > 1 {
		s += fmt.Sprintf("; key %d of %d in the pool's rotation", c.key+1, c.nKeys)
	}
	return s
}

// Preview answers where req would go now and why, without calling any
// backend and without moving a rotation: the next request with the same
// body goes where the preview says, unless state changes in between.
func (r *Router) Preview(req *llm.Request) *llm.Decision {
	dec := &llm.Decision{Requested: req.Model}
	route, f := r.resolve(req, dec)
	if f != nil {
		dec.Error = f.Message
		return dec
	}
	sel := getSelection()
	defer putSelection(sel)
	r.rank(req, route, false, sel)
	r.decide(dec, sel)
	return dec
}

// planFor makes a plan for a route built outside the table.
func planFor(bs []*Backend) *plan { return newPlan("", bs, ChainSpec{}) }

func itoa(n int) string { return strconv.Itoa(n) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
