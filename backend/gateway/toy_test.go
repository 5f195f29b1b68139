package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/dialects"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/internal/toy"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// toyRegistry is every dialect FreeLane has and the test-only toy dialect,
// added with this one line and no edit anywhere else.
var toyRegistry = protocol.NewRegistry(append(dialects.Registry().Dialects(), toy.Dialect)...)

// startToyGateway runs the real server with the toy dialect registered,
// in front of the fake vendor's three real dialects.
func startToyGateway(t *testing.T) (base string, up *fakeupstream.Server) {
	t.Helper()
	up = fakeupstream.Start()
	t.Cleanup(up.Close)
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	p := func(name, kind, url, model string) config.Provider {
		return config.Provider{Name: name, Kind: kind, Tier: "free", BaseURL: url, APIKey: "sk-toy-" + name,
			Models: []config.Model{{ID: model, Context: 8192}}, Timeouts: fastTimeouts}
	}
	cfg.Providers = []config.Provider{
		p("oa", config.KindOpenAI, up.URL, "m-oa"),
		p("an", config.KindAnthropic, up.AnthropicURL(), "m-an"),
		p("ge", config.KindGemini, up.GeminiURL(), "m-ge"),
	}
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)),
		ManualProbes: true, LookupEnv: withoutCatalogKeys, Dialects: toyRegistry})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	return "http://" + g.Addr(), up
}

func toyPost(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestToyClientThroughTheServer sends toy requests to the real server: its
// route, its answers and streams and its errors come from the toy package
// alone, for upstreams of every real dialect.
func TestToyClientThroughTheServer(t *testing.T) {
	base, _ := startToyGateway(t)
	for _, backend := range []string{"oa/m-oa", "an/m-an", "ge/m-ge"} {
		t.Run(backend, func(t *testing.T) {
			resp, body := toyPost(t, base+toy.TalkPath, `{"model":"`+backend+`","max":32,"sys":"Be brief.","turns":[{"who":"user","say":"Say hello"}]}`)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("X-FreeLane-Backend") != backend {
				t.Fatalf("%d from %q: %s", resp.StatusCode, resp.Header.Get("X-FreeLane-Backend"), body)
			}
			a, err := toy.Codec.DecodeResponse(body)
			if err != nil || !strings.Contains(a.Text(), "Hello") || a.Usage == nil || a.Usage.CompletionTokens == 0 {
				t.Fatalf("not a toy answer with text and usage: %v %s", err, body)
			}

			resp, body = toyPost(t, base+toy.TalkPath, `{"model":"`+backend+`","stream":true,"turns":[{"who":"user","say":"Say hello"}]}`)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("stream: %d %s", resp.StatusCode, body)
			}
			dec := toy.Codec.NewStreamDecoder()
			var text strings.Builder
			ended, usage := false, false
			sc := bufio.NewScanner(bytes.NewReader(body))
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				ds, end, err := dec.Decode(nil, nil, []byte(data))
				if err != nil {
					t.Fatalf("event %q: %v", data, err)
				}
				for _, d := range ds {
					if d.Kind == llm.DeltaText {
						text.WriteString(d.Text)
					}
					usage = usage || d.Kind == llm.DeltaUsage
				}
				ended = ended || end
			}
			if !ended || !usage || !strings.Contains(text.String(), "Hello") {
				t.Fatalf("stream ended %v, usage %v, text %q:\n%s", ended, usage, text.String(), body)
			}
		})
	}

	// FreeLane's own refusals reach a toy client in the toy's envelope.
	for _, c := range []struct {
		name, path, body string
		status           int
	}{
		{"bad body", toy.TalkPath, `{"model":"auto","turns":[{"who":"nobody"}]}`, http.StatusBadRequest},
		{"unknown model", toy.TalkPath, `{"model":"nobody/none","turns":[{"who":"user","say":"hi"}]}`, http.StatusNotFound},
		{"unknown path", toy.Prefix + "shout", `{}`, http.StatusNotFound},
	} {
		resp, body := toyPost(t, base+c.path, c.body)
		info, ok := toy.Codec.DecodeError(body)
		if resp.StatusCode != c.status || !ok || info.Message == "" {
			t.Errorf("%s: %d, not a toy error: %s", c.name, resp.StatusCode, body)
		}
	}
	var list struct {
		Error struct{ Message string } `json:"error"`
	}
	resp, body := toyPost(t, base+"/v1/shout", `{}`)
	if json.Unmarshal(body, &list) != nil || list.Error.Message == "" || resp.StatusCode != http.StatusNotFound ||
		!strings.Contains(list.Error.Message, toy.TalkPath) {
		t.Errorf("the unknown-endpoint answer does not list the toy's route: %d %s", resp.StatusCode, body)
	}
}
