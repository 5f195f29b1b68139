package router

import (
	"math"
	"sync"
	"time"

	"freelane/backend/llm"
	"freelane/backend/tier"
)

// Scoring tunes the auto strategy and when the auto gear trusts its
// scores.
type Scoring struct {
	// Health, Headroom, Latency, Cost and Task weigh the score's parts;
	// they are used in proportion, so they need not add up to 1.
	Health, Headroom, Latency, Cost, Task float64
	// MinSamples is how many calls a tier's backends must have made
	// together before latency and scores are trusted; MinScore the best
	// score below which the listed order is used instead.
	MinSamples int
	MinScore   float64
}

// DefaultScoring weighs health most, since a backend that fails costs a
// failover whatever its price, then quota headroom and latency, then cost
// and the task's fit.
var DefaultScoring = Scoring{Health: 0.4, Headroom: 0.2, Latency: 0.2, Cost: 0.1, Task: 0.1, MinSamples: 5, MinScore: 0.3}

// Estimator estimates a request's prompt tokens offline, for the check
// that a prompt fits a backend's context.
type Estimator interface {
	PromptTokens(req *llm.Request) int
}

// healthReader is the gate's health score (1 perfect), which the auto
// strategy weighs when the gate has one.
type healthReader interface {
	Health(id llm.BackendID) float64
}

// headroomReader is the admission's view of a backend's tightest limit:
// the share of it left and when it starts over.
type headroomReader interface {
	Headroom(id llm.BackendID) (left float64, reset time.Time)
}

// Verdicts of a candidate in a selection.
const (
	ordered uint8 = iota
	skipped
	excluded
)

// Why a candidate is where it is; the words are made only when a trace
// is written, so that ranking allocates nothing.
type why uint8

const (
	whyListed why = iota
	whyWeighted
	whyDrained
	whyLatency
	whyUntried
	whyCost
	whyFree
	whyPriceUnknown
	whyScore
	whyLacksWant
)

// cand is one backend in a selection.
type cand struct {
	b       *Backend
	prio    int
	verdict uint8
	why     why
	// unit and key place the candidate: its unit's index in the tier and
	// its key's turn in the unit (0 first).
	unit, nUnits int
	key, nKeys   int
	skip         *llm.Skip
	// score points into the selection's scores, shared by a unit's keys;
	// nil until a scoring strategy ranks the candidate.
	score  *llm.Score
	scored bool
	// warm marks the session's warm backend, moved to the front of its
	// tier.
	warm bool
}

// selection is one request's candidates (cands, in listed order, tier by
// tier; seq their ranked order) and how they were ranked.
// Selections are pooled: ranking a chain allocates nothing.
type selection struct {
	cands    []cand
	strategy Strategy
	manual   bool
	fallback string
	// usable counts candidates that may be called (neither skipped nor
	// excluded).
	usable int
	// prompt is the request's estimated prompt tokens, 0 until needed.
	prompt int
	stream bool
	// scratch for ranking one tier's units.
	order  []int
	keys   []int
	metric []float64
	flags  []uint8
	class  []uint8
	// seq is the ranked order: indexes into cands.
	seq    []int
	scores []llm.Score
	// session is set when the request names a session the router keeps
	// homes for; home is its warm home on the route, when hasHome, and
	// warm the index in cands of that backend, -1 when it is not there.
	session bool
	home    Home
	hasHome bool
	warm    int
}

var selections = sync.Pool{New: func() any { return &selection{} }}

func getSelection() *selection { return selections.Get().(*selection) }

func putSelection(s *selection) {
	if cap(s.cands) > 256 {
		return
	}
	clear(s.cands)
	*s = selection{cands: s.cands[:0], order: s.order[:0], keys: s.keys[:0], metric: s.metric[:0], flags: s.flags[:0], class: s.class[:0], seq: s.seq[:0], scores: s.scores[:0]}
	selections.Put(s)
}

// shortcut narrows or reorders a route for a model-name suffix.
type shortcut uint8

const (
	noShortcut shortcut = iota
	shortFree
	shortLocal
	shortFast
	shortCheap
)

var shortcutNames = [...]string{"", "free", "local", "fast", "cheap"}

func (s shortcut) String() string { return shortcutNames[s] }

// rank fills sel with route's backends in the order this request tries
// them. commit advances the rotations (a real request); a preview leaves
// them as they are, so it shows what the next request will do.
func (r *Router) rank(req *llm.Request, route Route, commit bool, sel *selection) {
	p := route.plan
	if p == nil {
		p = planFor(route.Backends)
	}
	sel.strategy, sel.manual, sel.stream = p.strategy, p.manual, req.Stream
	switch req.Gear {
	case GearManual:
		sel.manual = true
	case GearAuto:
		sel.manual = false
	}
	switch route.Shortcut {
	case shortFast:
		sel.strategy = LeastLatency
	case shortCheap:
		sel.strategy = Cost
	}
	if sel.manual {
		sel.strategy = Priority
	}
	now := r.clock.Now()
	sc := r.Table().scoring
	r.findHome(req, route, now, sel)
	for ti := range p.tiers {
		t := &p.tiers[ti]
		first := len(sel.cands)
		r.filterTier(req, route, p, t, now, sel)
		r.orderTier(req, t, sel, first, now, commit, sc)
	}
	r.keepWarm(sel)
}

// filterTier appends a tier's backends, in listed order, with their
// verdicts: hard filters (what the request needs, its context, the
// shortcut, quotas and budgets) exclude, the gate and the pacing skip.
func (r *Router) filterTier(req *llm.Request, route Route, p *plan, t *tierPlan, now time.Time, sel *selection) {
	for ui, u := range t.units {
		for k := 0; k < u.n; k++ {
			b := p.backends[u.start+k]
			c := cand{b: b, prio: t.prio, unit: ui, nUnits: len(t.units), key: k, nKeys: u.n}
			switch {
			case route.Shortcut == shortFree && b.Tier != tier.Free && b.Tier != tier.Local:
				c.verdict, c.skip = excluded, skipNotFree
			case route.Shortcut == shortLocal && b.Tier != tier.Local:
				c.verdict, c.skip = excluded, skipNotLocal
			}
			if c.verdict == ordered {
				if sk := b.Unsupported(req); sk != nil {
					c.verdict, c.skip = excluded, sk
				} else if sk := r.tooLongFor(req, b, sel); sk != nil {
					c.verdict, c.skip = excluded, sk
				} else if r.admit != nil {
					if sk := r.admit.Available(route.Chain, b); sk != nil {
						c.verdict, c.skip = excluded, sk
					}
				}
			}
			if c.verdict == ordered {
				if sk := r.gate.Available(b.ID); sk != nil {
					c.verdict, c.skip = skipped, sk
				} else if r.shape != nil {
					if sk := r.shape.Available(b.ID); sk != nil {
						c.verdict, c.skip = skipped, sk
					}
				}
			}
			if c.verdict == ordered {
				sel.usable++
			}
			sel.cands = append(sel.cands, c)
		}
	}
}

var (
	skipNotFree = &llm.Skip{Word: llm.SkipUnsupported, Class: llm.Caller,
		Reason: "is not a free or local backend, and the :free shortcut never calls a paid one"}
	skipNotLocal = &llm.Skip{Word: llm.SkipUnsupported, Class: llm.Caller,
		Reason: "is not a local backend, and the :local shortcut calls only those"}
)

// tooLongFor excludes a backend whose context cannot hold the prompt and
// the answer the client allows. The body's length bounds the prompt's
// tokens from above, so most requests are decided without counting; the
// offline estimate runs once per request, only when the bound does not
// decide.
func (r *Router) tooLongFor(req *llm.Request, b *Backend, sel *selection) *llm.Skip {
	if b.Context <= 0 || req.Endpoint == llm.Embeddings {
		return nil
	}
	out := max(req.MaxTokens, 0)
	if req.Size()+out <= b.Context {
		return nil
	}
	if sel.prompt == 0 {
		sel.prompt = r.promptTokens(req)
	}
	if sel.prompt+out <= b.Context {
		return nil
	}
	return &llm.Skip{Word: llm.SkipTooLong, Class: llm.TooLong,
		Reason: "needs about " + itoa(sel.prompt+out) + " tokens (prompt about " + itoa(sel.prompt) + ", max_tokens " + itoa(out) +
			"), more than its context of " + itoa(b.Context)}
}

// promptTokens is the request's estimated prompt size: the estimator's,
// or a quarter of the body's bytes without one.
func (r *Router) promptTokens(req *llm.Request) int {
	if r.estimate != nil {
		if n := r.estimate.PromptTokens(req); n > 0 {
			return n
		}
	}
	return max(req.Size()/4, 1)
}

// orderTier sorts the tier's candidates, sel.cands[first:], by the
// strategy, unit by unit, with each unit's keys in the pool's rotation.
func (r *Router) orderTier(req *llm.Request, t *tierPlan, sel *selection, first int, now time.Time, commit bool, sc Scoring) {
	cs := sel.cands[first:]
	n := len(t.units)
	if n == 0 {
		return
	}
	// Per unit: its first candidate's index in cs, and whether any of its
	// keys may be called.
	sel.order = grow(sel.order, n)
	sel.metric = growF(sel.metric, n)
	sel.flags = growU(sel.flags, n)
	starts := sel.keys[:0]
	for i := range cs {
		if cs[i].key == 0 {
			starts = append(starts, i)
		}
	}
	sel.keys = starts
	for u := range n {
		sel.order[u] = u
		sel.flags[u] = excluded
		for k := range t.units[u].n {
			v := cs[starts[u]+k].verdict
			sel.flags[u] = min(sel.flags[u], v)
		}
	}
	strategy := sel.strategy
	if strategy != Priority && !sel.manual && !anyOrdered(sel.flags[:n]) && sel.fallback == "" {
		sel.fallback = "auto -> manual: no eligible candidate"
		strategy = Priority
	}
	switch strategy {
	case RoundRobin:
		r.rotate(t, sel, n, commit)
	case Weighted:
		r.weigh(t, cs, starts, sel, n, commit)
	case LeastLatency, Cost, Auto:
		if !r.score(req, t, cs, starts, sel, first, n, now, strategy, sc) {
			strategy = Priority
		}
	}
	// Units that lack a capability the request would use go after those
	// that have it; units nobody may call go last, except in the listed
	// order, which keeps every backend in its place.
	class := sel.class[:0]
	for u := range n {
		class = append(class, rankKey(cs, starts, sel, u, req, strategy))
	}
	sel.class = class
	stableSort(sel.order[:n], func(a, b int) bool {
		if ka, kb := class[a], class[b]; ka != kb {
			return ka < kb
		}
		if strategy == LeastLatency || strategy == Cost {
			return sel.metric[a] < sel.metric[b]
		}
		if strategy == Auto {
			return sel.metric[a] > sel.metric[b]
		}
		return false
	})
	// The order of the tier: units in order, keys rotated in each. The
	// candidates stay where they are; seq indexes them.
	for _, u := range sel.order[:n] {
		un := t.units[u]
		turn := 0
		if un.keys != nil {
			turn = r.keyTurn(un.keys, cs[starts[u]:starts[u]+un.n], commit)
		}
		for k := range un.n {
			i := starts[u] + (turn+k)%un.n
			c := &cs[i]
			c.key = k
			if strategy != sel.strategy && c.why != whyDrained {
				c.why = whyListed
			}
			sel.seq = append(sel.seq, first+i)
		}
	}
}

func anyOrdered(flags []uint8) bool {
	for _, f := range flags {
		if f == ordered {
			return true
		}
	}
	return false
}

// rankKey is a unit's sort class in its tier: 0 for units that may be
// called and have what the request wants, 1 for those without it, 2 for
// units nobody may call (drained or excluded, last except in the listed
// order).
func rankKey(cs []cand, starts []int, sel *selection, u int, req *llm.Request, s Strategy) uint8 {
	c := &cs[starts[u]]
	if c.why == whyDrained {
		return 2
	}
	if sel.flags[u] == excluded && s != Priority {
		return 2
	}
	if req.Wants != 0 && c.b.CapsKnown && !c.b.Caps.Has(req.Wants) {
		if c.why == whyListed {
			c.why = whyLacksWant
		}
		return 1
	}
	return 0
}

// rotate starts the tier one eligible unit further per request.
func (r *Router) rotate(t *tierPlan, sel *selection, n int, commit bool) {
	turn := t.state.turn.Load()
	if commit {
		turn = t.state.turn.Add(1) - 1
	}
	eligible := 0
	for u := range n {
		if sel.flags[u] != excluded {
			eligible++
		}
	}
	if eligible == 0 {
		return
	}
	shift := int(turn % uint64(eligible))
	// metric holds each unit's place: eligible units rotated, the others
	// after them in listed order.
	pos := 0
	for u := range n {
		if sel.flags[u] == excluded {
			sel.metric[u] = float64(eligible + u)
			continue
		}
		sel.metric[u] = float64((pos - shift + eligible) % eligible)
		pos++
	}
	stableSort(sel.order[:n], func(a, b int) bool { return sel.metric[a] < sel.metric[b] })
}

// weigh orders the tier by smooth weighted round-robin: every eligible
// unit gains its weight, the one with the most current weight goes first
// and gives back the total. The others follow by current weight. A unit
// of weight 0 is drained: tried only after every other.
func (r *Router) weigh(t *tierPlan, cs []cand, starts []int, sel *selection, n int, commit bool) {
	st := t.state
	st.mu.Lock()
	defer st.mu.Unlock()
	var local [32]int
	cur := working(st.cur, commit, local[:])
	total, best := 0, -1
	for u := range n {
		w := t.units[u].weight
		if w <= 0 {
			for k := range t.units[u].n {
				cs[starts[u]+k].why = whyDrained
			}
			continue
		}
		if sel.flags[u] == excluded {
			continue
		}
		cur[u] += w
		total += w
		if best < 0 || cur[u] > cur[best] {
			best = u
		}
	}
	if best >= 0 {
		cur[best] -= total
	}
	for u := range n {
		sel.metric[u] = -float64(cur[u])
		if t.units[u].weight > 0 {
			for k := range t.units[u].n {
				cs[starts[u]+k].why = whyWeighted
			}
		}
	}
	if best >= 0 {
		sel.metric[best] = math.Inf(-1)
	}
	stableSort(sel.order[:n], func(a, b int) bool { return sel.metric[a] < sel.metric[b] })
}

// working is the smooth weighted round-robin's current weights to work
// on: the state itself for a request, a copy (in local when it fits) for
// a preview, so that the next request is still the one it shows.
func working(cur []int, commit bool, local []int) []int {
	if commit {
		return cur
	}
	w := local[:0]
	if len(cur) > len(local) {
		w = make([]int, 0, len(cur))
	}
	return append(w, cur...)
}

// keyTurn is which of a unit's keys goes first for this request.
func (r *Router) keyTurn(ks *keyState, keys []cand, commit bool) int {
	n := len(keys)
	if !ks.weighted {
		turn := ks.turn.Load()
		if commit {
			turn = ks.turn.Add(1) - 1
		}
		return int(turn % uint64(n))
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	var local [32]int
	cur := working(ks.cur, commit, local[:])
	total, best := 0, 0
	for k := range n {
		w := max(keys[k].b.KeyWeight, 1)
		cur[k] += w
		total += w
		if cur[k] > cur[best] {
			best = k
		}
	}
	cur[best] -= total
	return best
}

// score fills each unit's metric for the scoring strategies and reports
// whether the scores are trusted; when they are not (too few samples, too
// low a best score) the auto gear falls back to the listed order and
// says why.
func (r *Router) score(req *llm.Request, t *tierPlan, cs []cand, starts []int, sel *selection, first, n int, now time.Time,
	s Strategy, sc Scoring) bool {
	// One score per candidate, made once per selection so the pointers
	// into it stay valid.
	if cap(sel.scores) < len(sel.cands) {
		sel.scores = make([]llm.Score, len(sel.cands), len(sel.cands)+8)
	}
	sel.scores = sel.scores[:len(sel.cands)]
	samples := 0
	bestLat, worstCost := math.Inf(1), 0.0
	for u := range n {
		c := &cs[starts[u]]
		c.score = &sel.scores[first+starts[u]]
		*c.score = llm.Score{}
		lat, k := c.b.stats.latency(now, req.Stream)
		c.score.LatencyMS, c.score.Samples = float64(lat)/float64(time.Millisecond), k
		if sel.flags[u] != excluded {
			samples += k
			if k > 0 {
				bestLat = min(bestLat, float64(lat))
			}
		}
		if s == Cost || s == Auto {
			cost, known := r.expectedCost(req, c.b, sel)
			c.score.ExpectedCost, c.score.PriceUnknown = cost, !known
			if known {
				worstCost = max(worstCost, cost)
			}
		}
	}
	if s != Cost && samples < sc.MinSamples {
		sel.fallback = "auto -> manual: too few samples (" + itoa(samples) + " of " + itoa(sc.MinSamples) + ")"
		return false
	}
	bestScore := math.Inf(-1)
	for u := range n {
		c := &cs[starts[u]]
		c.scored = true
		switch s {
		case LeastLatency:
			if c.score.Samples == 0 {
				// Untried: optimistic, so it gets its chance.
				sel.metric[u] = 0
				c.why = whyUntried
			} else {
				sel.metric[u] = c.score.LatencyMS
				c.why = whyLatency
			}
			// Ties go to the idle backend.
			sel.metric[u] += float64(c.b.stats.inflight.Load()) * 1e-9
		case Cost:
			switch {
			case c.score.PriceUnknown:
				sel.metric[u] = math.Inf(1)
				c.why = whyPriceUnknown
			case c.score.ExpectedCost == 0:
				// The metric is pooled scratch: a free call must not keep
				// the value another request left in it.
				sel.metric[u] = 0
				c.why = whyFree
			default:
				sel.metric[u] = c.score.ExpectedCost
				c.why = whyCost
			}
		case Auto:
			r.autoScore(req, c, now, bestLat, worstCost, sc)
			sel.metric[u] = c.score.Total
			c.why = whyScore
			if sel.flags[u] != excluded {
				bestScore = max(bestScore, c.score.Total)
			}
		}
		for k := 1; k < t.units[u].n; k++ {
			cs[starts[u]+k].score, cs[starts[u]+k].scored, cs[starts[u]+k].why = c.score, true, c.why
		}
	}
	if s == Auto && bestScore < sc.MinScore && !math.IsInf(bestScore, -1) {
		sel.fallback = "auto -> manual: best score " + ftoa(bestScore) + " is below " + ftoa(sc.MinScore)
		return false
	}
	return true
}

// autoScore weighs health, quota headroom, latency, cost and task match,
// each from 0 to 1, into c.score.
func (r *Router) autoScore(req *llm.Request, c *cand, now time.Time, bestLat, worstCost float64, sc Scoring) {
	s := c.score
	s.Health = 1
	if h, ok := r.gate.(healthReader); ok {
		s.Health = clamp01(h.Health(c.b.ID))
	}
	s.Headroom = 1
	if h, ok := r.admit.(headroomReader); ok && r.admit != nil {
		left, reset := h.Headroom(c.b.ID)
		s.Headroom = clamp01(left)
		if !reset.IsZero() && left < 1 {
			// A limit that starts over soon is nearly as good as one with
			// room: what is used up now is back in a moment.
			soon := math.Exp(-float64(reset.Sub(now)) / float64(5*time.Minute))
			s.Headroom = clamp01(left + (1-left)*soon)
		}
	}
	s.Latency = 1
	if s.Samples > 0 && !math.IsInf(bestLat, 1) && s.LatencyMS > 0 {
		s.Latency = clamp01(bestLat / float64(time.Millisecond) / s.LatencyMS)
	}
	switch {
	case s.PriceUnknown:
		s.Cost = 0
	case s.ExpectedCost == 0 || worstCost == 0:
		s.Cost = 1
	default:
		s.Cost = clamp01(1 - s.ExpectedCost/worstCost*0.9)
	}
	s.Task = r.taskMatch(req, c.b)
	sum := sc.Health + sc.Headroom + sc.Latency + sc.Cost + sc.Task
	if sum <= 0 {
		sum = 1
	}
	s.Total = (sc.Health*s.Health + sc.Headroom*s.Headroom + sc.Latency*s.Latency + sc.Cost*s.Cost + sc.Task*s.Task) / sum
}

// taskPrefers is the classifier's say in a task's match, when it has one.
type taskPrefers interface {
	Prefers(task string, id llm.BackendID) bool
}

// taskMatch is how well b suits the request's task: a backend the task
// rules prefer fits best; otherwise reasoning models suit think, large
// contexts long_context, free, local and small models background, and
// every backend the default task.
func (r *Router) taskMatch(req *llm.Request, b *Backend) float64 {
	if p, ok := r.classify.(taskPrefers); ok && r.classify != nil && p.Prefers(req.Task, b.ID) {
		return 1
	}
	switch req.Task {
	case "think":
		switch {
		case !b.CapsKnown:
			return 0.5
		case b.Caps.Has(llm.CapReasoning):
			return 1
		}
		return 0.2
	case "long_context":
		switch {
		case b.Context == 0:
			return 0.5
		case b.Context >= 200_000:
			return 1
		}
		return clamp01(float64(b.Context) / 200_000)
	case "background":
		switch {
		case b.Tier == tier.Local || b.Tier == tier.Free:
			return 1
		case b.ParamsB > 0 && b.ParamsB <= 20:
			return 0.8
		}
		return 0.4
	}
	return 1
}

// expectedCost is what one call to b is expected to cost for req: the
// prompt at the input price, the share its provider's cache served lately
// at the cache-read price, and the answer at the output price (max_tokens,
// or 500 tokens when the client set no limit). For a session whose cache
// is warm on another backend, b would have to write that cache anew: its
// whole prompt is priced as input. Free and local backends cost nothing;
// a paid backend without a price is unknown.
func (r *Router) expectedCost(req *llm.Request, b *Backend, sel *selection) (float64, bool) {
	if b.Tier == tier.Free || b.Tier == tier.Local {
		return 0, true
	}
	if !b.Price.Known {
		return 0, false
	}
	if sel.prompt == 0 {
		sel.prompt = r.promptTokens(req)
	}
	out := req.MaxTokens
	if out <= 0 {
		out = 500
	}
	cr := b.Price.CacheRead
	if cr <= 0 {
		cr = b.Price.Input
	}
	share := b.stats.cachedShare()
	if sel.hasHome && b.ID != sel.home.Backend {
		share = 0
	}
	p := float64(sel.prompt)
	return (p*(1-share)*b.Price.Input + p*share*cr + float64(out)*b.Price.Output) / 1e6, true
}

func clamp01(v float64) float64 { return min(max(v, 0), 1) }

// stableSort is an insertion sort: tiers are small, and unlike
// slices.SortStableFunc with a closure over the selection it allocates
// nothing.
func stableSort(xs []int, less func(a, b int) bool) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && less(xs[j], xs[j-1]); j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

func grow(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n, n+8)
	}
	return s[:n]
}

func growF(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n, n+8)
	}
	return s[:n]
}

func growU(s []uint8, n int) []uint8 {
	if cap(s) < n {
		return make([]uint8, n, n+8)
	}
	return s[:n]
}
