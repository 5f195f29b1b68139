package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
)

// keyedEnv is the test gateway with provider a on a vendor of its own
// that takes only the key right; a's key, pasted in the dashboard as a
// user would, is wrong.
func keyedEnv(t *testing.T, right, wrong string) (*env, *fakeupstream.Server) {
	t.Helper()
	vendor := fakeupstream.Start()
	t.Cleanup(vendor.Close)
	vendor.RequireKey(right)
	e := newEnv(t, func(cfg *config.Config) {
		cfg.Providers[0].BaseURL, cfg.Providers[0].APIKey = vendor.URL, ""
	})
	e.setKey("a", wrong)
	return e, vendor
}

func (e *env) setKey(provider, key string) {
	e.t.Helper()
	if r := e.do(http.MethodPut, "/api/providers/"+provider+"/key", `{"key":"`+key+`"}`, nil); r.status != http.StatusOK {
		e.t.Fatalf("setting the key of %s: %d %s", provider, r.status, r.body)
	}
}

// backendStatus is backendState's status, reason and until (zero for none).
func (e *env) backendStatus(name string) (status, reason string, until time.Time) {
	e.t.Helper()
	st := e.backendState(name)
	if st.Backend == "" {
		e.t.Fatalf("no backend %s in the state", name)
	}
	if st.Until != nil {
		until = *st.Until
	}
	return st.Status, st.Reason, until
}

// A key the provider refused and the user then replaced serves the very
// next request: nothing of the old key's refusal is held against it.
func TestReplacedKeyServesTheNextRequest(t *testing.T) {
	e, vendor := keyedEnv(t, "sk-right-key-0123456789", "sk-wrong-key-0123456789")
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.status != http.StatusOK || !strings.HasPrefix(r.attempts(), "a/ma=401") {
		t.Fatalf("first request: %d, attempts %q", r.status, r.attempts())
	}
	if st, _, _ := e.backendStatus("a/ma"); st != "key_disabled" {
		t.Fatalf("status after the refusal = %q", st)
	}
	e.setKey("a", "sk-right-key-0123456789")
	r = e.post("/v1/chat/completions", chat("main", false))
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "a/ma" || vendor.Calls("ma") != 2 {
		t.Fatalf("after the key was replaced: served by %q, attempts %q, %d calls", r.header.Get("X-FreeLane-Backend"), r.attempts(), vendor.Calls("ma"))
	}
	if st, _, _ := e.backendStatus("a/ma"); st != "serving" {
		t.Fatalf("status after the key was replaced = %q", st)
	}
}

// A refused key is checked again with the provider's model list on the
// gateway's clock, and the first check that passes puts it back in
// routing; the dashboard says when the next check is.
func TestRefusedKeyIsRearmedByAPassingCheck(t *testing.T) {
	e, vendor := keyedEnv(t, "sk-right-key-0123456789", "sk-wrong-key-0123456789")
	e.post("/v1/chat/completions", chat("main", false))
	st, reason, until := e.backendStatus("a/ma")
	if st != "key_disabled" || !strings.Contains(reason, "checks it again") || until.Sub(e.clock.Now()) > time.Minute {
		t.Fatalf("after the refusal: %q %q, until %v from now", st, reason, until.Sub(e.clock.Now()))
	}
	// The first check finds the key still refused and spaces the next.
	e.clock.Advance(time.Minute)
	e.g.Prober().Tick(t.Context())
	if st, reason, until := e.backendStatus("a/ma"); st != "key_disabled" || !strings.Contains(reason, "1 later check") || until.Sub(e.clock.Now()) < 110*time.Second {
		t.Fatalf("after a failed check: %q %q, next in %v", st, reason, until.Sub(e.clock.Now()))
	}
	// The provider activates the key; the next check finds it taken.
	vendor.RequireKey("sk-wrong-key-0123456789")
	e.clock.Advance(time.Minute)
	e.g.Prober().Tick(t.Context())
	if st, _, _ := e.backendStatus("a/ma"); st != "key_disabled" {
		t.Fatalf("checked before its time: %q", st)
	}
	e.clock.Advance(time.Minute)
	e.g.Prober().Tick(t.Context())
	calls := vendor.Calls("ma")
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.header.Get("X-FreeLane-Backend") != "a/ma" || vendor.Calls("ma") != calls+1 {
		t.Fatalf("after a passing check: served by %q, attempts %q", r.header.Get("X-FreeLane-Backend"), r.attempts())
	}
	var restored bool
	for _, ev := range e.g.Events().Recent() {
		restored = restored || (ev.Kind == "key_restored" && ev.Provider == "a")
	}
	if !restored {
		t.Fatal("no key_restored event")
	}
}

// A backend whose provider says its daily quota is used up is passed over
// until the quota starts over, then serves again; the dashboard names it
// used up, not rate limited.
func TestDailyExhaustedBackendIsBackAtTheReset(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: http.StatusTooManyRequests,
		Body: `{"error":{"message":"Rate limit exceeded: free-models-per-day","code":429}}`})
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.header.Get("X-FreeLane-Backend") != "b/mb" {
		t.Fatalf("first request: served by %q, attempts %q", r.header.Get("X-FreeLane-Backend"), r.attempts())
	}
	reset := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	// Well past the rate-limit cool-down the backend is still out.
	e.clock.Advance(10 * time.Minute)
	if st, _, until := e.backendStatus("a/ma"); st != "exhausted" || !until.Equal(reset) {
		t.Fatalf("status = %q until %v, want exhausted until %v", st, until, reset)
	}
	calls := e.up.Calls("ma")
	r = e.post("/v1/chat/completions", chat("main", false))
	if e.up.Calls("ma") != calls || !strings.HasPrefix(r.attempts(), "a/ma=skip(quota)") {
		t.Fatalf("before the reset: %d more calls, attempts %q", e.up.Calls("ma")-calls, r.attempts())
	}
	e.up.Set("ma", fakeupstream.Behavior{})
	e.clock.Set(reset)
	r = e.post("/v1/chat/completions", chat("main", false))
	if r.header.Get("X-FreeLane-Backend") != "a/ma" {
		t.Fatalf("at the reset: served by %q, attempts %q", r.header.Get("X-FreeLane-Backend"), r.attempts())
	}
}
