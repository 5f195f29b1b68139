package router_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/protocol/openai"
	"freelane/backend/router"
	"freelane/backend/tier"
)

// scriptUp is an upstream that takes delay of the test's clock per call
// and answers with its name, or with err.
type scriptUp struct {
	name  string
	clk   *clocktest.Clock
	mu    sync.Mutex
	delay time.Duration
	err   error
	calls int
	// cached is how many of the answer's prompt tokens its provider's
	// cache served.
	cached int
	// entered and release hold the next call until release is closed.
	entered, release chan struct{}
}

func (u *scriptUp) block(entered, release chan struct{}) {
	u.mu.Lock()
	u.entered, u.release = entered, release
	u.mu.Unlock()
}

func (u *scriptUp) Complete(ctx context.Context, req *llm.Request, model string) (*llm.Response, error) {
	u.mu.Lock()
	u.calls++
	d, err, cached := u.delay, u.err, u.cached
	entered, release := u.entered, u.release
	u.entered, u.release = nil, nil
	u.mu.Unlock()
	if entered != nil {
		close(entered)
		<-release
	}
	if u.clk != nil && d > 0 {
		u.clk.Advance(d)
	}
	if err != nil {
		return nil, err
	}
	return &llm.Response{Status: 200, Body: []byte(`{"from":"` + u.name + `"}`), Usage: llm.Usage{PromptTokens: 10, TotalTokens: 12, CacheReadTokens: cached}}, nil
}

func (u *scriptUp) Stream(context.Context, *llm.Request, string) (llm.EventStream, error) {
	return nil, errors.New("scriptUp does not stream")
}

func (u *scriptUp) set(delay time.Duration, err error) {
	u.mu.Lock()
	u.delay, u.err = delay, err
	u.mu.Unlock()
}

func (u *scriptUp) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls
}

// sel is a router over providers p0..pN-1, one model "m" each, in one
// chain "c" with the given settings.
type sel struct {
	t   *testing.T
	r   *router.Router
	clk *clocktest.Clock
	ups []*scriptUp
	rec *recRecorder
	// spec is what the router's table was built from.
	spec router.Spec
}

type provider struct {
	tier    tier.Tier
	price   router.Price
	ctx     int
	caps    llm.Caps
	capsSet bool
	keys    int
	// cacheTTL is the provider's prompt-cache lifetime.
	cacheTTL time.Duration
}

func newSel(t *testing.T, chain router.ChainSpec, ps ...provider) *sel {
	t.Helper()
	s := &sel{t: t, clk: clocktest.New(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)), rec: &recRecorder{}}
	var spec router.Spec
	for i, p := range ps {
		name := fmt.Sprintf("p%d", i)
		ps := router.ProviderSpec{Name: name, Tier: p.tier, HasKey: true, CacheTTL: p.cacheTTL,
			Models: []router.ModelSpec{{ID: "m", Context: p.ctx, Price: p.price, Caps: p.caps, CapsKnown: p.capsSet}}}
		if p.keys > 1 {
			for k := range p.keys {
				up := &scriptUp{name: fmt.Sprintf("%s@k%d", name, k), clk: s.clk}
				s.ups = append(s.ups, up)
				ps.Keys = append(ps.Keys, router.KeySpec{Label: fmt.Sprintf("k%d", k), Up: up})
			}
		} else {
			up := &scriptUp{name: name, clk: s.clk}
			s.ups = append(s.ups, up)
			ps.Up = up
		}
		spec.Providers = append(spec.Providers, ps)
		chain.Backends = append(chain.Backends, llm.BackendID{Provider: name, Model: "m"})
	}
	chain.Name = "c"
	spec.Chains = []router.ChainSpec{chain}
	s.spec = spec
	s.r = router.New(router.Build(spec), nopGate{}, s.rec, s.clk, quiet)
	return s
}

func (s *sel) req(model string) *llm.Request {
	s.t.Helper()
	r, err := openai.ParseRequest(llm.Chat, []byte(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// serve sends n requests and returns who served each.
func (s *sel) serve(n int, model string) []string {
	s.t.Helper()
	var out []string
	for range n {
		res, f := s.r.Complete(context.Background(), s.req(model))
		if f != nil {
			s.t.Fatalf("request failed: %d %s", f.Status, f.Message)
		}
		out = append(out, res.Backend.Name())
	}
	return out
}

func counts(names []string) map[string]int {
	m := map[string]int{}
	for _, n := range names {
		m[n]++
	}
	return m
}

func TestRoundRobinTakesTurns(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "round_robin"}, provider{tier: tier.Free}, provider{tier: tier.Free}, provider{tier: tier.Free})
	got := strings.Join(s.serve(6, "c"), " ")
	if want := "p0/m p1/m p2/m p0/m p1/m p2/m"; got != want {
		t.Fatalf("served by %s, want %s", got, want)
	}
	d := s.last().Decision
	if d.Strategy != "round_robin" || d.Gear != "auto" || d.Chain != "c" || len(d.Candidates) != 3 || d.Candidates[0].Backend != "p2/m" ||
		!strings.Contains(d.Candidates[0].Reason, "round robin") {
		t.Fatalf("decision = %+v", d)
	}
}

func TestRoundRobinSkipsAFailedBackendAndStillTakesTurns(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "round_robin"}, provider{tier: tier.Free}, provider{tier: tier.Free}, provider{tier: tier.Free})
	s.ups[1].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	got := strings.Join(s.serve(3, "c"), " ")
	// The second request starts at p1, which fails; p2 serves it. The
	// third starts at p2.
	if want := "p0/m p2/m p2/m"; got != want {
		t.Fatalf("served by %s, want %s", got, want)
	}
	if n := s.ups[1].count(); n != 1 {
		t.Fatalf("p1 called %d times, want 1", n)
	}
}

func TestWeightedIsExactAndZeroDrains(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "weighted", Weights: map[llm.BackendID]int{
		{Provider: "p0", Model: "m"}: 3, {Provider: "p1", Model: "m"}: 1, {Provider: "p2", Model: "m"}: 0}},
		provider{tier: tier.Free}, provider{tier: tier.Free}, provider{tier: tier.Free})
	got := s.serve(400, "c")
	c := counts(got)
	if c["p0/m"] != 300 || c["p1/m"] != 100 || c["p2/m"] != 0 {
		t.Fatalf("shares = %v, want exactly 300:100:0", c)
	}
	// Smooth: never more than three in a row for the heavier one.
	if strings.Contains(strings.Join(got, " "), strings.Repeat("p0/m ", 4)) {
		t.Fatalf("weighted order is not smooth: %v", got[:12])
	}
	// A drained backend still serves when the others fail.
	s.ups[0].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	s.ups[1].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	if got := s.serve(1, "c"); got[0] != "p2/m" {
		t.Fatalf("served by %v, want the drained p2/m when the others fail", got)
	}
	d := s.last().Decision
	if last := d.Candidates[len(d.Candidates)-1]; last.Backend != "p2/m" || !strings.Contains(last.Reason, "drained") {
		t.Fatalf("last candidate = %+v, want p2/m drained", last)
	}
}

func TestTiersAreUsedInOrder(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "round_robin", Priority: map[llm.BackendID]int{{Provider: "p0", Model: "m"}: 1}},
		provider{tier: tier.Own, price: router.Price{Known: true, Input: 1}}, provider{tier: tier.Free}, provider{tier: tier.Free})
	got := counts(s.serve(10, "c"))
	if got["p0/m"] != 0 || got["p1/m"] != 5 || got["p2/m"] != 5 {
		t.Fatalf("shares = %v, want p1 and p2 taking turns and the tier-1 p0 unused", got)
	}
	s.ups[1].set(0, &llm.Error{Class: llm.RateLimited, Status: 429, Message: "HTTP 429"})
	s.ups[2].set(0, &llm.Error{Class: llm.Transient, Status: 500, Message: "HTTP 500"})
	if got := s.serve(1, "c"); got[0] != "p0/m" {
		t.Fatalf("served by %v, want the next tier once the first is exhausted", got)
	}
	d := s.last().Decision
	if d.Candidates[2].Backend != "p0/m" || d.Candidates[2].Tier != 1 || d.Candidates[2].Rank != 3 {
		t.Fatalf("decision = %+v, want p0/m third, in tier 1", d.Candidates)
	}
}

func TestLeastLatencyLearnsAndExplores(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "least_latency"}, provider{tier: tier.Free}, provider{tier: tier.Free}, provider{tier: tier.Free})
	s.ups[0].set(900*time.Millisecond, nil)
	s.ups[1].set(200*time.Millisecond, nil)
	s.ups[2].set(500*time.Millisecond, nil)
	// Too few samples yet: the listed order, and the decision says why.
	s.serve(1, "c")
	if d := s.last().Decision; !strings.HasPrefix(d.Fallback, "auto -> manual: too few samples (0 of 5)") || d.Strategy != "priority" {
		t.Fatalf("decision = %+v, want the fallback to the listed order", d)
	}
	// Everyone gets samples (pinned calls count too).
	for range 2 {
		for _, name := range []string{"p0/m", "p1/m", "p2/m"} {
			s.serve(1, name)
		}
	}
	got := counts(s.serve(10, "c"))
	if got["p1/m"] != 10 {
		t.Fatalf("shares = %v, want the fastest p1 every time", got)
	}
	d := s.last().Decision
	if d.Strategy != "least_latency" || d.Fallback != "" || d.Candidates[0].Backend != "p1/m" || d.Candidates[0].Score == nil ||
		d.Candidates[0].Score.LatencyMS != 200 || d.Candidates[2].Backend != "p0/m" {
		t.Fatalf("decision = %+v", d)
	}
	// p1 slows down: its average moves past p2's and p2 takes over.
	s.ups[1].set(3*time.Second, nil)
	got = counts(s.serve(6, "c"))
	if got["p2/m"] < 4 {
		t.Fatalf("shares after p1 slowed = %v, want p2 to take over", got)
	}
	// Samples older than the window are forgotten: untried again, and
	// scored optimistically.
	s.clk.Advance(router.LatencyWindow + time.Minute)
	s.serve(1, "p0/m")
	for range 4 {
		s.serve(1, "p0/m")
	}
	s.r.Preview(s.req("c"))
	d = s.r.Preview(s.req("c"))
	if d.Candidates[0].Backend == "p0/m" || !strings.Contains(d.Candidates[0].Reason, "untried") {
		t.Fatalf("preview = %+v, want an untried backend first", d.Candidates)
	}
}

func TestCostPutsFreeFirstAndUnknownLast(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "cost"},
		provider{tier: tier.Own}, // price unknown
		provider{tier: tier.Own, price: router.Price{Known: true, Input: 3, Output: 15}},    // dear
		provider{tier: tier.Own, price: router.Price{Known: true, Input: 0.1, Output: 0.4}}, // cheap
		provider{tier: tier.Free})
	d := s.r.Preview(s.req("c"))
	var order []string
	for _, c := range d.Candidates {
		order = append(order, c.Backend)
	}
	if got := strings.Join(order, " "); got != "p3/m p2/m p1/m p0/m" {
		t.Fatalf("order = %s, want free, cheap, dear, unknown", got)
	}
	if c := d.Candidates[3]; c.Score == nil || !c.Score.PriceUnknown || !strings.Contains(c.Reason, "price unknown") {
		t.Fatalf("unknown-price candidate = %+v, want it flagged", c)
	}
	if c := d.Candidates[1]; c.Score == nil || c.Score.ExpectedCost <= 0 || c.Score.ExpectedCost >= d.Candidates[2].Score.ExpectedCost {
		t.Fatalf("expected costs = %+v / %+v", d.Candidates[1].Score, d.Candidates[2].Score)
	}
}

func TestAutoScoresAndFallsBack(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "auto"}, provider{tier: tier.Own, price: router.Price{Known: true, Input: 5, Output: 20}},
		provider{tier: tier.Free})
	if d := s.r.Preview(s.req("c")); !strings.Contains(d.Fallback, "too few samples") || d.Candidates[0].Backend != "p0/m" {
		t.Fatalf("preview = %+v, want the listed order for lack of samples", d)
	}
	s.ups[0].set(800*time.Millisecond, nil)
	s.ups[1].set(400*time.Millisecond, nil)
	for range 3 {
		s.serve(1, "p0/m")
		s.serve(1, "p1/m")
	}
	d := s.r.Preview(s.req("c"))
	if d.Fallback != "" || d.Strategy != "auto" || d.Candidates[0].Backend != "p1/m" {
		t.Fatalf("preview = %+v, want the free, faster p1 first", d)
	}
	sc := d.Candidates[0].Score
	if sc == nil || sc.Health != 1 || sc.Latency != 1 || sc.Cost != 1 || sc.Task != 1 || sc.Total < 0.99 {
		t.Fatalf("p1's score = %+v", sc)
	}
	if sc0 := d.Candidates[1].Score; sc0 == nil || sc0.Latency != 0.5 || sc0.Cost >= 1 || sc0.Total >= sc.Total {
		t.Fatalf("p0's score = %+v", sc0)
	}
	// The manual gear, per request, is the listed order.
	r := s.req("c")
	r.Gear = router.GearManual
	if d := s.r.Preview(r); d.Gear != "manual" || d.Strategy != "priority" || d.Candidates[0].Backend != "p0/m" {
		t.Fatalf("manual preview = %+v", d)
	}
}

func TestManualGearIsTheListedOrder(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "round_robin", Gear: "manual"}, provider{tier: tier.Free}, provider{tier: tier.Free})
	if got := counts(s.serve(4, "c")); got["p0/m"] != 4 {
		t.Fatalf("shares = %v, want p0 every time in the manual gear", got)
	}
	r := s.req("c")
	r.Gear = router.GearAuto
	res, f := s.r.Complete(context.Background(), r)
	if f != nil {
		t.Fatal(f)
	}
	res2, _ := s.r.Complete(context.Background(), func() *llm.Request { r := s.req("c"); r.Gear = router.GearAuto; return r }())
	if res.Backend.Name() == res2.Backend.Name() {
		t.Fatalf("the auto gear by header did not take turns: %s twice", res.Backend.Name())
	}
}

func TestShortcuts(t *testing.T) {
	s := newSel(t, router.ChainSpec{}, provider{tier: tier.Own, price: router.Price{Known: true, Input: 1}}, provider{tier: tier.Free},
		provider{tier: tier.Local})
	if got := s.serve(1, "c:free"); got[0] != "p1/m" {
		t.Fatalf(":free served by %v, want the free p1", got)
	}
	d := s.last().Decision
	if d.Shortcut != "free" || d.Requested != "c:free" || d.Candidates[0].Verdict != llm.VerdictExcluded || d.Candidates[0].Backend != "p0/m" {
		t.Fatalf("decision = %+v", d)
	}
	if got := s.serve(1, "c:local"); got[0] != "p2/m" {
		t.Fatalf(":local served by %v", got)
	}
	// :free fails closed: a paid backend alone is refused, never called.
	_, f := s.r.Complete(context.Background(), s.req("p0/m:free"))
	if f == nil || f.Status != 400 || !strings.Contains(f.Message, ":free shortcut never calls a paid one") {
		t.Fatalf("p0/m:free = %+v, want a 400 refusal", f)
	}
	if s.ups[0].count() != 0 {
		t.Fatal("the paid backend was called under :free")
	}
	s.ups[1].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	s.ups[2].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	if _, f := s.r.Complete(context.Background(), s.req("c:free")); f == nil || s.ups[0].count() != 0 {
		t.Fatalf(":free with every free backend down = %+v and %d paid calls, want a failure and none", f, s.ups[0].count())
	}
	if d := s.r.Preview(s.req("c:fast")); d.Strategy != "priority" || !strings.Contains(d.Fallback, "too few samples") {
		t.Fatalf(":fast preview = %+v, want least latency falling back for lack of samples", d)
	}
	if d := s.r.Preview(s.req("c:cheap")); d.Strategy != "cost" || d.Candidates[0].Backend == "p0/m" {
		t.Fatalf(":cheap preview = %+v, want cost order with the paid one not first", d)
	}
}

func TestShortcutNeverCutsARealModelID(t *testing.T) {
	up := &scriptUp{name: "or"}
	spec := router.Spec{Providers: []router.ProviderSpec{{Name: "or", Tier: tier.Free, HasKey: true,
		Models: []router.ModelSpec{{ID: "llama:free"}, {ID: "llama"}}, Up: up}}}
	r := router.New(router.Build(spec), nopGate{}, nil, nil, quiet)
	req, _ := openai.ParseRequest(llm.Chat, []byte(`{"model":"llama:free","messages":[{"role":"user","content":"hi"}]}`))
	res, f := r.Complete(context.Background(), req)
	if f != nil || res.Backend.Name() != "or/llama:free" {
		t.Fatalf("llama:free went to %v (%v), want the model of that id", res, f)
	}
}

func TestContextFitExcludesBeforeAnyCall(t *testing.T) {
	s := newSel(t, router.ChainSpec{}, provider{tier: tier.Free, ctx: 50}, provider{tier: tier.Free, ctx: 100000})
	long := strings.Repeat("word ", 400)
	r, err := openai.ParseRequest(llm.Chat, []byte(`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"`+long+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, f := s.r.Complete(context.Background(), r)
	if f != nil || res.Backend.Name() != "p1/m" || s.ups[0].count() != 0 {
		t.Fatalf("served by %v (%v), small one called %d times; want p1 without calling p0", res, f, s.ups[0].count())
	}
	d := s.last().Decision
	if c := d.Candidates[0]; c.Verdict != llm.VerdictExcluded || c.Skip != llm.SkipTooLong || !strings.Contains(c.Reason, "context of 50") {
		t.Fatalf("candidate = %+v", c)
	}
	// Nothing fits: a 400 the caller can act on.
	s2 := newSel(t, router.ChainSpec{}, provider{tier: tier.Free, ctx: 50})
	if _, f := s2.r.Complete(context.Background(), r); f == nil || f.Status != 400 || f.Code != "context_length_exceeded" {
		t.Fatalf("failure = %+v, want 400 context_length_exceeded", f)
	}
}

func TestWantsPutsCapableBackendsFirst(t *testing.T) {
	s := newSel(t, router.ChainSpec{}, provider{tier: tier.Free, capsSet: true, caps: llm.CapTools},
		provider{tier: tier.Free, capsSet: true, caps: llm.CapTools | llm.CapReasoning})
	r := s.req("c")
	r.Wants = llm.CapReasoning
	d := s.r.Preview(r)
	if d.Candidates[0].Backend != "p1/m" || !strings.Contains(d.Candidates[1].Reason, "lacks a capability") {
		t.Fatalf("preview = %+v, want the reasoning model first", d.Candidates)
	}
}

func TestKeyPoolRotatesAndFailsOverWithinTheProvider(t *testing.T) {
	s := newSel(t, router.ChainSpec{}, provider{tier: tier.Free, keys: 2}, provider{tier: tier.Free})
	got := strings.Join(s.serve(4, "c"), " ")
	if want := "p0@k0/m p0@k1/m p0@k0/m p0@k1/m"; got != want {
		t.Fatalf("served by %s, want the keys taking turns", got)
	}
	// A 429 on one key goes to the other key before the next provider.
	s.ups[0].set(0, &llm.Error{Class: llm.RateLimited, Status: 429, Message: "HTTP 429"})
	got = strings.Join(s.serve(2, "c"), " ")
	if want := "p0@k1/m p0@k1/m"; got != want {
		t.Fatalf("served by %s, want the second key", got)
	}
	// A pin of a pooled model fails over between its keys.
	if got := s.serve(1, "p0/m"); got[0] != "p0@k1/m" {
		t.Fatalf("pin served by %v", got)
	}
	d := s.last().Decision
	if !strings.Contains(d.Candidates[0].Reason, "key 1 of 2") {
		t.Fatalf("decision = %+v", d.Candidates)
	}
}

func TestSwitchThenWaitThenGiveUp(t *testing.T) {
	limited := &llm.Error{Class: llm.RateLimited, Status: 429, Message: "HTTP 429", RetryAfter: time.Second}
	s := newSel(t, router.ChainSpec{}, provider{tier: tier.Free}, provider{tier: tier.Free})
	s.ups[0].set(0, limited)
	s.ups[1].set(0, limited)
	// The clock moves on as soon as the router waits, and the first
	// backend serves again then.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s.clk.Timers() == 0 {
			time.Sleep(time.Millisecond)
		}
		s.ups[0].set(0, nil)
		s.clk.Advance(time.Second)
	}()
	res, f := s.r.Complete(context.Background(), s.req("c"))
	<-done
	if f != nil || res.Backend.Name() != "p0/m" {
		t.Fatalf("got %v %v, want p0 after the wait", res, f)
	}
	tr := s.last()
	if tr.Decision.Waited != time.Second || router.AttemptsHeader(tr.Attempts) != "p0/m=429; p1/m=429; p0/m=ok" {
		t.Fatalf("waited %s, attempts %s", tr.Decision.Waited, router.AttemptsHeader(tr.Attempts))
	}

	// max_wait 0 turns waiting off: a 429 at once, with the reset.
	zero := time.Duration(0)
	s2 := newSel(t, router.ChainSpec{MaxWait: &zero}, provider{tier: tier.Free})
	s2.ups[0].set(0, limited)
	_, f = s2.r.Complete(context.Background(), s2.req("c"))
	if f == nil || f.Status != 429 || !f.RetryAt.Equal(s2.clk.Now().Add(time.Second)) || s2.ups[0].count() != 1 {
		t.Fatalf("failure = %+v after %d calls, want one call and a 429 with the reset", f, s2.ups[0].count())
	}
	// A reset further than max_wait is not waited for either.
	long := &llm.Error{Class: llm.RateLimited, Status: 429, Message: "HTTP 429", RetryAfter: 10 * time.Second}
	s3 := newSel(t, router.ChainSpec{}, provider{tier: tier.Free})
	s3.ups[0].set(0, long)
	if _, f := s3.r.Complete(context.Background(), s3.req("c")); f == nil || f.Status != 429 || s3.ups[0].count() != 1 {
		t.Fatalf("failure = %+v after %d calls", f, s3.ups[0].count())
	}
	// Nor past the client's deadline.
	s4 := newSel(t, router.ChainSpec{}, provider{tier: tier.Free})
	s4.ups[0].set(0, limited)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(500*time.Millisecond))
	defer cancel()
	if _, f := s4.r.Complete(ctx, s4.req("c")); f == nil || s4.ups[0].count() != 1 {
		t.Fatalf("failure = %+v after %d calls, want no wait past the deadline", f, s4.ups[0].count())
	}
}

func TestTheWaitNeverCallsABackendThatFailedOtherwise(t *testing.T) {
	s := newSel(t, router.ChainSpec{}, provider{tier: tier.Free}, provider{tier: tier.Free})
	s.ups[0].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	s.ups[1].set(0, &llm.Error{Class: llm.RateLimited, Status: 429, Message: "HTTP 429", RetryAfter: time.Second})
	// Not every candidate was rate limited: no wait, a 502 at once.
	if _, f := s.r.Complete(context.Background(), s.req("c")); f == nil || f.Status != 502 || s.ups[0].count() != 1 || s.ups[1].count() != 1 {
		t.Fatalf("failure = %+v, calls %d %d", f, s.ups[0].count(), s.ups[1].count())
	}
}

func TestPreviewMatchesTheNextRequest(t *testing.T) {
	for _, strategy := range []string{"priority", "round_robin", "weighted"} {
		t.Run(strategy, func(t *testing.T) {
			s := newSel(t, router.ChainSpec{Strategy: strategy, Weights: map[llm.BackendID]int{{Provider: "p1", Model: "m"}: 2}},
				provider{tier: tier.Free}, provider{tier: tier.Free}, provider{tier: tier.Free, keys: 2})
			for i := range 9 {
				p1 := s.r.Preview(s.req("c"))
				p2 := s.r.Preview(s.req("c"))
				if p1.Candidates[0].Backend != p2.Candidates[0].Backend {
					t.Fatalf("two previews differ: %s then %s", p1.Candidates[0].Backend, p2.Candidates[0].Backend)
				}
				got := s.serve(1, "c")
				if got[0] != p1.Candidates[0].Backend {
					t.Fatalf("request %d went to %s, the preview said %s", i, got[0], p1.Candidates[0].Backend)
				}
			}
			if total := s.ups[0].count() + s.ups[1].count() + s.ups[2].count() + s.ups[3].count(); total != 9 {
				t.Fatalf("%d upstream calls, want 9: previews must not call", total)
			}
		})
	}
}

// last is the latest request's trace.
func (s *sel) last() llm.Trace {
	s.t.Helper()
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if len(s.rec.traces) == 0 {
		s.t.Fatal("no trace recorded")
	}
	return s.rec.traces[len(s.rec.traces)-1]
}

// TestLeastLatencyTiesGoToTheIdleBackend: two backends equally fast, one
// busy with a call in flight: the idle one goes first.
func TestLeastLatencyTiesGoToTheIdleBackend(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "least_latency"}, provider{tier: tier.Free}, provider{tier: tier.Free})
	for range 3 {
		s.serve(1, "p0/m")
		s.serve(1, "p1/m")
	}
	if d := s.r.Preview(s.req("c")); d.Candidates[0].Backend != "p0/m" {
		t.Fatalf("preview = %+v, want the listed order between equals", d.Candidates)
	}
	// p0 is busy: a call to it is in flight while the preview ranks.
	release := make(chan struct{})
	entered := make(chan struct{})
	s.ups[0].block(entered, release)
	go s.r.Complete(context.Background(), s.req("p0/m"))
	<-entered
	d := s.r.Preview(s.req("c"))
	close(release)
	if d.Candidates[0].Backend != "p1/m" {
		t.Fatalf("preview with p0 busy = %+v, want the idle p1 first", d.Candidates)
	}
	if d := s.r.Preview(s.req("nope")); d.Error == "" || !strings.Contains(d.Error, "does not exist") {
		t.Fatalf("preview of an unknown name = %+v", d)
	}
}
