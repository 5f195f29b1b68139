package config

import (
	"fmt"
	"strings"
	"testing"

	"freelane/backend/catalog"
)

// A pool is api_key then api_keys, each ${ENV}-expanded; labels are
// stable, distinct and hold no part of the key.
func TestKeyPoolParsed(t *testing.T) {
	cfg, problems, err := Parse("t.yaml", withGroq("    api_keys: ['${K2}', k3, '${K4}']"), envMap(map[string]string{"K2": "secret-two"}))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers[0]
	pool := p.Pool()
	var keys []string
	for _, k := range pool {
		keys = append(keys, k.Key)
		if k.Label == "" || strings.Contains(k.Key, k.Label) || (len(k.Key) > 3 && strings.Contains(k.Label, k.Key)) || strings.ContainsAny(k.Label, "/@") {
			t.Errorf("label %q of key %q", k.Label, k.Key)
		}
		if k.Label != KeyLabel(k.Key) {
			t.Errorf("label %q is not stable", k.Label)
		}
	}
	if got := strings.Join(keys, ","); got != "k,secret-two,k3" {
		t.Errorf("pool = %s, want k,secret-two,k3", got)
	}
	if !p.Pooled() {
		t.Error("a provider with three keys is not pooled")
	}
	pr, ok := findProblem(problems, "providers[0].api_keys[2]")
	if !ok || !pr.Warning || !strings.Contains(pr.Message, "K4 is not set") || !strings.Contains(pr.Message, "left out of the pool") {
		t.Errorf("unset K4: %+v (all %v)", pr, problems)
	}
	one := Provider{APIKey: "only"}
	if one.Pooled() {
		t.Error("one key is a pool")
	}
}

func TestKeyPoolErrors(t *testing.T) {
	many := make([]string, MaxPoolKeys)
	for i := range many {
		many[i] = fmt.Sprintf("key-%d", i)
	}
	tests := []struct {
		name, line, field, msg string
	}{
		{"duplicate of api_key", "    api_keys: [k2, k]", "providers[0].api_keys[1]", "is the same key as api_key"},
		{"duplicate in api_keys", "    api_keys: [k2, k2]", "providers[0].api_keys[1]", "is the same key as providers[0].api_keys[0]"},
		{"whitespace", "    api_keys: [' k2']", "providers[0].api_keys[0]", "must not contain spaces"},
		{"inner space", "    api_keys: ['k 2']", "providers[0].api_keys[0]", "must not contain spaces"},
		{"too many", "    api_keys: [" + strings.Join(many, ", ") + "]", "providers[0].api_keys", fmt.Sprintf("at most %d", MaxPoolKeys)},
		{"keyless", "    keyless: true", "providers[0].api_keys", "must be empty when keyless is true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := withGroq(tt.line)
			if tt.name == "keyless" {
				y = doc(append(append([]string{}, groqLines...), "    api_keys: [k2]", tt.line)...)
				y = []byte(strings.Replace(string(y), "    api_key: k\n", "", 1))
			}
			_, problems, err := Parse("t.yaml", y, envMap(nil))
			if err == nil {
				t.Fatalf("no error; problems %v", problems)
			}
			pr, ok := findProblem(problems, tt.field)
			if !ok || pr.Warning || !strings.Contains(pr.Message, tt.msg) {
				t.Errorf("problem on %s = %+v, want %q; all %v", tt.field, pr, tt.msg, problems)
			}
		})
	}
}

// A provider whose keys are all in api_keys gets no "no key" warning.
func TestKeyPoolWithoutAPIKey(t *testing.T) {
	y := []byte(strings.Replace(string(withGroq("    api_keys: [a, b]")), "    api_key: k\n", "", 1))
	cfg, problems, err := Parse("t.yaml", y, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Errorf("problems %v", problems)
	}
	if n := len(cfg.Providers[0].Pool()); n != 2 {
		t.Errorf("pool of %d", n)
	}
}

// A pool of a provider whose terms forbid spreading requests over keys is
// accepted with a warning quoting the terms; one key draws none.
func TestKeyPoolTermsWarning(t *testing.T) {
	cat, err := catalog.Parse("mine.yaml", []byte(`date: 2099-01-01
providers:
  - {id: acme, name: Acme, tier: free, dialect: openai, base_url: "https://acme.example/v1", key_env: [ACME_KEY], key_terms: "one key per person (acme.example/terms)", models: [{id: a1}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc  string
		warn bool
	}{
		{"providers: [{catalog: acme, api_key: k1}]\n", false},
		{"providers: [{catalog: acme, api_key: k1, api_keys: [k2]}]\n", true},
	} {
		_, problems, err := ParseWith("t.yaml", []byte(tc.doc), ParseOptions{LookupEnv: envMap(nil), Catalog: cat})
		if err != nil {
			t.Fatal(err)
		}
		pr, ok := findProblem(problems, "providers[0].api_keys")
		if ok != tc.warn || (ok && (!pr.Warning || !strings.Contains(pr.Message, "one key per person (acme.example/terms)"))) {
			t.Errorf("%s: problem %+v (found %v), want a warning %v", tc.doc, pr, ok, tc.warn)
		}
	}
}
