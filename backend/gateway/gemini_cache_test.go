package gateway_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/tier"
)

// The Gemini providers of these tests: "gemc" with its explicit cache on,
// "gemp" without it. Their models are priced, the cache
// reads at a quarter of the input.
const (
	gemCached = "gemc/gemini-2.5-flash"
	gemPlain  = "gemp/gemini-2.5-flash-lite"
)

var gemPrice = config.Price{Input: 1, Output: 2, CacheRead: 0.25}

// gemKey is gemc's first key.
const gemKey = "AIza-key-one"

func explicitCacheEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, func(cfg *config.Config) {
		gemURL := strings.TrimSuffix(cfg.Providers[0].BaseURL, "/v1") + "/v1beta"
		cfg.Providers = append(cfg.Providers,
			config.Provider{Name: "gemc", Kind: config.KindGemini, Tier: tier.Own, BaseURL: gemURL, ExplicitCache: true,
				Models: []config.Model{{ID: "gemini-2.5-flash", Context: 1000000, MaxOutput: 65536, Price: &gemPrice}}, Timeouts: fastTimeouts},
			config.Provider{Name: "gemp", Kind: config.KindGemini, Tier: tier.Own, BaseURL: gemURL, APIKey: "AIza-key-one",
				Models: []config.Model{{ID: "gemini-2.5-flash-lite", Context: 1000000, MaxOutput: 65536, Price: &gemPrice}}, Timeouts: fastTimeouts},
		)
	})
	// gemc's key is the dashboard's, so that a test can change it.
	key := gemKey
	if _, err := e.g.Control().SetKey(context.Background(), "gemc", &key); err != nil {
		t.Fatal(err)
	}
	return e
}

// claudeCodeTurn is turn n of a Claude Code conversation: breakpoints on
// a system prompt of about 2,000 tokens, on the tool and on the last
// message. system replaces the system prompt when not empty.
func claudeCodeTurn(model string, n int, system string) string {
	if system == "" {
		system = strings.Repeat("You are Claude Code. ", 400)
	}
	var msgs []string
	for i := range n {
		msgs = append(msgs, `{"role":"user","content":[{"type":"text","text":"question `+strconv.Itoa(i)+`"}]}`,
			`{"role":"assistant","content":[{"type":"text","text":"answer `+strconv.Itoa(i)+`"}]}`)
	}
	msgs = append(msgs, `{"role":"user","content":[{"type":"text","text":"question `+strconv.Itoa(n)+`","cache_control":{"type":"ephemeral"}}]}`)
	return `{"model":"` + model + `","max_tokens":1024,
  "system":[{"type":"text","text":"` + system + `","cache_control":{"type":"ephemeral"}}],
  "tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}},"cache_control":{"type":"ephemeral"}}],
  "messages":[` + strings.Join(msgs, ",") + `]}`
}

// turn sends a Claude Code turn in session and returns the answer's
// cache_read_input_tokens and the request's id.
func (e *env) claudeTurn(model string, n int, session, system string) (read int, id string) {
	e.t.Helper()
	r := e.postHeaders("/v1/messages", claudeCodeTurn(model, n, system), map[string]string{"anthropic-version": "2023-06-01", "X-FreeLane-Session": session})
	if r.status != http.StatusOK {
		e.t.Fatalf("turn %d of %s: %d %s", n, session, r.status, r.body)
	}
	var a struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Usage struct {
			Read int `json:"cache_read_input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(r.body, &a); err != nil || len(a.Content) == 0 || a.Content[0].Text == "" {
		e.t.Fatalf("turn %d of %s: no answer: %s", n, session, r.body)
	}
	return a.Usage.Read, r.header.Get("X-FreeLane-Request-Id")
}

// generateRequests are the generateContent requests the fake got for
// model, and the number of cache creations it was asked for (made or
// refused).
func generateRequests(e *env, model string) (gens []fakeupstream.Request, creates int) {
	for _, r := range e.up.Requests() {
		switch {
		case r.Model == model && strings.HasSuffix(r.Path, "/cachedContents"):
			creates++
		case r.Model == model:
			gens = append(gens, r)
		}
	}
	return gens, creates
}

// namedCache is the cachedContent a generateContent body names; the body
// must then carry no systemInstruction or tools of its own.
func namedCache(t *testing.T, r fakeupstream.Request) string {
	t.Helper()
	name := member(t, r.Body, "cachedContent")
	var m map[string]json.RawMessage
	_ = json.Unmarshal(r.Body, &m)
	if _, sys := m["systemInstruction"]; name != "" && (sys || m["tools"] != nil) {
		t.Errorf("a body with a cache carries the cached members too: %s", r.Body)
	}
	if name == "" && m["systemInstruction"] == nil {
		t.Errorf("a plain body without its system instruction: %s", r.Body)
	}
	return name
}

// TestGeminiExplicitCacheThroughTheGateway: Claude Code, speaking
// Anthropic with cache_control, reaches a Gemini provider with
// explicit_cache on. The first turn creates a cache and is answered
// through it; the next turns reuse it, the answers say how much was read
// from it and the ledger prices that at the cache-read price; another
// key makes its own; after the cache lifetime a new one is made.
func TestGeminiExplicitCacheThroughTheGateway(t *testing.T) {
	e := explicitCacheEnv(t)
	const model = "gemini-2.5-flash"
	keyA, keyB := gemKey, "AIza-key-two"

	read, _ := e.claudeTurn(gemCached, 1, "session-a", "")
	gens, creates := generateRequests(e, model)
	if e.up.CacheCreates() != 1 || creates != 1 || len(gens) != 1 {
		t.Fatalf("turn 1: %d caches made, %d asked, %d generateContent", e.up.CacheCreates(), creates, len(gens))
	}
	first := namedCache(t, gens[0])
	if first == "" || read < 1000 {
		t.Fatalf("turn 1 named cache %q and read %d tokens from it", first, read)
	}
	if got := gens[0].Header.Get("X-Goog-Api-Key"); got != keyA {
		t.Fatalf("turn 1 was sent with key %q", got)
	}

	read, id := e.claudeTurn(gemCached, 2, "session-a", "")
	gens, creates = generateRequests(e, model)
	if creates != 1 || len(gens) != 2 || namedCache(t, gens[1]) != first || read < 1000 {
		t.Fatalf("turn 2: %d creations, cache %q (want %q), %d tokens read", creates, namedCache(t, gens[1]), first, read)
	}
	// Past the cache, the turn sends only its own turns.
	var body struct {
		Contents []json.RawMessage `json:"contents"`
	}
	_ = json.Unmarshal(gens[1].Body, &body)
	if len(body.Contents) != 5 {
		t.Errorf("turn 2 sent %d turns, want its 5", len(body.Contents))
	}
	tr := e.traceOf(id)
	u := tr.Usage
	want := (float64(u.PromptTokens-u.CacheReadTokens)*gemPrice.Input + float64(u.CacheReadTokens)*gemPrice.CacheRead +
		float64(u.CompletionTokens)*gemPrice.Output) / 1e6
	if u.CacheReadTokens != read || math.Abs(tr.Cost-want) > 1e-12 || tr.Cost >= float64(u.PromptTokens)*gemPrice.Input/1e6 {
		t.Errorf("turn 2's trace: usage %+v, cost %g, want %g", u, tr.Cost, want)
	}

	// The provider's key changes: the new key's project cannot see the
	// old key's cache, so the same prefix gets a cache of its own.
	if _, err := e.g.Control().SetKey(context.Background(), "gemc", &keyB); err != nil {
		t.Fatal(err)
	}
	read, _ = e.claudeTurn(gemCached, 3, "session-a", "")
	gens, creates = generateRequests(e, model)
	last := gens[len(gens)-1]
	second := namedCache(t, last)
	if last.Header.Get("X-Goog-Api-Key") != keyB || creates != 2 || e.up.CacheCreates() != 2 || second == first || second == "" || read < 1000 {
		t.Fatalf("the new key %s: %d creations, cache %q, %d tokens read", last.Header.Get("X-Goog-Api-Key"), creates, second, read)
	}
	// Back to the first key, whose cache is still alive: it is used
	// again, across the two reloads.
	if _, err := e.g.Control().SetKey(context.Background(), "gemc", &keyA); err != nil {
		t.Fatal(err)
	}
	read, _ = e.claudeTurn(gemCached, 4, "session-a", "")
	gens, creates = generateRequests(e, model)
	if last = gens[len(gens)-1]; creates != 2 || namedCache(t, last) != first || read < 1000 {
		t.Fatalf("the first key again: %d creations, cache %q, %d tokens read", creates, namedCache(t, last), read)
	}

	// Past the lifetime (5 minutes), a new cache is made.
	e.clock.Advance(6 * time.Minute)
	read, _ = e.claudeTurn(gemCached, 5, "session-a", "")
	gens, creates = generateRequests(e, model)
	last = gens[len(gens)-1]
	if creates != 3 || namedCache(t, last) == first || read < 1000 {
		t.Errorf("after the lifetime: %d creations, cache %q, %d tokens read", creates, namedCache(t, last), read)
	}
}

// TestGeminiWithoutExplicitCacheCreatesNone: without explicit_cache the
// same conversation creates no cache and is sent whole.
func TestGeminiWithoutExplicitCacheCreatesNone(t *testing.T) {
	e := explicitCacheEnv(t)
	for n := 1; n <= 2; n++ {
		e.claudeTurn(gemPlain, n, "session-p", "")
	}
	gens, creates := generateRequests(e, "gemini-2.5-flash-lite")
	if creates != 0 || e.up.CacheCreates() != 0 || len(gens) != 2 {
		t.Fatalf("%d creations, %d generateContent", creates, len(gens))
	}
	for _, g := range gens {
		if namedCache(t, g) != "" {
			t.Errorf("a plain provider's body names a cache: %s", g.Body)
		}
	}
}

// TestGeminiExplicitCacheRefusedFallsBack: a prefix Google finds too
// small is answered by the plain request, and not tried again on the
// next turn; one far too small is not even tried.
func TestGeminiExplicitCacheRefusedFallsBack(t *testing.T) {
	e := explicitCacheEnv(t)
	e.up.SetCacheMinTokens(100000)
	const model = "gemini-2.5-flash"
	for n := 1; n <= 3; n++ {
		e.claudeTurn(gemCached, n, "session-r", "")
		gens, creates := generateRequests(e, model)
		if creates != 1 || e.up.CacheCreates() != 0 || len(gens) != n || namedCache(t, gens[n-1]) != "" {
			t.Fatalf("turn %d: %d creations asked, %d made, %d generateContent", n, creates, e.up.CacheCreates(), len(gens))
		}
	}

	e.up.Reset()
	e.claudeTurn(gemCached, 1, "session-s", "Be brief.")
	if gens, creates := generateRequests(e, model); creates != 0 || len(gens) != 1 || namedCache(t, gens[0]) != "" {
		t.Errorf("a tiny prefix: %d creations, %d generateContent", creates, len(gens))
	}
}

// TestGeminiExplicitCacheFailureCostsNothing: a creation that fails (the
// project's quota) leaves the request to the plain body; a cache Google
// dropped early is answered by the plain request too, and made anew on
// the next turn.
func TestGeminiExplicitCacheFailureCostsNothing(t *testing.T) {
	e := explicitCacheEnv(t)
	const model = "gemini-2.5-flash"
	e.up.FailCacheCreates(http.StatusTooManyRequests)
	e.claudeTurn(gemCached, 1, "session-f", "")
	gens, creates := generateRequests(e, model)
	if creates != 1 || len(gens) != 1 || namedCache(t, gens[0]) != "" {
		t.Fatalf("a failed creation: %d creations, %d generateContent", creates, len(gens))
	}

	// A minute on, the creation is tried again and succeeds.
	e.up.FailCacheCreates(0)
	e.clock.Advance(2 * time.Minute)
	e.claudeTurn(gemCached, 2, "session-f", "")
	if gens, creates = generateRequests(e, model); creates != 2 || e.up.CacheCreates() != 1 || namedCache(t, gens[len(gens)-1]) == "" {
		t.Fatalf("after the failure passed: %d creations, %d made", creates, e.up.CacheCreates())
	}

	e.up.DropCaches()
	read, _ := e.claudeTurn(gemCached, 3, "session-f", "")
	gens, creates = generateRequests(e, model)
	n := len(gens)
	if creates != 2 || n != 4 || namedCache(t, gens[n-2]) == "" || namedCache(t, gens[n-1]) != "" || read != 0 {
		t.Fatalf("a dropped cache: %d creations, %d generateContent, %d read", creates, n, read)
	}
	e.claudeTurn(gemCached, 4, "session-f", "")
	if _, creates = generateRequests(e, model); creates != 3 || e.up.CacheCreates() != 2 {
		t.Errorf("the turn after a dropped cache: %d creations, %d made", creates, e.up.CacheCreates())
	}
}

// TestGeminiExplicitCacheStreams: a streamed turn is prepared the same
// way, and the caller's stream reports the tokens read from the cache.
func TestGeminiExplicitCacheStreams(t *testing.T) {
	e := explicitCacheEnv(t)
	for n := 1; n <= 2; n++ {
		body := strings.Replace(claudeCodeTurn(gemCached, n, ""), `"max_tokens":1024,`, `"max_tokens":1024,"stream":true,`, 1)
		r := e.postHeaders("/v1/messages", body, map[string]string{"anthropic-version": "2023-06-01", "X-FreeLane-Session": "session-st"})
		if r.status != http.StatusOK {
			t.Fatalf("turn %d: %d %s", n, r.status, r.body)
		}
		if u := usageSeen(t, "anthropic", true, r.body); u.cached < 1000 {
			t.Errorf("turn %d: the stream shows %d cached tokens: %s", n, u.cached, r.body)
		}
	}
	gens, creates := generateRequests(e, "gemini-2.5-flash")
	if creates != 1 || len(gens) != 2 || !strings.HasSuffix(gens[1].Path, ":streamGenerateContent") || namedCache(t, gens[1]) != namedCache(t, gens[0]) {
		t.Errorf("%d creations, %d streamGenerateContent", creates, len(gens))
	}
}
