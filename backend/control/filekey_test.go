package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"freelane/backend/config"
	"freelane/backend/control"
)

const fileKeySeed = `
providers:
  - {name: groq, tier: free, base_url: "https://api.groq.com/openai/v1", api_key: "${GROQ_API_KEY}", models: [{id: llama}]}
  - {name: lit, tier: own, base_url: "https://api.example.com/v1", api_key: "sk-file-literal-1111", models: [{id: m}]}
  - {name: lab, tier: local, base_url: "http://192.168.1.20:8000/v1", keyless: true, models: [{id: q}]}
  - {name: open, tier: own, base_url: "https://open.example.com/v1", models: [{id: o}]}
`

// fileSeed parses the config file as a start of FreeLane does, with the
// rig's environment.
func fileSeed(t *testing.T, r *rig, text string) *config.Config {
	t.Helper()
	seed, _, err := config.Parse("seed.yaml", []byte(text), func(n string) (string, bool) { v, ok := r.env[n]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return seed
}

func appliedKey(t *testing.T, r *rig, name string) string {
	t.Helper()
	p, ok := r.last().Provider(name)
	if !ok {
		t.Fatalf("no provider %q applied", name)
	}
	return p.APIKey
}

// TestTheConfigFileKeyWinsAcrossRestarts: keys pasted in the dashboard do
// not outlive the config file. A key set for a provider while FreeLane ran
// without the file (or by an older FreeLane) is dropped once the file
// gives that provider's key, and every start with the same file and
// environment applies the same keys.
func TestTheConfigFileKeyWinsAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)

	// First run without the file: the keys are the dashboard's.
	c := r.open(nil)
	for _, name := range []string{"groq", "lit", "lab"} {
		in := control.ProviderInput{Name: name, Tier: "own", BaseURL: "https://api.groq.com/openai/v1", Models: []control.ModelSpec{{ID: "x"}},
			APIKey: ptr("sk-dashboard-" + name + "-2222")}
		switch name {
		case "lit":
			in.BaseURL = "https://api.example.com/v1"
		case "lab":
			in.BaseURL = "http://192.168.1.20:8000/v1"
		}
		if _, err := c.AddProvider(ctx, in); err != nil {
			t.Fatal(err)
		}
	}

	// Every later start with the file, twice over the same data directory.
	r.env["GROQ_API_KEY"] = "gsk_from_the_environment_1"
	for run := 1; run <= 2; run++ {
		r.reopen()
		c = r.open(fileSeed(t, r, fileKeySeed))
		if k := appliedKey(t, r, "groq"); k != "gsk_from_the_environment_1" {
			t.Errorf("run %d: groq's key is %q, want the one the file names (GROQ_API_KEY)", run, k)
		}
		if k := appliedKey(t, r, "lit"); k != "sk-file-literal-1111" {
			t.Errorf("run %d: lit's key is %q, want the one written in the file", run, k)
		}
		if k := appliedKey(t, r, "lab"); k != "" {
			t.Errorf("run %d: the keyless provider was given %q", run, k)
		}
		for _, v := range c.Providers() {
			want := map[string]string{"groq": control.SourceEnv, "lit": control.SourceConfig, "lab": control.SourceKeyless, "open": control.SourceNone}[v.Name]
			if v.Key.Source != want {
				t.Errorf("run %d: %s's key source is %q, want %q", run, v.Name, v.Key.Source, want)
			}
			if wantFile := v.Name != "open"; (v.Key.File == "seed.yaml") != wantFile {
				t.Errorf("run %d: %s's key file is %q", run, v.Name, v.Key.File)
			}
		}
	}

	// The environment is the file's source for groq: a new value applies
	// at the next start.
	r.env["GROQ_API_KEY"] = "gsk_rotated_in_the_env_3"
	r.reopen()
	r.open(fileSeed(t, r, fileKeySeed))
	if k := appliedKey(t, r, "groq"); k != "gsk_rotated_in_the_env_3" {
		t.Errorf("after rotating GROQ_API_KEY: %q", k)
	}
}

// TestTheDashboardCannotSetAKeyTheFileGives: setting, replacing or
// deleting such a key is refused with a message naming the file; a
// provider the file gives no key keeps what is pasted for it, across a
// restart.
func TestTheDashboardCannotSetAKeyTheFileGives(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.env["GROQ_API_KEY"] = "gsk_from_the_environment_1"
	c := r.open(fileSeed(t, r, fileKeySeed))

	refused := func(what string, err error, how string) {
		t.Helper()
		var ce *control.Error
		if !errors.As(err, &ce) || ce.Status != http.StatusForbidden || ce.Param != "api_key" ||
			!strings.Contains(ce.Message, "the config file seed.yaml gives the key") || !strings.Contains(ce.Message, how) {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err := c.SetKey(ctx, "groq", ptr("gsk_pasted_in_the_dashboard"))
	refused("set groq's key", err, "GROQ_API_KEY")
	_, err = c.SetKey(ctx, "groq", nil)
	refused("delete groq's key", err, "GROQ_API_KEY")
	_, err = c.SetKey(ctx, "lit", ptr("sk-pasted-in-the-dashboard"))
	refused("replace lit's key", err, "(api_key)")
	_, err = c.SetKey(ctx, "lab", ptr("sk-pasted-in-the-dashboard"))
	refused("give lab a key", err, "keyless: true")
	var in control.ProviderInput
	if err := json.Unmarshal([]byte(`{"api_key":"sk-pasted-in-the-dashboard"}`), &in); err != nil {
		t.Fatal(err)
	}
	_, err = c.UpdateProvider(ctx, "lit", in)
	refused("a provider edit with a key", err, "(api_key)")
	if k := appliedKey(t, r, "groq"); k != "gsk_from_the_environment_1" {
		t.Errorf("groq's key became %q", k)
	}
	if k := appliedKey(t, r, "lit"); k != "sk-file-literal-1111" {
		t.Errorf("lit's key became %q", k)
	}
	if v, _ := c.Provider("lab"); !v.Keyless {
		t.Error("a refused key still made lab want one")
	}

	// The file says nothing about open's key: the dashboard's counts,
	// and stays after a restart with the same file.
	if _, err := c.SetKey(ctx, "open", ptr("sk-pasted-for-open-4444")); err != nil {
		t.Fatal(err)
	}
	r.reopen()
	c = r.open(fileSeed(t, r, fileKeySeed))
	if k := appliedKey(t, r, "open"); k != "sk-pasted-for-open-4444" {
		t.Errorf("open's dashboard key after a restart: %q", k)
	}
	if v, _ := c.Provider("open"); v.Key.Source != control.SourceDashboard || v.Key.File != "" {
		t.Errorf("open's key: %+v", v.Key)
	}
}

// TestAFileKeyReplacesAnEarlierFilesKey: a variable the file now names is
// the key, also when it is unset; a key an earlier version of the file
// wrote literally does not stand in for it.
func TestAFileKeyReplacesAnEarlierFilesKey(t *testing.T) {
	r := newRig(t)
	r.open(fileSeed(t, r, `
providers:
  - {name: groq, tier: free, base_url: "https://api.groq.com/openai/v1", api_key: "gsk-old-literal-5555", models: [{id: llama}]}
`))
	if k := appliedKey(t, r, "groq"); k != "gsk-old-literal-5555" {
		t.Fatalf("first file: %q", k)
	}
	r.reopen()
	r.open(fileSeed(t, r, `
providers:
  - {name: groq, tier: free, base_url: "https://api.groq.com/openai/v1", api_key: "${GROQ_API_KEY}", models: [{id: llama}]}
`))
	if k := appliedKey(t, r, "groq"); k != "" {
		t.Errorf("with GROQ_API_KEY unset the old literal key is still used: %q", k)
	}
}

// TestACatalogEntryInTheFileReadsItsVariables: a catalog entry the file
// lists without api_key takes its key from the entry's variables, which
// the file thereby names; the dashboard cannot set it, also while the
// variable is unset.
func TestACatalogEntryInTheFileReadsItsVariables(t *testing.T) {
	r := newRig(t)
	c := r.open(fileSeed(t, r, "providers:\n  - catalog: cerebras\n"))
	v, err := c.Provider("cerebras")
	if err != nil {
		t.Fatal(err)
	}
	if v.Key.File != "seed.yaml" || v.Key.Set || len(v.Key.Env) == 0 {
		t.Fatalf("the catalog entry's key: %+v", v.Key)
	}
	_, err = c.SetKey(context.Background(), "cerebras", ptr("csk-pasted-in-the-dashboard"))
	var ce *control.Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "(from "+v.Key.Env[0]) {
		t.Errorf("setting the key of a catalog entry in the file: %v", err)
	}
}

// TestMovingAFileProviderSaysTheFileGivesItsKey: moving a provider whose
// key the file gives removes the key (it is bound to its destination),
// and the notice does not ask for a key the dashboard cannot take.
func TestMovingAFileProviderSaysTheFileGivesItsKey(t *testing.T) {
	r := newRig(t)
	c := r.open(fileSeed(t, r, fileKeySeed))
	var in control.ProviderInput
	if err := json.Unmarshal([]byte(`{"base_url":"http://elsewhere.example/v1"}`), &in); err != nil {
		t.Fatal(err)
	}
	v, err := c.UpdateProvider(context.Background(), "lit", in)
	if err != nil {
		t.Fatal(err)
	}
	if k := appliedKey(t, r, "lit"); k != "" {
		t.Errorf("the file's key followed the provider to the new address: %q", k)
	}
	if !strings.Contains(v.Notice, "the config file seed.yaml gives this provider's key") || strings.Contains(v.Notice, "send them again") {
		t.Errorf("notice %q", v.Notice)
	}
	// The next start puts the file's provider and key back.
	r.reopen()
	r.open(fileSeed(t, r, fileKeySeed))
	if k := appliedKey(t, r, "lit"); k != "sk-file-literal-1111" {
		t.Errorf("after a restart: %q", k)
	}
}
