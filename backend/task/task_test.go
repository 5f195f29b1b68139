package task

import (
	"strings"
	"testing"

	"freelane/backend/llm"
)

// body is a request source of a given size.
type body []byte

func (b body) Raw() []byte                              { return b }
func (b body) Rewrite(string, llm.Edits) []byte         { return b }
func (b body) Conversation() (*llm.Conversation, error) { return &llm.Conversation{}, nil }

func request(model string, size int, needs, wants llm.Caps) *llm.Request {
	r := llm.NewRequest(body(strings.Repeat("x", size)))
	r.Model, r.Needs, r.Wants = model, needs, wants
	return r
}

func ptr(b bool) *bool { return &b }

func TestClassify(t *testing.T) {
	// The estimate is a tenth of the bytes, so a body's length alone
	// decides only that a prompt is short.
	tenth := func(r *llm.Request) int { return r.Size() / 10 }
	configured := []Rule{
		{Task: "agent", Tools: ptr(true), Thinking: ptr(false), Chain: "agents"},
		{Task: Background, Model: "claude-*haiku*", Chain: "quick"},
		{Task: "huge", PromptOver: 1000},
		{Task: Think, Thinking: ptr(true)},
		// Header-only: gives its task a chain, never matches.
		{Task: "review", Chain: "reviewers"},
		{Task: Default, Chain: "main"},
	}
	for _, c := range []struct {
		name              string
		rules             []Rule
		req               *llm.Request
		header            string
		task, rule, chain string
	}{
		// Built-in rules, with no configuration.
		{"builtin default", nil, request("gpt-4o", 100, 0, 0), "", Default, "", ""},
		{"builtin haiku", nil, request("claude-3-5-haiku-20241022", 100, llm.CapTools, 0), "", Background, "built-in: model claude-*haiku*", ""},
		{"builtin haiku 4.5", nil, request("claude-haiku-4-5", 100, 0, 0), "", Background, "built-in: model claude-*haiku*", ""},
		{"builtin sonnet", nil, request("claude-sonnet-4-5", 100, 0, 0), "", Default, "", ""},
		{"builtin think", nil, request("claude-sonnet-4-5", 100, 0, llm.CapReasoning), "", Think, "built-in: thinking", ""},
		{"builtin long before haiku", nil, request("claude-3-5-haiku-20241022", 700_000, 0, 0), "", LongContext, "built-in: prompt over 60000 tokens", ""},
		{"builtin long body, short prompt", nil, request("m", 500_000, 0, 0), "", Default, "", ""},
		{"builtin header", nil, request("m", 100, 0, llm.CapReasoning), "background", Background, HeaderRule, ""},

		// Configured rules, in order; the first match wins.
		{"all conditions", configured, request("claude-3-5-haiku-20241022", 100, llm.CapTools, 0), "", "agent", "tasks[0]: tools, no thinking", "agents"},
		{"one condition fails", configured, request("claude-3-5-haiku-20241022", 100, llm.CapTools, llm.CapReasoning), "", Background, "tasks[1]: model claude-*haiku*", "quick"},
		{"prompt over", configured, request("m", 20_000, 0, llm.CapReasoning), "", "huge", "tasks[2]: prompt over 1000 tokens", ""},
		{"prompt at", configured, request("m", 10_000, 0, llm.CapReasoning), "", Think, "tasks[3]: thinking", ""},
		{"none matches: default's chain", configured, request("m", 100, 0, 0), "", Default, "", "main"},
		{"builtins off with rules", configured, request("m", 700_000, 0, 0), "", "huge", "tasks[2]: prompt over 1000 tokens", ""},
		{"header with a chain", configured, request("claude-3-5-haiku-20241022", 100, 0, 0), "review", "review", HeaderRule, "reviewers"},
		{"header over rules", configured, request("claude-3-5-haiku-20241022", 100, 0, 0), Think, Think, HeaderRule, ""},

		// Rules without conditions only name chains: the built-ins stay.
		{"chains only", []Rule{{Task: Background, Chain: "quick"}}, request("claude-3-5-haiku-20241022", 100, 0, 0), "", Background, "built-in: model claude-*haiku*", "quick"},
		{"glob is the whole name", []Rule{{Task: "x", Model: "haiku"}}, request("claude-haiku", 100, 0, 0), "", Default, "", ""},
		{"no tools", []Rule{{Task: "chat", Tools: ptr(false)}}, request("m", 100, 0, 0), "", "chat", "tasks[0]: no tools", ""},
		{"named rule", []Rule{{Task: "chat", Tools: ptr(false), Name: "mine"}}, request("m", 100, 0, 0), "", "chat", "mine", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := New(tenth)
			cl.Configure(c.rules)
			c.req.Task = c.header
			task, rule, chain := cl.Classify(c.req)
			if task != c.task || rule != c.rule || chain != c.chain {
				t.Errorf("Classify = %q, %q, %q; want %q, %q, %q", task, rule, chain, c.task, c.rule, c.chain)
			}
		})
	}
}

// A short body is decided by its length: the estimate never runs.
func TestShortPromptIsNotCounted(t *testing.T) {
	counted := 0
	cl := New(func(r *llm.Request) int { counted++; return r.Size() })
	cl.Configure([]Rule{{Task: "a", PromptOver: 5000}, {Task: "b", PromptOver: 4000}})
	if task, _, _ := cl.Classify(request("m", 3000, 0, 0)); task != Default || counted != 0 {
		t.Errorf("task %q after %d estimates, want default and none", task, counted)
	}
	// A long one is counted once for every rule that asks.
	if task, _, _ := cl.Classify(request("m", 4500, 0, 0)); task != "b" || counted != 1 {
		t.Errorf("task %q after %d estimates, want b and one", task, counted)
	}
	if task, _, _ := cl.Classify(request("m", 6000, 0, 0)); task != "a" || counted != 2 {
		t.Errorf("task %q after %d estimates, want a and two", task, counted)
	}
}

func TestKnownAndPrefers(t *testing.T) {
	cl := New(nil)
	for _, n := range Classes {
		if !cl.Known(n) {
			t.Errorf("%s is not known", n)
		}
	}
	if cl.Known("review") {
		t.Error("review is known before any rule names it")
	}
	cl.Configure([]Rule{
		{Task: "review", Prefer: []llm.BackendID{{Provider: "groq", Model: "llama"}}},
		{Task: Background, Tools: ptr(false), Prefer: []llm.BackendID{{Provider: "pool", Key: "k2", Model: "m"}}},
	})
	if !cl.Known("review") || cl.Known("Review") || cl.Known("") {
		t.Error("review is not known, or names are not exact")
	}
	if got := strings.Join(cl.Names(), ","); got != "default,background,think,long_context,review" {
		t.Errorf("names %s", got)
	}
	for _, c := range []struct {
		task string
		id   llm.BackendID
		want bool
	}{
		{"review", llm.BackendID{Provider: "groq", Model: "llama"}, true},
		{"review", llm.BackendID{Provider: "groq", Key: "second", Model: "llama"}, true},
		{"review", llm.BackendID{Provider: "groq", Model: "other"}, false},
		{Default, llm.BackendID{Provider: "groq", Model: "llama"}, false},
		{Background, llm.BackendID{Provider: "pool", Key: "k2", Model: "m"}, true},
		{Background, llm.BackendID{Provider: "pool", Key: "k1", Model: "m"}, false},
	} {
		if got := cl.Prefers(c.task, c.id); got != c.want {
			t.Errorf("Prefers(%s, %s) = %v", c.task, c.id, got)
		}
	}
}

// Classifying by the built-in rules is on every request's path.
func BenchmarkClassifyBuiltin(b *testing.B) {
	cl := New(nil)
	req := request("claude-sonnet-4-5", 40_000, llm.CapTools, 0)
	b.ReportAllocs()
	for b.Loop() {
		cl.Classify(req)
	}
}
