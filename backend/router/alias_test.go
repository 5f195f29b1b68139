package router_test

import (
	"errors"
	"strings"
	"testing"

	"freelane/backend/router"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"claude-*", "claude-sonnet-4-5-20250929", true},
		{"claude-*", "claude-", true},
		{"claude-*", "claude", false},
		{"claude-*", "xclaude-opus", false},
		{"*", "", true},
		{"*", "anything/at all", true},
		{"gpt-4?", "gpt-4o", true},
		{"gpt-4?", "gpt-4", false},
		{"gpt-4?", "gpt-4oo", false},
		{"*-mini", "gpt-4o-mini", true},
		{"*-mini", "gpt-4o-mini-2", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyycz", false},
		{"a*b*c", "abcbc", true},
		{"*/llama-*:free", "meta-llama/llama-3.3-70b:free", true},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"", "", true},
		{"", "x", false},
		{"**a", "ba", true},
	} {
		if got := router.Glob(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

// A pattern that backtracks at every '*' must still answer at once on a
// long name, since the name comes from a client.
func TestGlobLongName(t *testing.T) {
	name := strings.Repeat("a", 4096)
	if router.Glob("*a*a*a*a*a*a*a*a*b", name) {
		t.Error("matched a name without b")
	}
}

func TestAliasesResolve(t *testing.T) {
	spec := catalogSpec()
	spec.Aliases = []router.AliasSpec{
		{Pattern: "gpt-4o*", Chain: "fast"},
		{Pattern: "claude-*", Chain: "auto"},
		{Pattern: "gone-*", Chain: "no-such-chain"},
		{Pattern: "gone-*", Chain: "fast"},
		{Pattern: "prem*", Chain: "premium"},
	}
	tab := router.Build(spec)

	// An exact name wins over every alias: the chain, the backend and the
	// served model id.
	for _, name := range []string{"fast", "openai/gpt-4o", "gpt-4o", "claude-sonnet"} {
		r, err := tab.Resolve(name)
		if err != nil || r.Alias != "" {
			t.Errorf("%s: alias %q, err %v; an exact name must not go through an alias", name, r.Alias, err)
		}
	}
	r, err := tab.Resolve("gpt-4o-2024-08-06")
	if err != nil || r.Chain != "fast" || r.Alias != "gpt-4o*" || r.Pinned {
		t.Fatalf("gpt-4o-2024-08-06: %+v, %v", r, err)
	}
	if got := names(r.Backends); strings.Join(got, ",") != strings.Join(names(tab.Chain("fast")), ",") {
		t.Errorf("backends %v, want the fast chain", got)
	}
	r, err = tab.Resolve("claude-opus-4-1")
	if err != nil || r.Chain != "auto" || r.Alias != "claude-*" || len(r.Backends) != len(tab.Chain("auto")) {
		t.Errorf("claude-opus-4-1: %+v, %v", r, err)
	}
	// An alias to a chain that no longer exists gives way to the next.
	if r, err := tab.Resolve("gone-1"); err != nil || r.Chain != "fast" || r.Alias != "gone-*" {
		t.Errorf("gone-1: %+v, %v", r, err)
	}
	// An alias to a chain without a usable backend says why, as the
	// chain's own name would.
	_, err = tab.Resolve("premium-x")
	var re *router.ResolveError
	if !errors.As(err, &re) || re.Code != "missing_api_key" || !strings.Contains(re.Message, `chain "premium"`) {
		t.Errorf("premium-x: %v", err)
	}
	if _, err := tab.Resolve("llama-unknown"); !errors.As(err, &re) || re.Code != "model_not_found" {
		t.Errorf("a name no alias matches: %v", err)
	}
}

func TestVendorChainNames(t *testing.T) {
	spec := catalogSpec()
	spec.Aliases = []router.AliasSpec{{Pattern: "claude-*", Chain: "auto"}}
	tab := router.Build(spec)
	for name, chain := range map[string]string{
		"claude-freelane-fast": "fast", "gemini-freelane-fast": "fast", "claude-freelane-auto": "auto",
		// Not a chain: the glob alias takes it.
		"claude-freelane-nope": "auto",
	} {
		r, err := tab.Resolve(name)
		if err != nil || r.Chain != chain {
			t.Errorf("%s: chain %q, err %v; want %q", name, r.Chain, err, chain)
		}
	}
	if r, _ := tab.Resolve("claude-freelane-fast"); r.Alias != "claude-freelane-*" {
		t.Errorf("alias %q", r.Alias)
	}
	if _, err := tab.Resolve("gemini-freelane-nope"); err == nil {
		t.Error("gemini-freelane- with no such chain and no alias resolved")
	}
}

// Resolving a name through the aliases, as every request from an agent
// with its default model names does, next to a chain found by name.
func BenchmarkResolve(b *testing.B) {
	spec := catalogSpec()
	spec.Aliases = []router.AliasSpec{{Pattern: "gpt-4*", Chain: "fast"}, {Pattern: "claude-*", Chain: "auto"}, {Pattern: "gemini-*", Chain: "auto"}}
	tab := router.Build(spec)
	for _, name := range []string{"fast", "claude-sonnet-4-5-20250929", "gemini-freelane-fast"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tab.Resolve(name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
