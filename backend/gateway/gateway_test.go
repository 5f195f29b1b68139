package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/internal/logtest"
	"freelane/backend/llm"
	"freelane/backend/store"
	"freelane/backend/tier"
)

// env is one FreeLane gateway in front of one fake upstream. Providers a
// (own), b and c (free) and l (local, keyless) all point at the fake
// upstream and each serves its own model (ma, mb, mc, ml), so a test scripts
// each backend through its model name.
type env struct {
	t     *testing.T
	up    *fakeupstream.Server
	g     *gateway.Gateway
	base  string
	clock *clocktest.Clock
	dir   string
	// session is the token of a dashboard signed in through a login link,
	// made on first use by signedIn.
	session string
	// token is the inbound token post sends, once a config set one.
	token string
}

var fastTimeouts = config.Timeouts{Connect: time.Second, Header: 500 * time.Millisecond, FirstToken: 400 * time.Millisecond, Idle: 300 * time.Millisecond}

func testConfig(url string) *config.Config {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	p := func(name string, t tier.Tier, model string, params float64, ctxLen int) config.Provider {
		return config.Provider{Name: name, Kind: "openai", Tier: t, BaseURL: url, APIKey: "sk-test-" + name,
			Models: []config.Model{{ID: model, ParamsB: params, Context: ctxLen}}, Timeouts: fastTimeouts}
	}
	local := p("l", "local", "ml", 7, 8192)
	local.APIKey, local.Keyless = "", true
	cfg.Providers = []config.Provider{
		p("a", "own", "ma", 0, 8192),
		p("b", "free", "mb", 70, 32768),
		p("c", "free", "mc", 8, 131072),
		local,
	}
	cfg.Chains = []config.Chain{{Name: "main", Backends: []string{"a/ma", "b/mb", "c/mc"}}}
	return cfg
}

func newEnv(t *testing.T, mutate func(*config.Config)) *env {
	t.Helper()
	return newEnvAt(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), mutate)
}

// newEnvAt is newEnv with the gateway's clock starting at start; it moves
// with real time from there, and tests jump it with Advance and Set.
func newEnvAt(t *testing.T, start time.Time, mutate func(*config.Config)) *env {
	t.Helper()
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	cfg := testConfig(up.URL)
	if mutate != nil {
		mutate(cfg)
	}
	e := &env{t: t, up: up, clock: clocktest.Following(start), dir: t.TempDir()}
	e.start(cfg)
	return e
}

func (e *env) start(cfg *config.Config) {
	e.t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: e.dir, Logger: log, Clock: e.clock, ManualProbes: true,
		LookupEnv: withoutCatalogKeys})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.g = g
	e.base = "http://" + g.Addr()
	e.session = ""
	if cfg != nil && cfg.Server.Token != "" {
		e.token = cfg.Server.Token
	}
	e.t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
}

// withoutCatalogKeys reads the environment as the tests' FreeLane does:
// without the key variables the catalog names, which a developer's shell
// may hold and which would add real providers to every test.
func withoutCatalogKeys(name string) (string, bool) {
	for _, p := range catalog.Embedded().Providers {
		if slices.Contains(p.KeyEnv, name) || slices.Contains(p.Placeholders, name) {
			return "", false
		}
	}
	return os.LookupEnv(name)
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) attempts() string { return r.header.Get("X-FreeLane-Attempts") }

func (r reply) errorMessage() string {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Message
}

func (e *env) post(path, body string) reply {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func chat(model string, stream bool) string {
	return `{"model":"` + model + `","stream":` + map[bool]string{true: "true", false: "false"}[stream] +
		`,"messages":[{"role":"user","content":"hi"}]}`
}

// content extracts the assistant text from a non-stream chat answer.
func content(t *testing.T, body []byte) string {
	t.Helper()
	var a struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &a); err != nil || len(a.Choices) == 0 {
		t.Fatalf("not a chat answer: %v %s", err, body)
	}
	return a.Choices[0].Message.Content
}

// sseResult is what a client saw of a stream.
type sseResult struct {
	events []string // data payloads in order, [DONE] included
	text   string   // concatenated content deltas
	done   bool
	errMsg string // message of an error event, if any
}

func parseSSE(t *testing.T, body []byte) sseResult {
	t.Helper()
	var r sseResult
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			if line != "" {
				t.Fatalf("unexpected SSE line %q", line)
			}
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		r.events = append(r.events, data)
		if data == "[DONE]" {
			r.done = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("client got a malformed event %q: %v", data, err)
		}
		if c.Error != nil {
			r.errMsg = c.Error.Message
		}
		for _, ch := range c.Choices {
			r.text += ch.Delta.Content
		}
	}
	return r
}

func TestFailoverNonStream(t *testing.T) {
	cases := []struct {
		name     string
		primary  fakeupstream.Behavior
		attempts string
	}{
		{"503", fakeupstream.Behavior{Status: 503}, "a/ma=503; b/mb=ok"},
		{"500", fakeupstream.Behavior{Status: 500}, "a/ma=500; b/mb=ok"},
		{"529 overloaded", fakeupstream.Behavior{Status: 529}, "a/ma=529; b/mb=ok"},
		{"429", fakeupstream.Behavior{Status: 429}, "a/ma=429; b/mb=ok"},
		{"connection reset", fakeupstream.Behavior{Reset: true}, "a/ma=transient; b/mb=ok"},
		{"no response", fakeupstream.Behavior{Hang: true}, "a/ma=transient; b/mb=ok"},
		{"empty content", fakeupstream.Behavior{Empty: true}, "a/ma=soft; b/mb=ok"},
		{"unparseable 200", fakeupstream.Behavior{Body: "<html>gateway</html>"}, "a/ma=soft; b/mb=ok"},
		{"quota text in 200", fakeupstream.Behavior{Body: `{"error":{"message":"Quota exceeded for today"}}`}, "a/ma=soft; b/mb=ok"},
		{"401", fakeupstream.Behavior{Status: 401}, "a/ma=401; b/mb=ok"},
		{"403", fakeupstream.Behavior{Status: 403}, "a/ma=403; b/mb=ok"},
		{"404 model gone", fakeupstream.Behavior{Status: 404}, "a/ma=404; b/mb=ok"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.up.Set("ma", tc.primary)
			start := time.Now()
			r := e.post("/v1/chat/completions", chat("main", false))
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if got := r.attempts(); got != tc.attempts {
				t.Errorf("attempts header %q, want %q", got, tc.attempts)
			}
			if got := r.header.Get("X-FreeLane-Backend"); got != "b/mb" {
				t.Errorf("backend header %q", got)
			}
			if got := content(t, r.body); got != "Hello from mb" {
				t.Errorf("content %q", got)
			}
			if e.up.Calls("ma") != 1 || e.up.Calls("mb") != 1 || e.up.Calls("mc") != 0 {
				t.Errorf("calls a=%d b=%d c=%d", e.up.Calls("ma"), e.up.Calls("mb"), e.up.Calls("mc"))
			}
			// Failing over is immediate; only the hang waits for the
			// header timeout.
			if limit := time.Second; time.Since(start) > limit {
				t.Errorf("failover took %v", time.Since(start))
			}
		})
	}
}

func TestCallerErrorIsReturnedWithoutFailover(t *testing.T) {
	e := newEnv(t, nil)
	body := `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","param":"temperature","code":null}}`
	e.up.Set("ma", fakeupstream.Behavior{Status: 400, Body: body})
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.status != 400 || string(r.body) != body {
		t.Fatalf("got %d %s", r.status, r.body)
	}
	if e.up.Calls("mb") != 0 {
		t.Fatal("a caller error must not fail over")
	}
	if r.attempts() != "a/ma=400" {
		t.Errorf("attempts %q", r.attempts())
	}
}

func TestTooLongGoesToALargerContext(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		// a: 8k, b: 32k, c: 128k context. b is too short as well: after a
		// fails, b (32k) is tried, fails, and c serves.
		c.Chains[0].Backends = []string{"a/ma", "l/ml", "b/mb", "c/mc"}
	})
	e.up.Set("ma", fakeupstream.Behavior{Code: "context_length_exceeded"})
	e.up.Set("mb", fakeupstream.Behavior{Code: "context_length_exceeded"})
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.status != 200 || r.header.Get("X-FreeLane-Backend") != "c/mc" {
		t.Fatalf("got %d %s %s", r.status, r.attempts(), r.body)
	}
	// l has the same 8k context as a: it must be passed by without a call.
	if e.up.Calls("ml") != 0 {
		t.Error("a backend with no larger context was tried")
	}
	if want := "a/ma=400; l/ml=skip(too_long); b/mb=400; c/mc=ok"; r.attempts() != want {
		t.Errorf("attempts %q, want %q", r.attempts(), want)
	}
}

func TestAllFailListsEveryAttempt(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: 503})
	e.up.Set("mb", fakeupstream.Behavior{Status: 429})
	e.up.Set("mc", fakeupstream.Behavior{Reset: true})
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.status != http.StatusBadGateway {
		t.Fatalf("status %d", r.status)
	}
	msg := r.errorMessage()
	for _, want := range []string{"a/ma: HTTP 503", "b/mb: HTTP 429", "c/mc: connection"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestAllRateLimitedIs429(t *testing.T) {
	e := newEnv(t, nil)
	for _, m := range []string{"ma", "mb", "mc"} {
		e.up.Set(m, fakeupstream.Behavior{Status: 429, Headers: map[string]string{"Retry-After": "30"}})
	}
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	// All three now cool down; the next request tries them anyway, in
	// order, and still reports a rate limit.
	r = e.post("/v1/chat/completions", chat("main", false))
	if r.status != http.StatusTooManyRequests || e.up.Calls("ma") != 2 {
		t.Fatalf("second: status %d, calls %d", r.status, e.up.Calls("ma"))
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: 429, Headers: map[string]string{"Retry-After": "120"}}, fakeupstream.Behavior{})
	e.post("/v1/chat/completions", chat("main", false))
	e.clock.Advance(119 * time.Second)
	r := e.post("/v1/chat/completions", chat("main", false))
	if e.up.Calls("ma") != 1 {
		t.Fatal("a rate-limited backend was called before its Retry-After")
	}
	if !strings.HasPrefix(r.attempts(), "a/ma=skip(cooling)") {
		t.Errorf("attempts %q", r.attempts())
	}
	e.clock.Advance(2 * time.Second)
	r = e.post("/v1/chat/completions", chat("main", false))
	if r.header.Get("X-FreeLane-Backend") != "a/ma" {
		t.Errorf("after Retry-After: %q", r.attempts())
	}
}

func TestBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: 500})
	for i := 0; i < 2; i++ {
		e.post("/v1/chat/completions", chat("main", false))
	}
	r := e.post("/v1/chat/completions", chat("main", false))
	if e.up.Calls("ma") != 2 {
		t.Fatalf("open backend called: %d calls", e.up.Calls("ma"))
	}
	if !strings.HasPrefix(r.attempts(), "a/ma=skip(open)") || r.status != 200 {
		t.Errorf("attempts %q", r.attempts())
	}
	e.clock.Advance(31 * time.Second)
	e.post("/v1/chat/completions", chat("main", false))
	if e.up.Calls("ma") != 3 {
		t.Errorf("backend not retried after its open time: %d calls", e.up.Calls("ma"))
	}
}

func TestRejectedKeyIsDisabled(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: 401})
	e.post("/v1/chat/completions", chat("main", false))
	e.clock.Advance(59 * time.Minute)
	r := e.post("/v1/chat/completions", chat("main", false))
	if e.up.Calls("ma") != 1 || !strings.HasPrefix(r.attempts(), "a/ma=skip(key_disabled)") {
		t.Fatalf("calls %d, attempts %q", e.up.Calls("ma"), r.attempts())
	}
}

func TestPinnedBackendDoesNotFailOver(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("mb", fakeupstream.Behavior{Status: 503})
	r := e.post("/v1/chat/completions", chat("b/mb", false))
	if r.status != http.StatusBadGateway || e.up.Calls("mc") != 0 || e.up.Calls("ma") != 0 {
		t.Fatalf("status %d, calls a=%d c=%d", r.status, e.up.Calls("ma"), e.up.Calls("mc"))
	}
	if !strings.Contains(r.errorMessage(), "b/mb failed") {
		t.Errorf("message %q", r.errorMessage())
	}
}

func TestModelNameResolution(t *testing.T) {
	// A second provider, on its own upstream, serving the same model id "mb".
	up2 := fakeupstream.Start()
	t.Cleanup(up2.Close)
	e := newEnv(t, func(c *config.Config) {
		d := c.Providers[2]
		d.Name, d.BaseURL, d.Models = "d", up2.URL, []config.Model{{ID: "mb", ParamsB: 70}}
		c.Providers = append(c.Providers, d)
	})
	cases := []struct {
		model, backend string
		status         int
	}{
		{"main", "a/ma", 200},
		{"auto", "a/ma", 200}, // own key first
		{"c/mc", "c/mc", 200},
		{"l/ml", "l/ml", 200},
		{"mb", "b/mb", 200}, // bare model id: b before d (config order, same size)
		{"nothing", "", 404},
	}
	for _, tc := range cases {
		r := e.post("/v1/chat/completions", chat(tc.model, false))
		if r.status != tc.status || r.header.Get("X-FreeLane-Backend") != tc.backend {
			t.Errorf("%s: %d %q %s", tc.model, r.status, r.header.Get("X-FreeLane-Backend"), r.body)
		}
	}
	e.up.Set("mb", fakeupstream.Behavior{Status: 503})
	if r := e.post("/v1/chat/completions", chat("mb", false)); r.attempts() != "b/mb=503; d/mb=ok" {
		t.Errorf("bare id failover: %q", r.attempts())
	}
	r := e.post("/v1/chat/completions", chat("nothing", false))
	for _, want := range []string{`"nothing" does not exist`, "auto", "main", "c/mc"} {
		if !strings.Contains(r.errorMessage(), want) {
			t.Errorf("404 message %q lacks %q", r.errorMessage(), want)
		}
	}
}

func TestDefaultChainOrder(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Chains = nil
		o := c.Providers[0]
		o.Name, o.Default = "o", true
		c.Providers = append(c.Providers, o)
	})
	// Own default first, other own, then free by size (b 70B before c 8B), then local.
	for _, m := range []string{"ma", "mb", "mc"} {
		e.up.Set(m, fakeupstream.Behavior{Status: 503})
	}
	r := e.post("/v1/chat/completions", chat("auto", false))
	if want := "o/ma=503; a/ma=503; b/mb=503; c/mc=503; l/ml=ok"; r.attempts() != want {
		t.Errorf("auto order %q, want %q", r.attempts(), want)
	}
}

func TestMissingKeyMessage(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		for i := range c.Providers {
			c.Providers[i].APIKey = ""
			c.Providers[i].Keyless = false
			c.Providers[i].APIKeyEnv = []string{strings.ToUpper(c.Providers[i].Name) + "_KEY"}
		}
		c.Chains = nil
	})
	r := e.post("/v1/chat/completions", chat("auto", false))
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d", r.status)
	}
	// The file gives these keys, so they are asked for there, not in the
	// dashboard, which cannot set them.
	if !strings.Contains(r.errorMessage(), "set A_KEY and restart FreeLane (the --config file reads the key of a from it)") {
		t.Errorf("message %q", r.errorMessage())
	}
	r = e.post("/v1/chat/completions", chat("b/mb", false))
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.errorMessage(), "B_KEY") {
		t.Errorf("pinned keyless: %d %q", r.status, r.errorMessage())
	}
}

func TestStreamFailsOverBeforeFirstToken(t *testing.T) {
	cases := []struct {
		name     string
		primary  fakeupstream.Behavior
		attempts string
	}{
		{"503", fakeupstream.Behavior{Status: 503}, "a/ma=503; b/mb=ok"},
		{"slow first token", fakeupstream.Behavior{FirstTokenDelay: 2 * time.Second}, "a/ma=transient; b/mb=ok"},
		{"cut before content", fakeupstream.Behavior{CutAfter: -1}, "a/ma=transient; b/mb=ok"},
		{"stall before content", fakeupstream.Behavior{StallAfter: -1}, "a/ma=transient; b/mb=ok"},
		{"empty stream", fakeupstream.Behavior{Empty: true}, "a/ma=soft; b/mb=ok"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.up.Set("ma", tc.primary)
			r := e.post("/v1/chat/completions", chat("main", true))
			if r.status != 200 {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			if r.attempts() != tc.attempts {
				t.Errorf("attempts %q, want %q", r.attempts(), tc.attempts)
			}
			s := parseSSE(t, r.body)
			// Only the serving backend's output reaches the client: the
			// held role chunk of the failed one is never sent.
			if s.text != "Hello from mb" || !s.done || s.errMsg != "" {
				t.Errorf("client saw %+v", s)
			}
			roles := strings.Count(string(r.body), `"role":"assistant"`)
			if roles != 1 {
				t.Errorf("client saw %d role chunks", roles)
			}
		})
	}
}

func TestStreamNeverSwitchesAfterCommit(t *testing.T) {
	cases := []struct {
		name    string
		primary fakeupstream.Behavior
		text    string
	}{
		{"cut mid-stream", fakeupstream.Behavior{CutAfter: 1}, "Hello"},
		{"stall mid-stream", fakeupstream.Behavior{StallAfter: 2}, "Hello from "},
		{"mid-stream error event", fakeupstream.Behavior{Chunks: []string{"Hel"}, CutAfter: 0}, ""},
	}
	for _, tc := range cases[:2] {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.up.Set("ma", tc.primary)
			r := e.post("/v1/chat/completions", chat("main", true))
			if r.status != 200 {
				t.Fatalf("status %d", r.status)
			}
			s := parseSSE(t, r.body)
			if s.text != tc.text {
				t.Errorf("text %q, want %q", s.text, tc.text)
			}
			if s.done {
				t.Error("a broken stream ended with [DONE]")
			}
			if !strings.Contains(s.errMsg, "incomplete") {
				t.Errorf("no error event: %+v", s)
			}
			if e.up.Calls("mb") != 0 {
				t.Error("the router switched backends after the stream started")
			}
		})
	}
}

func TestStreamMalformedChunkIsDropped(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{MalformedAt: 2})
	r := e.post("/v1/chat/completions", chat("main", true))
	s := parseSSE(t, r.body) // fails the test on any malformed event
	if s.text != "Hello from ma" || !s.done {
		t.Errorf("got %+v", s)
	}
}

func TestStreamWithoutDoneGetsDone(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{NoDone: true})
	r := e.post("/v1/chat/completions", chat("main", true))
	s := parseSSE(t, r.body)
	if !s.done || s.events[len(s.events)-1] != "[DONE]" || s.text != "Hello from ma" {
		t.Errorf("got %+v", s)
	}
}

func TestStreamToolCallPassesThrough(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{ToolCall: true})
	r := e.post("/v1/chat/completions", chat("main", true))
	if r.header.Get("X-FreeLane-Backend") != "a/ma" {
		t.Fatalf("a tool-call delta must commit the stream: %q", r.attempts())
	}
	var args string
	for _, ev := range parseSSE(t, r.body).events {
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		_ = json.Unmarshal([]byte(ev), &c)
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				args += tc.Function.Arguments
			}
		}
	}
	if args != `{"city":"Paris"}` {
		t.Errorf("arguments %q", args)
	}
}

func TestStreamUsage(t *testing.T) {
	e := newEnv(t, nil)
	// The client did not ask for usage: FreeLane asks the upstream (for its
	// own accounting) but does not forward the usage-only chunk.
	r := e.post("/v1/chat/completions", chat("main", true))
	if strings.Contains(string(r.body), `"choices":[]`) {
		t.Error("usage chunk forwarded to a client that did not ask for it")
	}
	reqs := e.up.Requests()
	if !strings.Contains(string(reqs[len(reqs)-1].Body), `"include_usage":true`) {
		t.Error("upstream was not asked for usage")
	}
	// A client that asks gets it.
	r = e.post("/v1/chat/completions", `{"model":"main","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(string(r.body), `"usage"`) {
		t.Error("usage chunk not forwarded to a client that asked")
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		for i := range c.Providers {
			c.Providers[i].Timeouts.Idle = 10 * time.Second
		}
	})
	e.up.Set("ma", fakeupstream.Behavior{StallAfter: 1})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.base+"/v1/chat/completions", strings.NewReader(chat("main", true)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		reqs := e.up.Requests()
		if len(reqs) == 1 && reqs[0].Cancelled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("upstream request was not cancelled when the client left")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Not the backend's fault: it is not penalised. Two more disconnects
	// would otherwise open its breaker.
	e.up.Set("ma", fakeupstream.Behavior{})
	for i := 0; i < 2; i++ {
		if r := e.post("/v1/chat/completions", chat("main", false)); r.header.Get("X-FreeLane-Backend") != "a/ma" {
			t.Fatalf("backend penalised for a client disconnect: %q", r.attempts())
		}
	}
}

func TestPassThroughFieldsAndModelRewrite(t *testing.T) {
	e := newEnv(t, nil)
	body := `{"messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}],` +
		`"model":"main","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],` +
		`"tool_choice":"auto","response_format":{"type":"json_object"},"temperature":0.25,"x_vendor":{"keep":[1,2,3]}}`
	e.post("/v1/chat/completions", body)
	got := string(e.up.Requests()[0].Body)
	want := strings.Replace(body, `"model":"main"`, `"model":"ma"`, 1)
	if got != want {
		t.Errorf("upstream body\n got %s\nwant %s", got, want)
	}
	if h := e.up.Requests()[0].Header.Get("Authorization"); h != "Bearer sk-test-a" {
		t.Errorf("authorization %q", h)
	}
}

func TestCompletionsAndEmbeddingsFailOver(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: 502})
	r := e.post("/v1/completions", `{"model":"main","prompt":"def add(a, b):"}`)
	if r.status != 200 || r.attempts() != "a/ma=502; b/mb=ok" {
		t.Errorf("completions: %d %q %s", r.status, r.attempts(), r.body)
	}
	r = e.post("/v1/completions", `{"model":"main","prompt":"x","stream":true}`)
	if s := parseSSE(t, r.body); r.status != 200 || !s.done {
		t.Errorf("streamed completions: %d %s", r.status, r.body)
	}
	e.clock.Advance(time.Minute) // a's breaker opened after two failures
	r = e.post("/v1/embeddings", `{"model":"main","input":["a","b"]}`)
	if r.status != 200 || r.attempts() != "a/ma=502; b/mb=ok" || !strings.Contains(string(r.body), `"embedding"`) {
		t.Errorf("embeddings: %d %q %s", r.status, r.attempts(), r.body)
	}
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.MaxBodyMB = 1 })
	cases := []struct{ body, want string }{
		{`{"model":"main"`, "not valid JSON"},
		{`[1,2]`, "must be a JSON object"},
		{`{"model":"main"}`, "messages is required"},
		{`{"model":"main","messages":[]}`, "at least one message"},
		{`{"model":"main","messages":"hi"}`, "must be an array"},
		{`{"model":"main","messages":[{"content":"hi"}]}`, "messages[0].role is required"},
		{`{"messages":[{"role":"user","content":"hi"}]}`, "model is required"},
		{`{"model":"main","messages":[{"role":"user","content":"` + strings.Repeat("x", 1<<20) + `"}]}`, "larger than the 1 MiB limit"},
	}
	for _, tc := range cases {
		r := e.post("/v1/chat/completions", tc.body)
		if r.status != 400 || !strings.Contains(r.errorMessage(), tc.want) {
			t.Errorf("%.40s: %d %q", tc.body, r.status, r.errorMessage())
		}
		var shape struct {
			Error struct {
				Message, Type string
			} `json:"error"`
		}
		if json.Unmarshal(r.body, &shape) != nil || shape.Error.Type != "invalid_request_error" {
			t.Errorf("not the OpenAI error shape: %s", r.body)
		}
	}
	if e.up.Calls("ma") != 0 {
		t.Error("a bad request reached an upstream")
	}
}

func TestHostHeaderIsChecked(t *testing.T) {
	e := newEnv(t, nil)
	req, _ := http.NewRequest("GET", e.base+"/v1/models", nil)
	req.Host = "attacker.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host got %d", resp.StatusCode)
	}
	for _, h := range []string{"127.0.0.1:7788:80", "localhost:0", "localhost:99999", "localhost:x", "127.0.0.2", "evil.localhost:80", "[::2]:80"} {
		req.Host = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host %s got %d, want 403", h, resp.StatusCode)
		}
	}
	// The loopback names work on any port: a tunnel such as
	// ssh -L 9000:127.0.0.1:7788 makes clients send their own port.
	port := e.g.Addr()[strings.LastIndex(e.g.Addr(), ":"):]
	for _, h := range []string{"localhost" + port, "127.0.0.1" + port, "127.0.0.1:9000", "LOCALHOST:1", "[::1]:65535", "localhost", "[::1]"} {
		req.Host = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("Host %s got %d", h, resp.StatusCode)
		}
	}
}

func TestModelsAndHealth(t *testing.T) {
	e := newEnv(t, nil)
	resp, err := http.Get(e.base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string
		Data   []struct{ ID string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	if got := strings.Join(ids, ","); got != "auto,main,a/ma,b/mb,c/mc,l/ml" {
		t.Errorf("models %s", got)
	}
	h, err := http.Get(e.base + "/healthz")
	if err != nil || h.StatusCode != 200 {
		t.Fatalf("healthz %v %v", err, h)
	}
	h.Body.Close()
}

func TestRequestLogKeepsItsDays(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.RequestLog.KeepDays = 2 })
	for range 3 {
		e.post("/v1/chat/completions", chat("main", false))
	}
	if err := e.g.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(49 * time.Hour)
	e.start(nil)
	fresh := e.post("/v1/chat/completions", chat("main", false)).header.Get("X-FreeLane-Request-Id")
	e.g.RollUp(t.Context())
	if err := e.g.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(t.Context(), filepath.Join(e.dir, "freelane.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	traces, err := db.RecentRequests(t.Context(), store.RequestQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 1 || traces[0].ID != fresh {
		t.Fatalf("%d requests kept after two days passed, want only the new one %s", len(traces), fresh)
	}
	// What the pruned requests used stays in the usage ledger.
	var rows int
	if err := db.SQL().QueryRowContext(t.Context(), "SELECT count(*) FROM ledger").Scan(&rows); err != nil || rows != 4 {
		t.Fatalf("ledger rows %d (%v), want all 4", rows, err)
	}
}

func TestRequestLogSurvivesShutdown(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: 503})
	const n = 25
	for i := 0; i < n; i++ {
		e.post("/v1/chat/completions", chat("main", i%2 == 0))
	}
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), filepath.Join(e.dir, "freelane.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	traces, err := db.RecentRequests(context.Background(), store.RequestQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != n {
		t.Fatalf("%d requests logged, want %d", len(traces), n)
	}
	// The first request: a failed on 503, b served.
	first := traces[len(traces)-1]
	if first.Chain != "main" || first.Backend != "b/mb" || first.Status != 200 || first.Class != llm.OK || !first.Stream {
		t.Errorf("trace %+v", first)
	}
	if len(first.Attempts) != 2 || first.Attempts[0].Status != 503 || first.Attempts[0].Class != llm.Transient || first.Attempts[1].Class != llm.OK {
		t.Errorf("attempts %+v", first.Attempts)
	}
	if first.TTFT <= 0 || first.Usage.TotalTokens == 0 {
		t.Errorf("ttft %v usage %+v", first.TTFT, first.Usage)
	}
}

func TestShutdownLetsStreamsFinish(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{ChunkDelay: 100 * time.Millisecond})
	got := make(chan reply, 1)
	go func() {
		resp, err := http.Post(e.base+"/v1/chat/completions", "application/json", strings.NewReader(chat("main", true)))
		if err != nil {
			got <- reply{}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- reply{status: resp.StatusCode, body: b}
	}()
	// Wait until the stream is in flight, then shut down.
	for e.up.Calls("ma") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.g.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if s := parseSSE(t, r.body); r.status != 200 || !s.done || s.text != "Hello from ma" {
		t.Fatalf("in-flight stream cut by shutdown: %d %+v", r.status, s)
	}
	if _, err := http.Get(e.base + "/healthz"); err == nil {
		t.Error("still accepting after shutdown")
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer = logtest.Buffer

func TestLogsHoldNoKeysOrPrompts(t *testing.T) {
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	cfg := testConfig(up.URL)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + g.Addr()
	const prompt = "purple-elephant-prompt-42"
	body := `{"model":"main","stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`
	// Every path that logs: failures of all kinds, a malformed chunk, a
	// stream broken after commit, a total failure.
	up.Set("ma", fakeupstream.Behavior{Status: 401, Body: `{"error":{"message":"bad key sk-test-a"}}`})
	up.Set("mb", fakeupstream.Behavior{MalformedAt: 1, CutAfter: 2})
	for _, b := range []string{body, strings.Replace(body, `"stream":true`, `"stream":false`, 1)} {
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// And a total failure whose upstream errors echo the rejected key.
	for _, m := range []string{"mb", "mc"} {
		up.Set(m, fakeupstream.Behavior{Status: 401, Body: `{"error":{"message":"invalid key sk-test-` + m[1:] + `"}}`})
	}
	up.Set("ml", fakeupstream.Behavior{Status: 503})
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(strings.Replace(body, `"stream":true`, `"stream":false`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	failure, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(failure), "sk-test-") || !strings.Contains(string(failure), "redacted key") {
		t.Errorf("client error echoes a key: %s", failure)
	}
	if err := g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "stream failed after commit") || !strings.Contains(out, "request failed") {
		t.Fatalf("the scenario did not log what it should:\n%s", out)
	}
	for _, secret := range []string{"sk-test-", prompt} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
}
