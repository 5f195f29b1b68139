package router_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"freelane/backend/llm"
	"freelane/backend/router"
	"freelane/backend/tier"
)

// turn sends one request of the session to model and returns who served it.
func (s *sel) turn(model, session string) string {
	s.t.Helper()
	r := s.req(model)
	r.Session = session
	res, f := s.r.Complete(context.Background(), r)
	if f != nil {
		s.t.Fatalf("request failed: %d %s", f.Status, f.Message)
	}
	return res.Backend.Name()
}

func (s *sel) turns(n int, model, session string) []string {
	s.t.Helper()
	var out []string
	for range n {
		out = append(out, s.turn(model, session))
	}
	return out
}

// TestSessionKeptOnItsBackendAndKey: under round robin and a pool of keys,
// which rotate every request, a session's turns all go to the backend and
// key that served its first one.
func TestSessionKeptOnItsBackendAndKey(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "round_robin"}, provider{tier: tier.Free, keys: 2}, provider{tier: tier.Free}, provider{tier: tier.Free})
	// Without a session the requests rotate over the providers and keys.
	if got := counts(s.serve(6, "c")); len(got) < 3 {
		t.Fatalf("without a session the requests went to %v, want them spread", got)
	}
	got := s.turns(6, "c", "a1")
	for _, b := range got {
		if b != got[0] {
			t.Fatalf("the session's turns went to %v, want one backend and key", got)
		}
	}
	d := s.last().Decision
	if d.Affinity != "kept" || !strings.Contains(d.AffinityNote, "cache warm on "+got[0]) || d.Candidates[0].Backend != got[0] ||
		!strings.Contains(d.Candidates[0].Reason, "prompt cache is warm here") {
		t.Fatalf("decision = %+v", d)
	}
	// A pooled session keeps its key too: a second session lands on the
	// pool and stays on the key it got.
	var pooled string
	for i := 0; pooled == "" && i < 6; i++ {
		if b := s.turn("c", "pool"+string(rune('a'+i))); strings.HasPrefix(b, "p0@") {
			pooled = "pool" + string(rune('a'+i))
		}
	}
	if pooled == "" {
		t.Fatal("no session landed on the key pool")
	}
	keys := counts(s.turns(5, "c", pooled))
	if len(keys) != 1 {
		t.Fatalf("a pooled session went to %v, want one key", keys)
	}
	if cb := s.r.CacheBreaks()["c"]; cb.Kept < 9 || cb.Broken != 0 {
		t.Fatalf("cache breaks = %+v, want every turn after the first kept", cb)
	}
	// A new table (a configuration reload) keeps the session where it is.
	s.r.Swap(router.Build(s.spec))
	if b := s.turn("c", "a1"); b != got[0] {
		t.Fatalf("after a reload the session went to %s, want %s", b, got[0])
	}
}

// TestSessionWarmUntilItsCacheLifetime: a session stays while its
// provider's cache lifetime has not passed since its last turn; after
// that the strategy places it again.
func TestSessionWarmUntilItsCacheLifetime(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "round_robin"}, provider{tier: tier.Free, cacheTTL: time.Minute},
		provider{tier: tier.Free, cacheTTL: time.Minute}, provider{tier: tier.Free, cacheTTL: time.Minute})
	if b := s.turn("c", "s"); b != "p0/m" {
		t.Fatalf("first turn went to %s, want p0/m (round robin's first)", b)
	}
	if d := s.last().Decision; d.Affinity != "new" {
		t.Fatalf("first turn's affinity = %q, want new", d.Affinity)
	}
	// Each turn within the minute renews the lifetime.
	for range 3 {
		s.clk.Advance(50 * time.Second)
		if b := s.turn("c", "s"); b != "p0/m" {
			t.Fatalf("a turn 50s after the last went to %s, want p0/m", b)
		}
	}
	s.clk.Advance(time.Minute + time.Second)
	b := s.turn("c", "s")
	if b == "p0/m" {
		t.Fatalf("after the cache lifetime passed the session stayed on %s; round robin's turn is another backend", b)
	}
	if d := s.last().Decision; d.Affinity != "new" {
		t.Fatalf("affinity after expiry = %q, want new", d.Affinity)
	}
	// The default lifetime, for a provider that sets none, is five minutes.
	s2 := newSel(t, router.ChainSpec{Strategy: "round_robin"}, provider{tier: tier.Free}, provider{tier: tier.Free})
	first := s2.turn("c", "s")
	s2.clk.Advance(router.DefaultCacheTTL - time.Second)
	if b := s2.turn("c", "s"); b != first {
		t.Fatalf("within five minutes the session went to %s, want %s", b, first)
	}
	s2.clk.Advance(router.DefaultCacheTTL)
	s2.turn("c", "s")
	if d := s2.last().Decision; d.Affinity != "new" {
		t.Fatalf("affinity after five idle minutes = %q, want new", d.Affinity)
	}
}

// TestSessionMovesWhenItsBackendFails: failover still moves a session;
// the backend that served becomes its home, and it stays there once the
// old one is back.
func TestSessionMovesWhenItsBackendFails(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "round_robin"}, provider{tier: tier.Free}, provider{tier: tier.Free}, provider{tier: tier.Free})
	home := s.turn("c", "s")
	if home != "p0/m" {
		t.Fatalf("first turn went to %s", home)
	}
	s.ups[0].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	moved := s.turn("c", "s")
	if moved == home {
		t.Fatalf("served by the failing %s", moved)
	}
	tr := s.last()
	if d := tr.Decision; d.Affinity != "moved" || !strings.Contains(d.AffinityNote, "p0/m failed") {
		t.Fatalf("decision after the failover = %q %q", d.Affinity, d.AffinityNote)
	}
	if router.AttemptsHeader(tr.Attempts) != "p0/m=503; "+moved+"=ok" {
		t.Fatalf("attempts = %s, want the warm backend tried first", router.AttemptsHeader(tr.Attempts))
	}
	s.ups[0].set(0, nil)
	for _, b := range s.turns(4, "c", "s") {
		if b != moved {
			t.Fatalf("after the move the session went to %s, want its new home %s", b, moved)
		}
	}
	cb := s.r.CacheBreaks()["c"]
	if cb.Broken != 1 || cb.Failed != 1 || cb.Unavailable != 0 || cb.Kept != 4 {
		t.Fatalf("cache breaks = %+v, want one broken by a failure and four kept", cb)
	}
}

// TestSessionMovesWhenItsBackendCannotTakeTheRequest: a warm backend the
// request cannot use (here, its context is too small) is passed by; the
// move is counted and said why.
func TestSessionMovesWhenItsBackendCannotTakeTheRequest(t *testing.T) {
	s := newSel(t, router.ChainSpec{}, provider{tier: tier.Free, ctx: 50}, provider{tier: tier.Free, ctx: 100000})
	if b := s.turn("c", "s"); b != "p0/m" {
		t.Fatalf("first turn went to %s", b)
	}
	r := s.req("c")
	r.Session = "s"
	r.MaxTokens = 100
	res, f := s.r.Complete(context.Background(), r)
	if f != nil || res.Backend.Name() != "p1/m" {
		t.Fatalf("long turn = %v %v, want p1/m", res, f)
	}
	if d := s.last().Decision; d.Affinity != "moved" || !strings.Contains(d.AffinityNote, "p0/m is unavailable: needs about") {
		t.Fatalf("decision = %q %q", d.Affinity, d.AffinityNote)
	}
	if cb := s.r.CacheBreaks()["c"]; cb.Broken != 1 || cb.Unavailable != 1 {
		t.Fatalf("cache breaks = %+v", cb)
	}
}

// TestSessionsAreSpreadByTheStrategy: two new sessions are placed by
// round robin, and then each stays where it was placed.
func TestSessionsAreSpreadByTheStrategy(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "round_robin"}, provider{tier: tier.Free}, provider{tier: tier.Free}, provider{tier: tier.Free})
	a, b := s.turn("c", "a"), s.turn("c", "b")
	if a == b {
		t.Fatalf("both sessions went to %s, want round robin to spread them", a)
	}
	for range 4 {
		if got := s.turn("c", "a"); got != a {
			t.Fatalf("session a went to %s, want %s", got, a)
		}
		if got := s.turn("c", "b"); got != b {
			t.Fatalf("session b went to %s, want %s", got, b)
		}
	}
}

// TestWarmCacheCostsInTheCostStrategy: for a session warm on one backend,
// another would have to write the provider's cache anew, so the cost
// strategy prices its whole prompt as input.
func TestWarmCacheCostsInTheCostStrategy(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "cost"},
		provider{tier: tier.Own, price: router.Price{Known: true, Input: 3, CacheRead: 0.3, Output: 10}},
		provider{tier: tier.Own, price: router.Price{Known: true, Input: 2.5, CacheRead: 0.25, Output: 10}})
	// Both providers' caches serve 9 of every 10 prompt tokens.
	for i := range s.ups {
		s.ups[i].cached = 9
	}
	for range 5 {
		s.serve(1, "p0/m")
		s.serve(1, "p1/m")
	}
	cost := func(d *llm.Decision, backend string) float64 {
		for _, c := range d.Candidates {
			if c.Backend == backend && c.Score != nil {
				return c.Score.ExpectedCost
			}
		}
		t.Fatalf("no score for %s in %+v", backend, d.Candidates)
		return 0
	}
	r := s.req("c")
	r.Session = "s"
	d := s.r.Preview(r)
	if d.Candidates[0].Backend != "p1/m" || d.Affinity != "new" {
		t.Fatalf("a new session's order = %+v, want the cheaper p1 first", d.Candidates)
	}
	p1Cold := cost(d, "p1/m")
	// The session is served by p0 (p1 fails this once): its cache is warm
	// there now.
	s.ups[1].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	if b := s.turn("c", "s"); b != "p0/m" {
		t.Fatalf("served by %s", b)
	}
	s.ups[1].set(0, nil)
	d = s.r.Preview(r)
	if d.Candidates[0].Backend != "p0/m" || d.Affinity != "kept" {
		t.Fatalf("the warm session's order = %+v, want its warm p0 first", d.Candidates)
	}
	p0, p1 := cost(d, "p0/m"), cost(d, "p1/m")
	if p1 <= p1Cold || p1 <= p0 {
		t.Fatalf("expected costs: p0 %v, p1 %v (p1 %v for a new session); want p1 dearer for the warm session, which would write its cache anew",
			p0, p1, p1Cold)
	}
	// Another session is ranked by price as before.
	r2 := s.req("c")
	r2.Session = "other"
	if d := s.r.Preview(r2); d.Candidates[0].Backend != "p1/m" {
		t.Fatalf("another session's order = %+v", d.Candidates)
	}
}

// TestPinThatExcludesTheWarmBackendRanksNormally: a shortcut that leaves
// the warm backend out ranks the request as the strategy does.
func TestShortcutThatExcludesTheWarmBackendRanksNormally(t *testing.T) {
	s := newSel(t, router.ChainSpec{}, provider{tier: tier.Own, price: router.Price{Known: true, Input: 1}}, provider{tier: tier.Free})
	if b := s.turn("c", "s"); b != "p0/m" {
		t.Fatalf("first turn went to %s", b)
	}
	if b := s.turn("c:free", "s"); b != "p1/m" {
		t.Fatalf(":free went to %s, want the free p1", b)
	}
	if s.ups[0].count() != 1 {
		t.Fatalf("the paid backend was called %d times, want once", s.ups[0].count())
	}
}

// TestWarmBackendLeadsOnlyItsTier: a session that failed over to a later
// priority tier goes back to the earlier tier once it serves again, since
// tiers are the user's order (a paid fallback, say); within the tier its
// warm backend goes first.
func TestWarmBackendLeadsOnlyItsTier(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "round_robin", Priority: map[llm.BackendID]int{{Provider: "p1", Model: "m"}: 1, {Provider: "p2", Model: "m"}: 1}},
		provider{tier: tier.Free}, provider{tier: tier.Free}, provider{tier: tier.Free})
	s.ups[0].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	fallback := s.turn("c", "s")
	if fallback == "p0/m" {
		t.Fatal("served by the failing p0")
	}
	// Within tier 1 the session stays on its backend, though round robin
	// takes turns there.
	for range 3 {
		if b := s.turn("c", "s"); b != fallback {
			t.Fatalf("the session went to %s within tier 1, want %s", b, fallback)
		}
	}
	s.ups[0].set(0, nil)
	if b := s.turn("c", "s"); b != "p0/m" {
		t.Fatalf("with tier 0 serving again the session went to %s, want p0/m", b)
	}
}

// TestManualGearKeepsTheListedOrderForSessions: the manual gear is the
// chain exactly as listed, sessions or not.
func TestManualGearKeepsTheListedOrderForSessions(t *testing.T) {
	s := newSel(t, router.ChainSpec{Gear: "manual"}, provider{tier: tier.Free}, provider{tier: tier.Free})
	s.ups[0].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	if b := s.turn("c", "s"); b != "p1/m" {
		t.Fatalf("served by %s", b)
	}
	s.ups[0].set(0, nil)
	if b := s.turn("c", "s"); b != "p0/m" {
		t.Fatalf("in the manual gear the session went to %s, want the first listed, p0/m", b)
	}
	if d := s.last().Decision; d.Affinity != "" {
		t.Fatalf("affinity in the manual gear = %q, want none", d.Affinity)
	}
}

// TestWarmCacheCostsInTheAutoScore: the auto strategy's cost part sees
// the same price of leaving a warm cache.
func TestWarmCacheCostsInTheAutoScore(t *testing.T) {
	s := newSel(t, router.ChainSpec{Strategy: "auto"},
		provider{tier: tier.Own, price: router.Price{Known: true, Input: 3, CacheRead: 0.3, Output: 10}},
		provider{tier: tier.Own, price: router.Price{Known: true, Input: 2.5, CacheRead: 0.25, Output: 10}})
	for i := range s.ups {
		s.ups[i].cached = 9
	}
	for range 5 {
		s.serve(1, "p0/m")
		s.serve(1, "p1/m")
	}
	costPart := func(d *llm.Decision, backend string) float64 {
		for _, c := range d.Candidates {
			if c.Backend == backend && c.Score != nil {
				return c.Score.Cost
			}
		}
		t.Fatalf("no score for %s in %+v (fallback %q)", backend, d.Candidates, d.Fallback)
		return 0
	}
	r := s.req("c")
	r.Session = "s"
	cold := costPart(s.r.Preview(r), "p1/m")
	s.ups[1].set(0, &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503"})
	if b := s.turn("c", "s"); b != "p0/m" {
		t.Fatalf("served by %s", b)
	}
	s.ups[1].set(0, nil)
	d := s.r.Preview(r)
	if warm := costPart(d, "p1/m"); warm >= cold || warm >= costPart(d, "p0/m") {
		t.Fatalf("p1's cost part: %v for a new session, %v for one warm on p0 (p0's %v); want it lower for the warm session",
			cold, warm, costPart(d, "p0/m"))
	}
}
