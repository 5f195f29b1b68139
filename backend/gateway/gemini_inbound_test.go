package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
)

// Google's own Go SDK calls FreeLane's Gemini paths: the model is in the
// path, the key in x-goog-api-key, and the answers come from the mixed
// chain of Anthropic, Gemini and OpenAI-compatible backends.

func geminiClient(t *testing.T, e *env, version string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "unused", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: e.base, APIVersion: version}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGeminiClientsAreServedByEveryDialect(t *testing.T) {
	for _, version := range []string{"v1beta", "v1"} {
		for _, c := range []struct {
			name   string
			faults []string
			served string
		}{
			{"translated from anthropic", nil, "claude-x"},
			{"relayed from gemini", []string{"claude-x"}, "gemini-y"},
			{"translated from openai", []string{"claude-x", "gemini-y"}, "llama-z"},
		} {
			t.Run(version+"/"+c.name, func(t *testing.T) {
				e := mixedEnv(t)
				for _, m := range c.faults {
					e.up.Set(m, fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503})
				}
				cl := geminiClient(t, e, version)
				ctx := context.Background()
				res, err := cl.Models.GenerateContent(ctx, "mixed", genai.Text("Say hello"), nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Text(); got != "Hello from "+c.served {
					t.Fatalf("text %q", got)
				}
				if res.UsageMetadata == nil || res.UsageMetadata.CandidatesTokenCount == 0 {
					t.Errorf("usage %+v", res.UsageMetadata)
				}
				var streamed string
				for chunk, err := range cl.Models.GenerateContentStream(ctx, "mixed", genai.Text("Say hello"), nil) {
					if err != nil {
						t.Fatal(err)
					}
					streamed += chunk.Text()
				}
				if streamed != "Hello from "+c.served {
					t.Fatalf("streamed %q", streamed)
				}

				// A function call, streamed, and its response.
				e.up.Set(c.served, fakeupstream.Behavior{ToolCall: true}, fakeupstream.Behavior{})
				cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
					Name: "get_weather", Parameters: &genai.Schema{Type: genai.TypeObject,
						Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString}}}}}}}}
				var call *genai.FunctionCall
				for chunk, err := range cl.Models.GenerateContentStream(ctx, "mixed", genai.Text("Weather in Paris?"), cfg) {
					if err != nil {
						t.Fatal(err)
					}
					if fc := chunk.FunctionCalls(); len(fc) > 0 {
						call = fc[0]
					}
				}
				if call == nil || call.Name != "get_weather" || call.Args["city"] != "Paris" {
					t.Fatalf("function call %+v", call)
				}
				turns := append(genai.Text("Weather in Paris?"),
					&genai.Content{Role: "model", Parts: []*genai.Part{{FunctionCall: call}}},
					&genai.Content{Role: "user", Parts: []*genai.Part{genai.NewPartFromFunctionResponse("get_weather", map[string]any{"temp_c": 18})}})
				if _, err := cl.Models.GenerateContent(ctx, "mixed", turns, cfg); err != nil {
					t.Fatalf("function response turn: %v", err)
				}
			})
		}
	}
}

// The key may come as ?key=, errors come in Google's envelope, and
// countTokens is answered offline.
func TestGeminiSideEndpointsAndErrors(t *testing.T) {
	e := mixedEnv(t)
	body := `{"contents":[{"role":"user","parts":[{"text":"Count the tokens of this sentence, please."}]}]}`
	r := e.do(http.MethodPost, "/v1beta/models/mixed:countTokens", body, nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"totalTokens":`) {
		t.Fatalf("countTokens: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodPost, "/v1beta/models/no-such-model:generateContent", body, nil)
	if r.status != http.StatusNotFound || !strings.Contains(string(r.body), `"status":"NOT_FOUND"`) {
		t.Fatalf("unknown model: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodPost, "/v1beta/models/mixed:streamGenerateContent", body, nil)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "alt=sse") {
		t.Fatalf("stream without alt=sse: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodPost, "/v1beta/models/mixed:embedContent", body, nil)
	if r.status != http.StatusNotFound || !strings.Contains(string(r.body), `"error":{"code":404`) {
		t.Fatalf("unknown method: %d %s", r.status, r.body)
	}
	// A provider/model name in the path.
	r = e.do(http.MethodPost, "/v1beta/models/"+groq+":generateContent", body, nil)
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != groq {
		t.Fatalf("provider/model: %d %s", r.status, r.body)
	}

	const token = "gemini-inbound-token-0123456"
	e2 := newEnv(t, func(cfg *config.Config) { cfg.Server.Token = token })
	plain := map[string]string{"Content-Type": "application/json"}
	r = e2.raw(http.MethodPost, "/v1beta/models/main:generateContent", body, plain)
	if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), `"status":"UNAUTHENTICATED"`) {
		t.Fatalf("no key: %d %s", r.status, r.body)
	}
	r = e2.raw(http.MethodPost, "/v1beta/models/main:generateContent?key="+token, body, plain)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"candidates"`) {
		t.Fatalf("?key=: %d %s", r.status, r.body)
	}
	// ?key= counts on Gemini's paths only.
	r = e2.raw(http.MethodPost, "/v1/chat/completions?key="+token, `{"model":"main","messages":[{"role":"user","content":"hi"}]}`, plain)
	if r.status != http.StatusUnauthorized {
		t.Fatalf("?key= on an OpenAI path: %d %s", r.status, r.body)
	}
}

// Unknown paths answer a JSON 404 in the dialect their prefix implies.
func TestUnknownPathsAnswerInTheirDialect(t *testing.T) {
	e := mixedEnv(t)
	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/v1/nope", `"code":"unknown_endpoint"`},
		{http.MethodPost, "/v1/messages/batches", `{"type":"error","error":{"type":"not_found_error"`},
		{http.MethodGet, "/v1beta/tunedModels", `"status":"NOT_FOUND"`},
	} {
		r := e.do(c.method, c.path, "", nil)
		if r.status != http.StatusNotFound || !strings.Contains(string(r.body), c.want) ||
			!strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
}
