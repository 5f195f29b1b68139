package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"google.golang.org/genai"

	"freelane/backend/llm"
)

// waitTrace returns the newest logged request for model, waiting for the
// request log's asynchronous write.
func waitTrace(t *testing.T, e *env, model string) llm.Trace {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var traces []llm.Trace
		r := e.do("GET", "/api/requests?limit=50", "", nil)
		if err := json.Unmarshal(r.body, &traces); err != nil {
			t.Fatalf("/api/requests: %v %s", err, r.body)
		}
		for _, tr := range traces {
			if tr.Model == model {
				return tr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request for %q was logged", model)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Agents ask for their vendor's model names; the built-in aliases send
// them to the default chain with no model settings, and the trace says
// which alias was taken.
func TestAgentModelNamesRouteThroughAliases(t *testing.T) {
	e := mixedEnv(t)
	ctx := context.Background()

	cl := sdk.NewClient(option.WithBaseURL(e.base), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	var raw *http.Response
	m, err := cl.Messages.New(ctx, hello("claude-sonnet-4-5-20250929"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	// The head of auto is the first own key, provider a.
	if len(m.Content) != 1 || raw.Header.Get("X-FreeLane-Backend") != "a/ma" {
		t.Fatalf("served by %q (%+v), want the head of auto", raw.Header.Get("X-FreeLane-Backend"), m.Content)
	}
	if tr := waitTrace(t, e, "claude-sonnet-4-5-20250929"); tr.Chain != "auto" || tr.Alias != "claude-*" {
		t.Errorf("trace chain %q alias %q", tr.Chain, tr.Alias)
	}

	g := geminiClient(t, e, "v1beta")
	res, err := g.Models.GenerateContent(ctx, "gemini-2.5-pro", genai.Text("Say hello"), nil)
	if err != nil || res.Text() == "" {
		t.Fatalf("gemini-2.5-pro: %v %v", err, res)
	}
	if tr := waitTrace(t, e, "gemini-2.5-pro"); tr.Chain != "auto" || tr.Alias != "gemini-*" {
		t.Errorf("trace chain %q alias %q", tr.Chain, tr.Alias)
	}

	// A name some backend serves is that backend, alias or not.
	if _, err := cl.Messages.New(ctx, hello("claude-x"), option.WithResponseInto(&raw)); err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("X-FreeLane-Backend") != "claude/claude-x" {
		t.Errorf("claude-x served by %q", raw.Header.Get("X-FreeLane-Backend"))
	}
	if tr := waitTrace(t, e, "claude-x"); tr.Alias != "" {
		t.Errorf("an exact name went through alias %q", tr.Alias)
	}

	// The chains under the names Claude Code's model discovery keeps and
	// Google's clients list, each routing to its chain.
	list := e.do("GET", "/v1/models?limit=1000", "", map[string]string{"anthropic-version": "2023-06-01"})
	if !strings.Contains(string(list.body), `"id":"claude-freelane-mixed"`) {
		t.Errorf("Anthropic model list: %s", list.body)
	}
	if _, err := cl.Messages.New(ctx, hello("claude-freelane-mixed"), option.WithResponseInto(&raw)); err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("X-FreeLane-Backend") != "claude/claude-x" {
		t.Errorf("claude-freelane-mixed served by %q", raw.Header.Get("X-FreeLane-Backend"))
	}
	if tr := waitTrace(t, e, "claude-freelane-mixed"); tr.Chain != "mixed" || tr.Alias != "claude-freelane-*" {
		t.Errorf("trace chain %q alias %q", tr.Chain, tr.Alias)
	}
	var names []string
	for m, err := range g.Models.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "models/gemini-freelane-mixed") {
		t.Errorf("Gemini model list: %v", names)
	}
	info, err := g.Models.Get(ctx, "gemini-freelane-mixed", nil)
	if err != nil || info.Name != "models/gemini-freelane-mixed" {
		t.Errorf("Models.Get: %v %+v", err, info)
	}
	if _, err := g.Models.Get(ctx, "nope", nil); err == nil || !strings.Contains(err.Error(), "NOT_FOUND") {
		t.Errorf("unknown model: %v", err)
	}
}

// The dashboard edits the aliases: a configured alias is tried before the
// built-in ones, replaces the built-in one with its pattern, follows its
// chain when the chain is renamed and falls back to auto when the chain
// is deleted.
func TestAliasesFromTheDashboard(t *testing.T) {
	e := mixedEnv(t)
	r := e.do("GET", "/api/aliases", "", nil)
	if r.status != 200 || string(r.body) != `[{"pattern":"claude-*","chain":"auto","default":true},{"pattern":"gemini-*","chain":"auto","default":true}]` {
		t.Fatalf("built-in aliases: %d %s", r.status, r.body)
	}
	r = e.do("PUT", "/api/aliases", `{"aliases":[{"pattern":"gpt-4*","chain":"mixed"},{"pattern":"claude-*","chain":"mixed"}]}`, nil)
	if r.status != 200 || string(r.body) != `[{"pattern":"gpt-4*","chain":"mixed","default":false},{"pattern":"claude-*","chain":"mixed","default":false},{"pattern":"gemini-*","chain":"auto","default":true}]` {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	got := e.post("/v1/chat/completions", `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`)
	if got.status != 200 || got.header.Get("X-FreeLane-Backend") != "claude/claude-x" {
		t.Errorf("gpt-4.1: %d by %q %s", got.status, got.header.Get("X-FreeLane-Backend"), got.body)
	}
	// Sending back the list as read changes nothing: the built-in alias
	// stays built in.
	r = e.do("PUT", "/api/aliases", `{"aliases":[{"pattern":"gpt-4*","chain":"mixed"},{"pattern":"claude-*","chain":"mixed"},{"pattern":"gemini-*","chain":"auto"}]}`, nil)
	if r.status != 200 || !strings.Contains(string(r.body), `{"pattern":"gemini-*","chain":"auto","default":true}`) {
		t.Errorf("PUT of the list as read: %d %s", r.status, r.body)
	}

	for body, want := range map[string]string{
		`{"aliases":[{"pattern":"x*","chain":"nope"}]}`:                                  `names no chain: \"nope\"`,
		`{"aliases":[{"pattern":"bad pattern","chain":"auto"}]}`:                         `may hold the characters of a model name`,
		`{"aliases":[{"pattern":"a*","chain":"auto"},{"pattern":"a*","chain":"mixed"}]}`: `repeats aliases[0]`,
		`{}`: `aliases is required`,
	} {
		r := e.do("PUT", "/api/aliases", body, nil)
		if r.status != 400 || !strings.Contains(string(r.body), want) {
			t.Errorf("PUT %s: %d %s, want 400 with %q", body, r.status, r.body, want)
		}
	}

	if r := e.do("PUT", "/api/chains/mixed", `{"name":"blend"}`, nil); r.status != 200 {
		t.Fatalf("rename: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/api/aliases", "", nil)
	if !strings.Contains(string(r.body), `{"pattern":"gpt-4*","chain":"blend","default":false}`) {
		t.Errorf("after rename: %s", r.body)
	}
	if r := e.do("DELETE", "/api/chains/blend", "", nil); r.status/100 != 2 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/api/aliases", "", nil)
	if !strings.Contains(string(r.body), `{"pattern":"gpt-4*","chain":"auto","default":false}`) {
		t.Errorf("after delete: %s", r.body)
	}
}
