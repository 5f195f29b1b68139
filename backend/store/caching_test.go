package store

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"freelane/backend/llm"
)

// turn is one request of the caching fixture.
func turn(id string, at time.Duration, session, chain, backend string, prompt, cached int, saved float64) llm.Trace {
	return llm.Trace{ID: id, Start: baseTime.Add(at), Endpoint: "chat", Dialect: llm.DialectAnthropic, Chain: chain, Backend: backend,
		Status: 200, Class: llm.OK, Session: session, Saved: saved,
		Usage: llm.Usage{PromptTokens: prompt, CompletionTokens: 10, TotalTokens: prompt + 10, CacheReadTokens: cached}}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestCachingReport(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	const claude, gpt, llama = "anthropic/claude-sonnet-4-5", "openai/gpt-5", "groq/llama-3.3-70b"
	traces := []llm.Trace{
		// Session a: four turns a minute apart on claude, the fifth moved
		// to gpt while claude's cache was warm, and a failed turn between
		// that served nothing.
		turn("a1", 1*time.Minute, "aaaaaaaaaaaaaaaa", "code", claude, 1000, 0, 0),
		turn("a2", 2*time.Minute, "aaaaaaaaaaaaaaaa", "code", claude, 1100, 800, 0.01),
		turn("a3", 3*time.Minute, "aaaaaaaaaaaaaaaa", "code", claude, 1200, 900, 0.02),
		turn("a4", 4*time.Minute, "aaaaaaaaaaaaaaaa", "code", claude, 1300, 1000, 0.03),
		turn("a5", 5*time.Minute, "aaaaaaaaaaaaaaaa", "code", gpt, 1400, 0, 0),
		// Session b: its second turn came after the cache went cold, so
		// changing backend broke nothing and it is no counted turn.
		turn("b1", 10*time.Minute, "bbbbbbbbbbbbbbbb", "code", gpt, 500, 0, 0),
		turn("b2", 20*time.Minute, "bbbbbbbbbbbbbbbb", "code", claude, 600, 0, 0),
		// No session.
		turn("n1", 30*time.Minute, "", "chat", llama, 700, 0, 0),
		// Response-cache outcomes: the hit called no backend although it
		// names the one that made the answer first.
		turn("h1", 31*time.Minute, "", "chat", llama, 50, 0, 0.05),
		turn("m1", 32*time.Minute, "", "chat", llama, 50, 0, 0),
		turn("m2", 33*time.Minute, "", "chat", llama, 50, 0, 0),
		turn("y1", 34*time.Minute, "", "chat", llama, 50, 0, 0),
		turn("r1", 35*time.Minute, "", "chat", llama, 50, 0, 0),
		// Before the window.
		turn("old", -time.Minute, "aaaaaaaaaaaaaaaa", "code", gpt, 9999, 9999, 9),
	}
	traces[0].Dialect = llm.DialectOpenAI
	failed := turn("a4x", 4*time.Minute+30*time.Second, "aaaaaaaaaaaaaaaa", "code", "", 0, 0, 0)
	failed.Class, failed.Status = llm.RateLimited, 429
	traces = append(traces, failed)
	for id, c := range map[string]llm.CacheOutcome{"h1": llm.CacheHit, "m1": llm.CacheMiss, "m2": llm.CacheMiss, "y1": llm.CacheBypassed, "r1": llm.CacheRefreshed} {
		for i := range traces {
			if traces[i].ID == id {
				traces[i].Cache = c
			}
		}
	}
	if _, err := db.writeRequests(ctx, traces, true); err != nil {
		t.Fatal(err)
	}

	rep, err := db.Caching(ctx, CachingQuery{From: baseTime, To: baseTime.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}

	wantBackends := []BackendCaching{
		{Backend: claude, Requests: 5, PromptTokens: 1000 + 1100 + 1200 + 1300 + 600, CachedTokens: 2700, Saved: 0.06},
		{Backend: gpt, Requests: 2, PromptTokens: 1900},
		{Backend: llama, Requests: 5, PromptTokens: 700 + 4*50},
	}
	if len(rep.Backends) != len(wantBackends) {
		t.Fatalf("backends = %+v, want %+v", rep.Backends, wantBackends)
	}
	for i, w := range wantBackends {
		g := rep.Backends[i]
		if g.Backend != w.Backend || g.Requests != w.Requests || g.PromptTokens != w.PromptTokens || g.CachedTokens != w.CachedTokens || !near(g.Saved, w.Saved) {
			t.Errorf("backend %d = %+v, want %+v", i, g, w)
		}
		if !near(g.HitShare, float64(w.CachedTokens)/float64(w.PromptTokens)) {
			t.Errorf("backend %s hit share = %v, want %v", g.Backend, g.HitShare, float64(w.CachedTokens)/float64(w.PromptTokens))
		}
	}

	if len(rep.Sessions) != 2 {
		t.Fatalf("sessions = %+v, want b then a", rep.Sessions)
	}
	b, a := rep.Sessions[0], rep.Sessions[1]
	if b.Session != "bbbbbbbbbbbbbbbb" || b.Turns != 2 || !reflect.DeepEqual(b.Backends, []string{claude, gpt}) || !b.LastSeen.Equal(baseTime.Add(20*time.Minute)) {
		t.Errorf("session b = %+v", b)
	}
	if a.Session != "aaaaaaaaaaaaaaaa" || a.Turns != 6 || a.PromptTokens != 6000 || a.CachedTokens != 2700 || !near(a.Saved, 0.06) ||
		!near(a.HitShare, 0.45) || a.Dialect != llm.DialectAnthropic || a.Chain != "code" || !reflect.DeepEqual(a.Backends, []string{claude, gpt}) ||
		!a.LastSeen.Equal(baseTime.Add(5*time.Minute)) {
		t.Errorf("session a = %+v", a)
	}

	wantResp := ResponseCacheTotals{Hits: 1, Misses: 2, Bypasses: 1, Refreshes: 1, HitRate: 0.25, Saved: 0.05}
	if g := rep.Response; g.Hits != 1 || g.Misses != 2 || g.Bypasses != 1 || g.Refreshes != 1 || !near(g.HitRate, 0.25) || !near(g.Saved, 0.05) {
		t.Errorf("response cache = %+v, want %+v", g, wantResp)
	}

	// Session a's turns 2 to 5 followed a warm turn (the failed one served
	// nothing and is skipped); the fifth changed backend. Session b's
	// second turn followed a cold one.
	if want := []ChainTurns{{Chain: "code", Turns: 4, Changed: 1}}; !reflect.DeepEqual(rep.Chains, want) {
		t.Errorf("chains = %+v, want %+v", rep.Chains, want)
	}

	// A longer cache lifetime makes session b's second turn a warm one
	// that changed backend.
	rep, err = db.Caching(ctx, CachingQuery{From: baseTime, To: baseTime.Add(time.Hour), WarmFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if want := []ChainTurns{{Chain: "code", Turns: 5, Changed: 2}}; !reflect.DeepEqual(rep.Chains, want) {
		t.Errorf("chains with an hour's cache = %+v, want %+v", rep.Chains, want)
	}

	// So does an hour's lifetime for the provider of the backend that
	// served session b's first turn, and only for it: a lifetime for
	// another provider changes nothing.
	for _, c := range []struct {
		warm map[string]time.Duration
		want []ChainTurns
	}{
		{map[string]time.Duration{"openai": time.Hour}, []ChainTurns{{Chain: "code", Turns: 5, Changed: 2}}},
		{map[string]time.Duration{"anthropic": time.Hour}, []ChainTurns{{Chain: "code", Turns: 4, Changed: 1}}},
		// A shorter lifetime for claude's provider makes session a's
		// minute-apart turns cold.
		{map[string]time.Duration{"anthropic": 30 * time.Second}, nil},
	} {
		rep, err = db.Caching(ctx, CachingQuery{From: baseTime, To: baseTime.Add(time.Hour), WarmByProvider: c.warm})
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.Chains; !(len(got) == 0 && len(c.want) == 0) && !reflect.DeepEqual(got, c.want) {
			t.Errorf("chains with cache lifetimes %v = %+v, want %+v", c.warm, got, c.want)
		}
	}

	// The session list keeps the latest.
	rep, err = db.Caching(ctx, CachingQuery{From: baseTime, To: baseTime.Add(time.Hour), Sessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 1 || rep.Sessions[0].Session != "bbbbbbbbbbbbbbbb" {
		t.Errorf("one session = %+v, want b", rep.Sessions)
	}

	if _, err := db.Caching(ctx, CachingQuery{From: baseTime, To: baseTime}); err == nil {
		t.Error("an empty window was accepted")
	}
}

// TestCachingEmpty answers empty lists, not nulls, for a log without
// requests.
func TestCachingEmpty(t *testing.T) {
	rep, err := openTestDB(t).Caching(context.Background(), CachingQuery{From: baseTime, To: baseTime.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Backends == nil || rep.Sessions == nil || rep.Chains == nil || rep.Response != (ResponseCacheTotals{}) {
		t.Errorf("empty report = %+v", rep)
	}
}

// TestSessionColumnKeepsSixteenDigits stores no more of a session key
// than Trace.Session is meant to carry.
func TestSessionColumnKeepsSixteenDigits(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	tr := turn("long", 0, "0123456789abcdef0123456789abcdef", "code", "openai/gpt-5", 10, 0, 0)
	if _, err := db.writeRequests(ctx, []llm.Trace{tr}, false); err != nil {
		t.Fatal(err)
	}
	got, _, err := db.RequestByID(ctx, "long")
	if err != nil || got.Session != "0123456789abcdef" {
		t.Fatalf("session = %q (%v), want the first 16 digits", got.Session, err)
	}
}

// cachingRows writes n requests over the last day in batches: a tenth
// without a session, the rest in sessions of 20 turns, over six backends
// and three chains, a tenth of them with a response-cache outcome.
func cachingRows(tb testing.TB, db *DB, n int, end time.Time) {
	tb.Helper()
	ctx := context.Background()
	backends := []string{"anthropic/claude-sonnet-4-5", "openai/gpt-5", "groq/llama-3.3-70b", "cerebras/qwen-3-32b", "gemini/gemini-2.5-pro", "openrouter/deepseek-r1"}
	step := 24 * time.Hour / time.Duration(n)
	batch := make([]llm.Trace, 0, 1000)
	for i := range n {
		session := ""
		if i%10 != 0 {
			session = fmt.Sprintf("%016x", i/20)
		}
		tr := llm.Trace{ID: fmt.Sprintf("c%07d", i), Start: end.Add(-24*time.Hour + time.Duration(i)*step), Endpoint: "chat",
			Dialect: llm.DialectAnthropic, Chain: []string{"code", "chat", "auto"}[i/20%3], Backend: backends[(i/20+i/97)%len(backends)],
			Status: 200, Class: llm.OK, Session: session, Saved: float64(i%7) / 1000,
			Usage:    llm.Usage{PromptTokens: 2000 + i%500, CompletionTokens: 100, TotalTokens: 2100 + i%500, CacheReadTokens: 1500},
			Attempts: []llm.Attempt{{Backend: backends[i%len(backends)], Class: llm.OK, PromptTokens: 2000, CompletionTokens: 100}}}
		if i%10 == 5 {
			tr.Cache = []llm.CacheOutcome{llm.CacheHit, llm.CacheMiss, llm.CacheBypassed, llm.CacheRefreshed}[i/10%4]
		}
		batch = append(batch, tr)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := db.writeRequests(ctx, batch, true); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// TestCachingHundredThousandRows reads the caching view of a day of
// 100,000 requests within a bound generous enough for a loaded machine;
// BenchmarkCaching measures it.
func TestCachingHundredThousandRows(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 rows")
	}
	db := openTestDB(t)
	end := baseTime.Add(48 * time.Hour)
	cachingRows(t, db, 100_000, end)
	// Planner statistics, as PRAGMA optimize keeps them on a database in use.
	if _, err := db.SQL().Exec("ANALYZE"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var rep CachingReport
	var err error
	began := time.Now()
	rep, err = db.Caching(ctx, CachingQuery{From: end.Add(-24 * time.Hour), To: end})
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("caching view of 100,000 requests: %v", took)
	if len(rep.Backends) != 6 || len(rep.Sessions) != DefaultCachingSessions || len(rep.Chains) != 3 || rep.Response.Hits == 0 {
		t.Errorf("report = %d backends, %d sessions, %d chains, %+v", len(rep.Backends), len(rep.Sessions), len(rep.Chains), rep.Response)
	}
	if took > 5*time.Second {
		t.Errorf("the caching view of 100,000 requests took %v", took)
	}
}

func BenchmarkCaching(b *testing.B) {
	db := openTestDB(b)
	end := baseTime.Add(48 * time.Hour)
	cachingRows(b, db, 100_000, end)
	if _, err := db.SQL().Exec("ANALYZE"); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := db.Caching(ctx, CachingQuery{From: end.Add(-24 * time.Hour), To: end}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCachingSessionLeavesHitsOutOfItsShare: a response-cache hit in a
// session counts as a turn and for its savings, not in the session's
// prompt-cache share, since no provider read its prompt this time.
func TestCachingSessionLeavesHitsOutOfItsShare(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	const claude = "anthropic/claude-sonnet-4-5"
	hit := turn("s3", 3*time.Minute, "cccccccccccccccc", "code", claude, 4000, 0, 0.5)
	hit.Cache = llm.CacheHit
	traces := []llm.Trace{
		turn("s1", 1*time.Minute, "cccccccccccccccc", "code", claude, 1000, 0, 0),
		turn("s2", 2*time.Minute, "cccccccccccccccc", "code", claude, 1000, 500, 0.1),
		hit,
	}
	if _, err := db.writeRequests(ctx, traces, true); err != nil {
		t.Fatal(err)
	}
	rep, err := db.Caching(ctx, CachingQuery{From: baseTime, To: baseTime.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 1 {
		t.Fatalf("sessions = %+v", rep.Sessions)
	}
	s := rep.Sessions[0]
	if s.Turns != 3 || s.PromptTokens != 2000 || s.CachedTokens != 500 || !near(s.HitShare, 0.25) || !near(s.Saved, 0.6) {
		t.Errorf("session = %+v, want 3 turns, 500 of 2000 prompt tokens cached and 0.6 saved", s)
	}
}
