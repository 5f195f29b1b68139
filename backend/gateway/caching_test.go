package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/llm"
)

// cachingView reads GET /api/caching until ready accepts it, since the
// request log writes its batches a moment after the requests.
func (e *env) cachingView(query string, ready func(gateway.CachingView) bool) gateway.CachingView {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := e.do("GET", "/api/caching"+query, "", nil)
		if r.status != http.StatusOK {
			e.t.Fatalf("GET /api/caching%s: %d %s", query, r.status, r.body)
		}
		var v gateway.CachingView
		if err := json.Unmarshal(r.body, &v); err != nil {
			e.t.Fatalf("GET /api/caching: %v: %s", err, r.body)
		}
		if ready(v) || time.Now().After(deadline) {
			return v
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCachingView(t *testing.T) {
	e := newEnv(t, nil)
	// Three requests a/ma serves with 40 of their prompt tokens read from
	// the provider's cache.
	e.up.Set("ma", fakeupstream.Behavior{CachedTokens: 40})
	for range 3 {
		if r := e.post("/v1/chat/completions", chat("main", false)); r.status != http.StatusOK {
			t.Fatalf("chat: %d %s", r.status, r.body)
		}
	}
	// A session of chain code whose turns, a minute apart, keep moving
	// between two backends, and a response-cache hit.
	now := e.clock.Now()
	for i := range 12 {
		e.g.RecordTrace(llm.Trace{ID: fmt.Sprintf("turn-%d", i), Start: now.Add(time.Duration(i-20) * time.Minute), Endpoint: "chat",
			Dialect: llm.DialectAnthropic, Chain: "code", Backend: []string{"b/mb", "c/mc"}[i/2%2], Status: 200, Class: llm.OK,
			Session: "0123456789abcdef", Saved: 0.5, Usage: llm.Usage{PromptTokens: 1000, CacheReadTokens: 600}})
	}
	e.g.RecordTrace(llm.Trace{ID: "hit", Start: now.Add(-time.Minute), Endpoint: "chat", Chain: "main", Status: 200, Class: llm.OK,
		Cache: llm.CacheHit, Saved: 0.25})

	v := e.cachingView("", func(v gateway.CachingView) bool {
		return len(v.Backends) == 3 && len(v.Warnings) == 1 && v.Response.Hits == 1
	})
	if v.Window != "24h0m0s" || !v.To.Equal(v.From.Add(24*time.Hour)) {
		t.Errorf("window %q from %v to %v, want the last 24 h", v.Window, v.From, v.To)
	}
	var ma *struct{ requests, prompt, cached int64 }
	for _, b := range v.Backends {
		if b.Backend == "a/ma" {
			ma = &struct{ requests, prompt, cached int64 }{int64(b.Requests), b.PromptTokens, b.CachedTokens}
		}
	}
	if ma == nil || ma.requests != 3 || ma.prompt == 0 || ma.cached != 3*40 {
		t.Errorf("a/ma = %+v in %+v, want 3 requests with 40 cached tokens each", ma, v.Backends)
	}
	if len(v.Sessions) != 1 || v.Sessions[0].Turns != 12 || v.Sessions[0].HitShare != 0.6 || v.Sessions[0].Saved != 6 {
		t.Errorf("sessions = %+v", v.Sessions)
	}
	if v.Response.Hits != 1 || v.Response.HitRate != 1 || v.Response.Saved != 0.25 {
		t.Errorf("response cache = %+v", v.Response)
	}
	// Of the 11 turns after the first, turns 2, 4, 6, 8 and 10 changed
	// backend.
	want := "chain code's routing keeps breaking warm prompt caches: 5 of 11 session turns changed backend"
	if len(v.Warnings) != 1 || v.Warnings[0].Message != want || v.Warnings[0].Chain != "code" {
		t.Errorf("warnings = %+v, want %q", v.Warnings, want)
	}
	if v.Store != nil {
		t.Errorf("store = %+v without a response cache", v.Store)
	}

	// A window of ten minutes holds the session's last turn only.
	v = e.cachingView("?window=10m", func(gateway.CachingView) bool { return true })
	if v.Window != "10m0s" || len(v.Sessions) != 1 || v.Sessions[0].Turns != 1 {
		t.Errorf("ten minutes: window %q sessions %+v", v.Window, v.Sessions)
	}

	for _, bad := range []string{"0s", "31d", "fortnight", "-1h", "30s"} {
		r := e.do("GET", "/api/caching?window="+bad, "", nil)
		if r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(), "window must be a duration from 1m to 30d") {
			t.Errorf("window=%s: %d %s", bad, r.status, r.body)
		}
	}
	// Like every admin route, it needs a dashboard session.
	resp, err := http.Get(e.base + "/api/caching")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a session: %d", resp.StatusCode)
	}
}

// TestCachingWarmWindowPerProvider checks that a turn counts as following
// a warm cache for as long as the provider that served the turn before it
// keeps its cache: ten minutes apart is cold by default and warm on
// providers that keep their cache for an hour.
func TestCachingWarmWindowPerProvider(t *testing.T) {
	for _, c := range []struct {
		name string
		ttl  time.Duration
		warn bool
	}{{"default lifetime", 0, false}, {"an hour's lifetime", time.Hour, true}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(cfg *config.Config) {
				for i := range cfg.Providers {
					cfg.Providers[i].CacheTTL = c.ttl
				}
			})
			now := e.clock.Now()
			for i := range 12 {
				e.g.RecordTrace(llm.Trace{ID: fmt.Sprintf("turn-%d", i), Start: now.Add(time.Duration(i-12) * 10 * time.Minute), Endpoint: "chat",
					Dialect: llm.DialectAnthropic, Chain: "code", Backend: []string{"b/mb", "c/mc"}[i%2], Status: 200, Class: llm.OK,
					Session: "0123456789abcdef", Usage: llm.Usage{PromptTokens: 1000}})
			}
			v := e.cachingView("", func(v gateway.CachingView) bool { return len(v.Sessions) == 1 && v.Sessions[0].Turns == 12 })
			if got := len(v.Warnings) == 1; got != c.warn {
				t.Errorf("warnings = %+v, want a warning: %v", v.Warnings, c.warn)
			}
		})
	}
}
