package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"freelane/backend/config"
	"freelane/backend/llm"
)

// Requests get their task from the configured rules or the client's
// X-FreeLane-Task header, and a task with a chain of its own is served by
// it; the request's trace says which task and what decided it.

// antBody is a Messages API request for model, as Claude Code sends one.
func antBody(model string) string {
	return `{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
}

// postAs sends a routed call with the client's headers.
func (e *env) postAs(path, body string, header map[string]string) reply {
	e.t.Helper()
	h := map[string]string{"Content-Type": "application/json", "x-api-key": "unused", "anthropic-version": "2023-06-01"}
	for k, v := range header {
		h[k] = v
	}
	return e.raw(http.MethodPost, path, body, h)
}

// quickChain adds the chain a task routes to: c/mc alone.
func quickChain(cfg *config.Config) {
	cfg.Chains = append(cfg.Chains, config.Chain{Name: "quick", Backends: []string{"c/mc"}})
}

func TestTaskRuleSendsHaikuToItsChain(t *testing.T) {
	e := newEnv(t, func(cfg *config.Config) {
		quickChain(cfg)
		cfg.DefaultChain = "main"
		cfg.Tasks = []config.Task{{Name: "background", When: &config.TaskWhen{Model: "claude-*haiku*"}, Chain: "quick"}}
	})
	r := e.postAs("/v1/messages", antBody("claude-3-5-haiku-20241022"), nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if got := r.header.Get("X-FreeLane-Backend"); got != "c/mc" {
		t.Errorf("served by %q, want the background chain's c/mc (attempts %s)", got, r.attempts())
	}
	if n := e.up.Calls("ma"); n != 0 {
		t.Errorf("the main chain's first backend was called %d times", n)
	}
	tr := e.traceOf(r.header.Get("X-FreeLane-Request-Id"))
	if d := tr.Decision; d == nil || d.Task != "background" || d.TaskRule != "tasks[0]: model claude-*haiku*" || d.Chain != "quick" ||
		d.Requested != "claude-3-5-haiku-20241022" {
		t.Errorf("decision %+v", tr.Decision)
	}

	// A model the rule does not match stays on the chain it asked for.
	r = e.postAs("/v1/messages", antBody("claude-sonnet-4-5"), nil)
	if got := r.header.Get("X-FreeLane-Backend"); r.status != http.StatusOK || got != "a/ma" {
		t.Errorf("sonnet: status %d, served by %q", r.status, got)
	}
	tr = e.traceOf(r.header.Get("X-FreeLane-Request-Id"))
	if d := tr.Decision; d == nil || d.Task != "default" || d.TaskRule != "" || d.Chain == "quick" {
		t.Errorf("sonnet decision %+v", tr.Decision)
	}

	// A pinned backend is served where it was pinned, whatever its task.
	r = e.postAs("/v1/chat/completions", chat("b/mb", false), map[string]string{"X-FreeLane-Task": "background"})
	if got := r.header.Get("X-FreeLane-Backend"); r.status != http.StatusOK || got != "b/mb" {
		t.Errorf("pinned: status %d, served by %q", r.status, got)
	}
}

// Without rules of their own the built-in rules classify: Claude Code's
// haiku calls are background, and a rule that only names the chain of
// background sends them there.
func TestBuiltinTaskRulesWithAConfiguredChain(t *testing.T) {
	e := newEnv(t, func(cfg *config.Config) {
		quickChain(cfg)
		cfg.Tasks = []config.Task{{Name: "background", Chain: "quick"}}
	})
	r := e.postAs("/v1/messages", antBody("claude-haiku-4-5"), nil)
	if got := r.header.Get("X-FreeLane-Backend"); r.status != http.StatusOK || got != "c/mc" {
		t.Fatalf("status %d, served by %q: %s", r.status, got, r.body)
	}
	tr := e.traceOf(r.header.Get("X-FreeLane-Request-Id"))
	if d := tr.Decision; d == nil || d.Task != "background" || d.TaskRule != "built-in: model claude-*haiku*" {
		t.Errorf("decision %+v", tr.Decision)
	}
	// Thinking asked for is the think task, and only wanted: the chain's
	// models declare no reasoning and still serve it.
	r = e.postAs("/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"hi"}]}`, nil)
	if r.status != http.StatusOK {
		t.Fatalf("thinking: status %d: %s", r.status, r.body)
	}
	tr = e.traceOf(r.header.Get("X-FreeLane-Request-Id"))
	if d := tr.Decision; d == nil || d.Task != "think" || d.TaskRule != "built-in: thinking" {
		t.Errorf("thinking decision %+v", tr.Decision)
	}
}

func TestTaskHeaderSendsToItsChain(t *testing.T) {
	e := newEnv(t, func(cfg *config.Config) {
		quickChain(cfg)
		cfg.Tasks = []config.Task{{Name: "background", Chain: "quick"}, {Name: "review"}}
	})
	for _, c := range []struct {
		name, path, body string
	}{
		{"anthropic", "/v1/messages", antBody("claude-sonnet-4-5")},
		{"openai", "/v1/chat/completions", chat("main", false)},
		{"gemini", "/v1beta/models/main:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
		{"responses", "/v1/responses", `{"model":"main","input":"hi"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.postAs(c.path, c.body, map[string]string{"X-FreeLane-Task": "background"})
			if got := r.header.Get("X-FreeLane-Backend"); r.status != http.StatusOK || got != "c/mc" {
				t.Fatalf("status %d, served by %q: %s", r.status, got, r.body)
			}
			tr := e.traceOf(r.header.Get("X-FreeLane-Request-Id"))
			if d := tr.Decision; d == nil || d.Task != "background" || d.TaskRule != "header" || d.Chain != "quick" {
				t.Errorf("decision %+v", tr.Decision)
			}
		})
	}
	// A configured task without a chain keeps the requested one.
	r := e.postAs("/v1/chat/completions", chat("main", false), map[string]string{"X-FreeLane-Task": "review"})
	if got := r.header.Get("X-FreeLane-Backend"); r.status != http.StatusOK || got != "a/ma" {
		t.Fatalf("review: status %d, served by %q: %s", r.status, got, r.body)
	}
	if d := e.traceOf(r.header.Get("X-FreeLane-Request-Id")).Decision; d == nil || d.Task != "review" || d.Chain != "main" {
		t.Errorf("review decision %+v", d)
	}
}

func TestBadTaskAndGearHeadersAre400InTheClientsDialect(t *testing.T) {
	e := newEnv(t, func(cfg *config.Config) { cfg.Tasks = []config.Task{{Name: "review"}} })
	const taskMsg = `X-FreeLane-Task names no task: "sumary" is not one of default, background, think, long_context or review`
	const gearMsg = `X-FreeLane-Gear must be "auto" or "manual", got "fast"`
	for _, c := range []struct {
		name, path, body string
		// shape is what only this dialect's error envelope holds.
		shape string
	}{
		{"anthropic", "/v1/messages", antBody("claude-sonnet-4-5"), `"type":"error"`},
		{"openai", "/v1/chat/completions", chat("main", false), `"type":"invalid_request_error"`},
		{"gemini", "/v1beta/models/main:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, `"status":"INVALID_ARGUMENT"`},
		{"responses", "/v1/responses", `{"model":"main","input":"hi"}`, `"code":"unknown_task"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, h := range []struct {
				header, value, msg string
			}{{"X-FreeLane-Task", "sumary", taskMsg}, {"X-FreeLane-Gear", "fast", gearMsg}} {
				r := e.postAs(c.path, c.body, map[string]string{h.header: h.value})
				if r.status != http.StatusBadRequest {
					t.Fatalf("%s: status %d: %s", h.header, r.status, r.body)
				}
				var body struct {
					Error struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal(r.body, &body); err != nil || body.Error.Message != h.msg {
					t.Errorf("%s: body %s, want the message %q", h.header, r.body, h.msg)
				}
				if h.header == "X-FreeLane-Task" && !strings.Contains(string(r.body), c.shape) {
					t.Errorf("%s: body %s is not in the %s envelope (%s)", h.header, r.body, c.name, c.shape)
				}
			}
		})
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Errorf("%d calls went upstream", n)
	}
	// A long value is not repeated whole.
	r := e.postAs("/v1/chat/completions", chat("main", false), map[string]string{"X-FreeLane-Task": strings.Repeat("x", 5000)})
	if r.status != http.StatusBadRequest || len(r.body) > 1000 {
		t.Errorf("long task: status %d, %d bytes", r.status, len(r.body))
	}
	// The gear header sets the request's gear, in any case.
	r = e.postAs("/v1/chat/completions", chat("main", false), map[string]string{"X-FreeLane-Gear": "Manual", "X-FreeLane-Task": "review"})
	if r.status != http.StatusOK {
		t.Fatalf("manual gear: status %d: %s", r.status, r.body)
	}
	if d := e.traceOf(r.header.Get("X-FreeLane-Request-Id")).Decision; d == nil || d.Gear != "manual" || d.Task != "review" {
		t.Errorf("decision %+v", d)
	}
}

// A backend declared without tools is passed by, with the reason, before
// any call, for a request that carries tools; one without declared
// capabilities is tried.
func TestCapabilitySkipBeforeAnyCall(t *testing.T) {
	e := newEnv(t, func(cfg *config.Config) {
		cfg.Providers[0].Models[0].Capabilities = []string{"json"}
		cfg.Providers[1].Models[0].Capabilities = []string{"tools", "vision"}
	})
	tools := `{"model":"main","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
	r := e.postAs("/v1/chat/completions", tools, nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if got := r.attempts(); !strings.HasPrefix(got, "a/ma=skip(unsupported); b/mb=ok") {
		t.Errorf("attempts %q, want a/ma skipped as unsupported and b/mb serving", got)
	}
	if n := e.up.Calls("ma"); n != 0 {
		t.Errorf("a/ma, declared without tools, was called %d times", n)
	}
	tr := e.traceOf(r.header.Get("X-FreeLane-Request-Id"))
	if len(tr.Attempts) == 0 || tr.Attempts[0].Backend != "a/ma" || !tr.Attempts[0].Skipped || tr.Attempts[0].Reason != "has no tools support" {
		t.Errorf("attempts %+v", tr.Attempts)
	}
	var excluded *llm.Candidate
	if tr.Decision != nil {
		for i, c := range tr.Decision.Candidates {
			if c.Backend == "a/ma" {
				excluded = &tr.Decision.Candidates[i]
			}
		}
	}
	if excluded == nil || excluded.Verdict != llm.VerdictExcluded || !strings.Contains(excluded.Reason, "tools") {
		t.Errorf("a/ma in the decision: %+v", excluded)
	}

	// Images, asked of both declared models in the Anthropic dialect:
	// only b/mb has vision.
	img := `{"model":"main","max_tokens":64,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"text","text":"what is it"}]}]}`
	r = e.postAs("/v1/messages", img, nil)
	if got := r.attempts(); r.status != http.StatusOK || !strings.HasPrefix(got, "a/ma=skip(unsupported); b/mb=ok") {
		t.Errorf("image: status %d, attempts %q", r.status, got)
	}
	if n := e.up.Calls("ma"); n != 0 {
		t.Errorf("a/ma was called %d times", n)
	}
}

// Rules on the prompt's length and on tools, in the Responses and Gemini
// dialects: the first rule that matches wins.
func TestTaskRulesByPromptLengthAndTools(t *testing.T) {
	e := newEnv(t, func(cfg *config.Config) {
		quickChain(cfg)
		cfg.Chains = append(cfg.Chains, config.Chain{Name: "big", Backends: []string{"b/mb"}})
		cfg.Tasks = []config.Task{
			{Name: "long_context", When: &config.TaskWhen{PromptTokensOver: 2000}, Chain: "big"},
			{Name: "agent", When: &config.TaskWhen{Tools: ptrTo(true)}, Chain: "quick"},
		}
	})
	long := strings.Repeat("Tell me more about the history of the city and its rivers. ", 400)
	for _, c := range []struct {
		name, path, body, task, rule, backend string
	}{
		{"long", "/v1/responses", `{"model":"main","input":"` + long + `"}`, "long_context", "tasks[0]: prompt over 2000 tokens", "b/mb"},
		// An image counts no tokens, however many bytes it has.
		{"long body, short prompt", "/v1beta/models/main:generateContent", `{"contents":[{"role":"user","parts":[{"text":"what is it"},{"inlineData":{"mimeType":"image/png","data":"` + strings.Repeat("A", 40000) + `"}}]}]}`, "default", "", "a/ma"},
		{"tools", "/v1beta/models/main:generateContent", `{"tools":[{"functionDeclarations":[{"name":"f"}]}],"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "agent", "tasks[1]: tools", "c/mc"},
		{"long with tools", "/v1beta/models/main:generateContent", `{"tools":[{"functionDeclarations":[{"name":"f"}]}],"contents":[{"role":"user","parts":[{"text":"` + long + `"}]}]}`, "long_context", "tasks[0]: prompt over 2000 tokens", "b/mb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.postAs(c.path, c.body, nil)
			if got := r.header.Get("X-FreeLane-Backend"); r.status != http.StatusOK || got != c.backend {
				t.Fatalf("status %d, served by %q, want %s: %s", r.status, got, c.backend, r.body)
			}
			if d := e.traceOf(r.header.Get("X-FreeLane-Request-Id")).Decision; d == nil || d.Task != c.task || d.TaskRule != c.rule {
				t.Errorf("decision %+v", d)
			}
		})
	}
}
