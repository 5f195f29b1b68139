package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/llm"
	"freelane/backend/tier"
	"freelane/backend/tokens"
)

// Every dialect a client speaks, against every kind of upstream, with and
// without streaming: the upstream withholds its usage, and the tokens
// FreeLane records for the call are its own estimate. The estimate is read
// from the neutral model of the answer, so it is the same whatever the
// dialects on either side.

// The upstreams of the estimate tests, one of each kind, all on the fake.
const (
	upOpenAI    = "oa/oa-m"
	upAnthropic = "an/an-m"
	upGemini    = "ge/ge-m"
)

func dialectsEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, func(cfg *config.Config) {
		base := cfg.Providers[0].BaseURL
		gemURL := strings.TrimSuffix(base, "/v1") + "/v1beta"
		models := func(id string) []config.Model {
			return []config.Model{{ID: id, Context: 100000, MaxOutput: 4096, Capabilities: []string{"tools"}}}
		}
		cfg.Providers = append(cfg.Providers,
			config.Provider{Name: "oa", Kind: config.KindOpenAI, Tier: tier.Free, BaseURL: base, APIKey: "sk-oa-test",
				Models: models("oa-m"), Timeouts: fastTimeouts},
			config.Provider{Name: "an", Kind: config.KindAnthropic, Tier: tier.Own, BaseURL: base, APIKey: "sk-ant-test",
				Models: models("an-m"), Timeouts: fastTimeouts},
			config.Provider{Name: "ge", Kind: config.KindGemini, Tier: tier.Free, BaseURL: gemURL, APIKey: "AIza-test",
				Models: models("ge-m"), Timeouts: fastTimeouts},
		)
	})
}

// inbound is one client dialect: how it asks for an answer.
type inbound struct {
	name string
	// request returns the path and body asking model for an answer to
	// "hi", streamed or not.
	request func(model string, stream bool) (path, body string)
}

var inbounds = []inbound{
	{"openai", func(model string, stream bool) (string, string) {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]`
		if stream {
			body += `,"stream":true,"stream_options":{"include_usage":true}`
		}
		return "/v1/chat/completions", body + "}"
	}},
	{"responses", func(model string, stream bool) (string, string) {
		return "/v1/responses", `{"model":"` + model + `","input":"hi","stream":` + boolText(stream) + `}`
	}},
	{"anthropic", func(model string, stream bool) (string, string) {
		return "/v1/messages", `{"model":"` + model + `","max_tokens":256,"messages":[{"role":"user","content":"hi"}],"stream":` + boolText(stream) + `}`
	}},
	{"gemini", func(model string, stream bool) (string, string) {
		path := "/v1beta/models/" + model + ":generateContent"
		if stream {
			path = "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
		}
		return path, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	}},
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// traceOf waits for the trace of request id in the dashboard's state.
func (e *env) traceOf(id string) llm.Trace {
	e.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var st struct {
			Requests []llm.Trace `json:"requests"`
		}
		r := e.do("GET", "/api/state", "", nil)
		if err := json.Unmarshal(r.body, &st); err != nil {
			e.t.Fatalf("state: %v", err)
		}
		for _, tr := range st.Requests {
			if tr.ID == id {
				return tr
			}
		}
	}
	e.t.Fatalf("no trace of request %q", id)
	return llm.Trace{}
}

func TestCompletionEstimateIsTheSameInEveryDialectPair(t *testing.T) {
	e := dialectsEnv(t)
	chunks := []string{"The answer ", "is forty-two."}
	answers := []struct {
		name string
		b    fakeupstream.Behavior
		// text is the answer as the neutral model holds it: its text, or
		// the called tool's name and its arguments.
		text string
	}{
		{"text", fakeupstream.Behavior{NoUsage: true, Chunks: chunks}, "The answer is forty-two."},
		{"tool", fakeupstream.Behavior{NoUsage: true, ToolCall: true}, `get_weather{"city":"Paris"}`},
	}
	for _, up := range []string{upOpenAI, upAnthropic, upGemini} {
		model := up[strings.IndexByte(up, '/')+1:]
		for _, ans := range answers {
			e.up.Set(model, ans.b)
			want := tokens.Count([]byte(ans.text))
			prompts := map[string]int{}
			for _, in := range inbounds {
				for _, stream := range []bool{false, true} {
					name := in.name + "/" + up + "/" + ans.name
					if stream {
						name += "/stream"
					}
					path, body := in.request(up, stream)
					r := e.post(path, body)
					if r.status != 200 {
						t.Errorf("%s: %d %s", name, r.status, r.body)
						continue
					}
					tr := e.traceOf(r.header.Get("X-FreeLane-Request-Id"))
					if len(tr.Attempts) != 1 {
						t.Errorf("%s: attempts %+v", name, tr.Attempts)
						continue
					}
					a := tr.Attempts[0]
					if !a.Estimated || a.CompletionTokens != want {
						t.Errorf("%s: completion tokens %d (estimated %v), want %d, the count of %q", name, a.CompletionTokens, a.Estimated, want, ans.text)
					}
					if tr.Usage.CompletionTokens != a.CompletionTokens || tr.Usage.PromptTokens != a.PromptTokens {
						t.Errorf("%s: trace usage %+v, attempt %d+%d", name, tr.Usage, a.PromptTokens, a.CompletionTokens)
					}
					prompts[name[:strings.IndexByte(name, '/')]+boolText(stream)] = a.PromptTokens
				}
			}
			// The same conversation costs the same prompt, whatever the
			// dialect it came in.
			ref := prompts["openaifalse"]
			for k, p := range prompts {
				if p != ref || p <= 0 {
					t.Errorf("%s %s: prompt estimates %v differ or are 0", up, ans.name, prompts)
					break
				}
				_ = k
			}
		}
	}
}

// A legacy completion has its text in the choice, not in a message; its
// estimate is that text's count, streamed or not.
func TestLegacyCompletionEstimate(t *testing.T) {
	e := dialectsEnv(t)
	e.up.Set("oa-m", fakeupstream.Behavior{NoUsage: true, Chunks: []string{"The answer ", "is forty-two."}})
	want := tokens.Count([]byte("The answer is forty-two."))
	for _, stream := range []bool{false, true} {
		r := e.post("/v1/completions", `{"model":"`+upOpenAI+`","prompt":"Say it.","stream":`+boolText(stream)+`}`)
		if r.status != 200 {
			t.Fatalf("stream %v: %d %s", stream, r.status, r.body)
		}
		a := e.traceOf(r.header.Get("X-FreeLane-Request-Id")).Attempts[0]
		if !a.Estimated || a.CompletionTokens != want || a.PromptTokens != tokens.Count([]byte("Say it.")) {
			t.Errorf("stream %v: %+v, want %d completion tokens", stream, a, want)
		}
	}
}

// A stream whose usage counts the prompt and never the answer (a Gemini
// stream that ends without its last chunk's counts) keeps the prompt it
// reported and has its completion estimated, in the attempt and the trace.
func TestPromptOnlyUsageGetsACompletionEstimate(t *testing.T) {
	e := dialectsEnv(t)
	// The cached tokens tell the reported prompt from an estimate.
	e.up.Set("ge-m", fakeupstream.Behavior{NoDone: true, CachedTokens: 1000, Chunks: []string{"The answer ", "is forty-two."}})
	r := e.post("/v1/chat/completions", chat(upGemini, true))
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	tr := e.traceOf(r.header.Get("X-FreeLane-Request-Id"))
	a := tr.Attempts[0]
	want := tokens.Count([]byte("The answer is forty-two."))
	if !a.Estimated || a.CompletionTokens != want || a.PromptTokens <= 1000 {
		t.Fatalf("attempt %+v, want %d completion tokens", a, want)
	}
	if tr.Usage.PromptTokens != a.PromptTokens || tr.Usage.CompletionTokens != want || tr.Usage.TotalTokens != a.PromptTokens+want ||
		tr.Usage.CacheReadTokens != 1000 {
		t.Fatalf("trace usage %+v", tr.Usage)
	}
}
