package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/llm"
)

// newCacheEnv is newEnv with the response cache on.
func newCacheEnv(t *testing.T, mutate func(*config.Config)) *env {
	t.Helper()
	return newEnv(t, func(c *config.Config) {
		c.Cache = config.ResponseCache{Enabled: true}
		if mutate != nil {
			mutate(c)
		}
	})
}

// question is a deterministic chat request to chain main (temperature 0).
func question(stream bool) string {
	return detQuestion(stream, "0")
}

func detQuestion(stream bool, temperature string) string {
	s := `{"model":"main","temperature":` + temperature + `,"max_tokens":64,"messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":"What is two plus two?"}]`
	if stream {
		s += `,"stream":true,"stream_options":{"include_usage":true}`
	}
	return s + `}`
}

// ask posts a chat request with the headers.
func (e *env) ask(body string, header map[string]string) reply {
	e.t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range header {
		h[k] = v
	}
	return e.raw(http.MethodPost, "/v1/chat/completions", body, h)
}

// trace reads a request's trace from the dashboard's API.
func (e *env) trace(r reply) llm.Trace {
	e.t.Helper()
	id := r.header.Get("X-FreeLane-Request-Id")
	got := e.do("GET", "/api/requests/"+id, "", nil)
	var tr llm.Trace
	if err := json.Unmarshal(got.body, &tr); err != nil || got.status != http.StatusOK {
		e.t.Fatalf("trace of %q: %d %s", id, got.status, got.body)
	}
	return tr
}

func wantCache(t *testing.T, r reply, want string) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if got := r.header.Get("X-FreeLane-Cache"); got != want {
		t.Fatalf("X-FreeLane-Cache %q, want %q", got, want)
	}
}

func TestResponseCacheHitPlain(t *testing.T) {
	e := newCacheEnv(t, nil)
	first := e.ask(question(false), nil)
	wantCache(t, first, "miss")
	second := e.ask(question(false), nil)
	wantCache(t, second, "hit")
	if n := e.up.Calls("ma"); n != 1 {
		t.Fatalf("upstream called %d times, want 1", n)
	}
	if a, b := content(t, first.body), content(t, second.body); a != b || a != "Hello from ma" {
		t.Fatalf("cached answer %q, first %q", b, a)
	}
	if b := second.header.Get("X-FreeLane-Backend"); b != "" {
		t.Errorf("a hit names backend %q", b)
	}
	var u struct {
		Usage llm.Usage `json:"usage"`
	}
	_ = json.Unmarshal(second.body, &u)
	if u.Usage.CompletionTokens == 0 || u.Usage.PromptTokens == 0 {
		t.Errorf("hit without the answer's usage: %s", second.body)
	}
	tr := e.trace(second)
	if tr.Cache != llm.CacheHit || tr.Backend != "" || len(tr.Attempts) != 0 || tr.Usage.CompletionTokens != u.Usage.CompletionTokens || tr.Class != llm.OK {
		t.Errorf("hit's trace: %+v", tr)
	}
	if len(tr.Notes) == 0 || !strings.Contains(tr.Notes[len(tr.Notes)-1], "made by a/ma") {
		t.Errorf("hit's trace does not say where the answer came from: %q", tr.Notes)
	}
	if tr := e.trace(first); tr.Cache != llm.CacheMiss || tr.Backend != "a/ma" {
		t.Errorf("miss's trace: cache %q backend %q", tr.Cache, tr.Backend)
	}
	st := e.g.ResponseCache().Stats()
	if st.Entries != 1 || st.Hits != 1 || st.Misses != 1 || st.HitRate != 0.5 || st.Bytes <= 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestResponseCacheHitStream(t *testing.T) {
	e := newCacheEnv(t, nil)
	e.up.SetDefault(fakeupstream.Behavior{Chunks: []string{strings.Repeat("four ", 30), "is the answer", "."}})
	first := e.ask(question(true), nil)
	wantCache(t, first, "miss")
	second := e.ask(question(true), nil)
	wantCache(t, second, "hit")
	if n := e.up.Calls("ma"); n != 1 {
		t.Fatalf("upstream called %d times, want 1", n)
	}
	a, b := parseSSE(t, first.body), parseSSE(t, second.body)
	if a.text != b.text || !b.done || b.errMsg != "" {
		t.Fatalf("replayed %q (done %v), first %q", b.text, b.done, a.text)
	}
	content := 0
	usage := false
	for _, ev := range b.events {
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *llm.Usage `json:"usage"`
		}
		_ = json.Unmarshal([]byte(ev), &c)
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			content++
		}
		if c.Usage != nil && c.Usage.CompletionTokens > 0 {
			usage = true
		}
	}
	if content < 3 || !usage {
		t.Errorf("replayed stream has %d content events, usage %v: %q", content, usage, b.events)
	}
	// A plain request asking the same question shares the entry.
	plain := e.ask(question(false), nil)
	wantCache(t, plain, "hit")
	if got := contentOf(t, plain.body); got != a.text {
		t.Errorf("plain hit %q, stream %q", got, a.text)
	}
	if e.up.Calls("ma") != 1 {
		t.Errorf("upstream called %d times", e.up.Calls("ma"))
	}
}

func contentOf(t *testing.T, body []byte) string { t.Helper(); return content(t, body) }

func TestResponseCacheOneEntryForTwoDialects(t *testing.T) {
	e := newCacheEnv(t, nil)
	wantCache(t, e.ask(question(false), nil), "miss")
	anth := `{"model":"main","max_tokens":64,"temperature":0,"system":"Answer briefly.","messages":[{"role":"user","content":"What is two plus two?"}]}`
	r := e.raw(http.MethodPost, "/v1/messages", anth, map[string]string{"Content-Type": "application/json", "anthropic-version": "2023-06-01"})
	wantCache(t, r, "hit")
	var m struct {
		Type    string `json:"type"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Usage struct {
			Output int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(r.body, &m); err != nil || m.Type != "message" || len(m.Content) != 1 || m.Content[0].Text != "Hello from ma" || m.Usage.Output == 0 {
		t.Fatalf("Anthropic hit: %s", r.body)
	}
	// And as an Anthropic stream.
	rs := e.raw(http.MethodPost, "/v1/messages", strings.Replace(anth, `{"model"`, `{"stream":true,"model"`, 1),
		map[string]string{"Content-Type": "application/json", "anthropic-version": "2023-06-01"})
	wantCache(t, rs, "hit")
	if !strings.Contains(string(rs.body), "event: message_stop") || !strings.Contains(string(rs.body), `"text":"Hello from ma"`) {
		t.Errorf("Anthropic stream hit: %s", rs.body)
	}
	if n := e.up.Calls("ma"); n != 1 {
		t.Fatalf("upstream called %d times, want 1", n)
	}
	if st := e.g.ResponseCache().Stats(); st.Entries != 1 {
		t.Errorf("%d entries", st.Entries)
	}
}

func TestResponseCacheOnlyDeterministic(t *testing.T) {
	e := newCacheEnv(t, nil)
	for range 2 {
		r := e.ask(detQuestion(false, "0.9"), nil)
		if r.status != http.StatusOK || r.header.Get("X-FreeLane-Cache") != "" {
			t.Fatalf("temperature 0.9: %d %q", r.status, r.header.Get("X-FreeLane-Cache"))
		}
	}
	if n := e.up.Calls("ma"); n != 2 {
		t.Fatalf("upstream called %d times, want 2", n)
	}
	// The client's opt-in keeps it.
	on := map[string]string{"X-FreeLane-Cache": "on"}
	wantCache(t, e.ask(detQuestion(false, "0.9"), on), "miss")
	wantCache(t, e.ask(detQuestion(false, "0.9"), on), "hit")
	// A seed makes it deterministic too.
	seeded := strings.Replace(detQuestion(false, "0.9"), `"max_tokens"`, `"seed":7,"max_tokens"`, 1)
	wantCache(t, e.ask(seeded, nil), "miss")
	wantCache(t, e.ask(seeded, nil), "hit")
	if n := e.up.Calls("ma"); n != 4 {
		t.Fatalf("upstream called %d times, want 4", n)
	}
}

func TestResponseCacheHeaders(t *testing.T) {
	e := newCacheEnv(t, nil)
	wantCache(t, e.ask(question(false), nil), "miss")
	// no-cache asks the backend again and keeps the new answer.
	e.up.SetDefault(fakeupstream.Behavior{Chunks: []string{"Four."}})
	r := e.ask(question(false), map[string]string{"Cache-Control": "no-cache"})
	wantCache(t, r, "refresh")
	if got := content(t, r.body); got != "Four." {
		t.Fatalf("refresh got %q", got)
	}
	r = e.ask(question(false), nil)
	wantCache(t, r, "hit")
	if got := content(t, r.body); got != "Four." {
		t.Fatalf("entry not replaced: %q", got)
	}
	if n := e.up.Calls("ma"); n != 2 {
		t.Fatalf("upstream called %d times, want 2", n)
	}
	// no-store and off neither read nor write.
	e.up.SetDefault(fakeupstream.Behavior{Chunks: []string{"Bypassed."}})
	for _, h := range []map[string]string{{"Cache-Control": "no-store"}, {"X-FreeLane-Cache": "off"}, {"Cache-Control": "max-age=5, no-store"}} {
		r = e.ask(question(false), h)
		wantCache(t, r, "bypass")
		if got := content(t, r.body); got != "Bypassed." {
			t.Fatalf("%v: %q", h, got)
		}
	}
	if n := e.up.Calls("ma"); n != 5 {
		t.Fatalf("upstream called %d times, want 5", n)
	}
	if got := content(t, e.ask(question(false), nil).body); got != "Four." {
		t.Fatalf("a bypass changed the entry: %q", got)
	}
	// max-age bounds the age of a hit.
	e.clock.Advance(30 * time.Second)
	wantCache(t, e.ask(question(false), map[string]string{"Cache-Control": "max-age=60"}), "hit")
	r = e.ask(question(false), map[string]string{"Cache-Control": "max-age=10"})
	wantCache(t, r, "miss")
	if got := content(t, r.body); got != "Bypassed." {
		t.Fatalf("max-age miss got %q", got)
	}
	if n := e.up.Calls("ma"); n != 6 {
		t.Fatalf("upstream called %d times, want 6", n)
	}
	// Anything else in X-FreeLane-Cache is refused in the client's dialect.
	r = e.ask(question(false), map[string]string{"X-FreeLane-Cache": "maybe"})
	if r.status != http.StatusBadRequest || r.errorMessage() != `X-FreeLane-Cache must be "off" or "on", got "maybe"` {
		t.Fatalf("bad header: %d %s", r.status, r.body)
	}
	r = e.raw(http.MethodPost, "/v1/messages", `{"model":"main","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"Content-Type": "application/json", "anthropic-version": "2023-06-01", "X-FreeLane-Cache": "yes"})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"type":"error"`) || !strings.Contains(string(r.body), "X-FreeLane-Cache must be") {
		t.Fatalf("bad header, Anthropic: %d %s", r.status, r.body)
	}
}

func TestResponseCacheTTL(t *testing.T) {
	e := newCacheEnv(t, func(c *config.Config) { c.Cache.TTL = 2 * time.Minute })
	wantCache(t, e.ask(question(false), nil), "miss")
	e.clock.Advance(time.Minute)
	wantCache(t, e.ask(question(false), nil), "hit")
	e.clock.Advance(61 * time.Second)
	wantCache(t, e.ask(question(false), nil), "miss")
	wantCache(t, e.ask(question(false), nil), "hit")
	if n := e.up.Calls("ma"); n != 2 {
		t.Fatalf("upstream called %d times, want 2", n)
	}
}

func TestResponseCacheNeverKeepsFailures(t *testing.T) {
	e := newCacheEnv(t, nil)
	// A caller error from the backend.
	e.up.Set("ma", fakeupstream.Behavior{Status: 400, Code: "invalid_value"}, fakeupstream.Behavior{})
	pinned := strings.Replace(question(false), `"model":"main"`, `"model":"a/ma"`, 1)
	if r := e.ask(pinned, nil); r.status != http.StatusBadRequest {
		t.Fatalf("scripted 400: %d %s", r.status, r.body)
	}
	wantCache(t, e.ask(pinned, nil), "miss")
	// A stream cut after it began, and one broken by an error event.
	e.up.Set("ma", fakeupstream.Behavior{CutAfter: 1}, fakeupstream.Behavior{ErrorEvent: fakeupstream.ErrorServer, ErrorAfter: 1}, fakeupstream.Behavior{})
	for range 2 {
		r := e.ask(question(true), nil)
		wantCache(t, r, "miss")
		if st := parseSSE(t, r.body); st.done {
			t.Fatalf("the broken stream ended cleanly: %q", st.events)
		}
	}
	if st := e.g.ResponseCache().Stats(); st.Entries != 1 {
		t.Errorf("%d entries, want only the good answer", st.Entries)
	}
	wantCache(t, e.ask(question(true), nil), "miss")
	wantCache(t, e.ask(question(true), nil), "hit")
	// The two failures opened a/ma's breaker: b/mb made the good answer.
	if a, b := e.up.Calls("ma"), e.up.Calls("mb"); a+b != 3 {
		t.Fatalf("upstreams called %d+%d times, want 3", a, b)
	}
}

func TestResponseCacheTruncatedToolCallNotKept(t *testing.T) {
	e := newCacheEnv(t, nil)
	e.up.SetDefault(fakeupstream.Behavior{ToolCall: true, ToolName: "get_weather", ToolArgs: `{"city":`})
	for range 2 {
		wantCache(t, e.ask(question(true), nil), "miss")
	}
	e.up.SetDefault(fakeupstream.Behavior{ToolCall: true, ToolName: "get_weather", ToolArgs: `{"city":"Paris"}`})
	wantCache(t, e.ask(question(true), nil), "miss")
	r := e.ask(question(false), nil)
	wantCache(t, r, "hit")
	if !strings.Contains(string(r.body), `get_weather`) || !strings.Contains(string(r.body), `Paris`) {
		t.Errorf("tool call hit: %s", r.body)
	}
}

func TestResponseCacheSurvivesRestart(t *testing.T) {
	e := newCacheEnv(t, nil)
	wantCache(t, e.ask(question(false), nil), "miss")
	wantCache(t, e.ask(question(false), nil), "hit")
	cfg := testConfig(e.up.URL)
	cfg.Cache = config.ResponseCache{Enabled: true}
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.start(cfg)
	r := e.ask(question(false), nil)
	wantCache(t, r, "hit")
	if content(t, r.body) != "Hello from ma" || e.up.Calls("ma") != 1 {
		t.Fatalf("after a restart: %s, %d calls", r.body, e.up.Calls("ma"))
	}
	st := e.g.ResponseCache().Stats()
	if st.Hits != 1 || st.Total.Hits != 2 || st.Total.Misses != 1 {
		t.Errorf("stats after a restart %+v", st)
	}
}

func TestResponseCachePerChainSwitch(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Chains = append(c.Chains, config.Chain{Name: "cached", Backends: []string{"b/mb"}, Cache: &config.ChainCache{Enabled: true}},
			config.Chain{Name: "plain", Backends: []string{"b/mb"}})
	})
	for range 2 {
		r := e.ask(question(false), nil)
		if r.header.Get("X-FreeLane-Cache") != "" {
			t.Fatalf("cache off globally, yet %q", r.header.Get("X-FreeLane-Cache"))
		}
		if tr := e.trace(r); tr.Cache != "" {
			t.Fatalf("trace cache %q", tr.Cache)
		}
		r = e.ask(strings.Replace(question(false), `"main"`, `"plain"`, 1), nil)
		if r.header.Get("X-FreeLane-Cache") != "" {
			t.Fatalf("plain chain: %q", r.header.Get("X-FreeLane-Cache"))
		}
	}
	wantCache(t, e.ask(strings.Replace(question(false), `"main"`, `"cached"`, 1), nil), "miss")
	wantCache(t, e.ask(strings.Replace(question(false), `"main"`, `"cached"`, 1), nil), "hit")
	if a, b := e.up.Calls("ma"), e.up.Calls("mb"); a != 2 || b != 3 {
		t.Fatalf("calls ma %d mb %d", a, b)
	}
}

// The Gemini and Responses clients asking the question an OpenAI client
// asked get its answer from the cache, in their own shape.
func TestResponseCacheGeminiAndResponsesClients(t *testing.T) {
	e := newCacheEnv(t, nil)
	wantCache(t, e.ask(question(false), nil), "miss")
	gem := `{"systemInstruction":{"parts":[{"text":"Answer briefly."}]},"contents":[{"role":"user","parts":[{"text":"What is two plus two?"}]}],"generationConfig":{"temperature":0,"maxOutputTokens":64}}`
	r := e.raw(http.MethodPost, "/v1beta/models/main:generateContent", gem, map[string]string{"Content-Type": "application/json"})
	wantCache(t, r, "hit")
	if !strings.Contains(string(r.body), `"text":"Hello from ma"`) || !strings.Contains(string(r.body), `"usageMetadata"`) {
		t.Errorf("Gemini hit: %s", r.body)
	}
	rs := `{"model":"main","temperature":0,"max_output_tokens":64,"instructions":"Answer briefly.","input":"What is two plus two?"}`
	r = e.raw(http.MethodPost, "/v1/responses", rs, map[string]string{"Content-Type": "application/json"})
	wantCache(t, r, "hit")
	var resp struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Output []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	if err := json.Unmarshal(r.body, &resp); err != nil || resp.Status != "completed" || len(resp.Output) == 0 ||
		len(resp.Output[0].Content) == 0 || resp.Output[0].Content[0].Text != "Hello from ma" || !strings.HasPrefix(resp.ID, "resp_") {
		t.Errorf("Responses hit: %s", r.body)
	}
	r = e.raw(http.MethodPost, "/v1/responses", strings.Replace(rs, `{"model"`, `{"stream":true,"model"`, 1), map[string]string{"Content-Type": "application/json"})
	wantCache(t, r, "hit")
	if !strings.Contains(string(r.body), "response.completed") || !strings.Contains(string(r.body), "Hello from ma") {
		t.Errorf("Responses stream hit: %s", r.body)
	}
	if n := e.up.Calls("ma"); n != 1 {
		t.Fatalf("upstream called %d times, want 1", n)
	}
}
