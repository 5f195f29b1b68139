package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/store"
	"freelane/backend/tier"
	"freelane/backend/vault"
)

// The admin API decodes its JSON bodies as decode in backend/api does
// (unknown fields refused) and hands them to the control plane. These fuzz
// targets feed arbitrary bodies through the same steps: nothing may panic,
// and every change the control plane accepts must leave a configuration
// that it still reads back.

// fuzzControl opens a control plane with one provider, groq/llama.
func fuzzControl(tb testing.TB) *control.Control {
	tb.Helper()
	dir := tb.TempDir()
	db, err := store.Open(context.Background(), filepath.Join(dir, "f.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	v, err := vault.Open(context.Background(), vault.Options{DataDir: dir})
	if err != nil {
		tb.Fatal(err)
	}
	seed := config.Default()
	seed.Providers = []config.Provider{{Name: "groq", Kind: config.KindOpenAI, Tier: tier.Free,
		BaseURL: "https://api.groq.com/openai/v1", Models: []config.Model{{ID: "llama", ParamsB: 70, Context: 8192}}}}
	c, err := control.Open(context.Background(), control.Options{DB: db, Vault: v, Seed: seed,
		Apply: func(*config.Config) error { return nil }, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// decodeStrict decodes as the admin API does.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// userError fails the test for an error that is not the user's to fix: a
// control plane refusal must always say which field is wrong.
func userError(t *testing.T, what string, err error) {
	t.Helper()
	var ce *control.Error
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("%s: an error that is not a user error: %v", what, err)
	}
}

func FuzzProviderInput(f *testing.F) {
	f.Add([]byte(`{"name":"d","kind":"openai","tier":"own","base_url":"http://127.0.0.1:1/v1","models":[{"id":"m","params_b":8,"context":8192}]}`))
	f.Add([]byte(`{"tier":"local","keyless":true,"timeouts":{"connect":"1s"},"limits":{"rpm":3,"reset":"daily 00:00 UTC"}}`))
	c := fuzzControl(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		var add control.ProviderInput
		if decodeStrict(data, &add) == nil {
			if _, err := c.AddProvider(ctx, add); err == nil {
				if _, err := c.Provider(add.Name); err != nil {
					t.Fatalf("added %q but cannot read it back: %v", add.Name, err)
				}
				if err := c.DeleteProvider(ctx, add.Name); err != nil {
					t.Fatalf("cannot delete the added %q: %v", add.Name, err)
				}
			} else {
				userError(t, "add", err)
			}
		}
		// The same body as a patch of the existing provider.
		var patch control.ProviderInput
		if decodeStrict(data, &patch) == nil {
			if _, err := c.UpdateProvider(ctx, "groq", patch); err != nil {
				userError(t, "update", err)
			}
		}
		_ = c.Providers()
	})
}

func FuzzBudgets(f *testing.F) {
	f.Add([]byte(`[{"scope":"global","period":"day","limit":10,"action":"free-only"}]`))
	f.Add([]byte(`[{"scope":"chain:main","period":"month","limit":20,"action":"block","spent":3}]`))
	c := fuzzControl(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var in []control.BudgetJSON
		if decodeStrict(data, &in) != nil {
			return
		}
		userError(t, "budgets", c.SetBudgets(context.Background(), in))
		_ = c.Budgets()
	})
}

func FuzzLimits(f *testing.F) {
	f.Add([]byte(`{"limits":{"rpm":30,"rpd":1000,"tpm":6000,"tpd":0,"concurrency":2,"reset":"rolling 24h"},"price":{"input":0.1,"output":0.2},"credit_expires":"2027-01-31"}`))
	f.Add([]byte(`{"provider":"groq","model":"llama","limits":null}`))
	c := fuzzControl(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		var model control.ModelLimitsInput
		if decodeStrict(data, &model) == nil {
			userError(t, "model limits", c.SetModelLimits(ctx, "groq", "llama", model))
		}
		var provider control.LimitsJSON
		if decodeStrict(data, &provider) == nil {
			userError(t, "provider limits", c.SetProviderLimits(ctx, "groq", &provider))
		}
		_ = c.Limits()
	})
}
