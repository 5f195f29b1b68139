package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakelocal"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/llm"
)

// testCatalog is a catalog whose providers are the fake vendor in each
// dialect, dated after the built-in one so that it is used.
func testCatalog(up *fakeupstream.Server) string {
	return fmt.Sprintf(`date: 2099-01-01
providers:
  - id: alpha
    name: Alpha Free
    tier: free
    dialect: openai
    base_url: %q
    key_env: [ALPHA_API_KEY]
    signup_url: https://alpha.example/keys
    list_models: true
    limits:
      - {rpm: 20, rpd: 50, reset: "daily 00:00 UTC", pool: account}
    notes: ["The daily requests are shared by every free model of the account."]
    models:
      - {id: "m-one:free", params_b: 70}
      - {id: "m-two:free", params_b: 8}
  - id: beta
    name: Beta
    tier: free
    dialect: anthropic
    base_url: %q
    key_env: [BETA_API_KEY]
    models:
      - id: b-model
        params_b: 30
        limits: [{rpd: 100, reset: "daily 00:00 America/Los_Angeles"}]
  - id: paidco
    name: PaidCo
    tier: paid
    dialect: openai
    base_url: %q
    key_env: [PAIDCO_API_KEY]
    prices_read: 2026-07-18
    models:
      - {id: p-model, price: {input: 1, output: 2}}
`, up.URL, up.AnthropicURL(), up.URL)
}

// catalogEnv is a FreeLane started with no config file at all, as a new
// user starts it, with a data directory holding a test catalog and an
// environment of its own.
type catalogEnv struct {
	*env
	envVars map[string]string
}

func newCatalogEnv(t *testing.T, envVars map[string]string, cfg *config.Config) *catalogEnv {
	t.Helper()
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(testCatalog(up)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The test catalog's providers are new to the built-in catalog: the
	// user confirmed their addresses earlier.
	writeConfirmed(t, dir, map[string]catalog.Address{
		"alpha":  {BaseURL: up.URL, KeyEnv: []string{"ALPHA_API_KEY"}},
		"beta":   {BaseURL: up.AnthropicURL(), KeyEnv: []string{"BETA_API_KEY"}},
		"paidco": {BaseURL: up.URL, KeyEnv: []string{"PAIDCO_API_KEY"}},
	})
	ce := &catalogEnv{env: &env{t: t, up: up, clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), dir: dir}, envVars: envVars}
	ce.startWith(cfg)
	return ce
}

func (ce *catalogEnv) startWith(cfg *config.Config) {
	ce.t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: ce.dir, Listen: "127.0.0.1:0", Logger: log, Clock: ce.clock,
		ManualProbes: true, LookupEnv: func(k string) (string, bool) { v, ok := ce.envVars[k]; return v, ok }})
	if err != nil {
		ce.t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		ce.t.Fatal(err)
	}
	ce.g, ce.base, ce.session = g, "http://"+g.Addr(), ""
	ce.t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
}

func (ce *catalogEnv) restart(cfg *config.Config) {
	ce.t.Helper()
	if err := ce.g.Shutdown(context.Background()); err != nil {
		ce.t.Fatal(err)
	}
	ce.startWith(cfg)
}

func chatAuto(e *env) reply {
	return e.post("/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"hi"}]}`)
}

type setupView struct {
	Needed  bool `json:"needed"`
	Serving int  `json:"serving"`
	EnvKeys []struct {
		Env      string `json:"env"`
		Provider string `json:"provider"`
		Adopted  bool   `json:"adopted"`
	} `json:"env_keys"`
	EnvNames []string `json:"env_names"`
	Local    []struct {
		Kind     string `json:"kind"`
		Port     int    `json:"port"`
		Provider string `json:"provider"`
		Up       bool   `json:"up"`
		Models   []struct {
			ID      string `json:"id"`
			Context int    `json:"context"`
		} `json:"models"`
	} `json:"local"`
}

func (e *env) setup() setupView {
	e.t.Helper()
	r := e.do(http.MethodGet, "/api/setup", "", nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("GET /api/setup: %d %s", r.status, r.body)
	}
	var v setupView
	if err := json.Unmarshal(r.body, &v); err != nil {
		e.t.Fatal(err)
	}
	return v
}

// A new user with nothing configured: /v1 says what to do, in each
// client's dialect, and the setup says it is needed.
func TestNothingConfiguredSaysWhatToDo(t *testing.T) {
	e := newCatalogEnv(t, nil, nil)
	r := chatAuto(e.env)
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	msg := r.errorMessage()
	for _, want := range []string{"open the dashboard at " + e.base + "/", "ALPHA_API_KEY", "Ollama"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "connection refused") {
		t.Errorf("message %q speaks of a connection", msg)
	}
	// An Anthropic client gets the same guidance in its own error shape.
	a := e.do(http.MethodPost, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"anthropic-version": "2023-06-01"})
	var ae struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(a.body, &ae); err != nil || a.status != http.StatusServiceUnavailable || ae.Type != "error" || !strings.Contains(ae.Error.Message, "open the dashboard") {
		t.Fatalf("anthropic answer %d %s", a.status, a.body)
	}
	if s := e.setup(); !s.Needed || s.Serving != 0 || len(s.EnvNames) == 0 || s.EnvNames[0] != "ALPHA_API_KEY" {
		t.Fatalf("setup = %+v", s)
	}
}

// One free key in the environment and nothing else: FreeLane adds the
// provider from the catalog, with its limits and reset rule, and answers.
func TestOneKeyInTheEnvironmentIsEnough(t *testing.T) {
	e := newCatalogEnv(t, map[string]string{"ALPHA_API_KEY": "sk-alpha-env-0001"}, nil)
	e.up.RequireKey("sk-alpha-env-0001")
	r := chatAuto(e.env)
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("X-FreeLane-Backend"), "alpha/") {
		t.Fatalf("status %d backend %q: %s", r.status, r.header.Get("X-FreeLane-Backend"), r.body)
	}
	s := e.setup()
	if s.Needed || s.Serving != 2 || len(s.EnvKeys) != 1 || s.EnvKeys[0].Env != "ALPHA_API_KEY" || !s.EnvKeys[0].Adopted {
		t.Fatalf("setup = %+v", s)
	}
	// The dashboard shows the catalog's limits and reset rule for it.
	lr := e.do(http.MethodGet, "/api/providers", "", nil)
	var views []struct {
		Name    string `json:"name"`
		Catalog string `json:"catalog"`
		Limits  struct {
			RPD   int    `json:"rpd"`
			Reset string `json:"reset"`
		} `json:"limits"`
		Key struct {
			Source string `json:"source"`
		} `json:"key"`
	}
	if err := json.Unmarshal(lr.body, &views); err != nil || len(views) != 1 {
		t.Fatalf("providers %s", lr.body)
	}
	if v := views[0]; v.Name != "alpha" || v.Catalog != "alpha" || v.Limits.RPD != 50 || v.Limits.Reset != "daily 00:00 UTC" || v.Key.Source != "env" {
		t.Fatalf("provider view = %+v", v)
	}
	if strings.Contains(string(lr.body), "sk-alpha-env") {
		t.Fatal("the key is in the provider list")
	}
	// Without the variable at the next start, the provider it brought
	// goes again.
	e.envVars = nil
	e.restart(nil)
	if s := e.setup(); !s.Needed {
		t.Fatalf("after the variable went: %+v", s)
	}
	if lr := e.do(http.MethodGet, "/api/providers", "", nil); string(lr.body) != "[]" {
		t.Fatalf("providers after the variable went: %s", lr.body)
	}
}

// Paste a key in the dashboard: it is checked with the provider's model
// list, a refused one is not added, and an accepted one joins auto with
// the list's free models; a model the list does not name is retired.
func TestPasteAKeyJoinsThePool(t *testing.T) {
	e := newCatalogEnv(t, nil, nil)
	e.up.RequireKey("sk-alpha-good-0001")
	e.up.SetModelList([]byte(`{"data":[
	  {"id":"m-one:free","context_length":131072,"pricing":{"prompt":"0","completion":"0"}},
	  {"id":"m-three:free","context_length":32768,"pricing":{"prompt":"0","completion":"0"},"supported_parameters":["tools"]},
	  {"id":"m-paid","context_length":8192,"pricing":{"prompt":"0.000001","completion":"0.000002"}}]}`))

	bad := e.do(http.MethodPost, "/api/catalog/alpha", `{"key":"sk-alpha-bad-0002"}`, nil)
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.errorMessage(), "refused the key") || strings.Contains(string(bad.body), "sk-alpha-bad") {
		t.Fatalf("bad key: %d %s", bad.status, bad.body)
	}
	if s := e.setup(); !s.Needed {
		t.Fatal("a refused key was added")
	}
	ok := e.do(http.MethodPost, "/api/catalog/alpha", `{"key":"sk-alpha-good-0001"}`, nil)
	if ok.status != http.StatusCreated || strings.Contains(string(ok.body), "sk-alpha-good") {
		t.Fatalf("good key: %d %s", ok.status, ok.body)
	}
	var added struct {
		Provider struct {
			Name   string `json:"name"`
			Models []struct {
				ID string `json:"id"`
			} `json:"models"`
		} `json:"provider"`
		Models int `json:"models"`
	}
	if err := json.Unmarshal(ok.body, &added); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range added.Provider.Models {
		ids = append(ids, m.ID)
	}
	if added.Provider.Name != "alpha" || added.Models != 3 || strings.Join(ids, ",") != "m-one:free,m-two:free,m-three:free" {
		t.Fatalf("added = %+v (models %v): the free model the list names joins, the paid one does not", added, ids)
	}
	r := chatAuto(e.env)
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "alpha/m-one:free" {
		t.Fatalf("auto: %d %q %s", r.status, r.header.Get("X-FreeLane-Backend"), r.body)
	}
	// m-two is in the catalog but not in the list: withdrawn, so retired.
	if st := e.backendState("alpha/m-two:free"); !st.Retired {
		t.Fatalf("m-two state = %+v, want retired", st)
	}
	// The next day's list names m-two again and withdraws m-three.
	e.up.SetModelList([]byte(`{"data":[
	  {"id":"m-one:free","pricing":{"prompt":"0","completion":"0"}},
	  {"id":"m-two:free","pricing":{"prompt":"0","completion":"0"}},
	  {"id":"m-four:free","pricing":{"prompt":"0","completion":"0"}}]}`))
	e.g.RefreshModels(context.Background())
	if st := e.backendState("alpha/m-two:free"); st.Retired {
		t.Fatalf("m-two still retired after the list named it again: %+v", st)
	}
	if st := e.backendState("alpha/m-three:free"); !st.Retired {
		t.Fatalf("m-three not retired after the list withdrew it: %+v", st)
	}
	if st := e.backendState("alpha/m-four:free"); st.Retired || st.Backend == "" {
		t.Fatalf("m-four did not join: %+v", st)
	}
	var joined bool
	for _, ev := range e.g.Events().Recent() {
		joined = joined || (ev.Kind == "models_joined" && strings.Contains(ev.Reason, "m-four:free"))
	}
	if !joined {
		t.Fatal("no models_joined event for m-four")
	}
}

type backendState struct {
	Backend string     `json:"name"`
	Status  string     `json:"status"`
	Reason  string     `json:"reason"`
	Until   *time.Time `json:"until"`
	Retired bool
}

// backendState reads one backend's standing from the dashboard's state;
// the zero value when the state does not list it.
func (e *env) backendState(name string) backendState {
	e.t.Helper()
	r := e.do(http.MethodGet, "/api/state", "", nil)
	var s struct {
		Backends []backendState `json:"backends"`
	}
	if err := json.Unmarshal(r.body, &s); err != nil {
		e.t.Fatal(err)
	}
	for _, b := range s.Backends {
		if b.Backend == name {
			b.Retired = b.Status == "retired"
			return b
		}
	}
	return backendState{}
}

// A local server found on its port serves as the last rung of auto; when
// it stops answering its backends retire, and when it comes back on the
// same port they serve again.
func TestLocalServerAppearsGoesAndComesBack(t *testing.T) {
	srv, err := fakelocal.New(fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "qwen2.5-coder:7b", Context: 8192, TrainedContext: 32768, Loaded: true}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Discovery.Ports = []int{srv.Port()}
	e := newCatalogEnv(t, nil, cfg)
	e.g.ScanLocal(context.Background())
	name := fmt.Sprintf("ollama-%d/qwen2.5-coder:7b", srv.Port())
	r := chatAuto(e.env)
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != name {
		t.Fatalf("auto: %d %q %s", r.status, r.header.Get("X-FreeLane-Backend"), r.body)
	}
	s := e.setup()
	if s.Needed || len(s.Local) != 1 || s.Local[0].Kind != "ollama" || !s.Local[0].Up || s.Local[0].Models[0].Context != 8192 {
		t.Fatalf("setup = %+v", s)
	}
	srv.Stop()
	e.g.ScanLocal(context.Background())
	if st := e.g.BreakerStatus(llm.BackendID{Provider: fmt.Sprintf("ollama-%d", srv.Port()), Model: "qwen2.5-coder:7b"}); !st.Retired {
		t.Fatalf("after the server stopped: %+v", st)
	}
	if s := e.setup(); !s.Needed || s.Local[0].Up {
		t.Fatalf("setup after stop = %+v", s)
	}
	// A client is told what happened and what to do, not "connection
	// refused".
	if r := chatAuto(e.env); r.status != http.StatusServiceUnavailable || !strings.Contains(r.errorMessage(), "Ollama stopped answering on port") {
		t.Fatalf("auto while the server is gone: %d %s", r.status, r.body)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	e.g.ScanLocal(context.Background())
	if st := e.backendState(name); st.Retired {
		t.Fatalf("after the server came back: %+v", st)
	}
	if r := chatAuto(e.env); r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != name {
		t.Fatalf("auto after the return: %d %s", r.status, r.body)
	}
	var kinds []string
	for _, ev := range e.g.Events().Recent() {
		if ev.Kind == "local_found" || ev.Kind == "local_gone" {
			kinds = append(kinds, string(ev.Kind))
		}
	}
	if strings.Join(kinds, ",") != "local_found,local_gone,local_found" {
		t.Fatalf("events %v", kinds)
	}
	// The setup's test request shows the route.
	tr := e.do(http.MethodPost, "/api/setup/test", "", nil)
	var rt struct {
		OK      bool   `json:"ok"`
		Backend string `json:"backend"`
		Chain   string `json:"chain"`
	}
	if err := json.Unmarshal(tr.body, &rt); err != nil || !rt.OK || rt.Backend != name || rt.Chain != "auto" {
		t.Fatalf("route test: %s", tr.body)
	}
}

// A catalog file that breaks its rules is refused with its line numbers
// and the catalog in use stays; a good one is used and kept.
func TestCatalogFromAURL(t *testing.T) {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	allowLoopbackCatalogs(cfg)
	e := newCatalogEnv(t, nil, cfg)
	files := map[string]string{
		"/bad.yaml":  "date: 2099-06-01\nproviders:\n  - {id: x, name: X, tier: gratis, dialect: openai, base_url: \"https://x.example/v1\", key_env: [X_KEY], models: [{id: m}]}\n",
		"/good.yaml": strings.Replace(testCatalog(e.up), "date: 2099-01-01", "date: 2099-06-01", 1),
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, files[r.URL.Path]) }))
	t.Cleanup(site.Close)
	bad := e.do(http.MethodPost, "/api/catalog", fmt.Sprintf(`{"url":%q}`, site.URL+"/bad.yaml"), nil)
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.errorMessage(), "line 3") || !strings.Contains(bad.errorMessage(), "the one in use stays") {
		t.Fatalf("bad catalog: %d %s", bad.status, bad.body)
	}
	cat := func() (date, source string) {
		r := e.do(http.MethodGet, "/api/catalog", "", nil)
		var v struct {
			Date   string `json:"date"`
			Source string `json:"source"`
		}
		_ = json.Unmarshal(r.body, &v)
		return v.Date, v.Source
	}
	if d, _ := cat(); d != "2099-01-01" {
		t.Fatalf("catalog after a refused file: %s", d)
	}
	good := e.do(http.MethodPost, "/api/catalog", fmt.Sprintf(`{"url":%q}`, site.URL+"/good.yaml"), nil)
	if good.status != http.StatusOK {
		t.Fatalf("good catalog: %d %s", good.status, good.body)
	}
	if d, src := cat(); d != "2099-06-01" || src != site.URL+"/good.yaml" {
		t.Fatalf("catalog = %s from %s", d, src)
	}
	e.restart(cfg)
	if d, _ := cat(); d != "2099-06-01" {
		t.Fatalf("after a restart the catalog is %s; the loaded one was not kept", d)
	}
}

// A catalog file in the data directory with errors is not used: the
// built-in catalog is.
func TestBrokenCatalogFileFallsBack(t *testing.T) {
	e := newCatalogEnv(t, nil, nil)
	if err := os.WriteFile(filepath.Join(e.dir, "catalog.yaml"), []byte("date: 2099-01-01\nproviders: [{id: BAD}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.restart(nil)
	r := e.do(http.MethodGet, "/api/catalog", "", nil)
	var v struct {
		Date      string `json:"date"`
		Source    string `json:"source"`
		Providers []struct {
			ID string `json:"id"`
		} `json:"providers"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil || v.Source != "built in" || len(v.Providers) < 18 {
		t.Fatalf("catalog = %+v", v)
	}
}

// Two models of one provider are not redundancy, and the Chains screen
// says so.
func TestChainOfOneProviderIsWarned(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Chains = append(c.Chains, config.Chain{Name: "same", Backends: []string{"a/ma", "a/ma2"}})
		p, _ := c.Provider("a")
		p.Models = append(p.Models, config.Model{ID: "ma2"})
	})
	r := e.do(http.MethodGet, "/api/chains", "", nil)
	var chains []struct {
		Name    string `json:"name"`
		Warning string `json:"warning"`
	}
	if err := json.Unmarshal(r.body, &chains); err != nil {
		t.Fatal(err)
	}
	warnings := map[string]string{}
	for _, c := range chains {
		warnings[c.Name] = c.Warning
	}
	if w, ok := warnings["same"]; !ok || !strings.Contains(w, "every backend of this chain is a model of a") {
		t.Fatalf("chain same: warning %q (listed: %v)", w, ok)
	}
}

// TestPoolOnlyKeysReadTheModelList: a catalog provider whose keys are all
// in api_keys still has its model list read, with its first key, so new
// models join and withdrawn ones retire as for a single key.
func TestPoolOnlyKeysReadTheModelList(t *testing.T) {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Providers = []config.Provider{{Catalog: "alpha", APIKeys: []string{"sk-alpha-good-0001", "sk-alpha-more-0003"}}}
	e := newCatalogEnv(t, nil, cfg)
	e.up.RequireKey("sk-alpha-good-0001")
	e.up.SetModelList([]byte(`{"data":[
	  {"id":"m-one:free","pricing":{"prompt":"0","completion":"0"}},
	  {"id":"m-four:free","pricing":{"prompt":"0","completion":"0"}}]}`))
	e.g.RefreshModels(context.Background())
	var joined bool
	for _, ev := range e.g.Events().Recent() {
		joined = joined || (ev.Kind == "models_joined" && strings.Contains(ev.Reason, "m-four:free"))
	}
	if !joined {
		t.Fatalf("no models_joined event for m-four: the pool's model list was not read (events %+v)", e.g.Events().Recent())
	}
}
