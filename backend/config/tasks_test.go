package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestTaskRulesAreRead(t *testing.T) {
	cfg, problems, err := Parse("t.yaml", withGroq(
		"chains: [{name: quick, backends: [groq/llama-3.3-70b-versatile]}]",
		"tasks:",
		"  - name: background",
		"    when: {model: \"claude-*haiku*\"}",
		"    chain: quick",
		"  - name: review",
		"    when: {tools: false, thinking: true, prompt_tokens_over: 20000}",
		"    prefer: [groq/meta-llama/llama-4-scout]",
		"  - name: background",
		"    prefer: [groq/llama-3.3-70b-versatile]",
	), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	no, yes := false, true
	want := []Task{
		{Name: "background", When: &TaskWhen{Model: "claude-*haiku*"}, Chain: "quick"},
		{Name: "review", When: &TaskWhen{Tools: &no, Thinking: &yes, PromptTokensOver: 20000}, Prefer: []string{"groq/meta-llama/llama-4-scout"}},
		{Name: "background", Prefer: []string{"groq/llama-3.3-70b-versatile"}},
	}
	if !reflect.DeepEqual(cfg.Tasks, want) {
		t.Errorf("tasks = %+v, want %+v", cfg.Tasks, want)
	}
}

func TestTaskRuleErrors(t *testing.T) {
	chains := "chains: [{name: quick, backends: [groq/llama-3.3-70b-versatile]}, {name: slow, backends: [groq/llama-3.3-70b-versatile]}]"
	tests := []struct {
		name, rule, field, msg string
	}{
		{"no name", "{when: {tools: true}}", "tasks[0].name", "is required: default, background, think, long_context or a name of your own"},
		{"bad name", "{name: 'a b'}", "tasks[0].name", `must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit, got "a b"`},
		{"empty when", "{name: x, when: {}}", "tasks[0].when", "has no condition: set model, tools, thinking or prompt_tokens_over"},
		{"bad glob", "{name: x, when: {model: 'claude haiku'}}", "tasks[0].when.model", "may hold the characters of a model name"},
		{"negative threshold", "{name: x, when: {prompt_tokens_over: -1}}", "tasks[0].when.prompt_tokens_over", "must be a number of tokens from 1 to 10000000, got -1"},
		{"unknown chain", "{name: x, chain: nope}", "tasks[0].chain", `names no chain: "nope" is not among the chains (auto, quick, slow)`},
		{"two chains", "{name: x, chain: quick}, {name: x, when: {tools: true}, chain: slow}", "tasks[1].chain", `sends task x to "slow", but tasks[0] (line 11) sends it to "quick"; a task has one chain`},
		{"prefer not a backend", "{name: x, prefer: [groq]}", "tasks[0].prefer[0]", `must be a "provider/model" backend, got "groq"`},
		{"prefer unknown provider", "{name: x, prefer: [nope/m]}", "tasks[0].prefer[0]", `unknown provider "nope" in "nope/m"; providers are: groq`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each rule of the case on its own line (10 and on).
			lines := []string{chains, "tasks:"}
			for _, r := range strings.Split(tt.rule, "}, {") {
				r = strings.TrimSuffix(strings.TrimPrefix(r, "{"), "}")
				lines = append(lines, "  - {"+r+"}")
			}
			_, _, err := Parse("t.yaml", withGroq(lines...), envMap(nil))
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error %v, want a ValidationError", err)
			}
			p, ok := findProblem(verr.Problems, tt.field)
			if !ok {
				t.Fatalf("no problem on %q; got:\n%v", tt.field, verr)
			}
			if !strings.Contains(p.Message, tt.msg) {
				t.Errorf("message = %q, want it to contain %q", p.Message, tt.msg)
			}
		})
	}
}

func TestTooManyTaskRules(t *testing.T) {
	lines := []string{"tasks:"}
	for range MaxTasks + 1 {
		lines = append(lines, "  - {name: x, when: {tools: true}}")
	}
	_, _, err := Parse("t.yaml", doc(lines...), envMap(nil))
	if err == nil || !strings.Contains(err.Error(), "has 65 entries; at most 64 are allowed") {
		t.Errorf("error %v", err)
	}
}
