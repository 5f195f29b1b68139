package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"freelane/backend/defaults"
)

// doc joins lines with newlines, so that a case's line numbers can be read
// off its position in the list.
func doc(lines ...string) []byte {
	return []byte(strings.Join(lines, "\n") + "\n")
}

// envMap returns a lookupEnv function backed by m.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// findProblem returns the first problem on field, if any.
func findProblem(problems []Problem, field string) (Problem, bool) {
	for _, p := range problems {
		if p.Field == field {
			return p, true
		}
	}
	return Problem{}, false
}

// A valid provider that cases can append to or reference from chains.
var groqLines = []string{
	"providers:",
	"  - name: groq",
	"    tier: free",
	"    base_url: https://api.groq.com/openai/v1",
	"    api_key: k",
	"    models:",
	"      - id: llama-3.3-70b-versatile",
	"      - id: meta-llama/llama-4-scout",
}

func withGroq(lines ...string) []byte {
	return doc(append(append([]string{}, groqLines...), lines...)...)
}

// groqSet is groqLines with the value of key replaced in place, so the line
// numbers stay those of groqLines: name 2, tier 3, base_url 4, api_key 5.
func groqSet(key, value string) []byte {
	lines := append([]string{}, groqLines...)
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " -"), key+":") {
			lines[i] = l[:strings.Index(l, key)] + key + ": " + value
			return doc(lines...)
		}
	}
	panic("groqSet: no key " + key)
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name  string
		yaml  []byte
		env   map[string]string
		field string
		line  int
		msg   string
	}{
		// Structure and types.
		{"syntax error", doc("listen: a", "  providers: x"), nil, "", 2, "invalid YAML: mapping values are not allowed"},
		{"tab indentation", doc("providers:", "\t- name: x"), nil, "", 2, "indent with spaces"},
		{"second document", doc("listen: 127.0.0.1:1", "---", "listen: 127.0.0.1:2"), nil, "", 2, "more than one YAML document"},
		{"root not a mapping", doc("- a", "- b"), nil, "", 1, "must be a mapping of settings"},
		{"unknown top-level key with suggestion", doc("listn: 127.0.0.1:1"), nil, "listn", 1, `unknown field "listn" (did you mean listen?)`},
		{"unknown provider key with suggestion", doc(
			"providers:",
			"  - name: groq",
			"    tier: free",
			"    base_ulr: https://x",
		), nil, "providers[0].base_ulr", 4, `unknown field "base_ulr" (did you mean base_url?)`},
		{"unknown key without suggestion", doc("colour: red"), nil, "colour", 1, "known fields are aliases, allowed_hosts, allowed_origins, breaker, budgets, cache, catalog, chains"},
		{"APIKeyEnv is not a key", withGroq("    apikeyenv: [X]"), nil, "providers[0].apikeyenv", 9, "unknown field"},
		{"duplicate key", doc("listen: 127.0.0.1:1", "listen: 127.0.0.1:2"), nil, "listen", 2, "duplicate key \"listen\" (first given on line 1)"},
		{"list expected", doc("providers: groq"), nil, "providers", 1, `must be a list, got "groq"`},
		{"mapping expected", doc("breaker: [1, 2]"), nil, "breaker", 1, "must be a mapping of keys to values, got a list"},
		{"bool expected", withGroq("    keyless: maybe"), nil, "providers[0].keyless", 9, `must be true or false, got "maybe"`},
		{"int expected", doc("max_body_mb: lots"), nil, "max_body_mb", 1, `must be a whole number, got "lots"`},
		{"float refused for int", withGroq("        context: 1.5"), nil, "providers[0].models[1].context", 9, `must be a whole number, got "1.5"`},
		{"string expected", groqSet("base_url", "[a]"), nil, "providers[0].base_url", 4, "must be a string, got a list"},
		{"bad duration", withGroq("    timeouts: {connect: 10x}"), nil, "providers[0].timeouts.connect", 9, `must be a duration such as "30s"`},
		{"duration without unit", doc("breaker:", "  open: 30"), nil, "breaker.open", 2, `add a unit, e.g. "30s"`},
		{"unterminated env reference", doc("listen: ${PORT"), nil, "listen", 1, `unterminated "${"`},
		{"invalid env name", doc("listen: ${1X}"), nil, "listen", 1, `invalid environment variable name "1X"`},

		// Aliases.
		{"alias to no chain", withGroq("aliases: [{pattern: claude-*, chain: nope}]"), nil, "aliases[0].chain", 9, `names no chain: "nope" is not among the chains (auto)`},
		{"alias without chain", withGroq("aliases: [{pattern: claude-*}]"), nil, "aliases[0].chain", 9, "is required: the chain the names go to (auto)"},
		{"alias without pattern", withGroq("aliases: [{chain: auto}]"), nil, "aliases[0].pattern", 9, `is required: a model name or a glob such as "claude-*"`},
		{"alias pattern with spaces", withGroq("aliases: [{pattern: 'claude *', chain: auto}]"), nil, "aliases[0].pattern", 9, "may hold the characters of a model name"},
		{"alias pattern twice", withGroq("aliases: [{pattern: a*, chain: auto}, {pattern: a*, chain: auto}]"), nil, "aliases[1].pattern", 9, "repeats aliases[0] (line 9)"},

		// Top-level settings.
		{"default chain names no chain", withGroq("default_chain: nope"), nil, "default_chain", 9, `names no chain: "nope" is not among the chains`},
		{"listen not host:port", doc("listen: 7788"), nil, "listen", 1, `must be host:port, e.g. "127.0.0.1:7788", got "7788"`},
		{"listen bad port", doc("listen: localhost:http"), nil, "listen", 1, `port must be a number from 0 to 65535, got "http"`},
		{"listen port out of range", doc("listen: localhost:70000"), nil, "listen", 1, "port must be a number from 0 to 65535"},
		{"max_body_mb explicit zero", doc("max_body_mb: 0"), nil, "max_body_mb", 1, "must be from 1 to 512 (MiB), got 0"},
		{"max_body_mb too large", doc("max_body_mb: 600"), nil, "max_body_mb", 1, "must be from 1 to 512 (MiB), got 600"},
		{"allowed host is a URL", doc("allowed_hosts:", "  - ok.lan", "  - http://x.lan/"), nil, "allowed_hosts[1]", 3, "not a URL"},
		{"allowed host empty", doc(`allowed_hosts: [""]`), nil, "allowed_hosts[0]", 1, "must not be empty"},

		// Providers.
		{"provider name missing", doc(
			"providers:",
			"  - tier: free",
			"    base_url: https://x",
			"    models: [{id: m}]",
		), nil, "providers[0].name", 2, "is required"},
		{"provider name upper-case", doc(
			"providers:",
			"  - name: Groq",
			"    tier: free",
			"    base_url: https://x",
			"    models: [{id: m}]",
		), nil, "providers[0].name", 2, `must be lower-case letters, digits, '_' or '-', starting with a letter or digit, got "Groq"`},
		{"provider name with slash", doc(
			"providers:",
			"  - name: a/b",
			"    tier: free",
			"    base_url: https://x",
			"    models: [{id: m}]",
		), nil, "providers[0].name", 2, "must be lower-case"},
		{"provider name duplicate", withGroq(
			"  - name: groq",
			"    tier: free",
			"    base_url: https://x",
			"    models: [{id: m}]",
		), nil, "providers[1].name", 9, `duplicate provider name "groq" (first used by providers[0] on line 2)`},
		{"capability unknown", doc(
			"providers:",
			"  - name: a",
			"    tier: free",
			"    base_url: https://x",
			"    models: [{id: m, capabilities: [tools, telepathy]}]",
		), nil, "providers[0].models[0].capabilities[1]", 5, `unknown name "telepathy"; use tools, vision, json, reasoning`},
		{"anthropic embeddings", doc(
			"providers:",
			"  - name: a",
			"    kind: anthropic",
			"    tier: own",
			"    base_url: https://api.anthropic.com/v1",
			"    models: [{id: m, endpoints: [chat, embeddings]}]",
		), nil, "providers[0].models[0].endpoints[1]", 6, `a provider of kind anthropic serves chat only, got "embeddings"`},
		{"drop the model", withGroq("    drop_params: [stream_options, model]"), nil, "providers[0].drop_params[1]", 9, `"model" cannot be dropped`},
		{"kind unsupported", withGroq("    kind: cohere"), nil, "providers[0].kind", 9, `unsupported kind "cohere"; supported kinds: openai, anthropic, gemini`},
		{"tier missing", doc(
			"providers:",
			"  - name: groq",
			"    base_url: https://x",
			"    models: [{id: m}]",
		), nil, "providers[0].tier", 2, "is required: one of own, free, local"},
		{"tier invalid", groqSet("tier", "paid"), nil, "providers[0].tier", 3, `must be one of own, free, local, got "paid"`},
		{"base_url missing", doc(
			"providers:",
			"  - name: groq",
			"    tier: free",
			"    models: [{id: m}]",
		), nil, "providers[0].base_url", 2, "is required"},
		{"base_url without scheme", groqSet("base_url", "groq.com"), nil, "providers[0].base_url", 4, `must be an absolute http(s) URL, got "groq.com"; add the scheme`},
		{"base_url wrong scheme", groqSet("base_url", "ftp://groq.com/v1"), nil, "providers[0].base_url", 4, `must be an absolute http(s) URL, got "ftp://groq.com/v1"`},
		{"base_url with query", groqSet("base_url", "https://groq.com/v1?x=1"), nil, "providers[0].base_url", 4, "must not have a query or fragment"},
		{"base_url with credentials", groqSet("base_url", "https://u:p@groq.com/v1"), nil, "providers[0].base_url", 4, "must not contain a user name or password"},
		{"keyless with key", withGroq("    keyless: true"), nil, "providers[0].api_key", 5, "must be empty when keyless is true"},
		{"keyless with key from env", doc(
			"providers:",
			"  - name: ollama",
			"    tier: local",
			"    keyless: true",
			"    base_url: http://127.0.0.1:11434/v1",
			"    api_key: ${OLLAMA_KEY}",
			"    models: [{id: m}]",
		), map[string]string{"OLLAMA_KEY": "x"}, "providers[0].api_key", 6, "must be empty when keyless is true"},
		{"models missing", doc(
			"providers:",
			"  - name: groq",
			"    tier: free",
			"    base_url: https://x",
		), nil, "providers[0].models", 2, "needs at least one model"},
		{"models empty", doc(
			"providers:",
			"  - name: groq",
			"    tier: free",
			"    base_url: https://x",
			"    models: []",
		), nil, "providers[0].models", 5, "needs at least one model"},
		{"model id missing", withGroq("      - params_b: 8"), nil, "providers[0].models[2].id", 9, "is required"},
		{"model id duplicate", withGroq("      - id: llama-3.3-70b-versatile"), nil, "providers[0].models[2].id", 9, `duplicate model id "llama-3.3-70b-versatile" (first given on line 7)`},
		{"model id with spaces", withGroq(`      - id: " m "`), nil, "providers[0].models[2].id", 9, "must not start or end with spaces"},
		{"params_b negative", withGroq("        params_b: -1"), nil, "providers[0].models[1].params_b", 9, "must be a number of billions of parameters >= 0"},
		{"params_b NaN", withGroq("        params_b: .nan"), nil, "providers[0].models[1].params_b", 9, ">= 0"},
		{"context negative", withGroq("        context: -5"), nil, "providers[0].models[1].context", 9, "must be a number of tokens >= 0 (0 = unknown), got -5"},
		{"max_output negative", withGroq("        max_output: -5"), nil, "providers[0].models[1].max_output", 9, "got -5"},
		{"cache_ttl negative", withGroq("    cache_ttl: -1m"), nil, "providers[0].cache_ttl", 9, "must be a duration between 0 (the catalog's figure, else 5m) and 24h, got -1m0s"},
		{"cache_ttl too long", withGroq("    cache_ttl: 25h"), nil, "providers[0].cache_ttl", 9, "between 0"},
		{"explicit_cache on openai", withGroq("    explicit_cache: true"), nil, "providers[0].explicit_cache", 9,
			`provider "groq" is of kind "openai", whose API has no explicit prompt cache; explicit_cache is only for providers of kind gemini`},
		{"explicit_cache on anthropic", doc(
			"providers:",
			"  - name: a",
			"    kind: anthropic",
			"    tier: own",
			"    base_url: https://api.anthropic.com/v1",
			"    explicit_cache: true",
			"    models: [{id: m}]",
		), nil, "providers[0].explicit_cache", 6, `provider "a" is of kind "anthropic"`},
		{"timeout negative", withGroq(
			"    timeouts:",
			"      connect: 1s",
			"      idle: -3s",
		), nil, "providers[0].timeouts.idle", 11, "must not be negative; 0 or leaving it out means the default (30s)"},
		{"two defaults", doc(
			"providers:",
			"  - name: a",
			"    tier: own",
			"    default: true",
			"    base_url: https://a",
			"    api_key: k",
			"    models: [{id: m}]",
			"  - name: b",
			"    tier: own",
			"    default: true",
			"    base_url: https://b",
			"    api_key: k",
			"    models: [{id: m}]",
		), nil, "providers[1].default", 10, `only one provider may set default: true; providers[0] ("a", line 4) already does`},
		{"header name invalid", withGroq("    headers: {\"Bad Header\": x}"), nil, "providers[0].headers.Bad Header", 9, "not a valid HTTP header name"},
		{"header value with newline from env", withGroq("    headers: {X-Title: \"${TITLE}\"}"),
			map[string]string{"TITLE": "a\r\nEvil: 1"}, "providers[0].headers.X-Title", 9, "must not contain line breaks"},
		{"header names differing in case", withGroq("    headers: {X-Title: a, x-title: b}"), nil, "providers[0].headers.x-title", 9, `already set as "X-Title"`},

		// Chains.
		{"chain name missing", withGroq("chains:", "  - backends: [groq/llama-3.3-70b-versatile]"), nil, "chains[0].name", 10, "is required"},
		{"chain name with slash", withGroq("chains:", "  - name: groq/fast", "    backends: [groq/llama-3.3-70b-versatile]"), nil, "chains[0].name", 10, `must not contain '/': a model name with '/' is read as a "provider/model" reference`},
		{"chain name bad characters", withGroq("chains:", "  - name: Fast Lane", "    backends: [groq/llama-3.3-70b-versatile]"), nil, "chains[0].name", 10, "must be lower-case letters, digits, '_', '-' or '.'"},
		{"chain name duplicate", withGroq(
			"chains:",
			"  - name: fast",
			"    backends: [groq/llama-3.3-70b-versatile]",
			"  - name: fast",
			"    backends: [groq/llama-3.3-70b-versatile]",
		), nil, "chains[1].name", 12, `duplicate chain name "fast" (first used by chains[0] on line 10)`},
		{"chain without backends key", withGroq("chains:", "  - name: fast"), nil, "chains[0].backends", 10, "a chain needs at least one backend"},
		{"chain with empty backends", withGroq("chains:", "  - name: fast", "    backends: []"), nil, "chains[0].backends", 11, "a chain needs at least one backend"},
		{"backend without slash", withGroq(
			"chains:",
			"  - name: fast",
			"    backends:",
			"      - groq/llama-3.3-70b-versatile",
			"      - llama-3.3-70b-versatile",
		), nil, "chains[0].backends[1]", 13, `must be "provider/model"`},
		{"backend with empty model", withGroq("chains:", "  - name: fast", "    backends: [groq/]"), nil, "chains[0].backends[0]", 11, `must be "provider/model"`},
		{"backend unknown provider", withGroq(
			"chains:",
			"  - name: fast",
			"    backends:",
			"      - grok/llama-3.3-70b-versatile",
		), nil, "chains[0].backends[0]", 12, `unknown provider "grok" in "grok/llama-3.3-70b-versatile"; providers are: groq`},
		{"backend unknown model lists models", withGroq(
			"chains:",
			"  - name: fast",
			"    backends:",
			"      - groq/llama-3.1-70b",
		), nil, "chains[0].backends[0]", 12, `provider "groq" has no model "llama-3.1-70b"; its models are: llama-3.3-70b-versatile, meta-llama/llama-4-scout`},
		{"backend with no providers", doc("chains:", "  - name: fast", "    backends: [groq/x]"), nil, "chains[0].backends[0]", 3, "no providers are defined"},

		// Breaker.
		{"breaker failures zero", doc("breaker:", "  failures: 0"), nil, "breaker.failures", 2, "must be at least 1, got 0"},
		{"breaker failures negative", doc("breaker: {failures: -2}"), nil, "breaker.failures", 1, "must be at least 1, got -2"},
		{"breaker open negative", doc("breaker:", "  open: -1s"), nil, "breaker.open", 2, "must not be negative"},
		{"breaker cooldown negative", doc("breaker:", "  rate_limit_cooldown: -1m"), nil, "breaker.rate_limit_cooldown", 2, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, err := Parse("test.yaml", tt.yaml, envMap(tt.env))
			if err == nil {
				t.Fatalf("Parse succeeded; want an error on %s. Problems: %v", tt.field, problems)
			}
			if cfg != nil {
				t.Errorf("Parse returned a config along with error %v", err)
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
			}
			p, ok := findProblem(verr.Problems, tt.field)
			if !ok {
				t.Fatalf("no problem on field %q; got:\n%v", tt.field, verr)
			}
			if p.Warning {
				t.Errorf("problem %v is a warning, want an error", p)
			}
			if p.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", p.Line, tt.line, p)
			}
			if !strings.Contains(p.Message, tt.msg) {
				t.Errorf("message = %q, want it to contain %q", p.Message, tt.msg)
			}
			// Every fatal problem is also among the returned problems.
			if _, ok := findProblem(problems, tt.field); !ok {
				t.Errorf("problem on %q missing from the returned problems", tt.field)
			}
		})
	}
}

func TestValidationWarnings(t *testing.T) {
	tests := []struct {
		name  string
		yaml  []byte
		env   map[string]string
		field string
		line  int
		msg   string
	}{
		{"api_key env unset", doc(
			"providers:",
			"  - name: groq",
			"    tier: free",
			"    base_url: https://api.groq.com/openai/v1",
			"    api_key: ${GROQ_API_KEY}",
			"    models: [{id: m}]",
		), nil, "providers[0].api_key", 5, `environment variable GROQ_API_KEY is not set; provider "groq" has no key and is left out of every chain; set GROQ_API_KEY`},
		{"api_key env empty", doc(
			"providers:",
			"  - name: groq",
			"    tier: free",
			"    base_url: https://api.groq.com/openai/v1",
			"    api_key: ${GROQ_API_KEY}",
			"    models: [{id: m}]",
		), map[string]string{"GROQ_API_KEY": ""}, "providers[0].api_key", 5, "environment variable GROQ_API_KEY is empty"},
		{"api_key missing", doc(
			"providers:",
			"  - name: groq",
			"    tier: free",
			"    base_url: https://api.groq.com/openai/v1",
			"    models: [{id: m}]",
		), nil, "providers[0].api_key", 2, `api_key is empty; provider "groq" has no key`},
		{"other env unset", withGroq("    headers:", "      X-Title: ${APP_TITLE}"), nil, "providers[0].headers.X-Title", 10, "environment variable APP_TITLE is not set; using an empty value"},
		{"listen on all interfaces", doc("listen: 0.0.0.0:7788"), nil, "listen", 1, "listens on every network interface"},
		{"key over plain http", groqSet("base_url", "http://10.0.0.5:8000/v1"), nil, "providers[0].base_url", 4, "travels unencrypted"},
		{"repeated backend", withGroq(
			"chains:",
			"  - name: fast",
			"    backends:",
			"      - groq/llama-3.3-70b-versatile",
			"      - groq/llama-3.3-70b-versatile",
		), nil, "chains[0].backends[1]", 13, "repeats backends[0]"},
		{"backend of disabled provider", withGroq(
			"    disabled: true",
			"chains:",
			"  - name: fast",
			"    backends: [groq/llama-3.3-70b-versatile]",
		), nil, "chains[0].backends[0]", 12, `provider "groq" is disabled`},
		{"chain named like a model", withGroq(
			"chains:",
			"  - name: llama-3.3-70b-versatile",
			"    backends: [groq/llama-3.3-70b-versatile]",
		), nil, "chains[0].name", 10, "same name as a model served by groq"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, err := Parse("test.yaml", tt.yaml, envMap(tt.env))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if cfg == nil {
				t.Fatal("Parse returned no config")
			}
			p, ok := findProblem(problems, tt.field)
			if !ok {
				t.Fatalf("no warning on field %q; got %v", tt.field, problems)
			}
			if !p.Warning {
				t.Errorf("problem %v is not a warning", p)
			}
			if p.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", p.Line, tt.line, p)
			}
			if !strings.Contains(p.Message, tt.msg) {
				t.Errorf("message = %q, want it to contain %q", p.Message, tt.msg)
			}
		})
	}
}

// Keyless and disabled providers need no key, so a missing one is not worth
// a warning.
func TestNoKeyWarningWhenKeyNotNeeded(t *testing.T) {
	data := doc(
		"providers:",
		"  - name: ollama",
		"    tier: local",
		"    keyless: true",
		"    base_url: http://127.0.0.1:11434/v1",
		"    models: [{id: m}]",
		"  - name: later",
		"    tier: free",
		"    disabled: true",
		"    base_url: https://x",
		"    api_key: ${LATER_KEY}",
		"    models: [{id: m}]",
	)
	_, problems, err := Parse("t.yaml", data, nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(problems) != 0 {
		t.Errorf("problems = %v, want none", problems)
	}
}

// All fatal problems are reported, ordered by line, not only the first.
func TestAllProblemsReported(t *testing.T) {
	data := doc(
		"breaker: {failures: 0}",
		"providers:",
		"  - name: Bad",
		"    tier: gratis",
		"    base_url: groq.com",
		"    models: [{id: m}]",
		"listen: nope",
	)
	_, problems, err := Parse("t.yaml", data, nil)
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	want := []struct {
		field string
		line  int
	}{
		{"breaker.failures", 1},
		{"providers[0].name", 3},
		{"providers[0].tier", 4},
		{"providers[0].base_url", 5},
		{"listen", 7},
	}
	if len(verr.Problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(verr.Problems), len(want), verr)
	}
	for i, w := range want {
		if p := verr.Problems[i]; p.Field != w.field || p.Line != w.line {
			t.Errorf("problem %d = %v, want field %s on line %d", i, p, w.field, w.line)
		}
	}
	// The key warning for the provider is among the problems, but not in
	// the error.
	if p, ok := findProblem(problems, "providers[0].api_key"); !ok || !p.Warning {
		t.Errorf("missing api_key warning in %v", problems)
	}
	if _, ok := findProblem(verr.Problems, "providers[0].api_key"); ok {
		t.Errorf("the error holds a warning: %v", verr)
	}
}

// A value that failed to decode is not checked again, so one mistake gives
// one message.
func TestNoFollowOnProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml []byte
	}{
		{"bad providers", doc(
			"providers: groq",
			"chains:",
			"  - name: fast",
			"    backends: [groq/m]",
		)},
		{"bad base_url type", groqSet("base_url", "{a: b}")},
		{"bad max_body_mb", doc("max_body_mb: x")},
		// The misspelt key is reported; base_url is not also "required".
		{"misspelt required key", doc(
			"providers:",
			"  - name: groq",
			"    tier: free",
			"    base_ulr: https://x",
			"    api_key: k",
			"    models: [{id: m}]",
		)},
		{"bad provider name hides reference checks", doc(
			"providers:",
			"  - name: [groq]",
			"    tier: free",
			"    base_url: https://x",
			"    api_key: k",
			"    models: [{id: m}]",
			"chains:",
			"  - name: c",
			"    backends: [groq/m]",
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse("t.yaml", tt.yaml, nil)
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("err = %v, want *ValidationError", err)
			}
			if len(verr.Problems) != 1 {
				t.Errorf("got %d problems, want 1:\n%v", len(verr.Problems), verr)
			}
		})
	}
}

// A problem elsewhere in a provider does not hide broken chain references.
func TestChainChecksSurviveOtherProblems(t *testing.T) {
	data := withGroq(
		"        context: lots",
		"chains:",
		"  - name: c",
		"    backends: [groq/nope]",
	)
	_, _, err := Parse("t.yaml", data, nil)
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	for _, field := range []string{"providers[0].models[1].context", "chains[0].backends[0]"} {
		if _, ok := findProblem(verr.Problems, field); !ok {
			t.Errorf("no problem on %s in:\n%v", field, verr)
		}
	}
}

func TestProbeAndHealthSettings(t *testing.T) {
	cases := []struct {
		yaml, field, msg string
	}{
		{"breaker: {health_threshold: 1.5}", "breaker.health_threshold", "between 0 and 1"},
		{"breaker: {health_threshold: 0}", "breaker.health_threshold", "between 0 and 1"},
		{"probes: {interval: 10ms}", "probes.interval", "at least 1s"},
		{"probes: {daily: -1h}", "probes.daily", "must not be negative"},
	}
	for _, tc := range cases {
		_, problems, err := Parse("t.yaml", []byte(tc.yaml), nil)
		if err == nil {
			t.Errorf("%s: accepted", tc.yaml)
			continue
		}
		found := false
		for _, p := range problems {
			if p.Field == tc.field && strings.Contains(p.Message, tc.msg) && p.Line == 1 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: problems %v", tc.yaml, problems)
		}
	}
	cfg, _, err := Parse("t.yaml", []byte("breaker: {health_threshold: 0.5, open: 1m}\nprobes: {interval: 2m}\nproviders:\n  - {name: own, tier: own, base_url: 'http://x', keyless: true, models: [{id: m}]}\n  - {name: f, tier: free, base_url: 'http://x', keyless: true, models: [{id: m}]}\n  - {name: p, tier: own, probe: true, base_url: 'http://x', keyless: true, models: [{id: m}]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Breaker.HealthThreshold != 0.5 || cfg.Probes.Interval != 2*time.Minute || cfg.Probes.OpenInterval != 30*time.Second {
		t.Errorf("settings %+v %+v", cfg.Breaker, cfg.Probes)
	}
	if got := cfg.Breaker.OpenTimes(); got[0] != time.Minute || got[1] != 10*time.Minute || got[2] != time.Hour {
		t.Errorf("open times %v", got)
	}
	if cfg.Providers[0].Probed() || !cfg.Providers[1].Probed() || !cfg.Providers[2].Probed() {
		t.Error("probe defaults: own off, free on, explicit on")
	}
}

func TestRequestLimits(t *testing.T) {
	cfg, _, err := Parse("t.yaml", doc("requests:", "  body_read_timeout: 5s", "  max_inflight_body_mb: 64"), nil)
	if err != nil || cfg.Requests.BodyReadTimeout != 5*time.Second || cfg.Requests.MaxInflightBodyMB != 64 {
		t.Fatalf("got %+v, %v", cfg.Requests, err)
	}
	cfg, _, err = Parse("t.yaml", doc("listen: 127.0.0.1:1"), nil)
	if err != nil || cfg.Requests.BodyReadTimeout != defaults.BodyReadTimeout || cfg.Requests.MaxInflightBodyMB != defaults.MaxInflightBodyMB {
		t.Fatalf("defaults: got %+v, %v", cfg.Requests, err)
	}
	for _, bad := range []string{"  body_read_timeout: 10ms", "  body_read_timeout: 2h", "  max_inflight_body_mb: -1", "  max_inflight_body_mb: 20000"} {
		if _, _, err := Parse("t.yaml", doc("requests:", bad), nil); err == nil || !strings.Contains(err.Error(), "requests.") {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
}

func TestEffectiveAliases(t *testing.T) {
	var c Config
	if got := c.EffectiveAliases(); !slices.Equal(got, DefaultAliases) {
		t.Errorf("no aliases configured: %v, want the defaults %v", got, DefaultAliases)
	}
	c.Aliases = []Alias{{Pattern: "gpt-*", Chain: "coding"}, {Pattern: "claude-*", Chain: "coding"}}
	want := []Alias{{Pattern: "gpt-*", Chain: "coding"}, {Pattern: "claude-*", Chain: "coding"}, {Pattern: "gemini-*", Chain: "auto"}}
	if got := c.EffectiveAliases(); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v: a configured pattern replaces its default, the others stay", got, want)
	}
}
