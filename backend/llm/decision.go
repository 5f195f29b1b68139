package llm

import "time"

// Decision is how the router chose where a request went: what was asked
// for, what it resolved to, and for every backend considered why it was
// tried where it was, passed by or left out. It is kept in the request's
// trace, so the request log and the dashboard can answer "why did this
// request go there" after the fact, and a route preview returns one
// without calling anything.
type Decision struct {
	// Requested is the model name as the client sent it, shortcut suffix
	// included.
	Requested string `json:"requested"`
	// Chain is the chain the name resolved to, empty for a pinned backend
	// or a bare model id.
	Chain string `json:"chain,omitempty"`
	// Shortcut is the suffix that narrowed or reordered the chain (free,
	// local, fast, cheap), without its colon.
	Shortcut string `json:"shortcut,omitempty"`
	// Gear is the gear the request was routed in, Strategy the strategy
	// that ordered its tiers (priority in the manual gear), Task its task.
	Gear     string `json:"gear"`
	Strategy string `json:"strategy"`
	Task     string `json:"task,omitempty"`
	// TaskRule says what classified the request: "header", a rule's
	// description, or empty for the default.
	TaskRule string `json:"task_rule,omitempty"`
	// Fallback is set when the auto gear fell back to the listed order,
	// with the reason: "auto -> manual: too few samples (2 of 5)".
	Fallback string `json:"fallback,omitempty"`
	// Error, in a route preview, is why the name routes nowhere: the
	// message the request would be answered with.
	Error string `json:"error,omitempty"`
	// Waited is how long the request waited for a rate limit to reset
	// before it walked the chain again.
	Waited time.Duration `json:"waited_ns,omitempty"`
	// Affinity, for a request of a session, is what became of the
	// session's warm prompt cache: "kept" on the backend that served it
	// last, "moved" to another (AffinityNote says why: that backend
	// failed, or could not take the request), or "new" when the session
	// had no warm backend on this route.
	Affinity     string `json:"affinity,omitempty"`
	AffinityNote string `json:"affinity_note,omitempty"`
	// Candidates are the backends considered, in the order they were
	// ranked: first the ones to try, then the ones left out.
	Candidates []Candidate `json:"candidates"`
	// More counts candidates left out of the list to keep it small.
	More int `json:"more,omitempty"`
}

// Verdicts of a candidate.
const (
	// VerdictOrdered is a candidate the request may call, in its place.
	VerdictOrdered = "ordered"
	// VerdictSkipped is one passed by for now (cooling, breaker open,
	// half-open trial taken); it is still tried when nothing else is.
	VerdictSkipped = "skipped"
	// VerdictExcluded is one that cannot serve this request at all (a
	// capability, its context, a quota, a budget, a shortcut).
	VerdictExcluded = "excluded"
)

// Candidate is one backend as the router's selection saw it.
type Candidate struct {
	Backend string `json:"backend"`
	// Tier is the backend's priority number; Rank its place in the order
	// (1 first), 0 for one left out.
	Tier    int    `json:"tier"`
	Rank    int    `json:"rank,omitempty"`
	Verdict string `json:"verdict"`
	// Reason says why in words: "round robin: turn 3 of 4", "cooling
	// down after a 429", "needs 140000 tokens, context 131072".
	Reason string `json:"reason,omitempty"`
	// Skip is the skip word for a skipped or excluded candidate, Until
	// when it may serve again.
	Skip  SkipWord   `json:"skip,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	// Score is the strategy's score with its parts, for the strategies
	// that score.
	Score *Score `json:"score,omitempty"`
}

// Score is the auto strategy's score of one backend and its parts, each
// between 0 and 1 before weighting; least_latency and cost fill only
// theirs.
type Score struct {
	Total    float64 `json:"total"`
	Health   float64 `json:"health"`
	Headroom float64 `json:"headroom"`
	Latency  float64 `json:"latency"`
	Cost     float64 `json:"cost"`
	Task     float64 `json:"task"`
	// LatencyMS is the latency the score was computed from, in
	// milliseconds, and Samples how many calls it rests on; 0 samples is
	// an untried backend, scored optimistically.
	LatencyMS float64 `json:"latency_ms,omitempty"`
	Samples   int     `json:"samples,omitempty"`
	// ExpectedCost is the cost strategy's estimate for this request, and
	// PriceUnknown marks a backend without a configured price.
	ExpectedCost float64 `json:"expected_cost,omitempty"`
	PriceUnknown bool    `json:"price_unknown,omitempty"`
}

// MaxDecisionCandidates bounds the candidates a decision lists: the first
// ones are those a request tries, and a chain of hundreds of catalog
// models must not make every trace large.
const MaxDecisionCandidates = 24
