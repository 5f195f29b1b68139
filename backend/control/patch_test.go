package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/defaults"
	"freelane/backend/tier"
)

// patchSeed is one free provider with settings the edit form has no
// fields for.
func patchSeed() *config.Config {
	cfg := config.Default()
	cfg.Providers = []config.Provider{{
		Name: "groq", Kind: config.KindOpenAI, Tier: tier.Free, BaseURL: "https://api.groq.com/openai/v1",
		APIKey: "${GROQ_API_KEY}", APIKeyEnv: []string{"GROQ_API_KEY"},
		Headers:     map[string]string{"X-Title": "${APP_TITLE}"},
		StreamUsage: ptr(false),
		Models: []config.Model{
			{ID: "big", ParamsB: 70, Context: 131072, MaxOutput: 8192,
				Limits: &config.Limits{RPD: 1000}, Price: &config.Price{Input: 1, Output: 2}, CreditExpires: "2027-01-31"},
			{ID: "small", ParamsB: 8, Context: 8192},
		},
		Timeouts: config.Timeouts{Connect: 3 * time.Second, Header: 40 * time.Second, FirstToken: 15 * time.Second, Idle: 25 * time.Second},
		Limits:   &config.Limits{RPM: 30},
	}}
	return cfg
}

// edit decodes body as the API does and applies it to groq.
func edit(t *testing.T, c *control.Control, body string) error {
	t.Helper()
	var in control.ProviderInput
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		return err
	}
	_, err := c.UpdateProvider(context.Background(), "groq", in)
	return err
}

func stored(c *control.Control) config.Provider {
	p, _ := c.Config().Provider("groq")
	return *p
}

func TestEditChangesOnlyWhatItCarries(t *testing.T) {
	r := newRig(t)
	c := r.open(patchSeed())
	before := stored(c)
	if err := edit(t, c, `{"disabled": true}`); err != nil {
		t.Fatal(err)
	}
	want := before
	want.Disabled = true
	if got := stored(c); !reflect.DeepEqual(got, want) {
		t.Fatalf("an edit of disabled changed more:\ngot  %+v\nwant %+v", got, want)
	}

	// Keys match fields ignoring case, as encoding/json matches them.
	if err := edit(t, c, `{"Disabled": false, "timeouts": {"idle": "1m"}}`); err != nil {
		t.Fatal(err)
	}
	want.Disabled, want.Timeouts.Idle = false, time.Minute
	if got := stored(c); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a second edit:\ngot  %+v\nwant %+v", got, want)
	}

	// "" is the default; headers replace the whole map.
	if err := edit(t, c, `{"timeouts": {"connect": ""}, "headers": {}}`); err != nil {
		t.Fatal(err)
	}
	if got := stored(c); got.Timeouts.Connect != defaults.ConnectTimeout || got.Timeouts.Header != 40*time.Second || len(got.Headers) != 0 {
		t.Errorf("timeouts %+v headers %v", got.Timeouts, got.Headers)
	}
}

func TestEditModelsKeepWhatTheyDoNotSend(t *testing.T) {
	r := newRig(t)
	c := r.open(patchSeed())
	// big changes its context only, small goes, tiny is new.
	if err := edit(t, c, `{"models": [{"id": "tiny", "params_b": 1}, {"id": "big", "context": 65536}]}`); err != nil {
		t.Fatal(err)
	}
	want := []config.Model{
		{ID: "tiny", ParamsB: 1},
		{ID: "big", ParamsB: 70, Context: 65536, MaxOutput: 8192,
			Limits: &config.Limits{RPD: 1000}, Price: &config.Price{Input: 1, Output: 2}, CreditExpires: "2027-01-31"},
	}
	if got := stored(c).Models; !reflect.DeepEqual(got, want) {
		t.Fatalf("models %+v", got)
	}
	// Zero sent is zero stored; a zero price makes the model free.
	if err := edit(t, c, `{"models": [{"id": "big", "max_output": 0, "price": {"input": 0, "output": 0}, "credit_expires": ""}]}`); err != nil {
		t.Fatal(err)
	}
	if m := stored(c).Models[0]; m.MaxOutput != 0 || m.Price != nil || m.CreditExpires != "" || m.Context != 65536 || m.Limits == nil {
		t.Errorf("model %+v", m)
	}
}

func TestEditOptionalBools(t *testing.T) {
	r := newRig(t)
	c := r.open(patchSeed())
	// true is what an unset probe means for a free provider: it stays unset.
	if err := edit(t, c, `{"probe": true, "stream_usage": false}`); err != nil {
		t.Fatal(err)
	}
	if p := stored(c); p.Probe != nil || p.StreamUsage == nil || *p.StreamUsage {
		t.Errorf("probe %v stream_usage %v", p.Probe, p.StreamUsage)
	}
	// Null is the default.
	if err := edit(t, c, `{"stream_usage": null}`); err != nil {
		t.Fatal(err)
	}
	if p := stored(c); p.StreamUsage != nil {
		t.Errorf("stream_usage %v after null", *p.StreamUsage)
	}
	// With the tier changed to own, true is no longer the default.
	if err := edit(t, c, `{"tier": "own", "probe": true}`); err != nil {
		t.Fatal(err)
	}
	if p := stored(c); p.Probe == nil || !*p.Probe {
		t.Errorf("probe %v after a tier change", p.Probe)
	}
	if v := c.Providers()[0]; !v.Probe || !v.StreamUsage {
		t.Errorf("view %+v", v)
	}
}

func TestEditShowsAndKeepsReferences(t *testing.T) {
	r := newRig(t)
	r.env["GROQ_API_KEY"], r.env["APP_TITLE"] = "gsk_env_1234", "FreeLane"
	c := r.open(patchSeed())
	v := c.Providers()[0]
	if v.Headers["X-Title"] != "${APP_TITLE}" || !v.Key.Set || v.Key.Source != control.SourceEnv {
		t.Fatalf("view %+v", v)
	}
	body, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	before := stored(c)
	if err := edit(t, c, string(body)); err != nil {
		t.Fatal(err)
	}
	if got := stored(c); !reflect.DeepEqual(got, before) {
		t.Errorf("writing the view back changed the provider:\ngot  %+v\nwant %+v", got, before)
	}
	if p, _ := r.last().Provider("groq"); p.APIKey != "gsk_env_1234" || p.Headers["X-Title"] != "FreeLane" {
		t.Errorf("effective %q %v", p.APIKey, p.Headers)
	}
}

func TestEditRefusals(t *testing.T) {
	r := newRig(t)
	c := r.open(patchSeed())
	for body, param := range map[string]string{
		`{"name": "other"}`:            "name",
		`{"tier": ""}`:                 "tier",
		`{"timeouts": {"idle": "4"}}`:  "timeouts.idle",
		`{"models": []}`:               "models",
		`{"models": [{"context": 1}]}`: "models[0].id",
	} {
		var ce *control.Error
		if err := edit(t, c, body); !errors.As(err, &ce) || ce.Param != param {
			t.Errorf("%s: %v (%+v)", body, err, ce)
		}
	}
	for _, body := range []string{`{"bogus": 1}`, `{"models": [{"id": "big", "size": 1}]}`, `{"key": "sk-123"}`} {
		if err := edit(t, c, body); err == nil {
			t.Errorf("%s accepted", body)
		}
	}
}

func TestChainRoundTripAndDefault(t *testing.T) {
	r := newRig(t)
	c := r.open(patchSeed())
	ctx := context.Background()
	auto := []string{"groq/big", "groq/small"}
	// The generated chain sent back as it is stays generated.
	if err := c.UpdateChain(ctx, "auto", control.ChainInput{Backends: &auto, Generated: ptr(true), Default: ptr(true)}, auto); err != nil {
		t.Fatal(err)
	}
	if c.UserChain("auto") {
		t.Fatal("sending the generated chain back took it over")
	}
	if err := c.CreateChain(ctx, "fast", []string{"groq/small"}, control.ChainRouting{}); err != nil {
		t.Fatal(err)
	}
	var ce *control.Error
	if err := c.UpdateChain(ctx, "fast", control.ChainInput{Generated: ptr(true)}, nil); !errors.As(err, &ce) || ce.Param != "generated" {
		t.Errorf("generated user chain: %v", err)
	}
	if err := c.UpdateChain(ctx, "fast", control.ChainInput{Default: ptr(true)}, nil); err != nil || c.DefaultChain() != "fast" {
		t.Fatalf("default: %v %q", err, c.DefaultChain())
	}
	// A rename takes the default along.
	if err := c.UpdateChain(ctx, "fast", control.ChainInput{Name: ptr("quick")}, nil); err != nil || c.DefaultChain() != "quick" {
		t.Fatalf("rename: %v %q", err, c.DefaultChain())
	}
	if err := c.UpdateChain(ctx, "auto", control.ChainInput{Default: ptr(false)}, auto); err != nil || c.DefaultChain() != "quick" {
		t.Fatalf("auto not default: %v %q", err, c.DefaultChain())
	}
	if err := c.UpdateChain(ctx, "quick", control.ChainInput{Default: ptr(false)}, nil); err != nil || c.DefaultChain() != "" {
		t.Fatalf("quick no longer default: %v %q", err, c.DefaultChain())
	}
	if err := c.UpdateChain(ctx, "auto", control.ChainInput{Default: ptr(false)}, auto); !errors.As(err, &ce) || ce.Param != "default" {
		t.Errorf("auto off while default: %v", err)
	}
	// generated false takes auto over as it is.
	if err := c.UpdateChain(ctx, "auto", control.ChainInput{Generated: ptr(false)}, auto); err != nil || !c.UserChain("auto") {
		t.Fatalf("take over: %v", err)
	}
}

func TestLimitsEntryMustFitItsPath(t *testing.T) {
	r := newRig(t)
	c := r.open(patchSeed())
	var ce *control.Error
	in := control.ModelLimitsInput{Provider: ptr("other"), Model: ptr("big")}
	if err := c.SetModelLimits(context.Background(), "groq", "big", in); !errors.As(err, &ce) || ce.Param != "provider" {
		t.Errorf("provider mismatch: %v", err)
	}
	if err := (control.ModelLimitsInput{Price: &control.PriceJSON{Input: 1}}).Check("groq", ""); !errors.As(err, &ce) || ce.Param != "price" {
		t.Errorf("provider price: %v", err)
	}
	// An explicit default reset stays as written when it is sent back.
	cfg := patchSeed()
	cfg.Providers[0].Limits = &config.Limits{Reset: "daily 00:00 UTC"}
	c = r.open(cfg)
	entry := c.Limits()[0]
	if err := c.SetProviderLimits(context.Background(), "groq", &entry.Limits); err != nil {
		t.Fatal(err)
	}
	if l := stored(c).Limits; l == nil || l.Reset != "daily 00:00 UTC" || !strings.Contains(entry.Limits.Reset, "daily") {
		t.Errorf("limits %+v", l)
	}
}
