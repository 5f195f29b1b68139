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

const pricedCatalog = `date: 2099-01-01
providers:
  - id: pricey
    name: Pricey
    tier: paid
    dialect: anthropic
    base_url: "https://api.pricey.example/v1"
    key_env: [PRICEY_API_KEY]
    prices_read: 2099-01-01
    models:
      - {id: p1, price: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}}
      - {id: p2}
`

// TestCatalogPricesInTheLimits checks that the limits list a catalog
// provider's models with the catalog's prices, cache prices included,
// flags a paid model without one, and that a price set for a model only
// the catalog lists is stored as an override while sending back what is
// shown stores nothing, so the model keeps following the catalog.
func TestCatalogPricesInTheLimits(t *testing.T) {
	r := newRig(t)
	c := r.open(nil)
	ctx := context.Background()
	if err := c.SetCatalog(ctx, mustCatalog(t, pricedCatalog)); err != nil {
		t.Fatal(err)
	}
	for _, ch := range c.CatalogChanges() {
		if err := c.DecideAddress(ctx, ch.ID, true, ch.To); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AddFromCatalog(ctx, "pricey", control.CatalogInput{Key: "sk-pricey-0001"}, nil); err != nil {
		t.Fatal(err)
	}
	entry := func(model string) control.LimitsEntry {
		t.Helper()
		for _, e := range c.Limits() {
			if e.Provider == "pricey" && e.Model == model {
				return e
			}
		}
		t.Fatalf("no limits entry for pricey/%s in %+v", model, c.Limits())
		return control.LimitsEntry{}
	}
	p1 := entry("p1")
	if p1.Price == nil || *p1.Price != (control.PriceJSON{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}) || p1.Unpriced {
		t.Fatalf("p1 = %+v price %+v", p1, p1.Price)
	}
	if p2 := entry("p2"); p2.Price != nil || !p2.Unpriced {
		t.Fatalf("p2 = %+v", p2)
	}
	view, _ := c.Provider("pricey")
	if len(view.Models) != 2 || view.Models[0].Unpriced || !view.Models[1].Unpriced {
		t.Fatalf("provider view models = %+v", view.Models)
	}

	// Sending back what is shown keeps the stored document as it was.
	if err := c.SetModelLimits(ctx, "pricey", "p1", control.ModelLimitsInput{Price: p1.Price, Limits: &p1.Limits}); err != nil {
		t.Fatal(err)
	}
	if ms := c.Config().Providers[0].Models; len(ms) != 0 {
		t.Fatalf("writing back the catalog's values stored %+v", ms)
	}
	// A price for p2 is stored for it, with its cache prices.
	set := control.PriceJSON{Input: 1, Output: 2, CacheRead: 0.1, CacheWrite: 1.25}
	if err := c.SetModelLimits(ctx, "pricey", "p2", control.ModelLimitsInput{Price: &set}); err != nil {
		t.Fatal(err)
	}
	if p2 := entry("p2"); p2.Price == nil || *p2.Price != set || p2.Unpriced {
		t.Fatalf("p2 after setting its price = %+v", p2)
	}
	eff := r.last()
	var got *config.Price
	for _, m := range eff.Providers[0].Models {
		if m.ID == "p2" {
			got = m.Price
		}
	}
	if got == nil || got.CacheRead != 0.1 || got.CacheWrite != 1.25 {
		t.Fatalf("effective p2 price = %+v", got)
	}
	// The catalog's model still has the catalog's price.
	if p1 := entry("p1"); p1.Price == nil || p1.Price.CacheRead != 0.3 {
		t.Fatalf("p1 after p2's price = %+v", p1.Price)
	}
	if err := c.SetModelLimits(ctx, "pricey", "p9", control.ModelLimitsInput{Price: &set}); err == nil {
		t.Fatal("a model neither listed nor in the catalog took a price")
	}
	bad := control.PriceJSON{Input: 1, Output: 2, CacheRead: -1}
	var ce *control.Error
	if err := c.SetModelLimits(ctx, "pricey", "p2", control.ModelLimitsInput{Price: &bad}); !errors.As(err, &ce) || ce.Param != "price.cache_read" {
		t.Fatalf("negative cache price: %v", err)
	}
}
