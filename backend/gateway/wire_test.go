package gateway_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/wiretypes"
)

// wire checks real answers against the types the dashboard is generated
// from (frontend/src/lib/wire.gen.ts): every key present must be declared,
// every required key present, and every value of its declared type, null
// only where the type allows it. It catches what reflection over the Go
// types cannot see, such as a list left nil that the types call never null.
type wire struct {
	e *env
	s *wiretypes.Schema
}

func newWire(e *env) wire {
	e.t.Helper()
	s, err := wiretypes.Describe(filepath.Join("..", ".."))
	if err != nil {
		e.t.Fatalf("describing the wire types: %v", err)
	}
	return wire{e: e, s: s}
}

// call sends body to path, which route describes ("PUT /api/chains/{name}"
// for "/api/chains/x"), and checks the answer against the route's type.
func (w wire) call(route, path, body string, status int) reply {
	w.e.t.Helper()
	method, _, _ := strings.Cut(route, " ")
	r := w.e.do(method, path, body, nil)
	if r.status != status {
		w.e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	_, res, err := w.s.Endpoint(route)
	if err != nil {
		w.e.t.Fatal(err)
	}
	if res.Kind == wiretypes.Void {
		if len(r.body) != 0 {
			w.e.t.Errorf("%s %s answers a body where its type says none: %s", method, path, r.body)
		}
		return r
	}
	if err := w.s.Check(res, r.body); err != nil {
		w.e.t.Errorf("%s %s answers what its type does not describe:\n%v\nbody: %.2000s", method, path, err, r.body)
	}
	return r
}

// get checks a GET route without path parameters.
func (w wire) get(route string) reply {
	w.e.t.Helper()
	return w.call(route, strings.TrimPrefix(route, "GET "), "", http.StatusOK)
}

// fails checks an error answer against ErrorBody.
func (w wire) fails(method, path, body string, status int) {
	w.e.t.Helper()
	r := w.e.do(method, path, body, nil)
	if r.status != status {
		w.e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	if err := w.s.Check(wiretypes.Named("ErrorBody"), r.body); err != nil {
		w.e.t.Errorf("%s %s: the error is not an ErrorBody:\n%v\nbody: %.2000s", method, path, err, r.body)
	}
}

// socket reads websocket messages until done says it has seen enough,
// checking each against WebSocketMessage.
func (w wire) socket(c *websocket.Conn, done func(msg []byte) bool) {
	w.e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_ = c.SetReadDeadline(deadline)
		_, msg, err := c.ReadMessage()
		if err != nil {
			w.e.t.Fatalf("reading the websocket: %v", err)
		}
		if err := w.s.Check(wiretypes.Named("WebSocketMessage"), msg); err != nil {
			w.e.t.Errorf("a websocket message is not a WebSocketMessage:\n%v\nmessage: %.2000s", err, msg)
		}
		if done(msg) {
			return
		}
	}
	w.e.t.Fatal("the websocket did not send what was waited for")
}

func (w wire) dial() *websocket.Conn {
	w.e.t.Helper()
	url := "ws" + strings.TrimPrefix(w.e.base, "http") + "/api/ws"
	c, _, err := w.e.dialer().Dial(url, nil)
	if err != nil {
		w.e.t.Fatal(err)
	}
	w.e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestWireShapesOfABusyGateway drives a gateway through failovers, a
// tripped breaker, a stream, an unknown model, quotas and budgets, and
// every admin route, and checks what it answers and pushes.
func TestWireShapesOfABusyGateway(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		paidConfig(
			config.Budget{Scope: "global", Period: "day", Limit: 10, Action: "free-only"},
			config.Budget{Scope: "chain:main", Period: "month", Limit: 20, Action: "block"},
		)(c)
		c.Providers[0].Models[0].Limits = &config.Limits{RPD: 100}
		c.Providers[0].Models[0].CreditExpires = "2026-12-31"
		c.Providers[1].Limits = &config.Limits{RPM: 30, TPD: 500000}
		c.Providers[1].Headers = map[string]string{"X-Title": "FreeLane"}
		up := c.Providers[0].BaseURL
		c.Providers = append(c.Providers,
			config.Provider{Name: "nokey", Kind: "openai", Tier: "free", BaseURL: up, Models: []config.Model{{ID: "mn"}}, Timeouts: fastTimeouts},
			config.Provider{Name: "off", Kind: "openai", Tier: "free", BaseURL: up, APIKey: "sk-test-off", Disabled: true, Models: []config.Model{{ID: "mo"}}, Timeouts: fastTimeouts},
		)
		c.Chains[0].Backends = append(c.Chains[0].Backends, "nokey/mn")
	})
	w := newWire(e)
	c := w.dial()
	w.socket(c, func(msg []byte) bool { return strings.HasPrefix(string(msg), `{"type":"snapshot"`) })

	// Two failovers trip a/ma; a stream, a request for a model nobody
	// serves and one no backend can answer fill in the rest of a trace.
	e.up.Set("ma", fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503})
	e.post("/v1/chat/completions", chat("main", false))
	e.post("/v1/chat/completions", chat("main", false))
	e.post("/v1/chat/completions", chat("c/mc", true))
	e.post("/v1/chat/completions", chat("nope", false))
	e.up.Set("ml", fakeupstream.Behavior{Status: 429})
	e.post("/v1/chat/completions", chat("l/ml", false))
	seen := 0
	w.socket(c, func(msg []byte) bool {
		seen += strings.Count(string(msg), `"endpoint":"chat/completions"`)
		return seen >= 5
	})
	w.waitLedger()

	for _, route := range []string{"GET /api/state", "GET /api/providers", "GET /api/chains", "GET /api/settings",
		"GET /api/requests", "GET /api/budgets", "GET /api/limits", "GET /api/routing"} {
		w.get(route)
	}
	for _, q := range []string{"", "?group_by=backend" + everything, "?group_by=chain" + everything, "?group_by=day,backend" + everything} {
		w.call("GET /api/usage", "/api/usage"+q, "", http.StatusOK)
	}
	w.call("GET /api/requests", "/api/requests?limit=2&backend=b/mb", "", http.StatusOK)

	provider := `{"name":"d","kind":"openai","tier":"own","base_url":"` + e.up.URL + `","models":[{"id":"md","params_b":8,"context":8192}],` +
		`"headers":{"X-A":"1"},"timeouts":{"connect":"1s","header":"","first_token":"","idle":""},"probe":false,"api_key":"sk-test-dddddddddddd"}`
	w.call("POST /api/providers/models", "/api/providers/models", `{"kind":"openai","base_url":"`+e.up.URL+`","api_key":"sk-test-dddddddddddd"}`, http.StatusOK)
	w.call("POST /api/providers", "/api/providers", provider, http.StatusCreated)
	w.call("PUT /api/providers/{name}", "/api/providers/d", strings.Replace(provider, `"tier":"own"`, `"tier":"free"`, 1), http.StatusOK)
	w.call("PATCH /api/providers/{name}", "/api/providers/d", `{"disabled":true}`, http.StatusOK)
	w.call("PATCH /api/providers/{name}", "/api/providers/d", `{"disabled":false}`, http.StatusOK)
	w.call("PUT /api/providers/{name}/key", "/api/providers/d/key", `{"key":"sk-test-eeeeeeeeeeee"}`, http.StatusOK)
	w.call("POST /api/providers/{name}/test", "/api/providers/d/test", `{"model":"md"}`, http.StatusOK)
	w.call("POST /api/providers/{name}/test", "/api/providers/nokey/test", "", http.StatusOK)
	w.call("DELETE /api/providers/{name}/key", "/api/providers/d/key", "", http.StatusOK)
	w.call("POST /api/chains", "/api/chains", `{"name":"x","backends":["b/mb","c/mc"],"strategy":"ordered"}`, http.StatusCreated)
	w.call("PUT /api/chains/{name}", "/api/chains/x", `{"backends":["c/mc","b/mb"]}`, http.StatusOK)
	w.call("PUT /api/chains/{name}", "/api/chains/x", `{"name":"y"}`, http.StatusOK)
	w.call("PUT /api/default-chain", "/api/default-chain", `{"name":"y"}`, http.StatusOK)
	w.call("PUT /api/default-chain", "/api/default-chain", `{"name":""}`, http.StatusOK)
	w.call("DELETE /api/chains/{name}", "/api/chains/y", "", http.StatusNoContent)
	w.call("DELETE /api/providers/{name}", "/api/providers/d", "", http.StatusNoContent)
	settings := w.get("GET /api/settings")
	w.call("PUT /api/settings", "/api/settings", string(settings.body), http.StatusOK)
	w.call("PUT /api/budgets", "/api/budgets", `[{"scope":"provider:a","period":"day","limit":1,"action":"block"}]`, http.StatusOK)
	w.call("PUT /api/limits/{provider}", "/api/limits/c", `{"limits":{"rpm":5,"reset":"rolling 24h"}}`, http.StatusOK)
	w.call("PUT /api/limits/{provider}/{model...}", "/api/limits/c/mc", `{"limits":{"tpm":100},"price":{"input":1,"output":2},"credit_expires":""}`, http.StatusOK)
	w.call("PUT /api/routing", "/api/routing", `{"paused":true}`, http.StatusOK)
	w.call("PUT /api/routing", "/api/routing", `{"paused":false}`, http.StatusOK)
	w.call("PUT /api/budgets", "/api/budgets", `[]`, http.StatusOK)
	// After the changes the websocket sends a fresh snapshot.
	w.socket(c, func(msg []byte) bool { return strings.HasPrefix(string(msg), `{"type":"snapshot"`) })
	w.get("GET /api/state")

	w.fails("GET", "/api/nothing", "", http.StatusNotFound)
	w.fails("PUT", "/api/routing", `{}`, http.StatusBadRequest)
	w.fails("POST", "/api/providers", `{"name":"e","tier":"gold"}`, http.StatusBadRequest)
	w.fails("GET", "/api/usage?group_by=week", "", http.StatusBadRequest)
}

// everything is a usage range around any clock the test runs at: the
// ledger records real time, the gateway's clock is the test's.
const everything = "&from=2000-01-01&to=2100-01-01"

// waitLedger waits until the ledger writer, which writes every 250 ms,
// has stored a row.
func (w wire) waitLedger() {
	w.e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(string(w.e.do("GET", "/api/usage?group_by=chain"+everything, "", nil).body), `"requests"`) {
		if time.Now().After(deadline) {
			w.e.t.Fatal("the ledger stays empty")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWireShapesOfAnEmptyGateway checks a gateway with nothing configured,
// where every list is empty and Go writes null for the nil ones.
func TestWireShapesOfAnEmptyGateway(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Providers, c.Chains = nil, nil })
	w := newWire(e)
	c := w.dial()
	w.socket(c, func(msg []byte) bool { return strings.HasPrefix(string(msg), `{"type":"snapshot"`) })
	for _, route := range []string{"GET /api/state", "GET /api/providers", "GET /api/chains", "GET /api/settings",
		"GET /api/requests", "GET /api/usage", "GET /api/budgets", "GET /api/limits", "GET /api/routing"} {
		w.get(route)
	}
	// An update comes at least every two seconds, with or without news.
	w.socket(c, func(msg []byte) bool { return strings.HasPrefix(string(msg), `{"type":"update"`) })
}
