package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/internal/fakelocal"
	"freelane/backend/tier"
)

// localEnv is the test gateway (providers a, b, c, l on the fake vendor)
// with a fake Ollama on a port of its own that discovery looks at and has
// found; name is the provider discovery serves it under.
func localEnv(t *testing.T) (e *env, srv *fakelocal.Server, name string) {
	t.Helper()
	srv, err := fakelocal.New(fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "qwen2.5:7b", Context: 8192, Loaded: true}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	e = newEnv(t, func(c *config.Config) { c.Discovery.Ports = []int{srv.Port()} })
	e.g.ScanLocal(context.Background())
	return e, srv, fmt.Sprintf("ollama-%d", srv.Port())
}

type chainJSON struct {
	Name      string   `json:"name"`
	Backends  []string `json:"backends"`
	Generated bool     `json:"generated"`
	Gone      []string `json:"gone"`
}

func (e *env) chainsByName() map[string]chainJSON {
	e.t.Helper()
	r := e.do(http.MethodGet, "/api/chains", "", nil)
	var list []chainJSON
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil {
		e.t.Fatalf("GET /api/chains: %d %s", r.status, r.body)
	}
	out := map[string]chainJSON{}
	for _, c := range list {
		out[c.Name] = c
	}
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A server discovery found is a provider like a configured one: it is
// listed with where it was found, the auto order and a user chain holding
// its model are saved and route to it, and a chain naming it after it
// stopped is saved too, shows the entry as gone and keeps it through a
// restart while the server is still down. A provider nobody knew is still
// refused.
func TestDiscoveredServerIsAProviderOfChains(t *testing.T) {
	e, srv, name := localEnv(t)
	model := name + "/qwen2.5:7b"

	v, ok := e.providerView(name)
	if !ok || v.Source != control.FromDiscovery || v.Local == nil || v.Local.Status != control.LocalServing ||
		v.Local.Found != fmt.Sprintf("found on port %d", srv.Port()) || v.Local.Kind != "ollama" || v.Key.Set || !v.Keyless ||
		len(v.Models) != 1 || v.Models[0].ID != "qwen2.5:7b" || v.Tier != tier.Local {
		t.Fatalf("the discovered provider's view: %v %+v local %+v", ok, v, v.Local)
	}
	if a, _ := e.providerView("a"); a.Source != control.FromConfig || a.Local != nil {
		t.Fatalf("a configured provider's view: source %q local %+v", a.Source, a.Local)
	}

	// Reorder auto with the local model first, as the dashboard's drag
	// does: the generated order sent back in another order.
	auto := e.chainsByName()["auto"]
	if !auto.Generated || !slices.Contains(auto.Backends, model) {
		t.Fatalf("auto = %+v", auto)
	}
	order := append([]string{model}, slices.DeleteFunc(slices.Clone(auto.Backends), func(b string) bool { return b == model })...)
	r := e.do(http.MethodPut, "/api/chains/auto", jsonOf(t, map[string]any{"backends": order}), nil)
	if r.status != http.StatusOK {
		t.Fatalf("saving the auto order with the local model first: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/chat/completions", chat("auto", false)); r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != model {
		t.Fatalf("auto after the reorder: %d %q %s", r.status, r.header.Get("X-FreeLane-Backend"), r.body)
	}
	r = e.do(http.MethodPost, "/api/chains", jsonOf(t, map[string]any{"name": "mine", "backends": []string{model, "b/mb"}}), nil)
	if r.status != http.StatusCreated {
		t.Fatalf("a chain holding the local model: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/chat/completions", chat("mine", false)); r.header.Get("X-FreeLane-Backend") != model {
		t.Fatalf("mine: %d %q %s", r.status, r.header.Get("X-FreeLane-Backend"), r.body)
	}
	if l := e.g.Control().Config().Local; len(l) != 1 || l[0].Name != name || l[0].Kind != "ollama" || l[0].Port != srv.Port() || l[0].Hidden {
		t.Fatalf("the stored record of the server: %+v", l)
	}
	if c := e.chainsByName()["mine"]; len(c.Gone) != 0 {
		t.Fatalf("gone while the server serves: %+v", c)
	}

	r = e.do(http.MethodPost, "/api/chains", jsonOf(t, map[string]any{"name": "typo", "backends": []string{"nobody/m"}}), nil)
	if r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(), `unknown provider "nobody"`) || !strings.Contains(r.errorMessage(), "local servers are: "+name) {
		t.Fatalf("a provider nobody knew: %d %s", r.status, r.body)
	}

	srv.Stop()
	e.g.ScanLocal(context.Background())
	if c := e.chainsByName()["mine"]; !slices.Equal(c.Gone, []string{model}) || !slices.Equal(c.Backends, []string{model, "b/mb"}) {
		t.Fatalf("mine after the server stopped: %+v", c)
	}
	r = e.do(http.MethodPut, "/api/chains/mine", jsonOf(t, map[string]any{"backends": []string{"b/mb", model}}), nil)
	if r.status != http.StatusOK {
		t.Fatalf("saving a chain that names the stopped server: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodPost, "/api/chains", jsonOf(t, map[string]any{"name": "later", "backends": []string{model}}), nil)
	if r.status != http.StatusCreated {
		t.Fatalf("a new chain of the stopped server only: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/chat/completions", chat("mine", false)); r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "b/mb" {
		t.Fatalf("mine while the server is gone: %d %q", r.status, r.header.Get("X-FreeLane-Backend"))
	}
	if v, _ := e.providerView(name); v.Local == nil || v.Local.Status != control.LocalGone || len(v.Models) != 1 {
		t.Fatalf("the stopped server's view: %+v", v.Local)
	}

	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.start(nil)
	e.g.ScanLocal(context.Background())
	chains := e.chainsByName()
	if c := chains["mine"]; !slices.Equal(c.Backends, []string{"b/mb", model}) || !slices.Equal(c.Gone, []string{model}) {
		t.Fatalf("mine after a restart with the server down: %+v", c)
	}
	if c := chains["auto"]; c.Generated || !slices.Contains(c.Gone, model) {
		t.Fatalf("auto after a restart with the server down: %+v", c)
	}
	if v, ok := e.providerView(name); !ok || v.Local == nil || v.Local.Status != control.LocalGone || v.Source != control.FromDiscovery {
		t.Fatalf("the recorded server after a restart: %v %+v", ok, v.Local)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	e.g.ScanLocal(context.Background())
	if c := e.chainsByName()["mine"]; len(c.Gone) != 0 {
		t.Fatalf("mine once the server is back: %+v", c)
	}
	if r := e.post("/v1/chat/completions", chat("later", false)); r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != model {
		t.Fatalf("later once the server is back: %d %s", r.status, r.body)
	}
}

// A model the server no longer lists stays in the chain that names it,
// shown as gone.
func TestModelTheServerNoLongerListsIsGone(t *testing.T) {
	e, srv, name := localEnv(t)
	srv.SetModels([]fakelocal.Model{{ID: "qwen2.5:7b", Context: 8192, Loaded: true}, {ID: "llama3.2:3b", Context: 4096}})
	e.g.ScanLocal(context.Background())
	both := []string{name + "/qwen2.5:7b", name + "/llama3.2:3b"}
	if r := e.do(http.MethodPost, "/api/chains", jsonOf(t, map[string]any{"name": "two", "backends": both}), nil); r.status != http.StatusCreated {
		t.Fatalf("a chain of both models: %d %s", r.status, r.body)
	}
	srv.SetModels([]fakelocal.Model{{ID: "qwen2.5:7b", Context: 8192, Loaded: true}})
	e.g.ScanLocal(context.Background())
	if c := e.chainsByName()["two"]; !slices.Equal(c.Backends, both) || !slices.Equal(c.Gone, both[1:]) {
		t.Fatalf("after the server dropped a model: %+v", c)
	}
}

// A discovered provider can be renamed (chains, budgets and limits
// naming it follow), given limits that are enforced, and hidden, which
// takes it out of routing and auto while it stays listed; what else its
// view shows cannot be set.
func TestDiscoveredServerRenameLimitsHide(t *testing.T) {
	e, srv, name := localEnv(t)
	model := name + "/qwen2.5:7b"
	if r := e.do(http.MethodPost, "/api/chains", jsonOf(t, map[string]any{"name": "mine", "backends": []string{model, "b/mb"}}), nil); r.status != http.StatusCreated {
		t.Fatalf("chain: %d %s", r.status, r.body)
	}
	budgets := `[{"scope":"provider:` + name + `","period":"day","limit":1,"action":"block"}]`
	if r := e.do(http.MethodPut, "/api/budgets", budgets, nil); r.status != http.StatusOK {
		t.Fatalf("a budget of the discovered provider: %d %s", r.status, r.body)
	}

	r := e.do(http.MethodPatch, "/api/providers/"+name, `{"tier":"free"}`, nil)
	if r.status != http.StatusBadRequest || r.param() != "tier" || !strings.Contains(r.errorMessage(), "found by discovery") {
		t.Fatalf("setting the tier of a discovered provider: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodPatch, "/api/providers/a", `{"rename":"z"}`, nil)
	if r.status != http.StatusBadRequest || r.param() != "rename" {
		t.Fatalf("renaming a configured provider: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodPatch, "/api/providers/"+name, `{"rename":"b"}`, nil)
	if r.status != http.StatusBadRequest || r.param() != "rename" || !strings.Contains(r.errorMessage(), `a provider is already called "b"`) {
		t.Fatalf("renaming onto a configured provider: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodPatch, "/api/providers/"+name, `{"rename":"Desk Box"}`, nil)
	if r.status != http.StatusBadRequest || r.param() != "rename" {
		t.Fatalf("a bad name: %d %s", r.status, r.body)
	}

	// A view sent back as GET showed it changes nothing.
	v, _ := e.providerView(name)
	if r := e.do(http.MethodPut, "/api/providers/"+name, jsonOf(t, v), nil); r.status != http.StatusOK {
		t.Fatalf("the view sent back: %d %s", r.status, r.body)
	}

	r = e.do(http.MethodPatch, "/api/providers/"+name, `{"rename":"desk"}`, nil)
	var renamed control.ProviderView
	if r.status != http.StatusOK || json.Unmarshal(r.body, &renamed) != nil || renamed.Name != "desk" || renamed.Local == nil || renamed.Local.Status != control.LocalServing {
		t.Fatalf("rename: %d %s", r.status, r.body)
	}
	if c := e.chainsByName()["mine"]; !slices.Equal(c.Backends, []string{"desk/qwen2.5:7b", "b/mb"}) || len(c.Gone) != 0 {
		t.Fatalf("the chain after the rename: %+v", c)
	}
	if b := e.g.Control().Config().Budgets; len(b) != 1 || b[0].Scope != "provider:desk" {
		t.Fatalf("the budget after the rename: %+v", b)
	}
	if r := e.post("/v1/chat/completions", chat("desk/qwen2.5:7b", false)); r.status != http.StatusOK {
		t.Fatalf("the new name: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/chat/completions", chat(model, false)); r.status != http.StatusNotFound {
		t.Fatalf("the old name: %d %s", r.status, r.body)
	}

	if r := e.do(http.MethodPut, "/api/limits/desk", `{"limits":{"rpm":2}}`, nil); r.status != http.StatusOK {
		t.Fatalf("limits of the discovered provider: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPut, "/api/limits/desk/qwen2.5:7b", `{"limits":{"rpm":1}}`, nil); r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(), "shared by all its models") {
		t.Fatalf("limits of one model of a discovered provider: %d %s", r.status, r.body)
	}
	if v, _ := e.providerView("desk"); v.Limits.RPM != 2 {
		t.Fatalf("the view's limits: %+v", v.Limits)
	}
	served := len(srv.Upstream().Requests())
	e.post("/v1/chat/completions", chat("desk/qwen2.5:7b", false))
	r = e.post("/v1/chat/completions", chat("desk/qwen2.5:7b", false))
	if r.status != http.StatusTooManyRequests || !strings.Contains(r.errorMessage(), "desk: requests per minute used") {
		t.Fatalf("a request past the discovered provider's limit: %d %s", r.status, r.body)
	}
	if n := len(srv.Upstream().Requests()) - served; n != 1 {
		t.Fatalf("the server got %d requests past its limit of 2 a minute (one was used before)", n)
	}
	e.clock.Advance(61 * time.Second)

	r = e.do(http.MethodPatch, "/api/providers/desk", `{"hidden":true}`, nil)
	var hidden control.ProviderView
	if r.status != http.StatusOK || json.Unmarshal(r.body, &hidden) != nil || hidden.Local == nil || hidden.Local.Status != control.LocalHidden {
		t.Fatalf("hide: %d %s", r.status, r.body)
	}
	if c := e.chainsByName()["auto"]; slices.Contains(c.Backends, "desk/qwen2.5:7b") {
		t.Fatalf("auto holds the hidden server: %+v", c)
	}
	if c := e.chainsByName()["mine"]; !slices.Equal(c.Gone, []string{"desk/qwen2.5:7b"}) {
		t.Fatalf("mine with the server hidden: %+v", c)
	}
	before := len(srv.Upstream().Requests())
	if r := e.post("/v1/chat/completions", chat("mine", false)); r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "b/mb" {
		t.Fatalf("mine with the server hidden: %d %q", r.status, r.header.Get("X-FreeLane-Backend"))
	}
	if n := len(srv.Upstream().Requests()); n != before {
		t.Fatalf("the hidden server got %d requests", n-before)
	}
	if r := e.do(http.MethodPatch, "/api/providers/desk", `{"hidden":false}`, nil); r.status != http.StatusOK {
		t.Fatalf("show again: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/chat/completions", chat("mine", false)); r.header.Get("X-FreeLane-Backend") != "desk/qwen2.5:7b" {
		t.Fatalf("mine once shown again: %d %q", r.status, r.header.Get("X-FreeLane-Backend"))
	}
	rec := e.g.Control().Config().Local
	if len(rec) != 1 || rec[0].Name != "desk" || rec[0].Hidden || rec[0].Limits == nil || rec[0].Limits.RPM != 2 {
		t.Fatalf("the stored record: %+v", rec)
	}
}
