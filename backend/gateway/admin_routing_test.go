package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/api"
	"freelane/backend/config"
	"freelane/backend/events"
	"freelane/backend/llm"
)

func (e *env) chainView(name string) api.ChainView {
	e.t.Helper()
	r := e.do("GET", "/api/chains", "", nil)
	var cs []api.ChainView
	if err := json.Unmarshal(r.body, &cs); err != nil || r.status != http.StatusOK {
		e.t.Fatalf("GET /api/chains: %d %s", r.status, r.body)
	}
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	e.t.Fatalf("no chain %q in %s", name, r.body)
	return api.ChainView{}
}

func storedChain(e *env, name string) config.Chain {
	for _, c := range e.g.Control().Config().Chains {
		if c.Name == name {
			return c
		}
	}
	return config.Chain{}
}

func TestAdminChainRoutingRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	if c := e.chainView("main"); c.Strategy != "priority" || c.Gear != "auto" || c.MaxWait != "" {
		t.Fatalf("defaults %+v", c)
	}
	r := e.do("PUT", "/api/chains/main", `{"strategy":"weighted","gear":"manual","weights":{"a/ma":3,"b/mb":1},"priority":{"c/mc":2},"max_wait":"1500ms"}`, nil)
	if r.status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	check := func(when string, c api.ChainView) {
		t.Helper()
		if c.Strategy != "weighted" || c.Gear != "manual" || c.Weights["a/ma"] != 3 || c.Weights["b/mb"] != 1 || c.Priority["c/mc"] != 2 || c.MaxWait != "1.5s" {
			t.Errorf("%s: %+v", when, c)
		}
	}
	var put api.ChainView
	_ = json.Unmarshal(r.body, &put)
	check("PUT answer", put)
	check("GET", e.chainView("main"))
	// The stored configuration holds the settings under the chain, and
	// they are there after a restart.
	ch := storedChain(e, "main")
	if ch.Strategy != "weighted" || ch.Gear != "manual" || ch.MaxWait == nil || *ch.MaxWait != 1500*time.Millisecond {
		t.Errorf("stored %+v", ch)
	}
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.start(nil)
	check("after a restart", e.chainView("main"))
	// An old client's "ordered" is priority, and a new chain takes the
	// settings at once.
	r = e.do("POST", "/api/chains", `{"name":"old","backends":["b/mb","c/mc"],"strategy":"ordered"}`, nil)
	if r.status != http.StatusCreated || e.chainView("old").Strategy != "priority" {
		t.Errorf("ordered: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/api/chains", `{"name":"rr","backends":["b/mb","c/mc"],"strategy":"round_robin","gear":"manual","max_wait":"0s"}`, nil)
	if c := e.chainView("rr"); r.status != http.StatusCreated || c.Strategy != "round_robin" || c.Gear != "manual" || c.MaxWait != "0s" {
		t.Errorf("create: %d %s", r.status, r.body)
	}
	// Clearing the weights clears them.
	r = e.do("PUT", "/api/chains/main", `{"weights":{},"strategy":"priority"}`, nil)
	if c := e.chainView("main"); r.status != http.StatusOK || len(c.Weights) != 0 || c.Strategy != "priority" {
		t.Errorf("cleared: %d %s", r.status, r.body)
	}
}

func TestAdminChainRoutingRejected(t *testing.T) {
	e := newEnv(t, nil)
	for _, c := range []struct{ body, param, words string }{
		{`{"strategy":"fastest"}`, "strategy", "strategy must be one of priority, round_robin"},
		{`{"gear":"turbo"}`, "gear", `gear must be "auto" or "manual"`},
		{`{"weights":{"a/ma":-2}}`, "weights", "weights gives"},
		{`{"weights":{"z/zz":2}}`, "weights", "not among the chain's backends"},
		{`{"priority":{"a/ma":99999}}`, "priority", "between -1000 and 1000"},
		{`{"max_wait":"soon"}`, "max_wait", "max_wait must be a duration"},
		{`{"max_wait":"5m"}`, "max_wait", "max_wait must be a duration"},
	} {
		r := e.do("PUT", "/api/chains/main", c.body, nil)
		if r.status != http.StatusBadRequest || r.param() != c.param || !strings.Contains(r.errorMessage(), c.words) {
			t.Errorf("%s: %d %s", c.body, r.status, r.body)
		}
	}
	if c := e.chainView("main"); c.Strategy != "priority" || c.Gear != "auto" || len(c.Weights)+len(c.Priority) != 0 {
		t.Errorf("a refused change was kept: %+v", c)
	}
	r := e.do("PUT", "/api/chains/main/gear", `{"gear":"fast"}`, nil)
	if r.status != http.StatusBadRequest || r.param() != "gear" {
		t.Errorf("bad gear: %d %s", r.status, r.body)
	}
	r = e.do("PUT", "/api/chains/nope/gear", `{"gear":"manual"}`, nil)
	if r.status != http.StatusNotFound {
		t.Errorf("unknown chain: %d %s", r.status, r.body)
	}
}

func gearEvents(e *env) []events.Event {
	var out []events.Event
	for _, ev := range e.g.Events().Recent() {
		if ev.Kind == events.GearSwitched {
			out = append(out, ev)
		}
	}
	return out
}

func TestAdminGearSwitch(t *testing.T) {
	e := newEnv(t, nil)
	r := e.do("PUT", "/api/chains/main/gear", `{"gear":"manual"}`, nil)
	var c api.ChainView
	if err := json.Unmarshal(r.body, &c); err != nil || r.status != http.StatusOK || c.Gear != "manual" {
		t.Fatalf("switch: %d %s", r.status, r.body)
	}
	evs := gearEvents(e)
	if len(evs) != 1 || evs[0].From != "auto" || evs[0].To != "manual" || !strings.Contains(evs[0].Reason, "chain main") {
		t.Fatalf("events %+v", evs)
	}
	// The same gear again changes nothing and says nothing.
	e.do("PUT", "/api/chains/main/gear", `{"gear":"manual"}`, nil)
	if n := len(gearEvents(e)); n != 1 {
		t.Errorf("%d events after switching to the same gear", n)
	}
	if ch := storedChain(e, "main"); ch.Gear != "manual" {
		t.Errorf("stored gear %q", ch.Gear)
	}
	// The generated auto chain keeps its gear in the routing settings
	// and stays generated.
	r = e.do("PUT", "/api/chains/auto/gear", `{"gear":"manual"}`, nil)
	if err := json.Unmarshal(r.body, &c); err != nil || r.status != http.StatusOK || c.Gear != "manual" || !c.Generated {
		t.Fatalf("auto: %d %s", r.status, r.body)
	}
	if g := e.g.Control().Config().Routing.AutoGear; g != "manual" {
		t.Errorf("auto gear stored as %q", g)
	}
	// The router routes the chain in the gear: a request's decision says
	// so.
	resp := e.post("/v1/chat/completions", chat("main", false))
	if resp.status != http.StatusOK {
		t.Fatalf("request: %d %s", resp.status, resp.body)
	}
	if d := e.traceOf(resp.header.Get("X-FreeLane-Request-Id")).Decision; d == nil || d.Gear != "manual" {
		t.Errorf("decision %+v", d)
	}
}

func TestAdminRoutePreviewCallsNothing(t *testing.T) {
	e := newEnv(t, nil)
	before := len(e.up.Requests())
	body := `{"model":"main","messages":[{"role":"user","content":"hi"}],"max_tokens":64,"stream":true,
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"task":"think","gear":"manual"}`
	r := e.do("POST", "/api/route/preview", body, nil)
	var d llm.Decision
	if err := json.Unmarshal(r.body, &d); err != nil || r.status != http.StatusOK {
		t.Fatalf("preview: %d %s", r.status, r.body)
	}
	if d.Requested != "main" || d.Chain != "main" || d.Gear != "manual" || len(d.Candidates) != 3 || d.Candidates[0].Backend != "a/ma" || d.Candidates[0].Rank != 1 {
		t.Errorf("decision %s", r.body)
	}
	if n := len(e.up.Requests()) - before; n != 0 {
		t.Errorf("the preview called the upstream %d times", n)
	}
	for _, c := range []struct{ body, param string }{
		{`{"model":"main","messages":[{"role":"user","content":"hi"}],"gear":"sport"}`, "gear"},
		{`{"model":"main","messages":[{"role":"user","content":"hi"}],"task":"no spaces please"}`, "task"},
		{`{"model":"main","messages":[{"role":"user","content":"hi"}],"task":7}`, "task"},
	} {
		if r := e.do("POST", "/api/route/preview", c.body, nil); r.status != http.StatusBadRequest || r.param() != c.param {
			t.Errorf("%s: %d %s", c.body, r.status, r.body)
		}
	}
	if r := e.do("POST", "/api/route/preview", `{"messages":"nope"}`, nil); r.status != http.StatusBadRequest {
		t.Errorf("not a chat body: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/route/preview", `null`, nil); r.status != http.StatusBadRequest {
		t.Errorf("null body: %d %s", r.status, r.body)
	}
}

func TestAdminRequestsByID(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.post("/v1/chat/completions", chat("main", false))
	id := resp.header.Get("X-FreeLane-Request-Id")
	if resp.status != http.StatusOK || id == "" {
		t.Fatalf("request: %d %s", resp.status, resp.body)
	}
	get := func(when string) {
		t.Helper()
		r := e.do("GET", "/api/requests/"+id, "", nil)
		var tr llm.Trace
		if err := json.Unmarshal(r.body, &tr); err != nil || r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", when, r.status, r.body)
		}
		if tr.ID != id || tr.Decision == nil || tr.Decision.Chain != "main" || tr.Decision.Strategy != "priority" || len(tr.Decision.Candidates) == 0 {
			t.Errorf("%s: %s", when, r.body)
		}
	}
	get("live tail")
	// After a restart the live tail is empty: the request log answers.
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.start(nil)
	get("request log")
	r := e.do("GET", "/api/requests/req_00000000000000000000000000", "", nil)
	if r.status != http.StatusNotFound || r.code() != "unknown_request" || !strings.Contains(r.errorMessage(), "there is no request") {
		t.Errorf("unknown: %d %s", r.status, r.body)
	}
	for _, bad := range []string{"req%20x", strings.Repeat("a", 65), "req_%3Cscript%3E"} {
		if r := e.do("GET", "/api/requests/"+bad, "", nil); r.status != http.StatusBadRequest || r.param() != "id" {
			t.Errorf("%s: %d %s", bad, r.status, r.body)
		}
	}
}

func TestAdminRoutingNeedsSession(t *testing.T) {
	e := newEnv(t, nil)
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/api/chains/main/gear", `{"gear":"manual"}`},
		{"POST", "/api/route/preview", `{"model":"main","messages":[{"role":"user","content":"hi"}]}`},
		{"GET", "/api/requests/req_0000", ""},
		{"PUT", "/api/chains/main", `{"strategy":"cost"}`},
	} {
		r := e.raw(c.method, c.path, c.body, map[string]string{"Content-Type": "application/json"})
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s %s without a session: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	if c := e.chainView("main"); c.Gear != "auto" || c.Strategy != "priority" {
		t.Errorf("an unauthenticated change was kept: %+v", c)
	}
}
