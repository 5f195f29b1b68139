package router_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol/openai"
	"freelane/backend/router"
	"freelane/backend/tier"
)

// capsRouter routes "auto" over three backends: a chat-only backend of
// another dialect that declares tools but no vision, a backend of unknown
// capabilities, and one that declares only vision.
func capsRouter(t *testing.T) (*router.Router, map[string]*fakeUp) {
	t.Helper()
	ok := &llm.Response{Status: http.StatusOK, Body: []byte(`{"choices":[{"message":{"content":"hi"}}]}`)}
	ups := map[string]*fakeUp{}
	for _, n := range []string{"claude", "any", "eyes"} {
		ups[n] = &fakeUp{t: t, name: n, resp: ok}
	}
	spec := router.Spec{Providers: []router.ProviderSpec{
		{Name: "claude", Tier: tier.Own, HasKey: true, Up: ups["claude"], Dialect: llm.DialectAnthropic,
			Endpoints: []llm.Endpoint{llm.Chat}, Models: []router.ModelSpec{{ID: "m", Caps: llm.CapTools, CapsKnown: true}}},
		{Name: "any", Tier: tier.Free, HasKey: true, Up: ups["any"], Dialect: llm.DialectOpenAI,
			Models: []router.ModelSpec{{ID: "m"}}},
		{Name: "eyes", Tier: tier.Local, HasKey: true, Up: ups["eyes"], Dialect: llm.DialectOpenAI,
			Models: []router.ModelSpec{{ID: "m", Caps: llm.CapVision, CapsKnown: true}}},
	}}
	return router.New(router.Build(spec), &recGate{}, nil, nil, quiet), ups
}

func parse(t *testing.T, ep llm.Endpoint, body string) *llm.Request {
	t.Helper()
	r, err := openai.ParseRequest(ep, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBackendsThatCannotServeAreSkipped(t *testing.T) {
	const image = `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`
	for _, c := range []struct {
		name    string
		ep      llm.Endpoint
		body    string
		served  string
		skipped []string
	}{
		{"plain chat goes to the first", llm.Chat, `{"model":"auto","messages":[{"role":"user","content":"hi"}]}`, "claude/m", nil},
		{"embeddings pass the chat-only backend by", llm.Embeddings, `{"model":"auto","input":"hi"}`, "any/m", []string{"claude/m"}},
		{"an image passes the backend without vision by", llm.Chat,
			`{"model":"auto","messages":[{"role":"user","content":[{"type":"text","text":"what is this"},` + image + `]}]}`, "any/m", []string{"claude/m"}},
		{"a request that cannot be translated passes the other dialect by", llm.Chat,
			`{"model":"auto","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]}`, "any/m", []string{"claude/m"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := capsRouter(t)
			res, f := r.Complete(context.Background(), parse(t, c.ep, c.body))
			if f != nil {
				t.Fatalf("failed: %+v", f)
			}
			if res.Backend.Name() != c.served {
				t.Fatalf("served by %s, want %s (attempts %s)", res.Backend.Name(), c.served, router.AttemptsHeader(res.Attempts))
			}
			var skipped []string
			for _, a := range res.Attempts {
				if a.Skipped {
					if a.Skip != llm.SkipUnsupported || a.Reason == "" {
						t.Errorf("%s skipped with %q (%s), want unsupported with a reason", a.Backend, a.Skip, a.Reason)
					}
					skipped = append(skipped, a.Backend)
				}
			}
			if strings.Join(skipped, ",") != strings.Join(c.skipped, ",") {
				t.Fatalf("skipped %v, want %v", skipped, c.skipped)
			}
			for _, a := range res.Attempts {
				want := llm.DialectOpenAI
				if a.Backend == "claude/m" {
					want = llm.DialectAnthropic
				}
				if a.Dialect != want {
					t.Errorf("%s: dialect %q, want %q", a.Backend, a.Dialect, want)
				}
			}
		})
	}
}

// A request no backend of its route can serve is the caller's to fix: a
// 400 that says why for each backend, and no backend is called.
func TestNothingCanServeIsACallerError(t *testing.T) {
	r, ups := capsRouter(t)
	req := parse(t, llm.Chat, `{"model":"claude/m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`)
	_, f := r.Complete(context.Background(), req)
	if f == nil {
		t.Fatal("served a request the pinned backend cannot serve")
	}
	if f.Status != http.StatusBadRequest || f.Class != llm.Caller || f.Code != "unsupported_request" ||
		!strings.Contains(f.Message, "claude/m: has no vision support") {
		t.Fatalf("failure %d %s %s: %s", f.Status, f.Class, f.Code, f.Message)
	}
	if ups["claude"].calls != 0 {
		t.Fatal("the backend was called")
	}
	if got := router.AttemptsHeader(f.Attempts); got != "claude/m=skip(unsupported)" {
		t.Fatalf("attempts %q", got)
	}
}
