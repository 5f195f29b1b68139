package control_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/store"
	"freelane/backend/vault"
)

type rig struct {
	t       *testing.T
	dir     string
	db      *store.DB
	v       *vault.Vault
	mu      sync.Mutex
	applied []*config.Config
	env     map[string]string
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, dir: t.TempDir(), env: map[string]string{}}
	r.reopen()
	return r
}

func (r *rig) reopen() {
	if r.db != nil {
		r.db.Close()
	}
	db, err := store.Open(context.Background(), filepath.Join(r.dir, "f.db"))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { db.Close() })
	r.db = db
	v, err := vault.Open(context.Background(), vault.Options{DataDir: r.dir})
	if err != nil {
		r.t.Fatal(err)
	}
	r.v = v
}

func (r *rig) open(seed *config.Config) *control.Control {
	r.t.Helper()
	c, err := control.Open(context.Background(), control.Options{
		DB: r.db, Vault: r.v, Seed: seed, SeedPath: "seed.yaml",
		Apply: func(cfg *config.Config) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.applied = append(r.applied, cfg)
			return nil
		},
		LookupEnv: func(n string) (string, bool) { v, ok := r.env[n]; return v, ok },
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

func (r *rig) last() *config.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied[len(r.applied)-1]
}

func ptr[T any](v T) *T { return &v }

func groqInput() control.ProviderInput {
	return control.ProviderInput{Name: "groq", Tier: "free", BaseURL: "https://api.groq.com/openai/v1",
		Models: []control.ModelSpec{{ID: "llama-3.3-70b-versatile", ParamsB: 70, Context: 131072}}}
}

func TestAddProviderWithKeyIsAppliedAndKeyNeverStoredInPlaintext(t *testing.T) {
	r := newRig(t)
	c := r.open(nil)
	in := groqInput()
	in.APIKey = ptr("gsk_live_0123456789abcdefWXYZ")
	v, err := c.AddProvider(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Key.Set || v.Key.Masked != "gsk_...WXYZ" || v.Key.Source != control.SourceDashboard {
		t.Errorf("key info %+v", v.Key)
	}
	p, _ := r.last().Provider("groq")
	if p.APIKey != "gsk_live_0123456789abcdefWXYZ" {
		t.Errorf("effective key %q", p.APIKey)
	}
	// Nowhere in the database file (or its WAL) is the key in plaintext.
	r.db.Close()
	for _, f := range []string{"f.db", "f.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(r.dir, f))
		if strings.Contains(string(b), "0123456789abcdef") {
			t.Fatalf("%s holds the key in plaintext", f)
		}
	}
	// A restart (no seed) finds provider and key again.
	r.reopen()
	c = r.open(nil)
	p, _ = r.last().Provider("groq")
	if p.APIKey != "gsk_live_0123456789abcdefWXYZ" {
		t.Errorf("after restart: key %q", p.APIKey)
	}
	if got := c.Providers()[0].Key.Masked; got != "gsk_...WXYZ" {
		t.Errorf("masked %q", got)
	}
}

func TestValidationErrorsNameTheField(t *testing.T) {
	r := newRig(t)
	c := r.open(nil)
	cases := []struct {
		mutate func(*control.ProviderInput)
		param  string
		msg    string
	}{
		{func(in *control.ProviderInput) { in.BaseURL = "api.groq.com" }, "base_url", "http"},
		{func(in *control.ProviderInput) { in.Tier = "gratis" }, "tier", "own, free, local"},
		{func(in *control.ProviderInput) { in.Models = nil }, "models", "model"},
		{func(in *control.ProviderInput) { in.Models[0].ID = "" }, "models[0].id", ""},
		{func(in *control.ProviderInput) { in.Name = "Bad Name" }, "name", ""},
		{func(in *control.ProviderInput) { in.Timeouts.Connect = "soon" }, "timeouts.connect", "duration"},
		{func(in *control.ProviderInput) { in.APIKey = ptr("two words") }, "api_key", "spaces"},
	}
	for _, tc := range cases {
		in := groqInput()
		tc.mutate(&in)
		_, err := c.AddProvider(context.Background(), in)
		var ce *control.Error
		if !errors.As(err, &ce) || ce.Status != 400 || ce.Param != tc.param || !strings.Contains(ce.Message, tc.msg) {
			t.Errorf("%s: got %v (%+v)", tc.param, err, ce)
		}
	}
	if len(c.Providers()) != 0 {
		t.Error("an invalid provider was kept")
	}
	if _, err := c.AddProvider(context.Background(), groqInput()); err != nil {
		t.Fatal(err)
	}
	_, err := c.AddProvider(context.Background(), groqInput())
	var ce *control.Error
	if !errors.As(err, &ce) || ce.Status != 409 {
		t.Errorf("duplicate: %v", err)
	}
}

func TestSeedKeepsEnvReferencesAndSealsLiteralKeys(t *testing.T) {
	r := newRig(t)
	r.env["GROQ_API_KEY"] = "gsk_from_env_1234"
	seed, _, err := config.Parse("seed.yaml", []byte(`
providers:
  - {name: groq, tier: free, base_url: "https://api.groq.com/openai/v1", api_key: "${GROQ_API_KEY}", models: [{id: llama}]}
  - {name: lit, tier: own, base_url: "https://api.example.com/v1", api_key: "sk-literal-key-9999", models: [{id: m}]}
chains:
  - {name: coding, backends: [groq/llama, lit/m]}
`), func(n string) (string, bool) { v, ok := r.env[n]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	c := r.open(seed)
	if c.SeededFrom() != "seed.yaml" {
		t.Errorf("seeded from %q", c.SeededFrom())
	}
	views := c.Providers()
	if views[0].Key.Source != control.SourceEnv || views[0].Key.Env[0] != "GROQ_API_KEY" || views[1].Key.Source != control.SourceConfig {
		t.Errorf("sources %+v %+v", views[0].Key, views[1].Key)
	}
	// The environment changes: the new value is used after a restart.
	r.env["GROQ_API_KEY"] = "gsk_rotated_5678"
	r.reopen()
	r.open(nil)
	g, _ := r.last().Provider("groq")
	l, _ := r.last().Provider("lit")
	if g.APIKey != "gsk_rotated_5678" || l.APIKey != "sk-literal-key-9999" {
		t.Errorf("keys after restart: %q %q", g.APIKey, l.APIKey)
	}
	// A dashboard key beats the environment.
	c = r.open(nil)
	if _, err := c.SetKey(context.Background(), "groq", ptr("gsk_dashboard_0000")); err != nil {
		t.Fatal(err)
	}
	if g, _ := r.last().Provider("groq"); g.APIKey != "gsk_dashboard_0000" {
		t.Errorf("dashboard key not applied: %q", g.APIKey)
	}
	if _, err := c.SetKey(context.Background(), "groq", nil); err != nil {
		t.Fatal(err)
	}
	if g, _ := r.last().Provider("groq"); g.APIKey != "gsk_rotated_5678" {
		t.Errorf("after deleting the dashboard key: %q", g.APIKey)
	}
}

func TestChainsEditing(t *testing.T) {
	r := newRig(t)
	c := r.open(nil)
	ctx := context.Background()
	if _, err := c.AddProvider(ctx, groqInput()); err != nil {
		t.Fatal(err)
	}
	in := groqInput()
	in.Name, in.Models = "cerebras", []control.ModelSpec{{ID: "qwen"}}
	if _, err := c.AddProvider(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateChain(ctx, "coding", []string{"groq/llama-3.3-70b-versatile", "cerebras/qwen"}, control.ChainRouting{}); err != nil {
		t.Fatal(err)
	}
	err := c.CreateChain(ctx, "bad", []string{"groq/nope"}, control.ChainRouting{})
	var ce *control.Error
	if !errors.As(err, &ce) || ce.Param != "backends[0]" {
		t.Errorf("bad backend: %v %+v", err, ce)
	}
	order := []string{"cerebras/qwen", "groq/llama-3.3-70b-versatile"}
	if err := c.UpdateChain(ctx, "coding", control.ChainInput{Backends: &order, Name: ptr("code")}, nil); err != nil {
		t.Fatal(err)
	}
	chains := r.last().Chains
	if len(chains) != 1 || chains[0].Name != "code" || chains[0].Backends[0] != "cerebras/qwen" {
		t.Errorf("chains %+v", chains)
	}
	// Editing auto makes it a user chain.
	if c.UserChain("auto") {
		t.Fatal("auto is generated at first")
	}
	if err := c.UpdateChain(ctx, "auto", control.ChainInput{Backends: &order}, nil); err != nil {
		t.Fatal(err)
	}
	if !c.UserChain("auto") {
		t.Error("auto still generated after an edit")
	}
	// Deleting a provider removes it from chains.
	if err := c.DeleteProvider(ctx, "cerebras"); err != nil {
		t.Fatal(err)
	}
	for _, ch := range r.last().Chains {
		for _, b := range ch.Backends {
			if strings.HasPrefix(b, "cerebras/") {
				t.Errorf("chain %s still has %s", ch.Name, b)
			}
		}
	}
	if err := c.UpdateChain(ctx, "code", control.ChainInput{ChainRouting: control.ChainRouting{Strategy: ptr("random")}}, nil); err == nil {
		t.Error("unknown strategy accepted")
	}
}

func TestSettings(t *testing.T) {
	r := newRig(t)
	c := r.open(nil)
	s := c.Settings()
	if s.Breaker.Failures != 2 || s.Breaker.Open != "30s" || s.Probes.Interval != "5m0s" || s.MaxBodyMB != 16 {
		t.Fatalf("defaults %+v", s)
	}
	s.Breaker.Failures, s.Breaker.Open, s.MaxBodyMB = 3, "1m", 8
	if err := c.SetSettings(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if b := r.last().Breaker; b.Failures != 3 || b.Open.Seconds() != 60 || r.last().MaxBodyMB != 8 {
		t.Errorf("applied %+v", b)
	}
	s.Breaker.HealthThreshold = 2
	var ce *control.Error
	if err := c.SetSettings(context.Background(), s); !errors.As(err, &ce) || ce.Param != "breaker.health_threshold" {
		t.Errorf("bad threshold: %v", err)
	}
}

func TestChainRoutingEdits(t *testing.T) {
	r := newRig(t)
	c := r.open(nil)
	ctx := context.Background()
	if _, err := c.AddProvider(ctx, groqInput()); err != nil {
		t.Fatal(err)
	}
	in := groqInput()
	in.Name, in.Models = "cerebras", []control.ModelSpec{{ID: "qwen"}}
	if _, err := c.AddProvider(ctx, in); err != nil {
		t.Fatal(err)
	}
	a, b := "groq/llama-3.3-70b-versatile", "cerebras/qwen"
	// The old dashboards' "ordered" is priority, stored as the default.
	if err := c.CreateChain(ctx, "mix", []string{a, b}, control.ChainRouting{Strategy: ptr("ordered")}); err != nil {
		t.Fatal(err)
	}
	if ch := r.last().Chains[0]; ch.Strategy != "" {
		t.Errorf("ordered stored as %q", ch.Strategy)
	}
	set := control.ChainRouting{Strategy: ptr("weighted"), Gear: ptr("manual"), Weights: &map[string]int{a: 3, b: 1},
		Priority: &map[string]int{b: 1}, MaxWait: ptr("1500ms")}
	if err := c.UpdateChain(ctx, "mix", control.ChainInput{ChainRouting: set}, nil); err != nil {
		t.Fatal(err)
	}
	ch := r.last().Chains[0]
	if ch.Strategy != "weighted" || ch.Gear != "manual" || ch.Weights[a] != 3 || ch.Priority[b] != 1 || ch.MaxWait == nil || ch.MaxWait.Milliseconds() != 1500 {
		t.Errorf("stored %+v", ch)
	}
	if err := c.SetChainGear(ctx, "mix", "auto"); err != nil || r.last().Chains[0].Gear != "" {
		t.Errorf("gear back to auto: %v %q", err, r.last().Chains[0].Gear)
	}
	// The generated chain's gear is a top-level setting: it stays
	// generated.
	if err := c.SetChainGear(ctx, "auto", "manual"); err != nil {
		t.Fatal(err)
	}
	if c.UserChain("auto") || r.last().Routing.AutoGear != "manual" || control.ChainGear(r.last(), "auto") != "manual" {
		t.Errorf("auto gear: user %v, stored %q", c.UserChain("auto"), r.last().Routing.AutoGear)
	}
	for _, bad := range []struct {
		in    control.ChainRouting
		param string
	}{
		{control.ChainRouting{Strategy: ptr("fastest")}, "strategy"},
		{control.ChainRouting{Gear: ptr("turbo")}, "gear"},
		{control.ChainRouting{Weights: &map[string]int{a: -1}}, "weights"},
		{control.ChainRouting{Weights: &map[string]int{"groq/elsewhere": 2}}, "weights"},
		{control.ChainRouting{Priority: &map[string]int{a: 5000}}, "priority"},
		{control.ChainRouting{MaxWait: ptr("forever")}, "max_wait"},
		{control.ChainRouting{MaxWait: ptr("2h")}, "max_wait"},
	} {
		err := c.UpdateChain(ctx, "mix", control.ChainInput{ChainRouting: bad.in}, nil)
		var ce *control.Error
		if !errors.As(err, &ce) || ce.Param != bad.param {
			t.Errorf("%+v: %v", bad.in, err)
		}
	}
	if err := c.SetChainGear(ctx, "nope", "manual"); err == nil {
		t.Error("gear of an unknown chain")
	}
}
