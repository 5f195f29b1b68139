package catalog

import (
	"errors"
	"strings"
	"testing"

	"freelane/backend/tier"
)

func TestEmbeddedCatalog(t *testing.T) {
	c, err := Parse("catalog.yaml", embedded)
	if err != nil {
		t.Fatal(err)
	}
	tiers := map[tier.Offer]int{}
	for _, p := range c.Providers {
		tiers[p.Tier]++
	}
	if remote := tiers[tier.OfferFree] + tiers[tier.OfferTrial] + tiers[tier.OfferPaid]; remote < 18 {
		t.Errorf("%d remote providers (%v), want at least 18", remote, tiers)
	}
	for _, id := range []string{"openai", "anthropic", "google", "deepseek", "mistral", "xai", "openrouter-paid", "openrouter", "groq", "gemini", "cerebras", "cloudflare"} {
		if _, ok := c.Provider(id); !ok {
			t.Errorf("the catalog lacks %s", id)
		}
	}
	cf, _ := c.Provider("cloudflare")
	if !strings.Contains(cf.BaseURL, "${CLOUDFLARE_ACCOUNT_ID}") || cf.Placeholders[0] != "CLOUDFLARE_ACCOUNT_ID" {
		t.Errorf("cloudflare %q %v", cf.BaseURL, cf.Placeholders)
	}
	or, _ := c.Provider("openrouter")
	if len(or.Limits) != 1 || or.Limits[0].Pool != "account" || or.Limits[0].RPD != 50 {
		t.Errorf("OpenRouter's shared daily pool: %+v", or.Limits)
	}
	gem, _ := c.Provider("gemini")
	if gem.Dialect != "gemini" || gem.Models[0].Limits[0].Reset != "daily 00:00 America/Los_Angeles" {
		t.Errorf("Gemini resets at midnight Pacific: %+v", gem.Models[0])
	}
	if Embedded().Date != c.Date {
		t.Error("Embedded differs from the file")
	}
}

func TestParseRefusesBadFiles(t *testing.T) {
	const good = `date: 2026-07-18
providers:
  - id: groq
    name: Groq
    tier: free
    dialect: openai
    base_url: https://api.groq.com/openai/v1
    key_env: [GROQ_API_KEY]
    models:
      - {id: llama-3.3-70b-versatile, limits: [{rpd: 1000}]}
`
	if _, err := Parse("good.yaml", []byte(good)); err != nil {
		t.Fatalf("a good file was refused: %v", err)
	}
	for _, tc := range []struct{ name, edit, from, want string }{
		{"unknown field", "    colour: red\n", "    name: Groq\n", "line 5: a field the catalog does not have"},
		{"bad dialect", "    dialect: grpc\n", "    dialect: openai\n", "line 3: providers[0]: dialect must be one of openai, anthropic, gemini"},
		{"bad tier", "    tier: gratis\n", "    tier: free\n", "line 3: providers[0]: tier must be one of free, trial, paid, local"},
		{"plain http", "    base_url: http://api.groq.com/openai/v1\n", "    base_url: https://api.groq.com/openai/v1\n", "must be https for a remote provider"},
		{"undeclared placeholder", "    base_url: https://x.example/${ACCOUNT}/v1\n", "    base_url: https://api.groq.com/openai/v1\n", "has a placeholder that placeholders does not list"},
		{"bad env name", "    key_env: [groq-key]\n", "    key_env: [GROQ_API_KEY]\n", "key_env must name environment variables"},
		{"bad reset", "      - {id: llama-3.3-70b-versatile, limits: [{rpd: 1000, reset: tomorrow}]}\n", "      - {id: llama-3.3-70b-versatile, limits: [{rpd: 1000}]}\n", "models[0] (line 10): limits: reset is not a rule FreeLane understands"},
		{"empty limit", "      - {id: llama-3.3-70b-versatile, limits: [{reset: \"daily 00:00 UTC\"}]}\n", "      - {id: llama-3.3-70b-versatile, limits: [{rpd: 1000}]}\n", "a limit needs at least one of"},
		{"bad capability", "      - {id: llama-3.3-70b-versatile, capabilities: [telepathy]}\n", "      - {id: llama-3.3-70b-versatile, limits: [{rpd: 1000}]}\n", "models[0] (line 10): capabilities may only be tools, vision, json, reasoning"},
		{"bad cache_ttl", "    key_env: [GROQ_API_KEY]\n    cache_ttl: forever\n", "    key_env: [GROQ_API_KEY]\n", "line 3: providers[0]: cache_ttl must be a duration above 0 and at most 24h"},
		{"cache_ttl too long", "    key_env: [GROQ_API_KEY]\n    cache_ttl: 48h\n", "    key_env: [GROQ_API_KEY]\n", "cache_ttl must be a duration above 0 and at most 24h"},
		{"no date", "date: soon\n", "date: 2026-07-18\n", "line 1: date must be the day the figures were gathered, written YYYY-MM-DD"},
		{"not yaml", "providers: [\n", "providers:\n", "line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(good, tc.from, tc.edit, 1)
			if bad == good {
				t.Fatal("the edit changed nothing")
			}
			if tc.name == "unknown field" {
				bad = strings.Replace(good, tc.from, tc.from+tc.edit, 1)
			}
			_, err := Parse("new.yaml", []byte(bad))
			var ps *Problems
			if !errors.As(err, &ps) || ps.File != "new.yaml" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a refusal containing %q", err, tc.want)
			}
			// The problem names the rule, not what the file wrote.
			for _, quoted := range []string{"colour", "grpc", "gratis", "http://api.groq", "ACCOUNT", "groq-key", "tomorrow", "telepathy", "soon", "forever", "(groq)"} {
				if strings.Contains(tc.edit, strings.Trim(quoted, "()")) && strings.Contains(err.Error(), quoted) {
					t.Errorf("the problem repeats %q of the file: %v", quoted, err)
				}
			}
		})
	}
	dup := good + `  - id: groq
    name: Groq again
    tier: free
    dialect: openai
    base_url: https://api.groq.com/openai/v1
    key_env: [GROQ_API_KEY]
    list_models: true
    models: []
`
	if _, err := Parse("dup.yaml", []byte(dup)); err == nil || !strings.Contains(err.Error(), "line 11: providers[1]: id repeats providers[0]") {
		t.Errorf("a repeated id: %v", err)
	}
	if _, err := Parse("big.yaml", make([]byte, MaxFile+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("an oversized file: %v", err)
	}
}

func TestLimitWords(t *testing.T) {
	for _, c := range []struct {
		l    Limit
		want string
	}{
		{Limit{RPM: 20, RPD: 50, Reset: "daily 00:00 UTC", Pool: "account"}, "20 requests a minute, 50 requests a day (shared by every model of the account); the day starts at 00:00 UTC"},
		{Limit{RPD: 14400, Reset: "daily 00:00 America/Los_Angeles"}, "14,400 requests a day; the day starts at 00:00 America/Los_Angeles"},
		{Limit{TPM: 500000, RPM: 60, Reset: "monthly 1 00:00 UTC"}, "60 requests a minute, 500,000 tokens a minute; it starts over monthly 1 00:00 UTC"},
		{Limit{TPD: 1000000}, "1,000,000 tokens a day; the day starts at 00:00 UTC"},
	} {
		if got := c.l.Words(); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.l, got, c.want)
		}
	}
}

// A document that is not a catalog, or holds values of the wrong kind
// and fields the catalog lacks, is refused with every problem by line and
// without a word of it.
func TestParseRepeatsNothingOfTheFile(t *testing.T) {
	for _, doc := range []string{
		"<html><title>secret-page-title</title></html>\n",
		"date: 2099-01-01\nproviders:\n  - {id: x, name: X, tier: free, dialect: openai, base_url: \"https://x.example/v1\", key_env: [X_KEY], models: secret-scalar}\n  - {id: y, secret_field: 1}\n",
		"secret_key: [unclosed\n",
		"{\"date\": \"2099-01-01\", \"secret_json\": true}\n",
	} {
		_, err := Parse("doc.yaml", []byte(doc))
		var ps *Problems
		if !errors.As(err, &ps) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: got %v, want problems by line", doc, err)
			continue
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "x.example") {
			t.Errorf("%q: the problems repeat the file: %v", doc, err)
		}
	}
}
