package gateway_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/metrics"
)

// counters are the figures the dashboard shows, as /api/state or the
// websocket's snapshot give them.
type counters struct {
	Totals struct {
		RequestsToday int64 `json:"requests_today"`
	} `json:"totals"`
	Backends []struct {
		Name    string                    `json:"name"`
		Today   metrics.DayCount          `json:"today"`
		Windows map[string]metrics.Window `json:"windows"`
	} `json:"backends"`
	Events []struct {
		Time    time.Time `json:"time"`
		Kind    string    `json:"kind"`
		Level   string    `json:"level"`
		Backend string    `json:"backend"`
		Reason  string    `json:"reason"`
	} `json:"events"`
}

// figures are the parts of counters that must survive a restart: today's
// requests, each backend's calls today and its windows' counts and
// percentiles (rates are left out: they divide by a span that goes on
// growing), and the alerts.
type figures struct {
	RequestsToday int64
	Today         map[string]metrics.DayCount
	Windows       map[string]map[string]metrics.Window
	Alerts        []string
}

func (c counters) figures() figures {
	f := figures{RequestsToday: c.Totals.RequestsToday, Today: map[string]metrics.DayCount{}, Windows: map[string]map[string]metrics.Window{}}
	for _, b := range c.Backends {
		f.Today[b.Name] = b.Today
		ws := map[string]metrics.Window{}
		for k, w := range b.Windows {
			w.RPS = 0
			ws[k] = w
		}
		f.Windows[b.Name] = ws
	}
	for _, e := range c.Events {
		if e.Level == "warn" || e.Level == "alert" {
			f.Alerts = append(f.Alerts, e.Time.UTC().Format(time.RFC3339Nano)+" "+e.Level+" "+e.Kind+" "+e.Backend+" "+e.Reason)
		}
	}
	return f
}

// counters reads the figures from /api/state and from the websocket's
// first snapshot, and fails the test unless they agree.
func (e *env) counters() figures {
	e.t.Helper()
	r := e.do("GET", "/api/state", "", nil)
	var st counters
	if r.status != http.StatusOK || json.Unmarshal(r.body, &st) != nil {
		e.t.Fatalf("GET /api/state: %d %s", r.status, r.body)
	}
	c, _, err := e.dialer().Dial("ws"+strings.TrimPrefix(e.base, "http")+"/api/ws", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	// The dashboard starts from the snapshot and applies each update to
	// it: new totals and backends, events added. A snapshot a moment old
	// is followed by the update that brings it up to date.
	f := st.figures()
	var hub counters
	deadline := time.Now().Add(10 * time.Second)
	for {
		_ = c.SetReadDeadline(deadline)
		_, raw, err := c.ReadMessage()
		if err != nil {
			e.t.Fatalf("the websocket never agreed with /api/state %+v: %v; last %+v", f, err, hub.figures())
		}
		var msg struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(raw, &msg); err != nil {
			e.t.Fatal(err)
		}
		switch msg.Type {
		case "snapshot":
			hub = counters{}
			if err := json.Unmarshal(msg.Data, &hub); err != nil {
				e.t.Fatal(err)
			}
		case "update":
			var u counters
			if err := json.Unmarshal(raw, &u); err != nil {
				e.t.Fatal(err)
			}
			hub.Totals, hub.Backends, hub.Events = u.Totals, u.Backends, append(hub.Events, u.Events...)
		}
		if reflect.DeepEqual(hub.figures(), f) {
			return f
		}
	}
}

// usageToday is the ledger's calls per backend on the local day of day.
func (e *env) usageToday(day time.Time) map[string]metrics.DayCount {
	e.t.Helper()
	d := day.Local().Format(time.DateOnly)
	r := e.do("GET", "/api/usage?group_by=backend&from="+d+"&to="+d, "", nil)
	var u struct {
		Rows []struct {
			Key      string `json:"key"`
			Requests int64  `json:"requests"`
			Failures int64  `json:"failures"`
		} `json:"rows"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &u) != nil {
		e.t.Fatalf("usage: %d %s", r.status, r.body)
	}
	out := map[string]metrics.DayCount{}
	for _, row := range u.Rows {
		out[row.Key] = metrics.DayCount{Calls: row.Requests, Failures: row.Failures}
	}
	return out
}

// called keeps the backends with calls, as the ledger lists them.
func called(m map[string]metrics.DayCount) map[string]metrics.DayCount {
	out := map[string]metrics.DayCount{}
	for k, v := range m {
		if v.Calls > 0 {
			out[k] = v
		}
	}
	return out
}

// requestPaths is each logged request's client dialect and path, by the
// model the client asked for.
func (e *env) requestPaths() map[string]string {
	e.t.Helper()
	r := e.do("GET", "/api/requests?limit=100", "", nil)
	var traces []struct {
		Model   string `json:"model"`
		Dialect string `json:"dialect"`
		Path    string `json:"path"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &traces) != nil {
		e.t.Fatalf("requests: %d %s", r.status, r.body)
	}
	out := map[string]string{}
	for _, t := range traces {
		out[t.Model] = t.Dialect + " " + t.Path
	}
	return out
}

// TestCountersSurviveRestart serves requests in four dialects, with a
// failover, a tripped breaker and a rejected key, then stops the gateway
// and starts a new one on the same data directory: today's requests, each
// backend's calls today, the rolling windows and the alerts read the same
// from /api/state and the websocket, and agree with the usage ledger; the
// request log names each request's API. On the next local day the day's
// counts start at zero while the ledger keeps the day before.
func TestCountersSurviveRestart(t *testing.T) {
	// Local noon, so the test stays inside one local day in any zone.
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.Local)
	e := newEnvAt(t, start, func(c *config.Config) {
		c.Chains = append(c.Chains, config.Chain{Name: "dialects", Backends: []string{"b/mb"}})
	})
	// Two 503s trip a/ma's breaker (an alert) after failing over to b/mb;
	// c/mc's key is refused (an alert).
	e.up.Set("ma", fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503})
	e.up.Set("mc", fakeupstream.Behavior{Status: 401})
	posts := []struct{ path, body string }{
		{"/v1/chat/completions", chat("main", false)},
		{"/v1/chat/completions", chat("main", true)},
		{"/v1/chat/completions", chat("c/mc", false)},
		{"/v1/messages", `{"model":"dialects","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"model":"b/mb","input":"hi"}`},
		{"/v1beta/models/l/ml:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
	}
	for _, p := range posts {
		e.post(p.path, p.body)
	}
	// Six requests made eight calls: a/ma failed over to b/mb twice.
	const calls = 8
	e.waitUsage(calls)

	before := e.counters()
	if before.RequestsToday != int64(len(posts)) {
		t.Fatalf("requests today %d, want %d", before.RequestsToday, len(posts))
	}
	want := map[string]metrics.DayCount{"a/ma": {Calls: 2, Failures: 2}, "b/mb": {Calls: 4}, "c/mc": {Calls: 1, Failures: 1}, "l/ml": {Calls: 1}}
	if got := called(before.Today); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls today %+v, want %+v", got, want)
	}
	if got := e.usageToday(start); !reflect.DeepEqual(got, want) {
		t.Fatalf("the ledger's calls today %+v, the dashboard's %+v", got, want)
	}
	if w := before.Windows["a/ma"]["1h"]; w.Requests != 2 || w.Failures != 2 || w.Failovers != 2 {
		t.Fatalf("a/ma's hour %+v", w)
	}
	if w := before.Windows["b/mb"]["1m"]; w.Requests != 4 || w.LatencyMS.P50 == 0 || w.TTFTMS.P50 == 0 {
		t.Fatalf("b/mb's minute %+v", w)
	}
	if len(before.Alerts) < 2 {
		t.Fatalf("alerts %v, want the tripped breaker and the refused key", before.Alerts)
	}
	paths := map[string]string{
		"main":     " /v1/chat/completions", // the last of the two, by model
		"c/mc":     " /v1/chat/completions",
		"dialects": "anthropic /v1/messages",
		"b/mb":     "openai-responses /v1/responses",
		"l/ml":     "gemini /v1beta/models/{model}:generateContent",
	}
	logged := e.requestPaths()
	for model, p := range paths {
		if !strings.HasSuffix(logged[model], p) {
			t.Errorf("request for %s logged as %q, want %q", model, logged[model], p)
		}
	}

	if err := e.g.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.start(nil)
	after := e.counters()
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("the figures changed across a restart:\nbefore %+v\nafter  %+v", before, after)
	}
	if got := e.requestPaths(); !reflect.DeepEqual(got, logged) {
		t.Fatalf("request log after the restart: %v", got)
	}

	// The next request goes on from the restored figures.
	e.post("/v1/chat/completions", chat("b/mb", false))
	if f := e.counters(); f.RequestsToday != before.RequestsToday+1 || f.Today["b/mb"].Calls != 5 {
		t.Fatalf("after one more request: %d today, b/mb %+v", f.RequestsToday, f.Today["b/mb"])
	}
	e.waitUsage(calls + 1)

	// The next local day starts from zero; the ledger keeps the day
	// before.
	next := time.Date(2026, 12, 1, 0, 0, 30, 0, time.Local)
	e.clock.Set(next)
	if f := e.counters(); f.RequestsToday != 0 || len(called(f.Today)) != 0 {
		t.Fatalf("at the next local day: %d today, calls %+v", f.RequestsToday, called(f.Today))
	}
	if got := e.usageToday(start)["b/mb"]; got.Calls != 5 {
		t.Fatalf("the ledger of the day before: b/mb %+v", got)
	}
	e.post("/v1/chat/completions", chat("b/mb", false))
	if err := e.g.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.start(nil)
	if f := e.counters(); f.RequestsToday != 1 || !reflect.DeepEqual(called(f.Today), map[string]metrics.DayCount{"b/mb": {Calls: 1}}) {
		t.Fatalf("the new day after a restart: %d today, calls %+v", f.RequestsToday, called(f.Today))
	}
}
