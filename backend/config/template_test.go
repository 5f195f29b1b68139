package config_test

import (
	"testing"

	"freelane/backend/config"
)

func TestParseTemplateKeepsValuesAsWritten(t *testing.T) {
	doc := []byte(`
providers:
  - name: p
    tier: free
    base_url: https://example.com/v1
    api_key: ${P_KEY}
    headers: {X-Lit: "a $${NOT_A_REF}", X-Ref: "${TITLE}"}
    models: [{id: "m-$${X}"}]
`)
	cfg, _, err := config.ParseTemplate("t.yaml", doc)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers[0]
	if p.APIKey != "${P_KEY}" || len(p.APIKeyEnv) != 1 || p.APIKeyEnv[0] != "P_KEY" {
		t.Errorf("api_key %q env %v", p.APIKey, p.APIKeyEnv)
	}
	if p.Headers["X-Lit"] != "a $${NOT_A_REF}" || p.Headers["X-Ref"] != "${TITLE}" || p.Models[0].ID != "m-$${X}" {
		t.Errorf("values changed: %v %q", p.Headers, p.Models[0].ID)
	}
	env := func(n string) (string, bool) { return "expanded-" + n, true }
	eff, _, err := config.Parse("t.yaml", doc, env)
	if err != nil {
		t.Fatal(err)
	}
	q := eff.Providers[0]
	if q.Headers["X-Lit"] != "a ${NOT_A_REF}" || q.Headers["X-Ref"] != "expanded-TITLE" || q.Models[0].ID != "m-${X}" {
		t.Errorf("expanded: %v %q", q.Headers, q.Models[0].ID)
	}
}

func TestEscapeIsLiteral(t *testing.T) {
	for _, s := range []string{"${AWS_SECRET_ACCESS_KEY}", "m-${X}", "$${X}", "$$${", "plain", "a$b{c}"} {
		if config.HasRef(config.Escape(s)) {
			t.Errorf("Escape(%q) = %q still refers to the environment", s, config.Escape(s))
		}
		if got := config.Unescape(config.Escape(s)); got != s {
			t.Errorf("Unescape(Escape(%q)) = %q", s, got)
		}
	}
	if !config.HasRef("Bearer ${TOKEN}") || config.HasRef("$${TOKEN}") {
		t.Error("HasRef")
	}
}
