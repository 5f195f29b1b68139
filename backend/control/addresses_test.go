package control_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/control"
)

// groqMoved is a newer catalog that places groq at another host.
const groqMoved = `date: 2099-01-01
providers:
  - {id: groq, name: Groq, tier: free, dialect: openai, base_url: "https://groq.elsewhere.example/v1", key_env: [GROQ_API_KEY], models: [{id: llama-3.3-70b-versatile, params_b: 70}]}
`

const builtInGroq = "https://api.groq.com/openai/v1"

func (r *rig) openWith(t *testing.T, seed *config.Config, newer *catalog.Catalog) *control.Control {
	t.Helper()
	c, err := control.Open(context.Background(), control.Options{
		DB: r.db, Vault: r.v, Seed: seed, Catalog: newer,
		Addresses: catalog.DecisionFile{Path: filepath.Join(r.dir, "catalog-addresses.json")},
		Apply: func(cfg *config.Config) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.applied = append(r.applied, cfg)
			return nil
		},
		LookupEnv: func(n string) (string, bool) { v, ok := r.env[n]; return v, ok },
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func appliedURL(t *testing.T, r *rig, provider string) string {
	t.Helper()
	p, ok := r.last().Provider(provider)
	if !ok {
		t.Fatalf("provider %s is not applied", provider)
	}
	return p.BaseURL
}

// A key found in the environment for a provider whose newer address is
// not confirmed goes to the confirmed one, and the move cannot be
// confirmed while the key is there.
func TestEnvKeyUsesTheConfirmedAddress(t *testing.T) {
	r := newRig(t)
	r.env["GROQ_API_KEY"] = "gsk-env-0001"
	c := r.openWith(t, nil, mustCatalog(t, groqMoved))
	if got := appliedURL(t, r, "groq"); got != builtInGroq {
		t.Fatalf("groq calls %s, want the built-in %s", got, builtInGroq)
	}
	ch := c.CatalogChanges()
	if len(ch) != 1 || ch[0].ID != "groq" || ch[0].From != builtInGroq || !ch[0].HasKey || !strings.Contains(ch[0].Refused, "GROQ_API_KEY") {
		t.Fatalf("changes = %+v", ch)
	}
	err := c.DecideAddress(context.Background(), "groq", true, "https://groq.elsewhere.example/v1")
	var ce *control.Error
	if !errors.As(err, &ce) || ce.Status != 409 {
		t.Fatalf("confirming a move of a provider with a key: %v", err)
	}
	if got := appliedURL(t, r, "groq"); got != builtInGroq {
		t.Fatalf("after the refusal groq calls %s", got)
	}
}

// Confirmed without a key, the new address is used, and the answer holds
// at the next start.
func TestConfirmedAddressPersists(t *testing.T) {
	r := newRig(t)
	newer := mustCatalog(t, groqMoved)
	c := r.openWith(t, nil, newer)
	if e, _ := c.Catalog().Provider("groq"); e.BaseURL != builtInGroq {
		t.Fatalf("before confirming the catalog in use has groq at %s", e.BaseURL)
	}
	if err := c.DecideAddress(context.Background(), "groq", true, "https://groq.elsewhere.example/v1"); err != nil {
		t.Fatal(err)
	}
	if e, _ := c.Catalog().Provider("groq"); e.BaseURL != "https://groq.elsewhere.example/v1" || len(c.CatalogChanges()) != 0 {
		t.Fatalf("after confirming: groq at %s, changes %+v", e.BaseURL, c.CatalogChanges())
	}
	r.reopen()
	r.env["GROQ_API_KEY"] = "gsk-env-0002"
	c = r.openWith(t, nil, newer)
	if got := appliedURL(t, r, "groq"); got != "https://groq.elsewhere.example/v1" {
		t.Fatalf("at the next start groq calls %s", got)
	}
	// With the key now there, a catalog going back to the built-in
	// address is refused: the key was given for the confirmed one.
	back := strings.Replace(groqMoved, "https://groq.elsewhere.example/v1", builtInGroq, 1)
	if err := c.SetCatalog(context.Background(), mustCatalog(t, strings.Replace(back, "2099-01-01", "2099-02-01", 1))); err == nil {
		t.Fatal("a catalog moving a provider with a key was used")
	}
}

// Keeping the old address answers the change for good; another address
// later asks again.
func TestKeptAddressIsNotAskedAgain(t *testing.T) {
	r := newRig(t)
	newer := mustCatalog(t, groqMoved)
	c := r.openWith(t, nil, newer)
	if err := c.DecideAddress(context.Background(), "groq", false, "https://groq.elsewhere.example/v1"); err != nil {
		t.Fatal(err)
	}
	if ch := c.CatalogChanges(); len(ch) != 0 {
		t.Fatalf("changes after keeping: %+v", ch)
	}
	r.reopen()
	c = r.openWith(t, nil, newer)
	if ch := c.CatalogChanges(); len(ch) != 0 {
		t.Fatalf("changes at the next start: %+v", ch)
	}
	if e, _ := c.Catalog().Provider("groq"); e.BaseURL != builtInGroq {
		t.Fatalf("groq at %s after keeping the old address", e.BaseURL)
	}
	third := strings.NewReplacer("2099-01-01", "2099-02-01", "groq.elsewhere.example", "groq.third.example").Replace(groqMoved)
	if err := c.SetCatalog(context.Background(), mustCatalog(t, third)); err != nil {
		t.Fatal(err)
	}
	if ch := c.CatalogChanges(); len(ch) != 1 || ch[0].To != "https://groq.third.example/v1" {
		t.Fatalf("a third address: %+v", ch)
	}
	// An answer is for the address shown only.
	if err := c.DecideAddress(context.Background(), "groq", true, "https://groq.elsewhere.example/v1"); err == nil {
		t.Fatal("an answer about another address was taken")
	}
}

// A configuration that already uses a provider the built-in catalog
// lacks (added from a catalog file before addresses were confirmed, or
// named in the config file) keeps it at its address.
func TestConfigurationNamingANewEntryConfirmsIt(t *testing.T) {
	r := newRig(t)
	newer := mustCatalog(t, acmeCatalog)
	seed := config.Default()
	seed.Providers = []config.Provider{{Catalog: "acme", APIKey: "sk-acme-0003"}}
	c := r.openWith(t, seed, newer)
	if got := appliedURL(t, r, "acme"); got != "https://api.acme.example/v1" {
		t.Fatalf("acme calls %s", got)
	}
	for _, ch := range c.CatalogChanges() {
		if ch.ID == "acme" {
			t.Fatalf("acme still waits: %+v", ch)
		}
	}
	// The others of the file still wait, and are not offered.
	if _, err := c.CatalogEntry("cf"); err == nil {
		t.Fatal("cf is offered before it was confirmed")
	}
}

// A newer catalog cannot have one provider read another's key: cerebras
// told to read GROQ_API_KEY keeps its own variable, so groq's key is not
// sent to Cerebras, and the change cannot be confirmed.
func TestCatalogCannotHandOneProvidersKeyToAnother(t *testing.T) {
	r := newRig(t)
	r.env["GROQ_API_KEY"] = "gsk-env-0003"
	newer := mustCatalog(t, `date: 2099-01-01
providers:
  - {id: cerebras, name: Cerebras, tier: free, dialect: openai, base_url: "https://api.cerebras.ai/v1", key_env: [GROQ_API_KEY], models: [{id: c1, params_b: 70}]}
  - {id: groq, name: Groq, tier: free, dialect: openai, base_url: "https://api.groq.com/openai/v1", key_env: [GROQ_API_KEY], models: [{id: llama-3.3-70b-versatile, params_b: 70}]}
  - {id: newco, name: NewCo, tier: free, dialect: openai, base_url: "https://new.example/v1", key_env: [GROQ_API_KEY], models: [{id: n1}]}
`)
	c := r.openWith(t, nil, newer)
	if _, ok := r.last().Provider("cerebras"); ok {
		t.Fatal("cerebras was added with groq's key")
	}
	if p, ok := r.last().Provider("groq"); !ok || p.APIKey != "gsk-env-0003" {
		t.Fatalf("groq = %+v", p)
	}
	got := map[string]control.CatalogChange{}
	for _, ch := range c.CatalogChanges() {
		got[ch.ID] = ch
	}
	if ch := got["cerebras"]; ch.From != ch.To || strings.Join(ch.FromKeyEnv, ",") != "CEREBRAS_API_KEY" || strings.Join(ch.ToKeyEnv, ",") != "GROQ_API_KEY" || !ch.HasKey {
		t.Fatalf("cerebras change = %+v", ch)
	}
	if err := c.DecideAddress(context.Background(), "cerebras", true, "https://api.cerebras.ai/v1"); err == nil {
		t.Fatal("cerebras was let read groq's key")
	}
	err := c.DecideAddress(context.Background(), "newco", true, "https://new.example/v1")
	if err == nil || !strings.Contains(err.Error(), "key variable of Groq") {
		t.Fatalf("a new provider reading groq's key: %v", err)
	}
}
