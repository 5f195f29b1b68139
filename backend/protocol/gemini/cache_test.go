package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

var bp = &llm.CachePoint{}

// cachedTurn is turn n of a conversation with Claude Code's breakpoints:
// on the system prompt, the tool and the last message. Its system prompt
// is long enough to cache.
func cachedTurn(n int) *llm.Conversation {
	c := &llm.Conversation{
		System:      []llm.Part{{Kind: llm.PartText, Text: strings.Repeat("You are a careful coding agent. ", 300), Cache: bp}},
		Tools:       []llm.Tool{{Name: "Read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`), Cache: bp}},
		Temperature: ptr(0.5),
	}
	for i := range n {
		c.Messages = append(c.Messages, user("question "+strconv.Itoa(i)),
			llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "answer " + strconv.Itoa(i)}}})
	}
	last := user("question " + strconv.Itoa(n))
	last.Parts[0].Cache = bp
	c.Messages = append(c.Messages, last)
	return c
}

func TestCacheBoundary(t *testing.T) {
	c := cachedTurn(2)
	// The last breakpoint is on the last message, which must stay in the
	// request: the prefix is the system prompt and the tools.
	if n, ok := cacheBoundary(c); !ok || n != 0 {
		t.Errorf("boundary %d %v, want 0", n, ok)
	}
	// A breakpoint on an earlier message moves the boundary after it.
	c.Messages[1].Parts[0].Cache = bp
	if n, ok := cacheBoundary(c); !ok || n != 2 {
		t.Errorf("boundary %d %v, want 2", n, ok)
	}
	// No breakpoint, nothing to cache.
	plain := &llm.Conversation{Messages: []llm.Message{user("a"), user("b")}}
	if _, ok := cacheBoundary(plain); ok {
		t.Error("a conversation without breakpoints has a boundary")
	}
	// Only on the last message: nothing before it to cache.
	plain.Messages[1].Parts[0].Cache = bp
	if _, ok := cacheBoundary(plain); ok {
		t.Error("a breakpoint on the last message alone has a boundary")
	}
}

func TestSplitRequest(t *testing.T) {
	c := cachedTurn(1)
	c.Messages[0].Parts[0].Cache = bp // question 0 ends the prefix
	// A tool call in the prefix, answered after it: the result still
	// finds the function's name.
	c.Messages[1].Parts = append(c.Messages[1].Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c1", Name: "Read", Arguments: `{"path":"a"}`}})
	c.Messages = append(c.Messages[:2], llm.Message{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult,
		ToolResult: &llm.ToolResult{CallID: "c1", Content: []llm.Part{{Kind: llm.PartText, Text: "file a"}}}}}}, c.Messages[2])
	s, ok, err := splitRequest(c, llm.Edits{})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	var prefix map[string]json.RawMessage
	if err := json.Unmarshal(s.canonical, &prefix); err != nil {
		t.Fatal(err)
	}
	if got := string(prefix["contents"]); got != `[{"role":"user","parts":[{"text":"question 0"}]}]` {
		t.Errorf("cached contents %s", got)
	}
	for _, k := range []string{"systemInstruction", "tools"} {
		if _, ok := prefix[k]; !ok {
			t.Errorf("the prefix has no %s: %s", k, s.canonical)
		}
	}
	rest := s.rest
	rest.CachedContent = "cachedContents/x"
	b, _ := json.Marshal(rest)
	want := `{"contents":[{"role":"model","parts":[{"text":"answer 0"},{"functionCall":{"name":"Read","args":{"path":"a"}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"Read","response":{"content":"file a"}}},{"text":"question 1"}]}],` +
		`"generationConfig":{"temperature":0.5},"cachedContent":"cachedContents/x"}`
	if string(b) != want {
		t.Errorf("request\n got %s\nwant %s", b, want)
	}
	// The plain request is the two parts together, as the encoder writes
	// it, also when the turns on either side of the boundary are of one
	// role and merge.
	whole, err := s.plain()
	if err != nil {
		t.Fatal(err)
	}
	plain(t, c, protocol.Prepared{Body: whole}, true)
	c.Messages = append([]llm.Message{user("before")}, c.Messages...)
	c.Messages[0].Parts[0].Cache = bp
	c.Messages[1].Parts[0].Cache = nil
	c.Messages = append(c.Messages[:1], append([]llm.Message{user("after")}, c.Messages[1:]...)...)
	if s, ok, err = splitRequest(c, llm.Edits{}); err != nil || !ok || len(s.prefix.Contents) != 1 || s.rest.Contents[0].Role != "user" {
		t.Fatalf("split %v %v %+v", ok, err, s.prefix.Contents)
	}
	whole, _ = s.plain()
	plain(t, c, protocol.Prepared{Body: whole}, true)
}

// TestCanonicalPrefixIsStable: turn N and turn N+1 of a conversation
// have the same prefix, byte for byte, so that they share one cache; a
// changed tool is another prefix.
func TestCanonicalPrefixIsStable(t *testing.T) {
	var first []byte
	for n := 1; n <= 4; n++ {
		s, ok, err := splitRequest(cachedTurn(n), llm.Edits{})
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if first == nil {
			first = s.canonical
		} else if string(s.canonical) != string(first) {
			t.Fatalf("turn %d's prefix differs:\n%s\n%s", n, s.canonical, first)
		}
		if len(s.rest.Contents) != 2*n+1 {
			t.Errorf("turn %d sends %d turns of its own", n, len(s.rest.Contents))
		}
	}
	c := cachedTurn(1)
	c.Tools[0].Description = "Read a file, quickly"
	s, _, _ := splitRequest(c, llm.Edits{})
	if prefixHash("m", s.canonical) == prefixHash("m", first) || prefixHash("m", first) == prefixHash("n", first) {
		t.Error("another tool or another model has the same prefix hash")
	}
}

// fakeCaches answers the Caller's creations as Google does.
type fakeCaches struct {
	mu      sync.Mutex
	status  int // answer with this status; 0 creates
	err     error
	creates []string // bodies
}

func (f *fakeCaches) call(_ context.Context, path string, body []byte) (int, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if path != "/cachedContents" {
		return http.StatusNotFound, nil, nil
	}
	if f.err != nil {
		return 0, nil, f.err
	}
	switch f.status {
	case 0:
	case http.StatusBadRequest:
		return f.status, []byte(`{"error":{"code":400,"message":"Cached content is too small. total_token_count=896, min_total_token_count=1024","status":"INVALID_ARGUMENT"}}`), nil
	default:
		return f.status, []byte(`{"error":{"code":` + strconv.Itoa(f.status) + `,"message":"no","status":"UNAVAILABLE"}}`), nil
	}
	f.creates = append(f.creates, string(body))
	// Google's own clock is a day off this one: only the lifetime counts.
	name := "cachedContents/c" + strconv.Itoa(len(f.creates))
	return http.StatusOK, []byte(`{"name":"` + name + `","model":"models/gemini-2.5-flash","createTime":"2030-01-02T00:00:00Z",` +
		`"updateTime":"2030-01-02T00:00:00Z","expireTime":"2030-01-02T00:05:00Z","usageMetadata":{"totalTokenCount":2000}}`), nil
}

func (f *fakeCaches) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.creates)
}

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

func prep(f *fakeCaches, c *llm.Conversation, scope string, now time.Time) protocol.Preparation {
	return protocol.Preparation{Conv: c, Model: "gemini-2.5-flash", Scope: scope, Now: now, Call: f.call}
}

// cachedName is the cachedContent a prepared body names.
func cachedName(t *testing.T, p protocol.Prepared) string {
	t.Helper()
	var b struct {
		CachedContent     string          `json:"cachedContent"`
		SystemInstruction json.RawMessage `json:"systemInstruction"`
		Tools             json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(p.Body, &b); err != nil {
		t.Fatal(err)
	}
	if b.SystemInstruction != nil || b.Tools != nil {
		t.Errorf("a request with a cache carries the cached members too: %s", p.Body)
	}
	return b.CachedContent
}

// plain reports whether a preparation sends the plain request: the body
// the dialect's encoder writes, or none for the encoder to write.
func plain(t *testing.T, c *llm.Conversation, p protocol.Prepared, ok bool) bool {
	t.Helper()
	if !ok {
		return true
	}
	want, err := Codec.EncodeRequest(c, "gemini-2.5-flash", llm.Edits{})
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Body) != string(want) || p.Stale != nil {
		t.Errorf("the plain request is not the encoder's:\n got %s\nwant %s", p.Body, want)
		return false
	}
	return true
}

func TestExplicitCacheCreatesAndReuses(t *testing.T) {
	f := &fakeCaches{}
	x := NewExplicitCache()
	ctx := context.Background()
	p, ok := x.Prepare(ctx, prep(f, cachedTurn(1), "key1", t0))
	if !ok || cachedName(t, p) != "cachedContents/c1" || f.count() != 1 {
		t.Fatalf("turn 1: %v %s, %d creates", ok, p.Body, f.count())
	}
	var create struct {
		Model             string          `json:"model"`
		TTL               string          `json:"ttl"`
		SystemInstruction json.RawMessage `json:"systemInstruction"`
		Tools             json.RawMessage `json:"tools"`
		Contents          json.RawMessage `json:"contents"`
	}
	_ = json.Unmarshal([]byte(f.creates[0]), &create)
	if create.Model != "models/gemini-2.5-flash" || create.TTL != "300s" || create.SystemInstruction == nil || create.Tools == nil || create.Contents != nil {
		t.Errorf("create body %s", f.creates[0])
	}

	// Turn 2, a minute on: the same prefix, the same cache.
	p, ok = x.Prepare(ctx, prep(f, cachedTurn(2), "key1", t0.Add(time.Minute)))
	if !ok || cachedName(t, p) != "cachedContents/c1" || f.count() != 1 {
		t.Fatalf("turn 2: %v %s, %d creates", ok, p.Body, f.count())
	}
	// Another key has caches of its own.
	p, ok = x.Prepare(ctx, prep(f, cachedTurn(2), "key2", t0.Add(time.Minute)))
	if !ok || cachedName(t, p) != "cachedContents/c2" || f.count() != 2 {
		t.Fatalf("key 2: %v %s, %d creates", ok, p.Body, f.count())
	}
	// Close to its end (inside the margin) the cache is made anew.
	p, ok = x.Prepare(ctx, prep(f, cachedTurn(3), "key1", t0.Add(5*time.Minute-10*time.Second)))
	if !ok || cachedName(t, p) != "cachedContents/c3" || f.count() != 3 {
		t.Fatalf("after the ttl: %v %s, %d creates", ok, p.Body, f.count())
	}
	// An answer that says the cache is gone drops it: the next request
	// creates another.
	if p.Stale(http.StatusBadRequest, []byte(`{"error":{"message":"Request contains an invalid argument."}}`)) {
		t.Error("an unrelated 400 is taken for a stale cache")
	}
	if !p.Stale(http.StatusNotFound, []byte(`{"error":{"code":404,"message":"CachedContent not found (or permission denied)"}}`)) {
		t.Error("a 404 naming the cache is not taken for a stale cache")
	}
	p, ok = x.Prepare(ctx, prep(f, cachedTurn(3), "key1", t0.Add(5*time.Minute)))
	if !ok || cachedName(t, p) != "cachedContents/c4" {
		t.Fatalf("after a stale cache: %v %s", ok, p.Body)
	}
}

func TestExplicitCacheTTL(t *testing.T) {
	f := &fakeCaches{}
	x := NewExplicitCache()
	pr := prep(f, cachedTurn(1), "k", t0)
	pr.TTL = 2 * time.Minute
	if _, ok := x.Prepare(context.Background(), pr); !ok {
		t.Fatal("not prepared")
	}
	if !strings.Contains(f.creates[0], `"ttl":"120s"`) {
		t.Errorf("create body %s", f.creates[0])
	}
	pr.Now = t0.Add(2 * time.Minute)
	if _, ok := x.Prepare(context.Background(), pr); !ok || f.count() != 2 {
		t.Errorf("a cache past its ttl is used: %d creates", f.count())
	}
}

// TestExplicitCacheFailuresSendPlain: a refused or failed creation sends
// the plain request and is remembered, for a long while when the prefix
// is too small and briefly otherwise.
func TestExplicitCacheFailuresSendPlain(t *testing.T) {
	ctx := context.Background()
	calls := 0
	counting := func(f *fakeCaches) protocol.Caller {
		return func(ctx context.Context, path string, body []byte) (int, []byte, error) {
			calls++
			return f.call(ctx, path, body)
		}
	}
	for _, tc := range []struct {
		name   string
		f      *fakeCaches
		again  time.Duration // when a creation is tried again
		before time.Duration // a time before that when it is not
	}{
		{"too small", &fakeCaches{status: http.StatusBadRequest}, refuseTooSmall, 10 * time.Minute},
		{"quota", &fakeCaches{status: http.StatusTooManyRequests}, refuseBriefly, 30 * time.Second},
		{"overload", &fakeCaches{status: http.StatusServiceUnavailable}, refuseBriefly, 30 * time.Second},
		{"permission", &fakeCaches{status: http.StatusForbidden}, refuseBriefly, 30 * time.Second},
		{"transport", &fakeCaches{err: errors.New("connection reset")}, refuseBriefly, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls = 0
			x := NewExplicitCache()
			pr := prep(tc.f, cachedTurn(1), "k", t0)
			pr.Call = counting(tc.f)
			if p, ok := x.Prepare(ctx, pr); !plain(t, pr.Conv, p, ok) || calls != 1 {
				t.Fatalf("prepared %s after %d calls", p.Body, calls)
			}
			pr.Conv, pr.Now = cachedTurn(2), t0.Add(tc.before)
			if p, ok := x.Prepare(ctx, pr); !plain(t, pr.Conv, p, ok) || calls != 1 {
				t.Fatalf("tried again after %s: %s, %d calls", tc.before, p.Body, calls)
			}
			tc.f.status, tc.f.err = 0, nil
			pr.Now = t0.Add(tc.again)
			if _, ok := x.Prepare(ctx, pr); !ok || calls != 2 {
				t.Fatalf("not tried again after %s: %v, %d calls", tc.again, ok, calls)
			}
		})
	}
}

// TestExplicitCacheSkipsSmallPrefixes: a prefix far below the minimum is
// not sent to Google at all.
func TestExplicitCacheSkipsSmallPrefixes(t *testing.T) {
	f := &fakeCaches{}
	c := cachedTurn(1)
	c.System[0].Text = "Be brief."
	if p, ok := NewExplicitCache().Prepare(context.Background(), prep(f, c, "k", t0)); !plain(t, c, p, ok) || f.count() != 0 {
		t.Errorf("a small prefix was prepared: %s, %d creates", p.Body, f.count())
	}
	// No breakpoint: no call either.
	c = cachedTurn(1)
	c.System[0].Cache, c.Tools[0].Cache = nil, nil
	if _, ok := NewExplicitCache().Prepare(context.Background(), prep(f, c, "k", t0)); ok || f.count() != 0 {
		t.Errorf("a request without breakpoints was prepared: %v, %d creates", ok, f.count())
	}
}

func TestExplicitCacheIsBounded(t *testing.T) {
	f := &fakeCaches{}
	x := NewExplicitCache().(*explicitCache)
	x.max = 3
	for i := range 5 {
		if _, ok := x.Prepare(context.Background(), prep(f, cachedTurn(1), "k"+strconv.Itoa(i), t0)); !ok {
			t.Fatal("not prepared")
		}
	}
	if len(x.entries) != 3 || x.order.Len() != 3 {
		t.Errorf("%d entries, %d in order, want 3", len(x.entries), x.order.Len())
	}
	// The oldest went first: k0 is created again, k4 is not.
	if _, ok := x.Prepare(context.Background(), prep(f, cachedTurn(1), "k4", t0)); !ok || f.count() != 5 {
		t.Errorf("the newest entry was evicted: %d creates", f.count())
	}
	if _, ok := x.Prepare(context.Background(), prep(f, cachedTurn(1), "k0", t0)); !ok || f.count() != 6 {
		t.Errorf("the oldest entry was kept: %d creates", f.count())
	}
}

func TestMinCacheTokens(t *testing.T) {
	if minCacheTokens("gemini-2.5-pro") != 4096 || minCacheTokens("gemini-2.5-flash") != 1024 {
		t.Error("minimum sizes")
	}
}

// TestExplicitCacheOneCreationAtATime: while a prefix's cache is being
// made, another request with that prefix is sent plain rather than make
// a second; a creation its client gave up on leaves nothing behind.
func TestExplicitCacheOneCreationAtATime(t *testing.T) {
	f := &fakeCaches{}
	x := NewExplicitCache()
	entered, release := make(chan struct{}), make(chan struct{})
	slow := func(ctx context.Context, path string, body []byte) (int, []byte, error) {
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
		return f.call(ctx, path, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() {
		pr := prep(f, cachedTurn(1), "k", t0)
		pr.Call = slow
		_, ok := x.Prepare(ctx, pr)
		done <- ok
	}()
	<-entered
	if p, ok := x.Prepare(context.Background(), prep(f, cachedTurn(2), "k", t0)); !plain(t, cachedTurn(2), p, ok) {
		t.Error("a second request made a cache while the first was being made")
	}
	cancel()
	<-done
	close(release)
	// The cancelled creation is forgotten: the next request makes one.
	if p, ok := x.Prepare(context.Background(), prep(f, cachedTurn(2), "k", t0)); !ok || cachedName(t, p) == "" || f.count() != 1 {
		t.Errorf("after a cancelled creation: %s, %d creates", p.Body, f.count())
	}
}
