package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/tier"
)

func mustCatalog(t *testing.T, doc string) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const acmeCatalog = `date: 2099-01-01
providers:
  - {id: acme, name: Acme, tier: free, dialect: openai, base_url: "https://api.acme.example/v1", key_env: [ACME_API_KEY], models: [{id: a1, params_b: 8}]}
  - {id: acme-paid, name: Acme paid, tier: paid, dialect: openai, base_url: "https://api.acme.example/v1", key_env: [ACME_API_KEY], models: [{id: a2}]}
  - {id: cf, name: CF, tier: free, dialect: openai, base_url: "https://cf.example/accounts/${CF_ACCOUNT}/v1", placeholders: [CF_ACCOUNT], key_env: [CF_KEY], models: [{id: c1}]}
`

func TestAddFromCatalogAndANewerCatalog(t *testing.T) {
	r := newRig(t)
	c := r.open(nil)
	ctx := context.Background()
	if err := c.SetCatalog(ctx, mustCatalog(t, acmeCatalog)); err != nil {
		t.Fatal(err)
	}
	// Providers the built-in catalog lacks wait for the user.
	if _, err := c.AddFromCatalog(ctx, "acme", control.CatalogInput{Key: "sk-acme-0001"}, nil); err == nil || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("adding an unconfirmed provider: %v", err)
	}
	for _, ch := range c.CatalogChanges() {
		if !ch.New {
			t.Fatalf("change %+v is not a new provider", ch)
		}
		if err := c.DecideAddress(ctx, ch.ID, true, ch.To); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AddFromCatalog(ctx, "cf", control.CatalogInput{Key: "k"}, nil); err == nil || !strings.Contains(err.Error(), "CF_ACCOUNT") {
		t.Fatalf("no account value: %v", err)
	}
	if _, err := c.AddFromCatalog(ctx, "cf", control.CatalogInput{Key: "k", Values: map[string]string{"CF_ACCOUNT": "a/../b"}}, nil); err == nil {
		t.Fatal("a value with a slash went into the address")
	}
	v, err := c.AddFromCatalog(ctx, "acme", control.CatalogInput{Key: "sk-acme-0001"}, []config.Model{{ID: "a-listed"}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "acme" || v.Catalog != "acme" || len(v.Models) != 2 || !v.Key.Set || v.Key.Source != control.SourceDashboard {
		t.Fatalf("view = %+v", v)
	}
	if v2, err := c.AddFromCatalog(ctx, "acme", control.CatalogInput{Key: "sk-acme-0002"}, nil); err != nil || v2.Name != "acme-2" {
		t.Fatalf("second key: %+v %v", v2, err)
	}
	// A catalog that would send the key elsewhere is refused, and the old
	// one stays.
	moved := strings.Replace(acmeCatalog, `base_url: "https://api.acme.example/v1", key_env: [ACME_API_KEY], models: [{id: a1`, `base_url: "https://evil.example/v1", key_env: [ACME_API_KEY], models: [{id: a1`, 1)
	err = c.SetCatalog(ctx, mustCatalog(t, moved))
	var ce *control.Error
	if !errors.As(err, &ce) || ce.Status != 409 || !strings.Contains(ce.Message, `moves provider "acme" away from https://api.acme.example/v1`) || strings.Contains(ce.Message, "evil.example") {
		t.Fatalf("moving catalog: %v", err)
	}
	if p, _ := c.Provider("acme"); p.BaseURL != "https://api.acme.example/v1" {
		t.Fatalf("after the refusal the provider calls %s", p.BaseURL)
	}
	// A catalog without an entry in use is refused too.
	err = c.SetCatalog(ctx, mustCatalog(t, "date: 2099-02-01\nproviders:\n  - {id: other, name: O, tier: free, dialect: openai, base_url: \"https://o.example/v1\", key_env: [O_KEY], models: [{id: o}]}\n"))
	if err == nil || !strings.Contains(err.Error(), `does not hold with the new catalog: it lacks the entry "acme"`) || strings.Contains(err.Error(), "other") {
		t.Fatalf("catalog lacking acme: %v", err)
	}
	if got := c.Catalog().Date; got != "2099-01-01" {
		t.Fatalf("catalog in use is %s", got)
	}
}

func TestEnvKeysAdoptOneProviderPerAccount(t *testing.T) {
	r := newRig(t)
	r.env["GROQ_API_KEY"] = "gsk-1"
	r.env["OPENROUTER_API_KEY"] = "sk-or-1"
	c := r.open(nil)
	var names []string
	for _, p := range c.Providers() {
		names = append(names, p.Name)
	}
	// OpenRouter's free and paid entries share one key and one address:
	// the key is picked up once, for the free one.
	if strings.Join(names, ",") != "openrouter,groq" {
		t.Fatalf("adopted %v", names)
	}
	keys := c.EnvKeys()
	if len(keys) != 2 || !keys[0].Adopted {
		t.Fatalf("env keys = %+v", keys)
	}
	// A config that already reads the variable keeps its own provider.
	r2 := newRig(t)
	r2.env["GROQ_API_KEY"] = "gsk-1"
	seed := config.Default()
	seed.Providers = []config.Provider{{Name: "mygroq", Kind: config.KindOpenAI, Tier: tier.Free, BaseURL: "https://api.groq.com/openai/v1",
		APIKey: "gsk-1", APIKeyEnv: []string{"GROQ_API_KEY"}, Models: []config.Model{{ID: "m"}}}}
	c2 := r2.open(seed)
	if ps := c2.Providers(); len(ps) != 1 || ps[0].Name != "mygroq" {
		t.Fatalf("providers = %+v", ps)
	}
}
