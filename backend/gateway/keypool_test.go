package gateway_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/config"
)

// keyVendor is an OpenAI-style vendor that answers by the key a request
// carries: a key with a set status gets it, any other key is served.
type keyVendor struct {
	*httptest.Server
	mu     sync.Mutex
	calls  map[string]int
	status map[string]int
	header map[string]http.Header
	body   map[string]string
}

func startKeyVendor(t *testing.T) *keyVendor {
	t.Helper()
	v := &keyVendor{calls: map[string]int{}, status: map[string]int{}, header: map[string]http.Header{}, body: map[string]string{}}
	v.Server = httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(v.Close)
	return v
}

func (v *keyVendor) serve(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	v.mu.Lock()
	v.calls[key]++
	st, h, body := v.status[key], v.header[key], v.body[key]
	v.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if st != 0 {
		for k, vals := range h {
			w.Header()[k] = vals
		}
		w.WriteHeader(st)
		fmt.Fprint(w, cmpOr(body, `{"error":{"message":"no","type":"x"}}`))
		return
	}
	if strings.HasSuffix(r.URL.Path, "/models") {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"ma","object":"model"}]}`)
		return
	}
	fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"ma","choices":[{"index":0,"message":{"role":"assistant","content":"served"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (v *keyVendor) set(key string, status int, header http.Header, body string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.status[key], v.header[key], v.body[key] = status, header, body
}

func (v *keyVendor) callsOf(key string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls[key]
}

const (
	poolKey1 = "sk-pool-first-0123456789"
	poolKey2 = "sk-pool-second-0123456789"
)

// poolEnv is the test gateway with provider a holding two keys on a
// vendor that answers by key; the chain main is a/ma alone, so a request
// that both keys fail answers an error.
func poolEnv(t *testing.T) (*env, *keyVendor) {
	t.Helper()
	v := startKeyVendor(t)
	e := newEnv(t, func(cfg *config.Config) {
		cfg.Providers[0].BaseURL, cfg.Providers[0].APIKey, cfg.Providers[0].APIKeys = v.URL, poolKey1, []string{poolKey2}
		cfg.Chains = []config.Chain{{Name: "main", Backends: []string{"a/ma"}}}
	})
	return e, v
}

func pooled(key string) string { return "a@" + config.KeyLabel(key) + "/ma" }

// A key answering 429 cools alone: the request is served by the other
// key, and the next request goes to it without calling the first.
func TestPoolRateLimitedKeyCoolsAlone(t *testing.T) {
	e, v := poolEnv(t)
	v.set(poolKey1, http.StatusTooManyRequests, nil, "")
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != pooled(poolKey2) {
		t.Fatalf("first request: %d served by %q, attempts %q", r.status, r.header.Get("X-FreeLane-Backend"), r.attempts())
	}
	if !strings.HasPrefix(r.attempts(), pooled(poolKey1)+"=429") {
		t.Fatalf("attempts %q, want the first key tried and rate limited", r.attempts())
	}
	st, _, until := e.backendStatus(pooled(poolKey1))
	if st != "cooling" || until.Sub(e.clock.Now()) > 5*time.Second {
		t.Fatalf("first key: %q until %v from now, want cooling for at most 5s", st, until.Sub(e.clock.Now()))
	}
	if st, _, _ := e.backendStatus(pooled(poolKey2)); st != "serving" {
		t.Fatalf("second key: %q", st)
	}
	r = e.post("/v1/chat/completions", chat("main", false))
	if r.header.Get("X-FreeLane-Backend") != pooled(poolKey2) || v.callsOf(poolKey1) != 1 {
		t.Fatalf("second request: served by %q, attempts %q, first key called %d times", r.header.Get("X-FreeLane-Backend"), r.attempts(), v.callsOf(poolKey1))
	}
	// The cool-down ends on the clock, and the first key serves again.
	v.set(poolKey1, 0, nil, "")
	v.set(poolKey2, http.StatusTooManyRequests, nil, "")
	e.clock.Advance(6 * time.Second)
	r = e.post("/v1/chat/completions", chat("main", false))
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != pooled(poolKey1) {
		t.Fatalf("after the cool-down: %d served by %q, attempts %q", r.status, r.header.Get("X-FreeLane-Backend"), r.attempts())
	}
}

// A key the provider refuses (401) is off while the other serves, and
// requests skip it without calling it.
func TestPoolRefusedKeySkipped(t *testing.T) {
	e, v := poolEnv(t)
	v.set(poolKey1, http.StatusUnauthorized, nil, `{"error":{"message":"Invalid API Key","type":"invalid_request_error"}}`)
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != pooled(poolKey2) {
		t.Fatalf("first request: %d served by %q, attempts %q", r.status, r.header.Get("X-FreeLane-Backend"), r.attempts())
	}
	if st, _, _ := e.backendStatus(pooled(poolKey1)); st != "key_disabled" {
		t.Fatalf("refused key: %q", st)
	}
	for range 3 {
		r = e.post("/v1/chat/completions", chat("main", false))
		if r.header.Get("X-FreeLane-Backend") != pooled(poolKey2) {
			t.Fatalf("later request: served by %q, attempts %q", r.header.Get("X-FreeLane-Backend"), r.attempts())
		}
	}
	if n := v.callsOf(poolKey1); n != 1 {
		t.Fatalf("the refused key was called %d times, want 1", n)
	}
	// The check runs with the refused key itself: the provider takes it
	// now, and the key serves again.
	v.set(poolKey1, 0, nil, "")
	v.set(poolKey2, http.StatusUnauthorized, nil, "")
	e.clock.Advance(time.Minute)
	e.g.Prober().Tick(t.Context())
	if st, _, _ := e.backendStatus(pooled(poolKey1)); st != "serving" {
		t.Fatalf("after a passing check: %q", st)
	}
	if st, _, _ := e.backendStatus(pooled(poolKey2)); st != "serving" {
		t.Fatalf("the check of one key changed the other: %q", st)
	}
}

// A key whose daily quota is used up is parked until the provider's reset
// and serves again at it; the other key serves meanwhile.
func TestPoolExhaustedKeyParkedUntilReset(t *testing.T) {
	e, v := poolEnv(t)
	v.set(poolKey1, http.StatusTooManyRequests, nil, `{"error":{"message":"Rate limit exceeded: free-models-per-day","code":429}}`)
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.header.Get("X-FreeLane-Backend") != pooled(poolKey2) {
		t.Fatalf("first request: served by %q, attempts %q", r.header.Get("X-FreeLane-Backend"), r.attempts())
	}
	reset := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	e.clock.Advance(10 * time.Minute)
	if st, _, until := e.backendStatus(pooled(poolKey1)); st != "exhausted" || !until.Equal(reset) {
		t.Fatalf("first key: %q until %v, want exhausted until %v", st, until, reset)
	}
	if st, _, _ := e.backendStatus(pooled(poolKey2)); st != "serving" {
		t.Fatalf("second key: %q", st)
	}
	calls := v.callsOf(poolKey1)
	r = e.post("/v1/chat/completions", chat("main", false))
	if v.callsOf(poolKey1) != calls || r.header.Get("X-FreeLane-Backend") != pooled(poolKey2) {
		t.Fatalf("before the reset: first key called %d more times, attempts %q", v.callsOf(poolKey1)-calls, r.attempts())
	}
	v.set(poolKey1, 0, nil, "")
	v.set(poolKey2, http.StatusUnauthorized, nil, "")
	e.clock.Set(reset)
	r = e.post("/v1/chat/completions", chat("main", false))
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != pooled(poolKey1) {
		t.Fatalf("at the reset: %d served by %q, attempts %q", r.status, r.header.Get("X-FreeLane-Backend"), r.attempts())
	}
}

// No key of a pool shows in any admin answer, whole or in part.
func TestPoolKeysInNoResponse(t *testing.T) {
	e, v := poolEnv(t)
	v.set(poolKey1, http.StatusUnauthorized, nil, `{"error":{"message":"Invalid API Key `+poolKey1+`","type":"x"}}`)
	e.post("/v1/chat/completions", chat("main", false))
	for _, path := range []string{"/api/state", "/api/providers", "/api/requests", "/api/events"} {
		r := e.do(http.MethodGet, path, "", nil)
		for _, k := range []string{poolKey1, poolKey2, poolKey1[8:20], poolKey2[8:20]} {
			if strings.Contains(string(r.body), k) {
				t.Errorf("GET %s holds %q", path, k)
			}
		}
	}
}

// A key pasted in the dashboard joins the pool: the provider's backends
// become one per key, the view lists the labels, and removing the key by
// its label goes back to one key.
func TestPoolDashboardAddsSecondKey(t *testing.T) {
	v := startKeyVendor(t)
	e := newEnv(t, func(cfg *config.Config) {
		cfg.Providers[0].BaseURL, cfg.Providers[0].APIKey = v.URL, ""
		cfg.Chains = []config.Chain{{Name: "main", Backends: []string{"a/ma"}}}
	})
	e.setKey("a", poolKey1)
	r := e.do(http.MethodPost, "/api/providers/a/keys", `{"key":"`+poolKey2+`"}`, nil)
	if r.status != http.StatusCreated {
		t.Fatalf("adding a key: %d %s", r.status, r.body)
	}
	for _, k := range []string{poolKey1, poolKey2, poolKey2[8:20]} {
		if strings.Contains(string(r.body), k) {
			t.Fatalf("the answer holds %q: %s", k, r.body)
		}
	}
	if !strings.Contains(string(r.body), `"label":"`+config.KeyLabel(poolKey2)+`"`) || !strings.Contains(string(r.body), `"label":"`+config.KeyLabel(poolKey1)+`"`) {
		t.Fatalf("the answer lists no labels: %s", r.body)
	}
	if r := e.do(http.MethodPost, "/api/providers/a/keys", `{"key":"`+poolKey2+`"}`, nil); r.status != http.StatusConflict || !strings.Contains(r.errorMessage(), "already holds this key") {
		t.Fatalf("the same key again: %d %s", r.status, r.body)
	}
	v.set(poolKey1, http.StatusTooManyRequests, nil, "")
	r = e.post("/v1/chat/completions", chat("main", false))
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != pooled(poolKey2) || v.callsOf(poolKey2) != 1 {
		t.Fatalf("with the pasted key: %d served by %q, attempts %q", r.status, r.header.Get("X-FreeLane-Backend"), r.attempts())
	}
	// The pool survives a restart: the pasted key was sealed, not lost,
	// and no file FreeLane keeps holds it in the clear.
	_ = e.g.Shutdown(t.Context())
	files, _ := filepath.Glob(filepath.Join(e.dir, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && (bytes.Contains(b, []byte(poolKey2)) || bytes.Contains(b, []byte(poolKey1))) {
			t.Fatalf("%s holds a key in the clear", filepath.Base(f))
		}
	}
	e.start(nil)
	if st := e.backendState(pooled(poolKey2)); st.Backend == "" {
		t.Fatal("after a restart the pasted key is not in the pool")
	}
	if r := e.do(http.MethodDelete, "/api/providers/a/keys/"+config.KeyLabel(poolKey2), "", nil); r.status != http.StatusOK {
		t.Fatalf("removing the key: %d %s", r.status, r.body)
	}
	v.set(poolKey1, 0, nil, "")
	r = e.post("/v1/chat/completions", chat("main", false))
	if r.header.Get("X-FreeLane-Backend") != "a/ma" {
		t.Fatalf("after the removal: served by %q, attempts %q", r.header.Get("X-FreeLane-Backend"), r.attempts())
	}
	if r := e.do(http.MethodDelete, "/api/providers/a/keys/knothere", "", nil); r.status != http.StatusNotFound {
		t.Fatalf("removing an unknown label: %d %s", r.status, r.body)
	}
}
