package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"freelane/backend/defaults"
	"freelane/backend/tier"
)

// mustParse parses data and fails the test on a fatal problem.
func mustParse(t *testing.T, data []byte, env map[string]string) (*Config, []Problem) {
	t.Helper()
	cfg, problems, err := Parse("t.yaml", data, envMap(env))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg, problems
}

func TestEnvExpansion(t *testing.T) {
	tests := []struct {
		name    string
		value   string // the api_key as written in the file
		env     map[string]string
		want    string   // the api_key after expansion
		wantEnv []string // APIKeyEnv
	}{
		{"set", "${K}", map[string]string{"K": "secret"}, "secret", []string{"K"}},
		{"embedded", "sk-${A}-${B}", map[string]string{"A": "1", "B": "2"}, "sk-1-2", []string{"A", "B"}},
		{"repeated name recorded once", "${A}${A}", map[string]string{"A": "x"}, "xx", []string{"A"}},
		{"quoted", `"${K}"`, map[string]string{"K": "secret"}, "secret", []string{"K"}},
		{"partly unset", "${A}${B}", map[string]string{"A": "x"}, "x", []string{"A", "B"}},
		{"escaped", "$${K}", map[string]string{"K": "secret"}, "${K}", nil},
		{"escaped then real", "$${K}${K}", map[string]string{"K": "s"}, "${K}s", []string{"K"}},
		{"lone dollars are literal", "a$b$$c$", nil, "a$b$$c$", nil},
		{"no reference", "plain", nil, "plain", nil},
		{"number-like key stays text", "0012", nil, "0012", nil},
		{"env value that looks like YAML null", "${K}", map[string]string{"K": "null"}, "null", []string{"K"}},
		{"env value that looks like a mapping", "${K}", map[string]string{"K": "{a: b}"}, "{a: b}", []string{"K"}},
		{"env value with a newline and a key", "${K}", map[string]string{"K": "x\nkeyless: true"}, "x\nkeyless: true", []string{"K"}},
		{"env value with an alias and a comment", "${K}", map[string]string{"K": "*a # c"}, "*a # c", []string{"K"}},
		{"env value with a reference is not expanded again", "${K}", map[string]string{"K": "${L}", "L": "no"}, "${L}", []string{"K"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := doc(
				"providers:",
				"  - name: p",
				"    tier: own",
				"    base_url: https://x",
				"    api_key: "+tt.value,
				"    models: [{id: m}]",
			)
			cfg, _ := mustParse(t, data, tt.env)
			if len(cfg.Providers) != 1 {
				t.Fatalf("got %d providers, want 1", len(cfg.Providers))
			}
			p := cfg.Providers[0]
			if p.APIKey != tt.want {
				t.Errorf("APIKey = %q, want %q", p.APIKey, tt.want)
			}
			if !slices.Equal(p.APIKeyEnv, tt.wantEnv) {
				t.Errorf("APIKeyEnv = %q, want %q", p.APIKeyEnv, tt.wantEnv)
			}
			// The environment can never change the structure around the
			// value, such as turning the provider keyless.
			if p.Keyless || p.Name != "p" || len(p.Models) != 1 {
				t.Errorf("structure changed: %+v", p)
			}
		})
	}
}

// A value with YAML syntax in the environment stays one scalar, even where
// it would add keys or list items if it were pasted into the text.
func TestEnvCannotChangeStructure(t *testing.T) {
	data := doc(
		"listen: ${LISTEN}",
		"providers:",
		"  - name: p",
		"    tier: own",
		"    base_url: https://x",
		"    api_key: ${KEY}",
		"    models: [{id: m}]",
		"chains:",
		"  - name: c",
		"    backends: [p/m]",
	)
	env := map[string]string{
		"LISTEN": "127.0.0.1:9000\nmax_body_mb: 1",
		"KEY":    "k\n  - name: q\n    tier: own",
	}
	_, _, err := Parse("t.yaml", data, envMap(env))
	// The listen value is one (invalid) host:port string; nothing leaked
	// into max_body_mb or the providers list.
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	if len(verr.Problems) != 1 || verr.Problems[0].Field != "listen" || verr.Problems[0].Line != 1 {
		t.Errorf("problems = %v, want one on listen, line 1", verr.Problems)
	}

	env["LISTEN"] = "127.0.0.1:9000"
	cfg, _ := mustParse(t, data, env)
	if len(cfg.Providers) != 1 || cfg.MaxBodyMB != defaults.MaxBodyMB {
		t.Errorf("structure changed: %d providers, max_body_mb %d", len(cfg.Providers), cfg.MaxBodyMB)
	}
	if cfg.Providers[0].APIKey != env["KEY"] {
		t.Errorf("APIKey = %q, want the raw value %q", cfg.Providers[0].APIKey, env["KEY"])
	}
}

// Non-string fields are typed from the expanded text, so durations, numbers
// and booleans can come from the environment too.
func TestEnvTypedValues(t *testing.T) {
	data := doc(
		"max_body_mb: ${MB}",
		"providers:",
		"  - name: p",
		"    tier: local",
		"    keyless: ${KEYLESS}",
		"    base_url: ${URL}/",
		"    models: [{id: m, params_b: \"${SIZE}\"}]",
		"    timeouts: {idle: \"${IDLE}\"}",
		"breaker:",
		"  failures: ${FAILS}",
	)
	env := map[string]string{"MB": "32", "KEYLESS": "true", "URL": "http://127.0.0.1:8080/v1", "SIZE": "7.5", "IDLE": "2m", "FAILS": "3"}
	cfg, problems := mustParse(t, data, env)
	if len(problems) != 0 {
		t.Errorf("problems = %v, want none", problems)
	}
	p := cfg.Providers[0]
	if cfg.MaxBodyMB != 32 || !p.Keyless || p.BaseURL != "http://127.0.0.1:8080/v1" ||
		p.Models[0].ParamsB != 7.5 || p.Timeouts.Idle != 2*time.Minute || cfg.Breaker.Failures != 3 {
		t.Errorf("got max_body_mb %d, keyless %v, base_url %q, params_b %v, idle %v, failures %d",
			cfg.MaxBodyMB, p.Keyless, p.BaseURL, p.Models[0].ParamsB, p.Timeouts.Idle, cfg.Breaker.Failures)
	}

	env["MB"] = "lots"
	_, _, err := Parse("t.yaml", data, envMap(env))
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Problems) != 1 || verr.Problems[0].Line != 1 ||
		!strings.Contains(verr.Problems[0].Message, `must be a whole number, got "lots"`) {
		t.Errorf("bad number from env: err = %v", err)
	}
}

// A quoted literal number is still a string, as YAML says; only values
// that came from the environment are typed by their content.
func TestQuotedNumberIsNotAnInt(t *testing.T) {
	_, _, err := Parse("t.yaml", doc(`max_body_mb: "16"`), nil)
	if err == nil {
		t.Fatal("quoted number accepted for max_body_mb")
	}
}

func TestNilLookupEnvMeansUnset(t *testing.T) {
	cfg, problems, err := Parse("t.yaml", doc(
		"providers:",
		"  - {name: p, tier: own, base_url: https://x, api_key: \"${K}\", models: [{id: m}]}",
	), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.Providers[0].APIKey != "" || len(problems) != 1 || !strings.Contains(problems[0].Message, "K is not set") {
		t.Errorf("APIKey %q, problems %v", cfg.Providers[0].APIKey, problems)
	}
}

func TestDefaults(t *testing.T) {
	data := doc(
		"providers:",
		"  - name: groq",
		"    tier: free",
		"    base_url: https://api.groq.com/openai/v1//",
		"    api_key: k",
		"    models: [{id: m}]",
		"    timeouts: {first_token: 1m}",
		"  - name: ollama",
		"    tier: local",
		"    keyless: true",
		"    stream_usage: false",
		"    base_url: http://127.0.0.1:11434/v1",
		"    models: [{id: m}]",
		"breaker: {open: 5s}",
	)
	cfg, problems := mustParse(t, data, nil)
	if len(problems) != 0 {
		t.Errorf("problems = %v, want none", problems)
	}
	if cfg.Listen != "127.0.0.1:7788" || cfg.MaxBodyMB != 16 {
		t.Errorf("listen %q, max_body_mb %d", cfg.Listen, cfg.MaxBodyMB)
	}
	wantBreaker := Breaker{Failures: 2, Open: 5 * time.Second, RateLimitCooldown: 60 * time.Second, HealthThreshold: 0.6}
	if cfg.Breaker != wantBreaker {
		t.Errorf("breaker = %+v, want %+v", cfg.Breaker, wantBreaker)
	}
	groq := cfg.Providers[0]
	if groq.Kind != "openai" || groq.BaseURL != "https://api.groq.com/openai/v1" || !groq.WantsStreamUsage() {
		t.Errorf("groq: kind %q, base_url %q, stream usage %v", groq.Kind, groq.BaseURL, groq.WantsStreamUsage())
	}
	wantTimeouts := Timeouts{Connect: 10 * time.Second, Header: 30 * time.Second, FirstToken: time.Minute, Idle: 30 * time.Second}
	if groq.Timeouts != wantTimeouts {
		t.Errorf("timeouts = %+v, want %+v", groq.Timeouts, wantTimeouts)
	}
	if cfg.Providers[1].WantsStreamUsage() {
		t.Error("stream_usage: false not honoured")
	}
}

func TestEmptyFileIsDefault(t *testing.T) {
	for _, data := range []string{"", "\n", "# only a comment\n", "---\n", "~\n"} {
		cfg, problems, err := Parse("t.yaml", []byte(data), nil)
		if err != nil || len(problems) != 0 {
			t.Errorf("%q: problems %v, err %v", data, problems, err)
			continue
		}
		if !reflect.DeepEqual(cfg, Default()) {
			t.Errorf("%q: got %+v, want Default() %+v", data, cfg, Default())
		}
	}
}

func TestDefault(t *testing.T) {
	d := Default()
	if d.Listen != defaults.Listen || d.MaxBodyMB != 16 || len(d.Providers) != 0 || len(d.Chains) != 0 ||
		d.Breaker != (Breaker{Failures: 2, Open: 30 * time.Second, RateLimitCooldown: 60 * time.Second, HealthThreshold: 0.6}) ||
		d.Probes != (Probes{Interval: 5 * time.Minute, OpenInterval: 30 * time.Second, Daily: 24 * time.Hour}) {
		t.Errorf("Default() = %+v", d)
	}
}

// Anchors and merge keys let providers share settings; the merged keys are
// checked and explicit keys override them.
func TestAnchorsAndMerge(t *testing.T) {
	data := doc(
		"providers:",
		"  - &base",
		"    name: a",
		"    tier: free",
		"    base_url: https://a",
		"    api_key: k",
		"    models: [{id: m}]",
		"    timeouts: &slow {first_token: 1m}",
		"  - <<: *base",
		"    name: b",
		"    timeouts: *slow",
	)
	cfg, _ := mustParse(t, data, nil)
	b := cfg.Providers[1]
	if b.Name != "b" || b.BaseURL != "https://a" || b.Timeouts.FirstToken != time.Minute || len(b.Models) != 1 {
		t.Errorf("merged provider = %+v", b)
	}

	bad := doc(
		"x: &bad {base_ulr: https://a}",
		"providers:",
		"  - <<: *bad",
		"    name: b",
	)
	_, problems, _ := Parse("t.yaml", bad, nil)
	if _, ok := findProblem(problems, "x"); !ok {
		t.Errorf("unknown top-level key x not reported: %v", problems)
	}
	if p, ok := findProblem(problems, "providers[0].base_ulr"); !ok || p.Line != 1 {
		t.Errorf("unknown merged key not reported at its line: %v", problems)
	}
}

func TestExample(t *testing.T) {
	cfg, problems, err := Parse("example.yaml", Example, envMap(nil))
	if err != nil {
		t.Fatalf("example is invalid with no environment:\n%v", err)
	}
	for _, p := range problems {
		if !p.Warning || !strings.HasSuffix(p.Field, ".api_key") || !strings.Contains(p.Message, "is not set") {
			t.Errorf("unexpected problem in example: %v", p)
		}
	}
	if len(problems) == 0 {
		t.Error("want warnings for the unset keys")
	}

	// With every referenced variable set there is nothing to warn about.
	env := map[string]string{}
	for _, p := range cfg.Providers {
		for _, name := range p.APIKeyEnv {
			env[name] = "x"
		}
	}
	if _, problems := mustParse(t, Example, env); len(problems) != 0 {
		t.Errorf("example with keys set: problems %v", problems)
	}

	tiers := map[tier.Tier]bool{}
	for _, p := range cfg.Providers {
		tiers[p.Tier] = true
	}
	if !tiers[tier.Own] || !tiers[tier.Free] || !tiers[tier.Local] {
		t.Errorf("example lacks a tier: %v", tiers)
	}
	if p, ok := cfg.Provider("openai"); !ok || !p.Default || !slices.Equal(p.APIKeyEnv, []string{"OPENAI_API_KEY"}) {
		t.Errorf("openai provider: %+v", p)
	}
	if p, ok := cfg.Provider("lab-vllm"); !ok || !p.Keyless || p.Tier != tier.Local || !p.Disabled {
		t.Errorf("lab-vllm provider: %+v", p)
	}
	// The catalog supplies what the example leaves out.
	if p, ok := cfg.Provider("groq"); !ok || p.BaseURL != "https://api.groq.com/openai/v1" || len(p.Models) == 0 {
		t.Errorf("groq provider: %+v", p)
	}
	var names []string
	for _, c := range cfg.Chains {
		names = append(names, c.Name)
	}
	if !slices.Contains(names, "coding") || slices.Contains(names, "auto") {
		t.Errorf("example chains = %v, want coding and no auto", names)
	}

	// The embedded copy is the file shipped next to the package.
	onDisk, err := os.ReadFile("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(onDisk) != string(Example) {
		t.Error("Example differs from example.yaml")
	}
}

func TestLoad(t *testing.T) {
	t.Setenv("FREELANE_TEST_KEY", "from-env")
	path := filepath.Join(t.TempDir(), "c.yaml")
	data := doc(
		"providers:",
		"  - {name: p, tier: own, base_url: https://x, api_key: \"${FREELANE_TEST_KEY}\", models: [{id: m}]}",
	)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Providers[0].APIKey != "from-env" {
		t.Errorf("APIKey = %q, want it from the process environment", cfg.Providers[0].APIKey)
	}

	_, _, err = Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing file: err = %v, want fs.ErrNotExist wrapped", err)
	}

	if err := os.WriteFile(path, []byte("listen: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = Load(path)
	var verr *ValidationError
	if !errors.As(err, &verr) || verr.File != path {
		t.Errorf("Load of bad YAML: err = %v, want *ValidationError for %s", err, path)
	}
}

func TestConfigProvider(t *testing.T) {
	cfg := &Config{Providers: []Provider{{Name: "a"}, {Name: "b"}}}
	p, ok := cfg.Provider("b")
	if !ok || p.Name != "b" {
		t.Fatalf("Provider(b) = %v, %v", p, ok)
	}
	p.Disabled = true
	if !cfg.Providers[1].Disabled {
		t.Error("Provider does not point into the config")
	}
	if _, ok := cfg.Provider("c"); ok {
		t.Error("Provider(c) found a provider")
	}
}

func TestSplitRef(t *testing.T) {
	tests := []struct {
		ref             string
		provider, model string
		ok              bool
	}{
		{"groq/llama-3.3-70b-versatile", "groq", "llama-3.3-70b-versatile", true},
		{"openrouter/meta-llama/llama-3.3-70b-instruct:free", "openrouter", "meta-llama/llama-3.3-70b-instruct:free", true},
		{"ollama/qwen2.5-coder:7b", "ollama", "qwen2.5-coder:7b", true},
		{"groq", "", "", false},
		{"", "", "", false},
		{"/model", "", "", false},
		{"groq/", "", "", false},
		{"/", "", "", false},
	}
	for _, tt := range tests {
		provider, model, ok := SplitRef(tt.ref)
		if provider != tt.provider || model != tt.model || ok != tt.ok {
			t.Errorf("SplitRef(%q) = %q, %q, %v; want %q, %q, %v", tt.ref, provider, model, ok, tt.provider, tt.model, tt.ok)
		}
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{Line: 12, Field: "providers[0].base_url", Message: `must be an absolute http(s) URL, got "groq.com"`},
			`12: providers[0].base_url: must be an absolute http(s) URL, got "groq.com"`},
		{Problem{Line: 3, Field: "listen", Message: "m", Warning: true}, "3: warning: listen: m"},
		{Problem{Line: 2, Message: "invalid YAML: x"}, "2: invalid YAML: x"},
		{Problem{Field: "listen", Message: "m"}, "listen: m"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestValidationErrorFormat(t *testing.T) {
	e := &ValidationError{File: "my.yaml", Problems: []Problem{
		{Line: 4, Field: "providers[0].tier", Message: "is required"},
		{Line: 9, Field: "chains[0].backends[1]", Message: "bad"},
		{Line: 2, Message: "invalid YAML: x"},
	}}
	want := "my.yaml:4: providers[0].tier: is required\n" +
		"my.yaml:9: chains[0].backends[1]: bad\n" +
		"my.yaml:2: invalid YAML: x"
	if got := e.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}

	// The same format comes out of Parse.
	_, _, err := Parse("my.yaml", doc("listen: x", "max_body_mb: 0"), nil)
	want = "my.yaml:1: listen: must be host:port, e.g. \"127.0.0.1:7788\", got \"x\"\n" +
		"my.yaml:2: max_body_mb: must be from 1 to 512 (MiB), got 0"
	if err == nil || err.Error() != want {
		t.Errorf("Parse error =\n%v\nwant\n%s", err, want)
	}
}
