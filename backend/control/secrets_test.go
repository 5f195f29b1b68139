package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/tier"
)

const (
	testKey    = "gsk_test_0123456789abcdef"
	testHeader = "tok-secret-header-0123"
)

func secretSeed(url string) *config.Config {
	cfg := config.Default()
	cfg.Providers = []config.Provider{{
		Name: "groq", Kind: config.KindOpenAI, Tier: tier.Free, BaseURL: url,
		Headers: map[string]string{"X-Token": testHeader, "X-Title": "${APP_TITLE}"},
		Models:  []config.Model{{ID: "big", Context: 8192}},
	}}
	return cfg
}

func setKey(t *testing.T, c *control.Control) {
	t.Helper()
	k := testKey
	if _, err := c.SetKey(context.Background(), "groq", &k); err != nil {
		t.Fatal(err)
	}
}

func TestAPIInputIsLiteral(t *testing.T) {
	r := newRig(t)
	r.env["AWS_SECRET_ACCESS_KEY"], r.env["X"] = "aws-very-secret", "expanded"
	c := r.open(nil)
	var in control.ProviderInput
	body := `{"name":"p","tier":"free","base_url":"https://example.com/v1","headers":{"X-Aws":"${AWS_SECRET_ACCESS_KEY}"},"models":[{"id":"m-${X}"}]}`
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatal(err)
	}
	v, err := c.AddProvider(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if v.Models[0].ID != "m-${X}" {
		t.Errorf("model id shows as %q", v.Models[0].ID)
	}
	if got := v.Headers["X-Aws"]; strings.Contains(got, "aws-very-secret") || got == "${AWS_SECRET_ACCESS_KEY}" {
		t.Errorf("header shows as %q, want it masked", got)
	}
	p, _ := r.last().Provider("p")
	if p.Headers["X-Aws"] != "${AWS_SECRET_ACCESS_KEY}" || p.Models[0].ID != "m-${X}" {
		t.Errorf("effective header %q, model %q: the API's input was expanded", p.Headers["X-Aws"], p.Models[0].ID)
	}
	// The same after a restart, from what was stored.
	r.reopen()
	c = r.open(nil)
	p, _ = r.last().Provider("p")
	if p.Headers["X-Aws"] != "${AWS_SECRET_ACCESS_KEY}" || p.Models[0].ID != "m-${X}" {
		t.Errorf("after a restart: effective header %q, model %q", p.Headers["X-Aws"], p.Models[0].ID)
	}
	if v, _ := c.Provider("p"); v.Models[0].ID != "m-${X}" {
		t.Errorf("after a restart the model shows as %q", v.Models[0].ID)
	}
}

func TestHeadersAreMaskedSealedAndKept(t *testing.T) {
	r := newRig(t)
	r.env["APP_TITLE"] = "FreeLane"
	c := r.open(secretSeed("https://api.groq.com/openai/v1"))
	v := c.Providers()[0]
	if got := v.Headers["X-Token"]; got == testHeader || !strings.HasPrefix(got, "tok-...") {
		t.Errorf("X-Token shows as %q", got)
	}
	if got := v.Headers["X-Title"]; got != "${APP_TITLE}" {
		t.Errorf("a reference shows as %q", got)
	}
	// Sending the view back keeps the stored value.
	body, _ := json.Marshal(v)
	if err := edit(t, c, string(body)); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.last().Provider("groq"); p.Headers["X-Token"] != testHeader || p.Headers["X-Title"] != "FreeLane" {
		t.Errorf("effective headers after writing the view back: %v", p.Headers)
	}
	// Nothing in the database holds the value in plaintext.
	r.db.Close()
	for _, name := range []string{"f.db", "f.db-wal"} {
		raw, err := os.ReadFile(filepath.Join(r.dir, name))
		if err != nil {
			continue
		}
		if bytes.Contains(raw, []byte(testHeader)) {
			t.Errorf("%s holds the header value in plaintext", name)
		}
	}
	r.reopen()
	r.open(nil)
	if p, _ := r.last().Provider("groq"); p.Headers["X-Token"] != testHeader {
		t.Errorf("after a restart the header is %q", p.Headers["X-Token"])
	}
}

func TestABaseURLChangeForgetsTheKey(t *testing.T) {
	r := newRig(t)
	r.env["APP_TITLE"] = "FreeLane"
	c := r.open(secretSeed("https://api.groq.com/openai/v1"))
	setKey(t, c)
	var in control.ProviderInput
	if err := json.Unmarshal([]byte(`{"base_url":"http://attacker.example/v1"}`), &in); err != nil {
		t.Fatal(err)
	}
	v, err := c.UpdateProvider(context.Background(), "groq", in)
	if err != nil {
		t.Fatal(err)
	}
	if v.Key.Set || len(v.Headers) != 0 || !strings.Contains(v.Notice, "removed its key and the values of headers X-Title, X-Token") {
		t.Errorf("after moving: key %+v, headers %v, notice %q", v.Key, v.Headers, v.Notice)
	}
	if p, _ := r.last().Provider("groq"); p.APIKey != "" || len(p.Headers) != 0 {
		t.Errorf("the effective provider still sends %q %v", p.APIKey, p.Headers)
	}
	// A key sent with the move goes along, bound to the new address.
	if err := json.Unmarshal([]byte(`{"base_url":"https://new.example/v1","api_key":"`+testKey+`","headers":{"X-Token":"`+testHeader+`"}}`), &in); err != nil {
		t.Fatal(err)
	}
	if v, err = c.UpdateProvider(context.Background(), "groq", in); err != nil {
		t.Fatal(err)
	}
	if !v.Key.Set || v.Notice != "" {
		t.Errorf("a key given with the move: %+v %q", v.Key, v.Notice)
	}
	// A change of headers alone also forgets it.
	if err := json.Unmarshal([]byte(`{"headers":{"X-Token":"other-value-123456"}}`), &in); err != nil {
		t.Fatal(err)
	}
	if v, err = c.UpdateProvider(context.Background(), "groq", in); err != nil {
		t.Fatal(err)
	}
	if v.Key.Set || !strings.Contains(v.Notice, "its key") {
		t.Errorf("after a header change: %+v %q", v.Key, v.Notice)
	}
}

func TestAnEnvKeyDoesNotFollowAMove(t *testing.T) {
	r := newRig(t)
	r.env["GROQ_API_KEY"] = "gsk_env_1234567890"
	c := r.open(patchSeed())
	if err := edit(t, c, `{"base_url":"http://attacker.example/v1"}`); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.last().Provider("groq"); p.APIKey != "" {
		t.Errorf("the environment key follows the provider to the new address: %q", p.APIKey)
	}
}

func TestASeedWithAnotherURLForgetsTheDashboardKey(t *testing.T) {
	r := newRig(t)
	c := r.open(secretSeed("https://api.groq.com/openai/v1"))
	setKey(t, c)
	r.reopen()
	r.open(secretSeed("https://api.groq.com/openai/v1"))
	if p, _ := r.last().Provider("groq"); p.APIKey != testKey {
		t.Fatalf("the same seed lost the key: %q", p.APIKey)
	}
	r.reopen()
	r.open(secretSeed("http://elsewhere.example/v1"))
	if p, _ := r.last().Provider("groq"); p.APIKey != "" {
		t.Errorf("a seed with another base_url kept the dashboard key: %q", p.APIKey)
	}
}
