package catalog

import (
	"path/filepath"
	"testing"
)

func mustParse(t *testing.T, doc string) *Catalog {
	t.Helper()
	c, err := Parse("t.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const builtInDoc = `date: 2026-01-01
providers:
  - {id: groq, name: Groq, tier: free, dialect: openai, base_url: "https://api.groq.com/openai/v1", key_env: [GROQ_API_KEY], models: [{id: m}]}
  - {id: cf, name: CF, tier: free, dialect: openai, base_url: "https://cf.example/${ACC}/v1", placeholders: [ACC], key_env: [CF_KEY], models: [{id: m}]}
`

const newerDoc = `date: 2099-01-01
providers:
  - {id: groq, name: Groq, tier: free, dialect: openai, base_url: "https://x.example/v1", key_env: [GROQ_API_KEY], models: [{id: m}, {id: n}]}
  - {id: cf, name: CF, tier: free, dialect: openai, base_url: "https://cf.example/${ACC}/v1", placeholders: [ACC], key_env: [CF_KEY], models: [{id: m}]}
  - {id: newco, name: NewCo, tier: free, dialect: openai, base_url: "https://new.example/v1", key_env: [NEW_KEY], models: [{id: m}]}
`

func TestHoldKeepsUnconfirmedAddresses(t *testing.T) {
	builtIn, newer := mustParse(t, builtInDoc), mustParse(t, newerDoc)
	got, changes := Hold(newer, builtIn, Decisions{})
	if len(got.Providers) != 2 {
		t.Fatalf("providers in use: %+v", got.Providers)
	}
	g, _ := got.Provider("groq")
	if g.BaseURL != "https://api.groq.com/openai/v1" || len(g.Models) != 2 {
		t.Fatalf("groq in use: %+v (the address held, the rest of the newer entry taken)", g)
	}
	if _, ok := got.Provider("newco"); ok {
		t.Fatal("a provider new in the catalog is offered before it was confirmed")
	}
	if len(changes) != 2 || changes[0].ID != "groq" || changes[0].From.BaseURL != "https://api.groq.com/openai/v1" || changes[0].To.BaseURL != "https://x.example/v1" ||
		changes[1].ID != "newco" || !changes[1].New() {
		t.Fatalf("changes = %+v", changes)
	}
	if n, _ := newer.Provider("groq"); n.BaseURL != "https://x.example/v1" {
		t.Fatal("Hold changed the newer catalog")
	}

	var d Decisions
	d.Confirm("groq", changes[0].To)
	d.Keep("newco", changes[1].To)
	got, changes = Hold(newer, builtIn, d)
	if g, _ := got.Provider("groq"); g.BaseURL != "https://x.example/v1" || len(changes) != 0 {
		t.Fatalf("after the answers: groq at %s, changes %+v", g.BaseURL, changes)
	}
	if _, ok := got.Provider("newco"); ok {
		t.Fatal("a provider turned down is offered")
	}

	// A later catalog moving groq again is held at the confirmed address.
	later := mustParse(t, `date: 2099-02-01
providers:
  - {id: groq, name: Groq, tier: free, dialect: openai, base_url: "https://y.example/v1", key_env: [GROQ_API_KEY], models: [{id: m}]}
`)
	got, changes = Hold(later, builtIn, d)
	if g, _ := got.Provider("groq"); g.BaseURL != "https://x.example/v1" || len(changes) != 1 || changes[0].From.BaseURL != "https://x.example/v1" {
		t.Fatalf("a second move: groq at %s, changes %+v", g.BaseURL, changes)
	}
}

func TestDecisionFileRoundTrip(t *testing.T) {
	f := DecisionFile{Path: filepath.Join(t.TempDir(), "a.json")}
	if d, err := f.Load(); err != nil || len(d.Confirmed) != 0 {
		t.Fatalf("no file: %+v %v", d, err)
	}
	var d Decisions
	d.Confirm("cf", Address{BaseURL: "https://cf.example/${ACC}/v2", Placeholders: []string{"ACC"}})
	d.Keep("groq", Address{BaseURL: "https://x.example/v1"})
	if err := f.Save(d); err != nil {
		t.Fatal(err)
	}
	back, err := f.Load()
	if err != nil || !back.Confirmed["cf"].same(d.Confirmed["cf"]) || back.Kept["groq"].BaseURL != "https://x.example/v1" {
		t.Fatalf("read back %+v, %v", back, err)
	}
}

// A newer catalog that has a provider read another provider's key
// variable, at the same address, is held like a move.
func TestHoldKeepsKeyVariables(t *testing.T) {
	builtIn := mustParse(t, builtInDoc)
	newer := mustParse(t, `date: 2099-01-01
providers:
  - {id: cf, name: CF, tier: free, dialect: openai, base_url: "https://cf.example/${ACC}/v1", placeholders: [ACC], key_env: [GROQ_API_KEY], models: [{id: m}]}
  - {id: groq, name: Groq, tier: free, dialect: openai, base_url: "https://api.groq.com/openai/v1", key_env: [GROQ_API_KEY], models: [{id: m}]}
`)
	got, changes := Hold(newer, builtIn, Decisions{})
	if cf, _ := got.Provider("cf"); len(cf.KeyEnv) != 1 || cf.KeyEnv[0] != "CF_KEY" {
		t.Fatalf("cf reads %v, want the confirmed CF_KEY", cf.KeyEnv)
	}
	if len(changes) != 1 || changes[0].ID != "cf" || changes[0].To.KeyEnv[0] != "GROQ_API_KEY" || changes[0].From.BaseURL != changes[0].To.BaseURL {
		t.Fatalf("changes = %+v", changes)
	}
}
