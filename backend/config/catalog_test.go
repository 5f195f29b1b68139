package config

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"freelane/backend/catalog"
	"freelane/backend/tier"
)

func TestCatalogProviderIsCompletedFromTheCatalog(t *testing.T) {
	cfg, problems := mustParse(t, []byte(`
providers:
  - catalog: groq
    models:
      - {id: llama-3.3-70b-versatile, context: 4096}
      - {id: my-extra-model}
chains:
  - {name: fast, backends: [groq/llama-3.1-8b-instant, groq/my-extra-model]}
`), map[string]string{"GROQ_API_KEY": "gsk-test"})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	p := cfg.Providers[0]
	if p.Name != "groq" || p.Kind != KindOpenAI || p.Tier != tier.Free || p.BaseURL != "https://api.groq.com/openai/v1" {
		t.Fatalf("provider = %+v", p)
	}
	if p.APIKey != "gsk-test" || strings.Join(p.APIKeyEnv, ",") != "GROQ_API_KEY" {
		t.Fatalf("key = %q from %v", p.APIKey, p.APIKeyEnv)
	}
	byID := map[string]Model{}
	var ids []string
	for _, m := range p.Models {
		byID[m.ID] = m
		ids = append(ids, m.ID)
	}
	if ids[0] != "llama-3.1-8b-instant" || ids[len(ids)-1] != "my-extra-model" {
		t.Fatalf("models in order %v: the catalog's first, then the config's own", ids)
	}
	m := byID["llama-3.3-70b-versatile"]
	if m.Context != 4096 || m.ParamsB != 70 || m.Limits == nil || m.Limits.TPD != 100000 || m.Limits.RPD != 1000 {
		t.Fatalf("merged model = %+v (limits %+v): the config's context over the catalog's size and limits", m, m.Limits)
	}
}

func TestCatalogProviderWithoutItsKeySaysWhichVariable(t *testing.T) {
	cfg, problems := mustParse(t, []byte("providers: [{catalog: gemini}]\n"), nil)
	p := cfg.Providers[0]
	if p.Kind != KindGemini || p.APIKey != "" {
		t.Fatalf("provider = %+v", p)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Message, "GEMINI_API_KEY") || !problems[0].Warning {
		t.Fatalf("problems = %v, want one warning naming GEMINI_API_KEY", problems)
	}
	// Gemini's limits are per model and start over at Pacific midnight.
	for _, m := range p.Models {
		if m.Limits == nil || m.Limits.Reset != "daily 00:00 America/Los_Angeles" {
			t.Fatalf("model %s limits = %+v", m.ID, m.Limits)
		}
	}
}

func TestCatalogProviderAccountPlaceholder(t *testing.T) {
	doc := []byte("providers: [{catalog: cloudflare}]\n")
	cfg, _ := mustParse(t, doc, map[string]string{"CLOUDFLARE_API_KEY": "cf", "CLOUDFLARE_ACCOUNT_ID": "acc123"})
	if p := cfg.Providers[0]; p.BaseURL != "https://api.cloudflare.com/client/v4/accounts/acc123/ai/v1" || p.APIKey != "cf" {
		t.Fatalf("provider = %+v", p)
	}
	// Without the account id the provider cannot be called: it waits
	// for the variable as it would for a key.
	cfg, problems := mustParse(t, doc, map[string]string{"CLOUDFLARE_API_KEY": "cf"})
	if p := cfg.Providers[0]; p.APIKey != "" {
		t.Fatalf("key kept without the account id: %+v", p)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Message, "CLOUDFLARE_ACCOUNT_ID") {
		t.Fatalf("problems = %v", problems)
	}
}

func TestCatalogProviderUnknownID(t *testing.T) {
	_, problems, err := Parse("t.yaml", []byte("providers:\n  - catalog: nosuch\n"), nil)
	if err == nil || len(problems) == 0 || problems[0].Line != 2 || !strings.Contains(problems[0].Message, `"nosuch"`) {
		t.Fatalf("err = %v, problems = %v", err, problems)
	}
}

func TestTemplateKeepsOnlyWhatWasGiven(t *testing.T) {
	doc := []byte("providers:\n  - {catalog: openrouter, models: [{id: extra/model:free}]}\n")
	tpl, _, err := ParseTemplate("t.yaml", doc)
	if err != nil {
		t.Fatal(err)
	}
	p := tpl.Providers[0]
	if p.Name != "openrouter" || p.Kind != "" || p.BaseURL != "" || p.Tier != "" || len(p.Models) != 1 {
		t.Fatalf("template provider = %+v: it must hold only what the document gives", p)
	}
	if strings.Join(p.APIKeyEnv, ",") != "OPENROUTER_API_KEY" {
		t.Fatalf("APIKeyEnv = %v", p.APIKeyEnv)
	}
	// Stored and read back, it is still only that, so a newer catalog
	// completes it anew.
	b, err := yaml.Marshal(tpl)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := ParseTemplate("again", b)
	if err != nil {
		t.Fatal(err)
	}
	if q := again.Providers[0]; q.Kind != "" || q.BaseURL != "" || len(q.Models) != 1 {
		t.Fatalf("after a round trip = %+v", q)
	}
	filled := Fill(again, catalog.Embedded())
	if q := filled.Providers[0]; q.BaseURL != "https://openrouter.ai/api/v1" || len(q.Models) < 2 || q.Limits == nil || q.Limits.RPD != 50 {
		t.Fatalf("filled = %+v", q)
	}
	if again.Providers[0].BaseURL != "" {
		t.Fatal("Fill changed its argument")
	}
}

func TestParseWithAnotherCatalog(t *testing.T) {
	cat, err := catalog.Parse("mine.yaml", []byte(`date: 2099-01-01
providers:
  - {id: acme, name: Acme, tier: free, dialect: anthropic, base_url: "http://127.0.0.1:9/v1", key_env: [ACME_KEY], models: [{id: a1, params_b: 3}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := ParseWith("t.yaml", []byte("providers: [{catalog: acme}]\n"), ParseOptions{
		LookupEnv: envMap(map[string]string{"ACME_KEY": "k"}), Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Providers[0]; p.Kind != KindAnthropic || p.APIKey != "k" || p.Models[0].ID != "a1" {
		t.Fatalf("provider = %+v", p)
	}
}

// BenchmarkParseCatalogProviders measures parsing a configuration of
// three catalog providers, which every configuration change and every
// dashboard view of the providers repeats.
func BenchmarkParseCatalogProviders(b *testing.B) {
	doc := []byte("providers:\n  - catalog: groq\n  - catalog: openrouter\n  - catalog: gemini\n")
	env := envMap(map[string]string{"GROQ_API_KEY": "g", "OPENROUTER_API_KEY": "o", "GEMINI_API_KEY": "k"})
	for b.Loop() {
		if _, _, err := Parse("b.yaml", doc, env); err != nil {
			b.Fatal(err)
		}
	}
}

// catalog.allow_http_loopback is off unless written, and must be a
// boolean: a mistyped value is a problem with its line, not "on".
func TestCatalogAllowHTTPLoopback(t *testing.T) {
	cfg, problems := mustParse(t, []byte("listen: 127.0.0.1:7788\n"), nil)
	if len(problems) != 0 || cfg.Catalog.AllowHTTPLoopback {
		t.Fatalf("default: %v, problems %v", cfg.Catalog.AllowHTTPLoopback, problems)
	}
	cfg, problems = mustParse(t, []byte("catalog:\n  allow_http_loopback: true\n"), nil)
	if len(problems) != 0 || !cfg.Catalog.AllowHTTPLoopback {
		t.Fatalf("set: %v, problems %v", cfg.Catalog.AllowHTTPLoopback, problems)
	}
	_, problems, err := Parse("t.yaml", []byte("catalog:\n  allow_http_loopback: sometimes\n"), nil)
	if err == nil || len(problems) == 0 || problems[0].Line != 2 {
		t.Fatalf("a value that is not a boolean: err %v, problems %v", err, problems)
	}
}

func TestCatalogPricesReachTheConfig(t *testing.T) {
	cfg, problems := mustParse(t, []byte(`
providers:
  - catalog: anthropic
    models:
      - {id: claude-opus-4-5, price: {input: 4, output: 20}}
chains:
  - {name: smart, backends: [anthropic/claude-sonnet-4-5]}
`), map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test"})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	prices := map[string]Price{}
	for _, m := range cfg.Providers[0].Models {
		if m.Price != nil {
			prices[m.ID] = *m.Price
		}
	}
	if got, want := prices["claude-sonnet-4-5"], (Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}); got != want {
		t.Errorf("catalog price = %+v, want %+v", got, want)
	}
	// A price in the config replaces the catalog's whole.
	if got, want := prices["claude-opus-4-5"], (Price{Input: 4, Output: 20}); got != want {
		t.Errorf("configured price = %+v, want %+v", got, want)
	}
}
