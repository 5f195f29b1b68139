package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/teamtest"
	"freelane/backend/tier"
	"freelane/backend/vault"
)

const (
	rtEnvKey     = "sk-rt-from-env-0123456789"
	rtLiteralKey = "sk-rt-literal-9876543210"
)

func ptrTo[T any](v T) *T { return &v }

// roundTripConfig sets every field of the configuration to a value that is
// neither zero nor a default, so that a field an edit drops, or resets to
// its default, shows as a difference. Keyless and a key cannot go together
// in one provider, so the fields are spread over three providers;
// TestRoundTripFixtureSetsEveryField checks that each field is set in at
// least one of them.
func roundTripConfig(upstream string) *config.Config {
	return &config.Config{
		Listen:       "127.0.0.1:0",
		AllowedHosts: []string{"freelane.lan"},
		// A web UI the user runs against FreeLane.
		AllowedOrigins: []string{"http://localhost:3000"},
		Server:         config.Server{Token: "rt-inbound-token-0123456789", LocalUsers: config.LocalUsersAny},
		Instance:       "office-1",
		State:          config.State{Redis: "redis://:rt-redis-secret@127.0.0.1:1/0", FailClosed: true},
		Store:          config.Store{Postgres: "postgres://fl:rt-pg-secret@127.0.0.1:1/freelane"},
		MaxBodyMB:      32,
		Requests:       config.Requests{BodyReadTimeout: 90 * time.Second, MaxInflightBodyMB: 512, ResponseRetentionDays: 7, ResponseStoreMB: 64},
		Providers: []config.Provider{
			{
				Name: "paid", Kind: config.KindOpenAI, Tier: tier.Own, Default: true, BaseURL: upstream,
				APIKey: rtEnvKey, APIKeyEnv: []string{"FREELANE_RT_KEY"}, KeyFile: "freelane.yaml",
				Headers: map[string]string{"HTTP-Referer": "https://freelane.example", "X-Title": "${FREELANE_RT_TITLE}"},
				// The upstream rejects stream_options: the setting the
				// dashboard used to lose.
				StreamUsage: ptrTo(false),
				Models: []config.Model{
					{
						ID: "meta/llama-3.3-70b", ParamsB: 70.5, Context: 131072, MaxOutput: 8192,
						Limits:        &config.Limits{RPM: 30, RPD: 1000, TPM: 60000, TPD: 2000000, Concurrency: 3, QueueWait: ptrTo(1500 * time.Millisecond), Reset: "rolling 24h"},
						Price:         &config.Price{Input: 0.15, Output: 0.6},
						CreditExpires: "2027-03-31",
					},
					{ID: "small", ParamsB: 8, Context: 32768, MaxOutput: 4096, Price: &config.Price{Input: 0.02, Output: 0.05, CacheRead: 0.01, CacheWrite: 0.025}},
				},
				Timeouts: config.Timeouts{Connect: 3 * time.Second, Header: 45 * time.Second, FirstToken: 25 * time.Second, Idle: 40 * time.Second},
				// Probes are off by default for own keys; this one asks.
				Probe:    ptrTo(true),
				Limits:   &config.Limits{RPM: 60, RPD: 5000, TPM: 100000, TPD: 9000000, Concurrency: 4, Reset: "monthly 1 06:00 UTC"},
				CacheTTL: time.Hour,
			},
			{
				Name: "lit", Kind: config.KindOpenAI, Tier: tier.Free, BaseURL: upstream, APIKey: rtLiteralKey,
				// A second key of the pool, sealed at rest like the first.
				APIKeys:     []string{"sk-rt-pool-literal-0123456789"},
				Headers:     map[string]string{"X-Team": "router"},
				StreamUsage: ptrTo(true),
				// Quirks and capabilities have no dashboard field yet; edits
				// must keep them.
				DropParams: []string{"parallel_tool_calls"},
				Models: []config.Model{{ID: "mid", ParamsB: 32, Context: 65536, MaxOutput: 2048,
					Capabilities: []string{"tools", "json"}, Endpoints: []string{"chat"}, DropParams: []string{"seed"},
					Limits: &config.Limits{RPD: 14400, Reset: "weekly mon 08:00 UTC"}}},
				Timeouts: config.Timeouts{Connect: 4 * time.Second, Header: 50 * time.Second, FirstToken: 21 * time.Second, Idle: 31 * time.Second},
				Disabled: true,
				// Probes are on by default for free tiers; this one declines.
				Probe:  ptrTo(false),
				Limits: &config.Limits{TPM: 6000, Reset: "daily 04:00 UTC"},
			},
			{
				Name: "box", Kind: config.KindOpenAI, Tier: tier.Local, BaseURL: upstream, Keyless: true,
				Headers:  map[string]string{"X-Local": "yes"},
				Models:   []config.Model{{ID: "qwen2.5-coder:7b", ParamsB: 7, Context: 32768, MaxOutput: 1024}},
				Timeouts: config.Timeouts{Connect: 2 * time.Second, Header: 90 * time.Second, FirstToken: 60 * time.Second, Idle: 45 * time.Second},
			},
			{
				// A Gemini provider with its explicit prompt cache on, which
				// only the configuration file sets so far.
				Name: "gem", Kind: config.KindGemini, Tier: tier.Own, BaseURL: upstream, APIKey: rtLiteralKey, ExplicitCache: true,
				Headers:  map[string]string{"X-Gem": "1"},
				Models:   []config.Model{{ID: "gemini-2.5-flash", Context: 1048576, MaxOutput: 65536}},
				Timeouts: config.Timeouts{Connect: 6 * time.Second, Header: 52 * time.Second, FirstToken: 23 * time.Second, Idle: 33 * time.Second},
			},
			{
				// A provider from the catalog, pointed at the fake vendor:
				// it is stored as given and completed from the catalog.
				Name: "cat", Catalog: "groq", Tier: tier.Free, BaseURL: upstream, APIKey: rtLiteralKey,
				Headers:  map[string]string{"X-Cat": "1"},
				Models:   []config.Model{{ID: "llama-3.1-8b-instant", Context: 8000}},
				Timeouts: config.Timeouts{Connect: 5 * time.Second, Header: 51 * time.Second, FirstToken: 22 * time.Second, Idle: 32 * time.Second},
			},
		},
		Catalog:   config.CatalogSettings{EnvKeys: ptrTo(false), AllowHTTPLoopback: true},
		Discovery: config.Discovery{Disabled: true, Ports: []int{11434, 1234}},
		// A server discovery found earlier, renamed, hidden and limited;
		// it does not answer now, and a chain still names it.
		Local: []config.LocalProvider{{Name: "desk", Kind: "ollama", Port: 11500, Hidden: true,
			Limits: &config.Limits{RPM: 12, RPD: 400, TPM: 9000, TPD: 90000, Concurrency: 1, Reset: "daily 03:00 UTC"}}},
		Chains: []config.Chain{
			{Name: "coding", Backends: []string{"paid/meta/llama-3.3-70b", "box/qwen2.5-coder:7b", "desk/llama3.2:3b"}},
			{Name: "cheap", Backends: []string{"box/qwen2.5-coder:7b", "paid/small"}, Strategy: config.StrategyWeighted,
				Weights: map[string]int{"paid/small": 3}, Priority: map[string]int{"paid/small": 2}, Gear: config.GearManual,
				MaxWait: ptrTo(1500 * time.Millisecond), Cache: &config.ChainCache{Enabled: true}},
		},
		Breaker: config.Breaker{Failures: 3, Open: 45 * time.Second, RateLimitCooldown: 90 * time.Second, HealthThreshold: 0.5},
		Probes:  config.Probes{Interval: 7 * time.Minute, OpenInterval: 40 * time.Second, Daily: 36 * time.Hour, Disabled: true},
		Budgets: []config.Budget{
			{Scope: "global", Period: "month", Limit: 25, Action: "free-only"},
			{Scope: "provider:paid", Period: "day", Limit: 2.5, Action: "block"},
			{Scope: "chain:cheap", Period: "month", Limit: 4, Action: "block"},
			{Scope: "provider:desk", Period: "day", Limit: 0.5, Action: "free-only"},
		},
		Ledger:       config.Ledger{RetentionDays: 45},
		DefaultChain: "coding",
		Aliases:      []config.Alias{{Pattern: "gpt-4*", Chain: "cheap"}, {Pattern: "claude-*", Chain: "coding"}},
		Routing: config.Routing{Score: config.ScoreWeights{Health: ptrTo(0.5), Headroom: ptrTo(0.15), Latency: ptrTo(0.15),
			Cost: ptrTo(0.1), Task: ptrTo(0.1)}, MinSamples: 8, MinScore: 0.25, AutoGear: config.GearManual},
		Tasks: []config.Task{
			{Name: "background", When: &config.TaskWhen{Model: "claude-*haiku*", Tools: ptrTo(false)}, Chain: "cheap"},
			{Name: "review", When: &config.TaskWhen{Thinking: ptrTo(true), PromptTokensOver: 30000}, Prefer: []string{"paid/meta/llama-3.3-70b"}},
		},
		Cache:      config.ResponseCache{Enabled: true, TTL: 20 * time.Minute, MaxMB: 64},
		Debug:      config.Debug{Pprof: true},
		RequestLog: config.RequestLog{Bodies: true, MaxBodyKB: 48, KeepDays: 60, Durable: ptrTo(true)},
		// Every kind switched off: on is the default.
		Notifications: config.Notifications{Breaker: ptrTo(false), Key: ptrTo(false), Quota: ptrTo(false), Budget: ptrTo(false), Local: ptrTo(false)},
	}
}

// asStored is the configuration as FreeLane must store it. The keys and the
// inbound token are the only differences, and deliberate ones: the
// document never holds a credential.
// An environment key stays the ${VAR} reference it came from, so a rotated
// variable is picked up; a literal key is sealed in the vault and leaves
// api_key empty. Which key is used is checked on the effective
// configuration instead.
func asStored(c *config.Config) *config.Config {
	c.Server = config.Server{}
	c.Instance, c.State, c.Store = "", config.State{}, config.Store{}
	for i := range c.Providers {
		p := &c.Providers[i]
		// Which file gives a key is told in the effective configuration
		// only.
		p.KeyFile = ""
		switch {
		case len(p.APIKeyEnv) > 0:
			p.APIKey = "${" + p.APIKeyEnv[0] + "}"
		default:
			p.APIKey = ""
		}
	}
	return c
}

// unsetFields returns the fields of the config package's structs that are
// zero in every value of that struct reachable from v.
func unsetFields(v any) []string {
	set := map[string]bool{}
	var fields []string
	var walkType func(t reflect.Type, seen map[reflect.Type]bool)
	walkType = func(t reflect.Type, seen map[reflect.Type]bool) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeFor[config.Config]().PkgPath() || seen[t] {
			return
		}
		seen[t] = true
		for f := range t.Fields() {
			fields = append(fields, t.Name()+"."+f.Name)
			walkType(f.Type, seen)
		}
	}
	var walk func(rv reflect.Value)
	walk = func(rv reflect.Value) {
		switch rv.Kind() {
		case reflect.Pointer:
			if !rv.IsNil() {
				walk(rv.Elem())
			}
		case reflect.Slice:
			for i := range rv.Len() {
				walk(rv.Index(i))
			}
		case reflect.Struct:
			for f, fv := range rv.Fields() {
				if !fv.IsZero() {
					set[rv.Type().Name()+"."+f.Name] = true
				}
				walk(fv)
			}
		}
	}
	rv := reflect.ValueOf(v)
	walkType(rv.Type(), map[reflect.Type]bool{})
	walk(rv)
	var unset []string
	for _, f := range fields {
		if !set[f] {
			unset = append(unset, f)
		}
	}
	return unset
}

// TestRoundTripFixtureSetsEveryField keeps the round-trip fixture complete:
// a field added to the configuration later must be given a value there, or
// the round trip would not notice an edit dropping it.
func TestRoundTripFixtureSetsEveryField(t *testing.T) {
	if unset := unsetFields(roundTripConfig("http://127.0.0.1:1")); len(unset) > 0 {
		t.Fatalf("the round-trip fixture leaves these fields zero everywhere; give them a non-default value: %s", strings.Join(unset, ", "))
	}
}

// diff lists the paths at which a and b differ, field by field.
func diff(path string, a, b reflect.Value) []string {
	if a.Kind() != b.Kind() {
		return []string{path}
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return []string{fmt.Sprintf("%s: %s != %s", path, show(a), show(b))}
			}
			return nil
		}
		return diff(path, a.Elem(), b.Elem())
	case reflect.Struct:
		var out []string
		for i := range a.NumField() {
			out = append(out, diff(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))...)
		}
		return out
	case reflect.Slice:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return []string{fmt.Sprintf("%s: %v != %v", path, a, b)}
		}
		var out []string
		for i := range a.Len() {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))...)
		}
		return out
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return []string{fmt.Sprintf("%s: %#v != %#v", path, a.Interface(), b.Interface())}
		}
		return nil
	}
}

// show prints a pointer as what it points to.
func show(v reflect.Value) string {
	if v.IsNil() {
		return "nil"
	}
	return fmt.Sprintf("&%#v", v.Elem().Interface())
}

// sameConfig fails the test unless the stored configuration is want.
func (e *env) sameConfig(step string, want *config.Config) {
	e.t.Helper()
	got := e.g.Control().Config()
	for i := range got.Providers {
		if p := &got.Providers[i]; p.Catalog != "" && p.APIKey == "" {
			// A provider from the catalog names the catalog's key
			// variables, which are not stored.
			p.APIKeyEnv = nil
		}
	}
	if !reflect.DeepEqual(got, want) {
		e.t.Fatalf("%s the stored configuration differs from the original:\n%s", step,
			strings.Join(diff("config", reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem()), "\n"))
	}
	eff, err := e.g.Control().Effective()
	if err != nil {
		e.t.Fatal(err)
	}
	keys := map[string]string{}
	for _, p := range eff.Providers {
		keys[p.Name] = p.APIKey
	}
	if keys["paid"] != rtEnvKey || keys["lit"] != rtLiteralKey || keys["box"] != "" || keys["cat"] != rtLiteralKey {
		e.t.Fatalf("%s the keys in use changed: %q", step, keys)
	}
}

// get reads an admin list as raw JSON entries.
func (e *env) get(path string) ([]json.RawMessage, []byte) {
	e.t.Helper()
	r := e.do("GET", path, "", nil)
	if r.status != 200 {
		e.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(r.body, &list); err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	return list, r.body
}

// write sends body and fails the test unless it is accepted.
func (e *env) write(method, path string, body []byte) {
	e.t.Helper()
	if r := e.do(method, path, string(body), nil); r.status != 200 {
		e.t.Fatalf("%s %s with what GET returned: %d %s\nbody: %s", method, path, r.status, r.body, body)
	}
}

// TestAdminRoundTripChangesNothing reads every part of a configuration
// that sets every field through the admin API, writes it back as it was
// read, and checks that the stored configuration is still the original,
// also after a restart.
func TestAdminRoundTripChangesNothing(t *testing.T) {
	t.Setenv("FREELANE_RT_KEY", rtEnvKey)
	t.Setenv("FREELANE_RT_TITLE", "FreeLane round trip")
	// store.postgres is set, so the instance keeps its configuration on
	// a real PostgreSQL and seals keys with the team's master key.
	p := teamtest.StartPostgres(t)
	dsn := p.DSN(p.NewDatabase(t))
	t.Setenv(gateway.VaultKeyEnv, vault.NewKey())
	// state.redis is a real Redis too: with fail_closed, an unreachable
	// one would refuse the fixture's paid backend.
	r := teamtest.StartRedis(t)
	e := newEnv(t, func(c *config.Config) {
		*c = *roundTripConfig(c.Providers[0].BaseURL)
		c.Store.Postgres = dsn
		c.State.Redis = fmt.Sprintf("redis://%s/%d", r.Addr, r.NewDB(t))
	})
	want := asStored(roundTripConfig(e.up.URL))
	e.sameConfig("after seeding", want)

	providers, before := e.get("/api/providers")
	if !strings.Contains(string(before), `"stream_usage":false`) || !strings.Contains(string(before), `"X-Title":"${FREELANE_RT_TITLE}"`) {
		t.Fatalf("the provider view lacks stream_usage or shows headers expanded: %s", before)
	}
	for _, p := range providers {
		var v struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(p, &v); err != nil {
			t.Fatal(err)
		}
		e.write("PUT", "/api/providers/"+v.Name, p)
		e.write("PATCH", "/api/providers/"+v.Name, p)
	}
	e.sameConfig("after PUT and PATCH of every provider as GET showed it,", want)
	if _, after := e.get("/api/providers"); !bytes.Equal(before, after) {
		t.Errorf("the provider views changed:\nbefore %s\nafter  %s", before, after)
	}

	chains, before := e.get("/api/chains")
	for _, c := range chains {
		var v struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(c, &v); err != nil {
			t.Fatal(err)
		}
		e.write("PUT", "/api/chains/"+url.PathEscape(v.Name), c)
	}
	e.sameConfig("after PUT of every chain as GET showed it,", want)
	if _, after := e.get("/api/chains"); !bytes.Equal(before, after) {
		t.Errorf("the chain views changed:\nbefore %s\nafter  %s", before, after)
	}

	_, budgets := e.get("/api/budgets")
	e.write("PUT", "/api/budgets", budgets)
	e.sameConfig("after PUT of the budgets as GET showed them,", want)

	limits, before := e.get("/api/limits")
	for _, l := range limits {
		var v struct {
			Provider string `json:"provider"`
			Model    string `json:"model"`
		}
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatal(err)
		}
		path := "/api/limits/" + url.PathEscape(v.Provider)
		if v.Model != "" {
			for seg := range strings.SplitSeq(v.Model, "/") {
				path += "/" + url.PathEscape(seg)
			}
		}
		e.write("PUT", path, l)
	}
	e.sameConfig("after PUT of every limits entry as GET showed it,", want)
	if _, after := e.get("/api/limits"); !bytes.Equal(before, after) {
		t.Errorf("the limits changed:\nbefore %s\nafter  %s", before, after)
	}

	settings := e.do("GET", "/api/settings", "", nil)
	e.write("PUT", "/api/settings", settings.body)
	e.sameConfig("after PUT of the settings as GET showed them,", want)

	// The setting that matters most still works: the upstream that rejects
	// stream_options is not sent them.
	if r := e.post("/v1/chat/completions", chat("paid/meta/llama-3.3-70b", true)); r.status != 200 {
		t.Fatalf("stream: %d %s", r.status, r.body)
	}
	reqs := e.up.Requests()
	if last := reqs[len(reqs)-1]; last.Model != "meta/llama-3.3-70b" || strings.Contains(string(last.Body), "stream_options") {
		t.Errorf("the upstream got %s", last.Body)
	}

	// What was stored is what a restart without --config reads back (from
	// the local copy, with the same FREELANE_VAULT_KEY).
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.start(nil)
	e.sameConfig("after a restart,", want)
}
