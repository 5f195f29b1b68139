package gateway_test

import (
	"strings"
	"testing"
)

// TestRoutingPause covers the tray's Pause: /v1 answers 503 with a message
// saying FreeLane is paused, the dashboard hears about it, and Resume
// serves again.
func TestRoutingPause(t *testing.T) {
	e := newEnv(t, nil)
	if r := e.post("/v1/chat/completions", chat("auto", false)); r.status != 200 {
		t.Fatalf("before pause: %d %s", r.status, r.body)
	}
	e.g.SetRoutingPaused(true)
	calls := len(e.up.Requests())
	for _, path := range []string{"/v1/chat/completions", "/v1/embeddings"} {
		r := e.post(path, chat("auto", false))
		if r.status != 503 || !strings.Contains(string(r.body), `"code":"freelane_paused"`) || !strings.Contains(string(r.body), "FreeLane is paused") {
			t.Errorf("%s while paused: %d %s", path, r.status, r.body)
		}
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", path)
		}
	}
	if r := e.do("GET", "/v1/models", "", nil); r.status != 503 {
		t.Errorf("models while paused: %d", r.status)
	}
	if n := len(e.up.Requests()); n != calls {
		t.Errorf("paused requests reached the upstream: %d calls", n-calls)
	}
	if !e.g.Snapshot().RoutingPaused {
		t.Error("snapshot does not say routing is paused")
	}
	if r := e.do("GET", "/api/routing", "", nil); !strings.Contains(string(r.body), `"paused":true`) {
		t.Errorf("GET /api/routing: %s", r.body)
	}
	evs := e.g.Events().Recent()
	if len(evs) == 0 || evs[len(evs)-1].Kind != "routing_paused" {
		t.Errorf("no routing_paused event: %+v", evs)
	}

	// Resume from the dashboard.
	if r := e.do("PUT", "/api/routing", `{"paused":false}`, nil); r.status != 200 || !strings.Contains(string(r.body), `"paused":false`) {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/chat/completions", chat("auto", false)); r.status != 200 {
		t.Fatalf("after resume: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/api/routing", `{}`, nil); r.status != 400 || r.param() != "paused" {
		t.Errorf("missing field: %d %s", r.status, r.body)
	}
}

// TestDefaultChain covers the tray's Default chain submenu: "auto" routes
// to the chosen chain, the choice survives a restart, and deleting the
// chain gives auto back to FreeLane.
func TestDefaultChain(t *testing.T) {
	e := newEnv(t, nil)
	r := e.do("POST", "/api/chains", `{"name":"big","backends":["c/mc"]}`, nil)
	if r.status != 201 && r.status != 200 {
		t.Fatalf("create chain: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/api/default-chain", `{"name":"nope"}`, nil); r.status != 404 || r.param() != "name" {
		t.Errorf("unknown chain: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/api/default-chain", `{"name":"big"}`, nil); r.status != 200 || !strings.Contains(string(r.body), `"name":"big","backends":["c/mc"],"strategy":"priority","gear":"auto","max_wait":"","generated":false,"default":true`) {
		t.Fatalf("set default: %d %s", r.status, r.body)
	}
	r = e.post("/v1/chat/completions", chat("auto", false))
	if r.status != 200 || r.header.Get("X-FreeLane-Backend") != "c/mc" {
		t.Fatalf("auto did not go to the default chain: %d %s %s", r.status, r.header.Get("X-FreeLane-Backend"), r.body)
	}
	if got := e.g.Control().DefaultChain(); got != "big" {
		t.Errorf("DefaultChain() = %q", got)
	}
	if r := e.do("DELETE", "/api/chains/big", "", nil); r.status/100 != 2 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if got := e.g.Control().DefaultChain(); got != "" {
		t.Errorf("after deleting the chain DefaultChain() = %q", got)
	}
	r = e.post("/v1/chat/completions", chat("auto", false))
	if r.status != 200 {
		t.Fatalf("auto after delete: %d %s", r.status, r.body)
	}
}
