package upstream_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/anthropic"
	"freelane/backend/protocol/gemini"
	"freelane/backend/upstream"
)

// cachedAnthropic is an Anthropic request with breakpoints on a long
// system prompt and on its last message.
func cachedAnthropic(t *testing.T, turns int, stream bool) *llm.Request {
	t.Helper()
	var msgs []string
	for i := range turns {
		msgs = append(msgs, `{"role":"user","content":"q`+string(rune('a'+i))+`"}`, `{"role":"assistant","content":"a`+string(rune('a'+i))+`"}`)
	}
	msgs = append(msgs, `{"role":"user","content":[{"type":"text","text":"now","cache_control":{"type":"ephemeral"}}]}`)
	s := ""
	if stream {
		s = `"stream":true,`
	}
	body := `{"model":"gemini-2.5-flash","max_tokens":100,` + s + `"system":[{"type":"text","text":"` + strings.Repeat("Answer with care. ", 500) +
		`","cache_control":{"type":"ephemeral"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
	req, err := anthropic.Codec.ParseRequest(llm.Chat, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Model, req.Stream = "gemini-2.5-flash", stream
	return req
}

func cachingClient(up *fakeupstream.Server, clk *clocktest.Clock, prep protocol.Preparer) *upstream.Client {
	return upstream.New(upstream.Options{Name: "g", BaseURL: up.GeminiURL(), APIKey: "AIza-one", Dialect: gemini.Dialect, Codecs: codecs,
		HeaderTimeout: fastLimit, FirstTokenTimeout: fastLimit, IdleTimeout: fastLimit, Clock: clk, Preparer: prep,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// generateBodies are the bodies of the generateContent requests the fake
// received.
func generateBodies(up *fakeupstream.Server) []string {
	var out []string
	for _, r := range up.Requests() {
		if strings.HasSuffix(r.Path, "GenerateContent") || strings.HasSuffix(r.Path, ":generateContent") {
			out = append(out, string(r.Body))
		}
	}
	return out
}

func TestClientPreparesAnExplicitCache(t *testing.T) {
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	clk := clocktest.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	c := cachingClient(up, clk, gemini.NewExplicitCache())
	ctx := context.Background()

	res, err := c.Complete(ctx, cachedAnthropic(t, 0, false), "gemini-2.5-flash")
	if err != nil {
		t.Fatal(err)
	}
	if up.CacheCreates() != 1 {
		t.Fatalf("%d caches created, want 1", up.CacheCreates())
	}
	var usage struct {
		Usage struct {
			Input int `json:"input_tokens"`
			Read  int `json:"cache_read_input_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(res.Body, &usage)
	if res.Usage.CacheReadTokens < 1000 || usage.Usage.Read != res.Usage.CacheReadTokens || usage.Usage.Input >= usage.Usage.Read {
		t.Errorf("usage %+v, answer %s", res.Usage, res.Body)
	}
	bodies := generateBodies(up)
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"cachedContent":"cachedContents/`) || strings.Contains(bodies[0], "systemInstruction") {
		t.Fatalf("generateContent bodies %q", bodies)
	}

	// A stream of the next turn uses the same cache.
	st, err := c.Stream(ctx, cachedAnthropic(t, 1, true), "gemini-2.5-flash")
	if err != nil {
		t.Fatal(err)
	}
	var read int
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Usage != nil {
			read = max(read, ev.Usage.CacheReadTokens)
		}
		if ev.Kind == llm.Done {
			break
		}
	}
	st.Close()
	if up.CacheCreates() != 1 || read < 1000 {
		t.Errorf("the stream: %d creates, %d cached tokens", up.CacheCreates(), read)
	}

	// The cache went away (Google expired it early): the request that
	// named it is sent again plain, and succeeds.
	up.DropCaches()
	up.Reset()
	if _, err := c.Complete(ctx, cachedAnthropic(t, 2, false), "gemini-2.5-flash"); err != nil {
		t.Fatalf("after the cache went: %v", err)
	}
	bodies = generateBodies(up)
	if len(bodies) != 2 || !strings.Contains(bodies[0], "cachedContent") || strings.Contains(bodies[1], "cachedContent") ||
		!strings.Contains(bodies[1], "systemInstruction") {
		t.Errorf("after the cache went, the bodies were %q", bodies)
	}
	// And the next request makes a new one.
	if _, err := c.Complete(ctx, cachedAnthropic(t, 3, false), "gemini-2.5-flash"); err != nil || up.CacheCreates() != 1 {
		t.Errorf("next request: %v, %d creates since", err, up.CacheCreates())
	}
}

// TestClientWithoutPreparerSendsThePlainBody: without a Preparer nothing
// is created and the body is the dialect's encoding, as it always was.
func TestClientWithoutPreparerSendsThePlainBody(t *testing.T) {
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	c := cachingClient(up, clocktest.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)), nil)
	req := cachedAnthropic(t, 1, false)
	if _, err := c.Complete(context.Background(), req, "gemini-2.5-flash"); err != nil {
		t.Fatal(err)
	}
	conv, _ := req.Conversation()
	want, _ := gemini.Codec.EncodeRequest(conv, "gemini-2.5-flash", llm.Edits{})
	if bodies := generateBodies(up); up.CacheCreates() != 0 || len(bodies) != 1 || bodies[0] != string(want) {
		t.Errorf("%d creates, bodies %q, want %s", up.CacheCreates(), bodies, want)
	}
}

// TestClientPreparationThatHangsCostsNothing: a cache creation that never
// answers is given up after the header timeout, and the stream is sent
// plain and answered; the wait for its first token starts only then.
func TestClientPreparationThatHangsCostsNothing(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/cachedContents") {
			<-r.Context().Done()
			return
		}
		if strings.Contains(string(body), "cachedContent") {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"plain"}]},"finishReason":"STOP","index":0}]}`+"\r\n\r\n")
	}))
	t.Cleanup(srv.Close)
	clk := clocktest.Following(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	c := upstream.New(upstream.Options{Name: "g", BaseURL: srv.URL + "/v1beta", APIKey: "AIza-x", Dialect: gemini.Dialect, Codecs: codecs,
		HeaderTimeout: fastLimit, FirstTokenTimeout: fastLimit / 2, IdleTimeout: fastLimit, Clock: clk, Preparer: gemini.NewExplicitCache(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	st, err := c.Stream(context.Background(), cachedAnthropic(t, 1, true), "gemini-2.5-flash")
	if err != nil {
		t.Fatalf("the stream failed with the creation: %v", err)
	}
	defer st.Close()
	var text bool
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		text = text || strings.Contains(string(ev.Data), "plain")
		if ev.Kind == llm.Done {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !text || len(paths) != 2 || !strings.HasSuffix(paths[0], "/cachedContents") {
		t.Errorf("text %v, requests %q", text, paths)
	}
}
