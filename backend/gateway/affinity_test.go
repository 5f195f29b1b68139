package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/llm"
	"freelane/backend/protocol/openai"
)

// TestSessionStaysForItsProvidersCacheTTL: through the real gateway, a
// session's turns stay on the backend that served the first one for the
// provider's configured cache_ttl, though the chain takes turns; after it
// the chain's strategy places the session again. A provider without
// cache_ttl takes its catalog entry's, else the router's default.
func TestSessionStaysForItsProvidersCacheTTL(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Providers[0].CacheTTL = time.Minute
		c.Providers[1].Catalog = "openai"
		c.Chains[0].Strategy = "round_robin"
	})
	r := e.g.Router()
	ttls := map[string]time.Duration{}
	for _, b := range r.Table().Backends() {
		ttls[b.Name()] = b.CacheTTL
	}
	if ttls["a/ma"] != time.Minute || ttls["b/mb"] != 5*time.Minute || ttls["c/mc"] != 0 {
		t.Fatalf("cache lifetimes = %v, want a's configured 1m, b's catalog 5m (openai) and c's default", ttls)
	}
	turn := func(session string) string {
		t.Helper()
		req, err := openai.ParseRequest(llm.Chat, []byte(chat("main", false)))
		if err != nil {
			t.Fatal(err)
		}
		req.Session = session
		res, f := r.Complete(context.Background(), req)
		if f != nil {
			t.Fatalf("turn failed: %d %s", f.Status, f.Message)
		}
		return res.Backend.Name()
	}
	if b := turn("s"); b != "a/ma" {
		t.Fatalf("first turn went to %s, want round robin's first, a/ma", b)
	}
	for range 3 {
		e.clock.Advance(45 * time.Second)
		if b := turn("s"); b != "a/ma" {
			t.Fatalf("a turn 45s after the last went to %s, want a/ma, where the cache is warm", b)
		}
	}
	if cb := r.CacheBreaks()["main"]; cb.Kept != 3 || cb.Broken != 0 {
		t.Fatalf("cache breaks = %+v", cb)
	}
	e.clock.Advance(time.Minute + time.Second)
	if b := turn("s"); b == "a/ma" {
		t.Fatal("after a's cache_ttl the session stayed on a/ma; round robin's turn was another backend")
	}
	// A new configuration keeps the session where it is.
	e.clock.Advance(time.Second)
	home := turn("s")
	before := r.Table()
	if err := e.g.Control().CreateChain(context.Background(), "other", []string{"b/mb"}, control.ChainRouting{}); err != nil {
		t.Fatal(err)
	}
	if r.Table() == before {
		t.Fatal("adding a chain did not install a new routing table")
	}
	if b := turn("s"); b != home {
		t.Fatalf("after a reload the session went to %s, want %s", b, home)
	}
}

// TestClaudeCodeSessionStaysOverHTTP: end to end, the session a Claude
// Code client names in metadata.user_id keeps every turn on one backend
// of a round-robin chain, while requests that name no session take
// turns; a second session is placed by the strategy.
func TestClaudeCodeSessionStaysOverHTTP(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Chains[0].Strategy = "round_robin" })
	served := func(userID string, n int) string {
		t.Helper()
		r := e.postHeaders("/v1/messages", anthropicTurn("main", userID, n), map[string]string{"anthropic-version": "2023-06-01"})
		if r.status != http.StatusOK {
			t.Fatalf("turn %d: %d %s", n, r.status, r.body)
		}
		return r.header.Get("X-FreeLane-Backend")
	}
	home := served(claudeUserID("9c1d7e52-0b7e-4b9b-a1d2-3f6c1b2a4e01"), 0)
	for n := 1; n < 6; n++ {
		if b := served(claudeUserID("9c1d7e52-0b7e-4b9b-a1d2-3f6c1b2a4e01"), n); b != home {
			t.Fatalf("turn %d of the session went to %s, want %s where its cache is warm", n, b, home)
		}
	}
	seen := map[string]bool{}
	for n := range 3 {
		seen[served("", n)] = true
	}
	if len(seen) < 2 {
		t.Fatalf("requests without a session all went to %v; round robin should spread them", seen)
	}
	if cb := e.g.Router().CacheBreaks()["main"]; cb.Kept != 5 || cb.Broken != 0 {
		t.Fatalf("cache breaks = %+v, want 5 kept, none broken", cb)
	}
}
