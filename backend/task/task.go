// Package task gives every request a task before it is routed: the name a
// client sends in X-FreeLane-Task, or the first configured rule whose
// conditions the request meets (tools present, a long prompt, a model
// name pattern, thinking asked for), else the built-in rules, else the
// default task. A task may name its own chain and the backends it
// prefers, which the router's auto strategy counts as a task match.
package task

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"freelane/backend/llm"
	"freelane/backend/router"
	"freelane/backend/tokens"
)

// The task classes every configuration has.
const (
	// Default is the task of a request no rule matched.
	Default = "default"
	// Background is a side call an agent makes besides the user's turn: a
	// title, a summary, a check with a small model.
	Background = "background"
	// Think is a request that asks the model to reason first.
	Think = "think"
	// LongContext is a request whose prompt is very long.
	LongContext = "long_context"
)

// Classes lists the built-in task classes.
var Classes = []string{Default, Background, Think, LongContext}

// LongPrompt is the estimated prompt size, in tokens, over which the
// built-in rules call a request long_context.
const LongPrompt = 60_000

// HeaderRule is the rule string of a task the client named itself.
const HeaderRule = "header"

// Rule is one task rule: a request that meets every condition set gets
// Task. A rule without conditions is never matched; it only gives its
// task a chain or preferred backends, for requests that name the task in
// their header (or, for the default task, for requests no rule matched).
type Rule struct {
	Task string
	// Model is a glob over the model name the client asked for, as
	// aliases use them ('*' any run, '?' one character); empty matches
	// every name.
	Model string
	// Tools, when set, requires the request to carry tools (true) or
	// none (false).
	Tools *bool
	// Thinking, when set, requires the client to ask for thinking or a
	// reasoning effort (true), or not (false).
	Thinking *bool
	// PromptOver, when above 0, requires more estimated prompt tokens.
	PromptOver int
	// Chain is the chain the task routes to; empty keeps the one the
	// client named.
	Chain string
	// Prefer are backends the task prefers; a reference without a key
	// label prefers every key of that provider's model.
	Prefer []llm.BackendID
	// Name is what the decision log shows when the rule matches; empty
	// makes one from the conditions.
	Name string
}

// conditional reports whether r has a condition to match.
func (r Rule) conditional() bool {
	return r.Model != "" || r.Tools != nil || r.Thinking != nil || r.PromptOver > 0
}

// describe says what the rule asks for: "model claude-*haiku*, tools".
func (r Rule) describe() string {
	var parts []string
	if r.Model != "" {
		parts = append(parts, "model "+r.Model)
	}
	if r.Tools != nil {
		parts = append(parts, map[bool]string{true: "tools", false: "no tools"}[*r.Tools])
	}
	if r.Thinking != nil {
		parts = append(parts, map[bool]string{true: "thinking", false: "no thinking"}[*r.Thinking])
	}
	if r.PromptOver > 0 {
		parts = append(parts, "prompt over "+strconv.Itoa(r.PromptOver)+" tokens")
	}
	return strings.Join(parts, ", ")
}

// yes is the address of true, for the built-in rules.
var yes = func() *bool { b := true; return &b }()

// Builtin returns the rules that apply when the configuration gives none
// with conditions, in their order: a very long prompt is long_context
// (before anything else, since a model that cannot hold it cannot serve
// it); Claude Code's haiku-class side calls are background; a request
// that asks for thinking or a reasoning effort is think.
func Builtin() []Rule {
	return []Rule{
		{Task: LongContext, PromptOver: LongPrompt, Name: "built-in: prompt over " + strconv.Itoa(LongPrompt) + " tokens"},
		{Task: Background, Model: "claude-*haiku*", Name: "built-in: model claude-*haiku*"},
		{Task: Think, Thinking: yes, Name: "built-in: thinking"},
	}
}

// Estimator estimates a request's prompt tokens offline.
type Estimator func(req *llm.Request) int

// QuickPrompt is the estimate rules use unless told otherwise: a chat
// request's conversation counted from a sample of its text
// (tokens.QuickConversation), which costs a millisecond or two where a
// full count of a long agent prompt takes tens; any other request, a
// quarter of its bytes.
func QuickPrompt(req *llm.Request) int {
	if req.Endpoint == llm.Chat {
		if c, err := req.Conversation(); err == nil {
			return tokens.QuickConversation(c)
		}
	}
	return req.Size() / 4
}

// set is one configuration's rules, ready to match.
type set struct {
	rules  []Rule
	chains map[string]string
	prefer map[string][]llm.BackendID
	names  []string
}

// Classifier classifies requests by the rules it was last given. It is
// safe for concurrent use; Configure replaces the rules for the next
// requests.
type Classifier struct {
	cur      atomic.Pointer[set]
	estimate Estimator
}

// New returns a Classifier with the built-in rules. estimate counts a
// prompt's tokens when its length does not decide a rule alone; nil is
// QuickPrompt.
func New(estimate Estimator) *Classifier {
	if estimate == nil {
		estimate = QuickPrompt
	}
	c := &Classifier{estimate: estimate}
	c.Configure(nil)
	return c
}

// Configure installs rules, in the order they are tried. When none of
// them has a condition the built-in rules are tried instead (the others
// still give their tasks chains and preferences). Rules are assumed
// valid (the configuration's validation checks them): a task gets the
// first chain a rule of it names.
func (c *Classifier) Configure(rules []Rule) {
	s := &set{chains: map[string]string{}, prefer: map[string][]llm.BackendID{}, names: slices.Clone(Classes)}
	for i, r := range rules {
		if r.Chain != "" {
			if _, ok := s.chains[r.Task]; !ok {
				s.chains[r.Task] = r.Chain
			}
		}
		s.prefer[r.Task] = append(s.prefer[r.Task], r.Prefer...)
		if !slices.Contains(s.names, r.Task) {
			s.names = append(s.names, r.Task)
		}
		if r.conditional() {
			if r.Name == "" {
				r.Name = fmt.Sprintf("tasks[%d]: %s", i, r.describe())
			}
			s.rules = append(s.rules, r)
		}
	}
	if len(s.rules) == 0 {
		s.rules = Builtin()
	}
	c.cur.Store(s)
}

// Classify implements router.Classifier: the task the client named, or
// the first rule that matches, or the default task; the rule is what the
// decision log shows (empty for the default), and the chain the task's
// own, empty for none.
func (c *Classifier) Classify(req *llm.Request) (task, rule, chain string) {
	s := c.cur.Load()
	if req.Task != "" {
		return req.Task, HeaderRule, s.chains[req.Task]
	}
	prompt := -1 // estimated once, when a rule needs it
	for i := range s.rules {
		r := &s.rules[i]
		if r.Tools != nil && *r.Tools != req.Needs.Has(llm.CapTools) {
			continue
		}
		if r.Thinking != nil && *r.Thinking != req.Wants.Has(llm.CapReasoning) {
			continue
		}
		if r.Model != "" && !router.Glob(r.Model, req.Model) {
			continue
		}
		if r.PromptOver > 0 {
			// A prompt has no more tokens than its body has bytes, so
			// a small body is decided without counting.
			if req.Size() <= r.PromptOver {
				continue
			}
			if prompt < 0 {
				prompt = c.estimate(req)
			}
			if prompt <= r.PromptOver {
				continue
			}
		}
		return r.Task, r.Name, s.chains[r.Task]
	}
	return Default, "", s.chains[Default]
}

// Known reports whether name is a task: a built-in class or one a rule
// names.
func (c *Classifier) Known(name string) bool { return slices.Contains(c.cur.Load().names, name) }

// Names lists the tasks: the built-in classes, then the configured ones.
func (c *Classifier) Names() []string { return slices.Clone(c.cur.Load().names) }

// Prefers reports whether the rules of task name id among the backends
// it prefers; the router's auto strategy counts that as a full task
// match.
func (c *Classifier) Prefers(task string, id llm.BackendID) bool {
	for _, p := range c.cur.Load().prefer[task] {
		if p.Provider == id.Provider && p.Model == id.Model && (p.Key == "" || p.Key == id.Key) {
			return true
		}
	}
	return false
}

var _ router.Classifier = (*Classifier)(nil)
