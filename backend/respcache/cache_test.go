package respcache_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/dialects"
	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/respcache"
	"freelane/backend/router"
	"freelane/backend/store"
)

const (
	openaiQ = `{"model":"main","temperature":0,"max_tokens":64,"messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":"What is two plus two?"}]}`
	anthQ   = `{"model":"main","temperature":0,"max_tokens":64,"system":"Answer briefly.","messages":[{"role":"user","content":[{"type":"text","text":"What is two plus two?"}]}]}`
	geminiQ = `{"systemInstruction":{"parts":[{"text":"Answer briefly."}]},"contents":[{"role":"user","parts":[{"text":"What is two plus two?"}]}],"generationConfig":{"temperature":0,"maxOutputTokens":64}}`
)

func parse(t testing.TB, d llm.Dialect, body string) *llm.Request {
	t.Helper()
	codec, ok := dialects.Registry().Codec(d)
	if !ok {
		t.Fatalf("no dialect %s", d)
	}
	req, err := codec.ParseRequest(llm.Chat, []byte(body))
	if err != nil {
		t.Fatalf("%s: %v", d, err)
	}
	return req
}

func key(t testing.TB, req *llm.Request, route, caller string) respcache.Key {
	t.Helper()
	conv, err := req.Conversation()
	if err != nil {
		t.Fatal(err)
	}
	return respcache.NewKey(req.Endpoint, conv, route, caller)
}

func TestKeyIsTheSameInEveryDialect(t *testing.T) {
	want := key(t, parse(t, llm.DialectOpenAI, openaiQ), "chain:main", "uid:1000")
	for d, body := range map[llm.Dialect]string{llm.DialectAnthropic: anthQ, llm.DialectGemini: geminiQ} {
		if got := key(t, parse(t, d, body), "chain:main", "uid:1000"); got != want {
			t.Errorf("%s: the same question has another key", d)
		}
	}
}

func TestKeyLeavesOutWhatDoesNotChangeTheAnswer(t *testing.T) {
	want := key(t, parse(t, llm.DialectOpenAI, openaiQ), "chain:main", "uid:1000")
	same := []string{
		strings.Replace(openaiQ, `"model":"main"`, `"model":"main","stream":true,"stream_options":{"include_usage":true}`, 1),
		strings.Replace(openaiQ, `"model":"main"`, `"model":"main","user":"alice","metadata":{"run":"7"}`, 1),
		strings.Replace(openaiQ, `"temperature":0`, `"temperature":0.0`, 1),
		strings.Replace(openaiQ, `"temperature":0`, `"temperature":-0`, 1),
	}
	for _, body := range same {
		if got := key(t, parse(t, llm.DialectOpenAI, body), "chain:main", "uid:1000"); got != want {
			t.Errorf("another key for %s", body)
		}
	}
	anthCached := strings.Replace(anthQ, `"text":"What is two plus two?"}`, `"text":"What is two plus two?","cache_control":{"type":"ephemeral"}}`, 1)
	anthUser := strings.Replace(anthQ, `"model":"main"`, `"model":"main","metadata":{"user_id":"user_abc_account_def_session_0123"}`, 1)
	for _, body := range []string{anthCached, anthUser} {
		if got := key(t, parse(t, llm.DialectAnthropic, body), "chain:main", "uid:1000"); got != want {
			t.Errorf("another key for %s", body)
		}
	}
}

func TestKeyTellsQuestionsApart(t *testing.T) {
	base := key(t, parse(t, llm.DialectOpenAI, openaiQ), "chain:main", "uid:1000")
	other := map[string]respcache.Key{
		"route":  key(t, parse(t, llm.DialectOpenAI, openaiQ), "chain:other", "uid:1000"),
		"caller": key(t, parse(t, llm.DialectOpenAI, openaiQ), "chain:main", "uid:1001"),
	}
	for name, body := range map[string]string{
		"temperature": strings.Replace(openaiQ, `"temperature":0`, `"temperature":0.2`, 1),
		"no temp":     strings.Replace(openaiQ, `"temperature":0,`, ``, 1),
		"max_tokens":  strings.Replace(openaiQ, `"max_tokens":64`, `"max_tokens":65`, 1),
		"seed":        strings.Replace(openaiQ, `"max_tokens":64`, `"max_tokens":64,"seed":1`, 1),
		"top_p":       strings.Replace(openaiQ, `"max_tokens":64`, `"max_tokens":64,"top_p":0.5`, 1),
		"stop":        strings.Replace(openaiQ, `"max_tokens":64`, `"max_tokens":64,"stop":["x"]`, 1),
		"penalty":     strings.Replace(openaiQ, `"max_tokens":64`, `"max_tokens":64,"presence_penalty":0.1`, 1),
		"format":      strings.Replace(openaiQ, `"max_tokens":64`, `"max_tokens":64,"response_format":{"type":"json_object"}`, 1),
		"reasoning":   strings.Replace(openaiQ, `"max_tokens":64`, `"max_tokens":64,"reasoning_effort":"low"`, 1),
		"system":      strings.Replace(openaiQ, `Answer briefly.`, `Answer at length.`, 1),
		"tools":       strings.Replace(openaiQ, `"max_tokens":64`, `"max_tokens":64,"tools":[{"type":"function","function":{"name":"add","parameters":{"type":"object"}}}]`, 1),
		"split": strings.Replace(openaiQ, `{"role":"user","content":"What is two plus two?"}`,
			`{"role":"user","content":"What is two"},{"role":"assistant","content":" plus two?"}`, 1),
	} {
		other[name] = key(t, parse(t, llm.DialectOpenAI, body), "chain:main", "uid:1000")
	}
	seen := map[respcache.Key]string{base: "base"}
	for name, k := range other {
		if prev, dup := seen[k]; dup {
			t.Errorf("%s has the key of %s", name, prev)
		}
		seen[k] = name
	}
}

// newCache opens a cache over a real database in dir.
func newCache(t *testing.T, dir string, clk *clocktest.Clock, s respcache.Settings) (*respcache.Cache, func()) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(dir, "freelane.db"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := respcache.Open(context.Background(), db, respcache.Options{Codecs: dialects.Registry(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c.Configure(s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		_ = db.Close()
	}
	t.Cleanup(stop)
	return c, stop
}

// answer is an OpenAI answer with text.
func answer(text string) []byte {
	return []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"ma","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		text + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`)
}

func ask(c *respcache.Cache, caller, text string) (llm.CacheOutcome, router.CachedAnswer, router.CacheKeeper) {
	req := parseQuestion(text)
	req.Cache.Caller = caller
	return c.Lookup(req, "chain:main", "main")
}

func parseQuestion(text string) *llm.Request {
	codec, _ := dialects.Registry().Codec(llm.DialectOpenAI)
	req, err := codec.ParseRequest(llm.Chat, []byte(strings.Replace(openaiQ, "What is two plus two?", text, 1)))
	if err != nil {
		panic(err)
	}
	return req
}

func TestACallerNeverGetsAnothersEntry(t *testing.T) {
	c, _ := newCache(t, t.TempDir(), clocktest.New(time.Unix(1e9, 0)), respcache.Settings{Enabled: true})
	out, _, keep := ask(c, "uid:1000", "q")
	if out != llm.CacheMiss {
		t.Fatalf("first lookup %q", out)
	}
	keep.Body(answer("yes"), router.CacheOrigin{Backend: "a/ma", Cost: 0.5})
	if out, hit, _ := ask(c, "uid:1000", "q"); out != llm.CacheHit || hit.Origin().Cost != 0.5 {
		t.Fatalf("same caller: %q", out)
	}
	for _, other := range []string{"uid:1001", "token", "net:192.0.2.1"} {
		if out, _, _ := ask(c, other, "q"); out != llm.CacheMiss {
			t.Errorf("%s got %q", other, out)
		}
	}
}

func TestSizeBoundEvictsLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	clk := clocktest.New(time.Unix(1e9, 0))
	c, stop := newCache(t, dir, clk, respcache.Settings{Enabled: true})
	text := strings.Repeat("x", 700)
	put := func(q string) {
		_, _, keep := ask(c, "u", q)
		keep.Body(answer(text), router.CacheOrigin{Backend: "a/ma"})
		clk.Advance(time.Second)
	}
	put("a")
	// Room for four answers of this size, not five.
	size := c.Stats().Bytes
	bound := respcache.Settings{Enabled: true, MaxBytes: 4*size + size/2}
	c.Configure(bound)
	for _, q := range []string{"b", "c", "d"} {
		put(q)
	}
	if st := c.Stats(); st.Entries != 4 {
		t.Fatalf("%d entries, %d bytes", st.Entries, st.Bytes)
	}
	// a is used again, so b is now the least recently used.
	if out, _, _ := ask(c, "u", "a"); out != llm.CacheHit {
		t.Fatalf("a: %q", out)
	}
	put("e")
	want := map[string]llm.CacheOutcome{"a": llm.CacheHit, "b": llm.CacheMiss, "c": llm.CacheHit, "d": llm.CacheHit, "e": llm.CacheHit}
	check := func(c *respcache.Cache, when string) {
		t.Helper()
		for q, w := range want {
			if out, _, _ := ask(c, "u", q); out != w {
				t.Errorf("%s: %s is a %s, want a %s", when, q, out, w)
			}
		}
		if st := c.Stats(); st.Entries != 4 || st.Bytes > st.MaxBytes {
			t.Errorf("%s: stats %+v", when, st)
		}
	}
	check(c, "in memory")
	stop()
	// The database holds the same four.
	c2, _ := newCache(t, dir, clk, bound)
	check(c2, "after reopening")
	// A lower bound evicts at once, least recently used first.
	c2.Configure(respcache.Settings{Enabled: true, MaxBytes: 2*size + size/2})
	if st := c2.Stats(); st.Entries != 2 {
		t.Errorf("after lowering the bound: %+v", st)
	}
}

func TestExpiredEntriesArePruned(t *testing.T) {
	dir := t.TempDir()
	clk := clocktest.New(time.Unix(1e9, 0))
	c, stop := newCache(t, dir, clk, respcache.Settings{Enabled: true, TTL: time.Minute})
	_, _, keep := ask(c, "u", "q")
	keep.Body(answer("yes"), router.CacheOrigin{Backend: "a/ma"})
	if st := c.Stats(); st.Entries != 1 {
		t.Fatalf("stats %+v", st)
	}
	clk.Advance(2 * time.Minute)
	// The writer's minute ticker prunes without a lookup.
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().Entries != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the expired entry was not pruned")
		}
		clk.Advance(time.Minute)
		time.Sleep(time.Millisecond)
	}
	stop()
	c2, _ := newCache(t, dir, clk, respcache.Settings{Enabled: true, TTL: time.Hour})
	if st := c2.Stats(); st.Entries != 0 {
		t.Errorf("the pruned entry is still stored: %+v", st)
	}
}

func TestIncompleteAnswersAreNotKept(t *testing.T) {
	c, _ := newCache(t, t.TempDir(), clocktest.New(time.Unix(1e9, 0)), respcache.Settings{Enabled: true})
	bad := map[string]string{
		"filtered":    `{"id":"x","object":"chat.completion","created":1,"model":"ma","choices":[{"index":0,"message":{"role":"assistant","content":"no"},"finish_reason":"content_filter"}]}`,
		"empty":       `{"id":"x","object":"chat.completion","created":1,"model":"ma","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`,
		"cut call":    `{"id":"x","object":"chat.completion","created":1,"model":"ma","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":"tool_calls"}]}`,
		"length call": `{"id":"x","object":"chat.completion","created":1,"model":"ma","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"length"}]}`,
		"not json":    `oops`,
	}
	for name, body := range bad {
		_, _, keep := ask(c, "u", name)
		keep.Body([]byte(body), router.CacheOrigin{})
		if out, _, _ := ask(c, "u", name); out != llm.CacheMiss {
			t.Errorf("%s was kept", name)
		}
	}
	// An answer cut at the client's own max_tokens is kept.
	_, _, keep := ask(c, "u", "long")
	keep.Body([]byte(strings.Replace(string(answer("abc")), `"stop"`, `"length"`, 1)), router.CacheOrigin{})
	if out, _, _ := ask(c, "u", "long"); out != llm.CacheHit {
		t.Errorf("a length-finished answer: %q", out)
	}
}

// A stream read event by event is kept whole: reasoning with its
// signature, text in many pieces and a tool call, and a hit gives it back
// the same, as a whole answer and as a stream.
func TestStreamKeptAndReplayedWhole(t *testing.T) {
	c, _ := newCache(t, t.TempDir(), clocktest.New(time.Unix(1e9, 0)), respcache.Settings{Enabled: true})
	reg := dialects.Registry()
	anth, _ := reg.Codec(llm.DialectAnthropic)
	text := strings.Repeat("Paris is the capital. ", 20)
	want := []llm.Part{
		{Kind: llm.PartReasoning, Text: "The user asks about France.", Signature: "sig-1"},
		{Kind: llm.PartText, Text: text},
		{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "toolu_1", Name: "lookup", Arguments: `{"city":"Paris"}`}},
	}
	ds := []llm.Delta{{Kind: llm.DeltaReasoning, Text: "The user asks "}, {Kind: llm.DeltaReasoning, Text: "about France."},
		{Kind: llm.DeltaReasoning, Signature: "sig-1"}}
	for i := 0; i < len(text); i += 7 {
		ds = append(ds, llm.Delta{Kind: llm.DeltaText, Text: text[i:min(i+7, len(text))]})
	}
	ds = append(ds, llm.Delta{Kind: llm.DeltaToolStart, ID: "toolu_1", Name: "lookup"}, llm.Delta{Kind: llm.DeltaToolArgs, Text: `{"city":`},
		llm.Delta{Kind: llm.DeltaToolArgs, Text: `"Paris"}`}, llm.Delta{Kind: llm.DeltaToolEnd}, llm.Delta{Kind: llm.DeltaFinish, Finish: llm.FinishToolCalls})
	enc := anth.NewStreamEncoder(protocol.ResponseOptions{ID: "1", Model: "claude-x"})
	var evs []llm.Event
	for _, d := range ds {
		evs = enc.Encode(evs, d)
	}
	evs = enc.End(evs)

	req := parse(t, llm.DialectAnthropic, strings.Replace(anthQ, `{"model"`, `{"stream":true,"model"`, 1))
	req.Cache.Caller = "u"
	out, _, keep := c.Lookup(req, "chain:main", "main")
	if out != llm.CacheMiss {
		t.Fatalf("%q", out)
	}
	for _, ev := range evs {
		keep.Event(ev.Data)
	}
	keep.Done(router.CacheOrigin{Backend: "a/ma", Usage: llm.Usage{PromptTokens: 20, CompletionTokens: 50, TotalTokens: 70}})

	req = parse(t, llm.DialectAnthropic, anthQ)
	req.Cache.Caller = "u"
	out, hit, _ := c.Lookup(req, "chain:main", "main")
	if out != llm.CacheHit {
		t.Fatalf("%q", out)
	}
	body, err := hit.Body(req, "req_1")
	if err != nil {
		t.Fatal(err)
	}
	a, err := anth.DecodeResponse(body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Parts, want) || a.Finish != llm.FinishToolCalls || a.Usage == nil || a.Usage.CompletionTokens != 50 {
		t.Fatalf("replayed answer %+v\nfrom %s", a, body)
	}
	// As an OpenAI stream, decoded back by OpenAI's own decoder.
	oreq := parse(t, llm.DialectOpenAI, `{"stream":true,`+openaiQ[1:])
	oai, _ := reg.Codec(llm.DialectOpenAI)
	sevs, err := hit.Events(oreq, "req_2")
	if err != nil {
		t.Fatal(err)
	}
	dec := oai.NewStreamDecoder()
	var b strings.Builder
	var args string
	usage := false
	for _, ev := range sevs {
		got, _, err := dec.Decode(nil, nil, ev.Data)
		if err != nil {
			t.Fatalf("event %s: %v", ev.Data, err)
		}
		for _, d := range got {
			switch d.Kind {
			case llm.DeltaText:
				b.WriteString(d.Text)
			case llm.DeltaToolArgs:
				args += d.Text
			case llm.DeltaUsage:
				usage = d.Usage != nil && d.Usage.CompletionTokens == 50
			}
		}
	}
	if b.String() != text || args != `{"city":"Paris"}` || !usage || len(sevs) < 10 {
		t.Errorf("OpenAI stream: text %q args %q usage %v, %d events", b.String(), args, usage, len(sevs))
	}
}

// Lookups, answers kept, replays and a changing bound at once: the race
// detector has nothing to say, and the bound holds.
func TestConcurrentUse(t *testing.T) {
	c, _ := newCache(t, t.TempDir(), clocktest.New(time.Unix(1e9, 0)), respcache.Settings{Enabled: true})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				q := strconv.Itoa(i % 20)
				out, hit, keep := ask(c, "u", q)
				switch out {
				case llm.CacheHit:
					if _, err := hit.Body(parseQuestion(q), "id"); err != nil {
						t.Error(err)
						return
					}
				case llm.CacheMiss:
					keep.Body(answer(strings.Repeat("y", 100*g)), router.CacheOrigin{Backend: "a/ma", Cost: 0.01})
				}
				if i%50 == 0 {
					c.Configure(respcache.Settings{Enabled: true, MaxBytes: int64(8+g) << 10})
				}
				_ = c.Stats()
			}
		}()
	}
	wg.Wait()
	if st := c.Stats(); st.Bytes > st.MaxBytes || st.Hits+st.Misses != 800 {
		t.Errorf("stats %+v", st)
	}
}
