package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/llm"
)

// TestStrategiesSpreadThroughTheServer: a chain's strategy from the
// configuration file decides who serves, as a client sees it.
func TestStrategiesSpreadThroughTheServer(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Chains = append(c.Chains,
			config.Chain{Name: "turns", Backends: []string{"b/mb", "c/mc"}, Strategy: config.StrategyRoundRobin},
			config.Chain{Name: "shares", Backends: []string{"b/mb", "c/mc"}, Strategy: config.StrategyWeighted,
				Weights: map[string]int{"b/mb": 3, "c/mc": 1}},
			config.Chain{Name: "tiers", Backends: []string{"a/ma", "b/mb", "c/mc"}, Strategy: config.StrategyRoundRobin,
				Priority: map[string]int{"a/ma": 1}})
	})
	serve := func(model string, n int) map[string]int {
		t.Helper()
		got := map[string]int{}
		for range n {
			r := e.post("/v1/chat/completions", chat(model, false))
			if r.status != http.StatusOK {
				t.Fatalf("%s: %d %s", model, r.status, r.body)
			}
			got[r.header.Get("X-FreeLane-Backend")]++
		}
		return got
	}
	if got := serve("turns", 8); got["b/mb"] != 4 || got["c/mc"] != 4 {
		t.Fatalf("round robin served %v, want 4 and 4", got)
	}
	if got := serve("shares", 8); got["b/mb"] != 6 || got["c/mc"] != 2 {
		t.Fatalf("weighted 3:1 served %v, want exactly 6 and 2", got)
	}
	if got := serve("tiers", 6); got["a/ma"] != 0 || got["b/mb"] != 3 || got["c/mc"] != 3 {
		t.Fatalf("tiers served %v, want the tier-1 a/ma unused", got)
	}
	// A stream goes by the same turns.
	r := e.post("/v1/chat/completions", chat("turns", true))
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "b/mb" {
		t.Fatalf("stream: %d from %s, want b/mb's turn", r.status, r.header.Get("X-FreeLane-Backend"))
	}
	// The manual gear per request: the listed order, every time.
	for range 3 {
		r := e.postAs("/v1/chat/completions", chat("turns", false), map[string]string{"X-FreeLane-Gear": "manual"})
		if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "b/mb" {
			t.Fatalf("manual gear: %d from %s, want b/mb", r.status, r.header.Get("X-FreeLane-Backend"))
		}
	}
}

// TestSwitchThenWaitThroughTheServer: when the only backend answers 429
// with Retry-After: 1, the request waits the second and is served; with
// max_wait 0 the client gets the 429 at once, with Retry-After.
func TestSwitchThenWaitThroughTheServer(t *testing.T) {
	zero := time.Duration(0)
	e := newEnv(t, func(c *config.Config) {
		c.Chains = append(c.Chains, config.Chain{Name: "one", Backends: []string{"b/mb"}},
			config.Chain{Name: "nowait", Backends: []string{"c/mc"}, MaxWait: &zero})
	})
	limited := fakeupstream.Behavior{Status: http.StatusTooManyRequests, Headers: map[string]string{"Retry-After": "1"}}
	e.up.Set("mb", limited, fakeupstream.Behavior{})
	start := time.Now()
	r := e.post("/v1/chat/completions", chat("one", false))
	if r.status != http.StatusOK || r.attempts() != "b/mb=429; b/mb=ok" {
		t.Fatalf("got %d (%s) %s, want the second call to serve after the wait", r.status, r.attempts(), r.body)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("answered after %s, want about the announced second", waited)
	}

	e.up.Set("mc", limited)
	r = e.post("/v1/chat/completions", chat("nowait", false))
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "1" || e.up.Calls("mc") != 1 {
		t.Fatalf("max_wait 0: %d Retry-After %q after %d calls: %s", r.status, r.header.Get("Retry-After"), e.up.Calls("mc"), r.body)
	}
}

// TestFreeShortcutThroughTheServer: ":free" keeps a request on free and
// local backends and refuses a paid one outright.
func TestFreeShortcutThroughTheServer(t *testing.T) {
	e := newEnv(t, nil)
	r := e.post("/v1/chat/completions", chat("main:free", false))
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "b/mb" || e.up.Calls("ma") != 0 {
		t.Fatalf("main:free: %d from %s, %d paid calls", r.status, r.header.Get("X-FreeLane-Backend"), e.up.Calls("ma"))
	}
	if !strings.HasPrefix(r.attempts(), "a/ma=skip(unsupported)") {
		t.Fatalf("attempts %q, want the paid backend passed by", r.attempts())
	}
	r = e.post("/v1/chat/completions", chat("a/ma:free", false))
	if r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(), ":free shortcut never calls a paid one") || e.up.Calls("ma") != 0 {
		t.Fatalf("a/ma:free: %d %s after %d calls, want a 400 and no call", r.status, r.body, e.up.Calls("ma"))
	}
	r = e.post("/v1/chat/completions", chat("main:local", false))
	if r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(), ":local shortcut calls only those") {
		t.Fatalf("main:local with no local backend in the chain: %d %s", r.status, r.body)
	}
	r = e.post("/v1/chat/completions", chat("ml:local", false))
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "l/ml" {
		t.Fatalf("ml:local: %d from %s", r.status, r.header.Get("X-FreeLane-Backend"))
	}
}

// TestPreviewMatchesTheNextRequestThroughTheServer: the dashboard's route
// preview of a weighted chain names the backend the next request goes
// to, request after request, and calls nothing itself.
func TestPreviewMatchesTheNextRequestThroughTheServer(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Chains = append(c.Chains, config.Chain{Name: "turns", Backends: []string{"a/ma", "b/mb", "c/mc"},
			Strategy: config.StrategyWeighted, Weights: map[string]int{"b/mb": 2}})
	})
	calls := func() int { return e.up.Calls("ma") + e.up.Calls("mb") + e.up.Calls("mc") }
	for i := range 8 {
		before := calls()
		r := e.do("POST", "/api/route/preview", chat("turns", false), nil)
		var d llm.Decision
		if err := json.Unmarshal(r.body, &d); err != nil || r.status != http.StatusOK || len(d.Candidates) != 3 {
			t.Fatalf("preview %d: %d %s", i, r.status, r.body)
		}
		if calls() != before {
			t.Fatalf("preview %d called an upstream", i)
		}
		served := e.post("/v1/chat/completions", chat("turns", false)).header.Get("X-FreeLane-Backend")
		if served != d.Candidates[0].Backend {
			t.Fatalf("request %d went to %s, the preview said %s (%s)", i, served, d.Candidates[0].Backend, r.body)
		}
	}
}
