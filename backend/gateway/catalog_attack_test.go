package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakeupstream"
)

// hostRecorder stands for a host a catalog points a provider at: it answers
// like an OpenAI-compatible server and remembers every request, with the
// key it carried.
type hostRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "path key"
}

func newHostRecorder(t *testing.T) *hostRecorder {
	t.Helper()
	r := &hostRecorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20))
		r.mu.Lock()
		r.seen = append(r.seen, req.URL.Path+" "+req.Header.Get("Authorization"))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(req.URL.Path, "/models") {
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"cb-model","object":"model"}]}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"cb-model","choices":[{"index":0,"message":{"role":"assistant","content":"OK"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hostRecorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// cerebrasCatalog is a catalog dated date that places cerebras at base
// and, when newco is set, adds a provider the built-in catalog lacks.
func cerebrasCatalog(date, base, newco string) string {
	s := fmt.Sprintf(`date: %s
providers:
  - id: cerebras
    name: Cerebras
    tier: free
    dialect: openai
    base_url: %q
    key_env: [CEREBRAS_API_KEY]
    list_models: true
    models:
      - {id: cb-model, params_b: 70}
`, date, base)
	if newco != "" {
		s += fmt.Sprintf(`  - id: newco
    name: NewCo
    tier: free
    dialect: openai
    base_url: %q
    key_env: [NEWCO_API_KEY]
    models:
      - {id: nc-model, params_b: 8}
`, newco)
	}
	return s
}

// writeConfirmed writes the confirmations a user made earlier, as the
// dashboard keeps them in the data directory.
func writeConfirmed(t *testing.T, dir string, addrs map[string]catalog.Address) {
	t.Helper()
	b, err := json.Marshal(catalog.Decisions{Confirmed: addrs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog-addresses.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// moveEnv is a FreeLane whose data directory holds a catalog placing
// cerebras at a fake upstream the user confirmed, with catalogs served
// from a local site, as the loopback setting allows.
type moveEnv struct {
	*catalogEnv
	site  *httptest.Server
	files map[string]string
	cfg   *config.Config
}

func newMoveEnv(t *testing.T) *moveEnv {
	t.Helper()
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(cerebrasCatalog("2099-01-01", up.URL, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	writeConfirmed(t, dir, map[string]catalog.Address{"cerebras": {BaseURL: up.URL, KeyEnv: []string{"CEREBRAS_API_KEY"}}})
	me := &moveEnv{files: map[string]string{}}
	me.site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, me.files[r.URL.Path]) }))
	t.Cleanup(me.site.Close)
	me.cfg = config.Default()
	me.cfg.Listen = "127.0.0.1:0"
	allowLoopbackCatalogs(me.cfg)
	me.catalogEnv = &catalogEnv{env: &env{t: t, up: up, clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), dir: dir},
		envVars: map[string]string{}}
	me.startWith(me.cfg)
	return me
}

// load asks FreeLane to load the catalog text from the local site.
func (me *moveEnv) load(name, text string) reply {
	me.t.Helper()
	me.files["/"+name] = text
	return me.do(http.MethodPost, "/api/catalog", fmt.Sprintf(`{"url":%q}`, me.site.URL+"/"+name), nil)
}

// traffic does what a start with a key leads to: the day's probes, the
// model lists and a request pinned to the provider.
func (me *moveEnv) traffic(model string) reply {
	me.t.Helper()
	me.clock.Advance(25 * time.Hour)
	me.g.Prober().Tick(context.Background())
	me.g.RefreshModels(context.Background())
	return me.post("/v1/chat/completions", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}]}`, model))
}

type catalogChange struct {
	ID     string `json:"id"`
	From   string `json:"from"`
	To     string `json:"to"`
	New    bool   `json:"new"`
	HasKey bool   `json:"has_key"`
}

func (e *env) catalogChanges() []catalogChange {
	e.t.Helper()
	r := e.do(http.MethodGet, "/api/catalog", "", nil)
	var v struct {
		Changes []catalogChange `json:"changes"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		e.t.Fatal(err)
	}
	return v.Changes
}

func (e *env) decide(id, decision, to string) reply {
	e.t.Helper()
	return e.do(http.MethodPost, "/api/catalog/changes/"+id, fmt.Sprintf(`{"decision":%q,"to":%q}`, decision, to), nil)
}

func keyed(reqs []string, key string) int {
	n := 0
	for _, r := range reqs {
		if strings.HasSuffix(r, "Bearer "+key) {
			n++
		}
	}
	return n
}

func keyedUp(up *fakeupstream.Server, key string) int {
	n := 0
	for _, r := range up.Requests() {
		if r.Header.Get("Authorization") == "Bearer "+key {
			n++
		}
	}
	return n
}

// A catalog that moves cerebras while it has no key is held: at the next
// start with CEREBRAS_API_KEY set, the new host gets nothing (no probe, no
// model list, no request) and the confirmed address serves.
func TestCatalogMoveOfAKeylessProviderIsHeld(t *testing.T) {
	me := newMoveEnv(t)
	b := newHostRecorder(t)
	if r := me.load("v2.yaml", cerebrasCatalog("2099-02-01", b.URL+"/v1", "")); r.status != http.StatusOK {
		t.Fatalf("loading the newer catalog: %d %s", r.status, r.body)
	}
	const key = "sk-cerebras-env-0001"
	me.envVars["CEREBRAS_API_KEY"] = key
	me.restart(me.cfg)
	r := me.traffic("cerebras/cb-model")
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the unconfirmed host received %d requests: %v", len(got), got)
	}
	if r.status != http.StatusOK || keyedUp(me.up, key) == 0 {
		t.Fatalf("the confirmed address was not used: %d %s", r.status, r.body)
	}
	ch := me.catalogChanges()
	if len(ch) != 1 || ch[0].ID != "cerebras" || ch[0].From != me.up.URL || ch[0].To != b.URL+"/v1" || !ch[0].HasKey {
		t.Fatalf("pending changes = %+v", ch)
	}
	// The key is in the environment now, so the move stays refused.
	if d := me.decide("cerebras", "confirm", b.URL+"/v1"); d.status != http.StatusConflict || !strings.Contains(d.errorMessage(), "CEREBRAS_API_KEY") {
		t.Fatalf("confirming a move of a provider with a key: %d %s", d.status, d.body)
	}
	me.restart(me.cfg)
	me.traffic("cerebras/cb-model")
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("after the refused confirmation the new host received %v", got)
	}
}

// Confirmed while no key is set, the new address is the one used.
func TestConfirmedCatalogMoveIsUsed(t *testing.T) {
	me := newMoveEnv(t)
	b := newHostRecorder(t)
	to := b.URL + "/v1"
	if r := me.load("v2.yaml", cerebrasCatalog("2099-02-01", to, "")); r.status != http.StatusOK {
		t.Fatalf("loading the newer catalog: %d %s", r.status, r.body)
	}
	ch := me.catalogChanges()
	if len(ch) != 1 || ch[0].From != me.up.URL || ch[0].To != to || ch[0].HasKey || ch[0].New {
		t.Fatalf("pending changes = %+v", ch)
	}
	if d := me.decide("cerebras", "confirm", "https://another.example/v1"); d.status != http.StatusConflict {
		t.Fatalf("confirming an address the catalog does not name: %d %s", d.status, d.body)
	}
	if d := me.decide("cerebras", "confirm", to); d.status != http.StatusOK {
		t.Fatalf("confirm: %d %s", d.status, d.body)
	}
	if ch := me.catalogChanges(); len(ch) != 0 {
		t.Fatalf("after confirming: %+v", ch)
	}
	const key = "sk-cerebras-env-0002"
	me.envVars["CEREBRAS_API_KEY"] = key
	me.restart(me.cfg)
	if r := me.traffic("cerebras/cb-model"); r.status != http.StatusOK {
		t.Fatalf("request: %d %s", r.status, r.body)
	}
	if keyed(b.requests(), key) == 0 || keyedUp(me.up, key) != 0 {
		t.Fatalf("after confirming, new host %v, old host %d keyed requests", b.requests(), keyedUp(me.up, key))
	}
}

// Keep the old address: the change is no longer shown and the old
// address stays, across a restart too.
func TestKeepTheOldAddress(t *testing.T) {
	me := newMoveEnv(t)
	b := newHostRecorder(t)
	to := b.URL + "/v1"
	if r := me.load("v2.yaml", cerebrasCatalog("2099-02-01", to, "")); r.status != http.StatusOK {
		t.Fatalf("loading the newer catalog: %d %s", r.status, r.body)
	}
	if d := me.decide("cerebras", "keep", to); d.status != http.StatusOK {
		t.Fatalf("keep: %d %s", d.status, d.body)
	}
	me.envVars["CEREBRAS_API_KEY"] = "sk-cerebras-env-0003"
	me.restart(me.cfg)
	if ch := me.catalogChanges(); len(ch) != 0 {
		t.Fatalf("a kept address is still shown as pending: %+v", ch)
	}
	me.traffic("cerebras/cb-model")
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the declined host received %v", got)
	}
}

// A provider new in the catalog is not used until confirmed, even with
// its key in the environment.
func TestNewCatalogProviderWaitsForConfirmation(t *testing.T) {
	me := newMoveEnv(t)
	b := newHostRecorder(t)
	to := b.URL + "/v1"
	if r := me.load("v2.yaml", cerebrasCatalog("2099-02-01", me.up.URL, to)); r.status != http.StatusOK {
		t.Fatalf("loading the newer catalog: %d %s", r.status, r.body)
	}
	me.envVars["NEWCO_API_KEY"] = "sk-newco-env-0001"
	me.restart(me.cfg)
	me.traffic("newco/nc-model")
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the new provider's host received %v before it was confirmed", got)
	}
	ch := me.catalogChanges()
	if len(ch) != 1 || ch[0].ID != "newco" || !ch[0].New || ch[0].To != to {
		t.Fatalf("pending changes = %+v", ch)
	}
	// Its key is set, but it was never sent anywhere: confirming the
	// address the key will go to is the user's choice.
	if d := me.decide("newco", "confirm", to); d.status != http.StatusOK {
		t.Fatalf("confirm: %d %s", d.status, d.body)
	}
	me.restart(me.cfg)
	if r := me.traffic("newco/nc-model"); r.status != http.StatusOK || keyed(b.requests(), "sk-newco-env-0001") == 0 {
		t.Fatalf("after confirming: %d %s; host saw %v", r.status, r.body, b.requests())
	}
}

// A catalog that moves a provider with a key is refused whole, as before;
// a key pasted while a move is pending is checked at the confirmed address
// and makes the move refused.
func TestCatalogMoveOfAProviderWithAKeyIsRefused(t *testing.T) {
	me := newMoveEnv(t)
	b := newHostRecorder(t)
	to := b.URL + "/v1"
	me.envVars["CEREBRAS_API_KEY"] = "sk-cerebras-env-0004"
	me.restart(me.cfg)
	if r := me.load("v2.yaml", cerebrasCatalog("2099-02-01", to, "")); r.status != http.StatusConflict || !strings.Contains(r.errorMessage(), "moves provider \"cerebras\"") {
		t.Fatalf("a catalog moving a provider with a key: %d %s", r.status, r.body)
	}
	delete(me.envVars, "CEREBRAS_API_KEY")
	me.restart(me.cfg)
	if r := me.load("v2.yaml", cerebrasCatalog("2099-02-01", to, "")); r.status != http.StatusOK {
		t.Fatalf("loading without a key: %d %s", r.status, r.body)
	}
	if r := me.do(http.MethodPost, "/api/catalog/cerebras", `{"key":"sk-cerebras-pasted-0005"}`, nil); r.status != http.StatusCreated {
		t.Fatalf("pasting a key: %d %s", r.status, r.body)
	}
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the pasted key was checked at the unconfirmed host: %v", got)
	}
	if keyedUp(me.up, "sk-cerebras-pasted-0005") == 0 {
		t.Fatal("the pasted key was not checked at the confirmed address")
	}
	if d := me.decide("cerebras", "confirm", to); d.status != http.StatusConflict {
		t.Fatalf("confirming after a key was pasted: %d %s", d.status, d.body)
	}
	me.traffic("cerebras/cb-model")
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the unconfirmed host received %v", got)
	}
}

// The catalog URL must be https; plain http is only for a loopback
// address, and only with catalog.allow_http_loopback.
func TestCatalogURLMustBeHTTPS(t *testing.T) {
	e := newCatalogEnv(t, nil, nil)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Replace(testCatalog(e.up), "date: 2099-01-01", "date: 2099-06-01", 1))
	}))
	t.Cleanup(site.Close)
	r := e.do(http.MethodPost, "/api/catalog", fmt.Sprintf(`{"url":%q}`, site.URL+"/c.yaml"), nil)
	if r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(), "https") || !strings.Contains(r.errorMessage(), "catalog.allow_http_loopback") {
		t.Fatalf("a catalog over plain http: %d %s", r.status, r.body)
	}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	allowLoopbackCatalogs(cfg)
	e.restart(cfg)
	if r := e.do(http.MethodPost, "/api/catalog", fmt.Sprintf(`{"url":%q}`, site.URL+"/c.yaml"), nil); r.status != http.StatusOK {
		t.Fatalf("a loopback catalog with the setting: %d %s", r.status, r.body)
	}
}

// A catalog fetch follows no redirect to another host, even a loopback
// one the setting allows.
func TestCatalogRedirectToAnotherHostIsRefused(t *testing.T) {
	me := newMoveEnv(t)
	var hits int
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		_, _ = io.WriteString(w, cerebrasCatalog("2099-03-01", me.up.URL, ""))
	}))
	t.Cleanup(other.Close)
	// The same server under another loopback name is another host.
	elsewhere := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere+"/c.yaml", http.StatusFound)
	}))
	t.Cleanup(redir.Close)
	r := me.do(http.MethodPost, "/api/catalog", fmt.Sprintf(`{"url":%q}`, redir.URL+"/c.yaml"), nil)
	mu.Lock()
	n := hits
	mu.Unlock()
	if r.status != http.StatusBadGateway || n != 0 || !strings.Contains(r.errorMessage(), "redirect") {
		t.Fatalf("a redirect to another host: %d %s (the other host was asked %d times)", r.status, r.body, n)
	}
}

// An error about a fetched catalog says which rule was broken and on
// which line, and repeats nothing of the document.
func TestCatalogErrorDoesNotEchoTheDocument(t *testing.T) {
	me := newMoveEnv(t)
	doc := "date: 2099-06-01\nproviders:\n  - {id: x, name: X, tier: gratis-secretvalue, dialect: openai, base_url: \"https://x.example/v1\", key_env: [X_KEY], models: [{id: m}]}\n" +
		"  - {id: y, name: Y, tier: free, dialect: openai, base_url: \"https://y.example/v1\", key_env: [Y_KEY], models: [{id: m}], secretfieldname: 1}\n"
	r := me.load("bad.yaml", doc)
	msg := r.errorMessage()
	if r.status != http.StatusBadRequest || !strings.Contains(msg, "line 3") || !strings.Contains(msg, "line 4") {
		t.Fatalf("a bad catalog: %d %s", r.status, r.body)
	}
	for _, leak := range []string{"secretvalue", "secretfieldname", "gratis", "x.example"} {
		if strings.Contains(string(r.body), leak) {
			t.Errorf("the error repeats %q of the document: %s", leak, msg)
		}
	}
	// A document that is not a catalog at all (a page of some other
	// server) is not repeated either.
	r = me.load("page.yaml", "<html><title>internal-dashboard-token-1234</title></html>\n")
	if r.status != http.StatusBadRequest || strings.Contains(string(r.body), "internal-dashboard") {
		t.Fatalf("a page that is not a catalog: %d %s", r.status, r.body)
	}
}
