package teame2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"freelane/backend/api"
	"freelane/backend/gateway"
	"freelane/backend/internal/teamtest"
	"freelane/backend/llm"
)

// signIn signs a dashboard in to g the way the page does (the one-time
// code of a login link, exchanged at POST /api/login) and returns its
// session.
func (tm *team) signIn(t *testing.T, g *gateway.Gateway) string {
	t.Helper()
	u, err := url.Parse(g.LoginURL())
	if err != nil {
		t.Fatal(err)
	}
	code, _ := strings.CutPrefix(u.Fragment, api.LoginFragment+"=")
	body, _ := json.Marshal(api.LoginRequest{Code: code})
	req, _ := http.NewRequest("POST", "http://"+g.Addr()+"/api/login", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://"+g.Addr())
	resp, err := tm.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v api.LoginView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Session == "" {
		t.Fatalf("signing in to %s: %d, %v", g.Addr(), resp.StatusCode, err)
	}
	return v.Session
}

// adminGet reads path from g's admin API as a signed-in dashboard and
// decodes the answer into v; it returns the status.
func (tm *team) adminGet(t *testing.T, g *gateway.Gateway, session, path string, v any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+g.Addr()+path, nil)
	req.Header.Set(api.SessionHeader, session)
	resp, err := tm.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, b)
		}
	}
	return resp.StatusCode
}

// TestEveryDashboardListsTheTeamsRequests sends requests through the load
// balancer to three instances and checks that each instance's Requests
// screen (GET /api/requests) lists every one of them, each naming the
// instance that served it, and opens one another instance served; with
// PostgreSQL cut off, each still lists its own.
func TestEveryDashboardListsTheTeamsRequests(t *testing.T) {
	tm, h, _ := startPostgresTeam(t)
	const sent = 30
	if ok, failure := tm.load(t, 3, sent/3); ok != sent {
		t.Fatalf("%d of %d requests answered: %s", ok, sent, failure)
	}
	sessions := make([]string, len(tm.gws))
	for i, g := range tm.gws {
		sessions[i] = tm.signIn(t, g)
	}
	// Each instance copies its rows a moment after it stored them.
	var lists [][]llm.Trace
	answered := time.Now()
	deadline := answered.Add(10 * time.Second)
	for {
		lists = lists[:0]
		complete := true
		for i, g := range tm.gws {
			var traces []llm.Trace
			if st := tm.adminGet(t, g, sessions[i], "/api/requests?limit=100", &traces); st != http.StatusOK {
				t.Fatalf("GET /api/requests from %s: %d", g.Addr(), st)
			}
			lists = append(lists, traces)
			complete = complete && len(traces) == sent
		}
		if complete {
			t.Logf("every dashboard lists the team's %d requests %v after the last was answered", sent, time.Since(answered).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the instances list %d, %d and %d requests after %d were answered, want all on every one",
				len(lists[0]), len(lists[1]), len(lists[2]), sent)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ids := func(traces []llm.Trace) []string {
		out := make([]string, len(traces))
		for i, tr := range traces {
			out[i] = tr.ID
		}
		return out
	}
	served := map[string][]string{}
	for _, tr := range lists[0] {
		served[tr.Instance] = append(served[tr.Instance], tr.ID)
	}
	if len(served) != 3 {
		t.Fatalf("the requests name the instances %v, want the three that served them", slices.Sorted(maps.Keys(served)))
	}
	for i := range lists[1:] {
		if !slices.Equal(ids(lists[i+1]), ids(lists[0])) {
			t.Errorf("instance %d lists the team's requests in another order than instance 1", i+2)
		}
	}
	// One instance lists another's requests alone.
	var third []llm.Trace
	if st := tm.adminGet(t, tm.gws[0], sessions[0], "/api/requests?instance=office-3&limit=100", &third); st != http.StatusOK ||
		!slices.Equal(ids(third), served["office-3"]) {
		t.Errorf("office-1 lists office-3's requests as %v (%d), want %v", ids(third), st, served["office-3"])
	}
	// One instance opens a request another served.
	other := served["office-2"][0]
	var detail api.RequestDetail
	if st := tm.adminGet(t, tm.gws[0], sessions[0], "/api/requests/"+other, &detail); st != http.StatusOK || detail.Trace.Instance != "office-2" {
		t.Fatalf("office-1 opens office-2's request %s: %d, served by %q", other, st, detail.Trace.Instance)
	}

	// Without PostgreSQL each dashboard lists its own requests, and says
	// nothing fails.
	h.Down(t, teamtest.BackendPostgres)
	t.Cleanup(func() { h.Up(t, teamtest.BackendPostgres) })
	for i, g := range tm.gws {
		var traces []llm.Trace
		if st := tm.adminGet(t, g, sessions[i], "/api/requests?limit=100", &traces); st != http.StatusOK {
			t.Fatalf("GET /api/requests from office-%d without PostgreSQL: %d", i+1, st)
		}
		name := fmt.Sprintf("office-%d", i+1)
		if len(traces) != len(served[name]) {
			t.Errorf("without PostgreSQL %s lists %d requests, want its own %d", name, len(traces), len(served[name]))
		}
		for _, tr := range traces {
			if tr.Instance != name {
				t.Errorf("without PostgreSQL %s lists a request of %q", name, tr.Instance)
			}
		}
	}
}
