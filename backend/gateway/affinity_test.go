package gateway_test

import (
	"context"
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
