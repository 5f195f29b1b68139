package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"freelane/backend/api"
	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/hub"
	"freelane/backend/internal/fakeupstream"
)

func (e *env) do(method, path, body string, header map[string]string) reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.base+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(path, "/api/") {
		req.Header.Set(api.SessionHeader, e.signedIn())
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// signedIn returns the session token of a dashboard signed in the way the
// page signs in: the one-time code from a login link's fragment, exchanged
// with POST /api/login. It is made on first use and kept for the env.
func (e *env) signedIn() string {
	e.t.Helper()
	if e.session == "" {
		e.session = e.login(e.g.LoginURL())
	}
	return e.session
}

// login exchanges the code of a login link for a session token as the
// dashboard's page does, and fails the test if FreeLane refuses it.
func (e *env) login(link string) string {
	e.t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		e.t.Fatal(err)
	}
	code, ok := strings.CutPrefix(u.Fragment, api.LoginFragment+"=")
	if !ok || u.RawQuery != "" {
		e.t.Fatalf("the login link %q carries its code elsewhere than in the fragment", link)
	}
	body, _ := json.Marshal(api.LoginRequest{Code: code})
	r := e.raw("POST", "/api/login", string(body), map[string]string{"Content-Type": "application/json", "Origin": e.base})
	var v api.LoginView
	if err := json.Unmarshal(r.body, &v); err != nil || r.status != http.StatusOK || v.Session == "" {
		e.t.Fatalf("POST /api/login with the link's code: %d %s", r.status, r.body)
	}
	return v.Session
}

// dialer is a websocket client of the signed-in dashboard: it offers the
// session as a subprotocol, as the page does.
func (e *env) dialer() *websocket.Dialer {
	e.t.Helper()
	return &websocket.Dialer{Subprotocols: []string{hub.Protocol, api.SocketSessionPrefix + e.signedIn()}, HandshakeTimeout: 5 * time.Second}
}

func (r reply) param() string {
	var e struct {
		Error struct {
			Param *string `json:"param"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	if e.Error.Param == nil {
		return ""
	}
	return *e.Error.Param
}

func TestAdminProviderWithKey(t *testing.T) {
	e := newEnv(t, nil)
	const key = "sk-dash-0123456789abcdefa1b2"
	body := `{"name":"d","tier":"free","base_url":"` + e.up.URL + `","models":[{"id":"md","params_b":400}],"api_key":"` + key + `"}`
	r := e.do("POST", "/api/providers", body, nil)
	if r.status != 201 {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), key) || !strings.Contains(string(r.body), `"masked":"sk-...a1b2"`) {
		t.Errorf("answer %s", r.body)
	}
	// The new provider serves the next request: it is the largest free
	// model, so auto puts it first among the free ones; pin it to be sure.
	r = e.post("/v1/chat/completions", chat("d/md", false))
	if r.status != 200 {
		t.Fatalf("new provider does not serve: %d %s", r.status, r.body)
	}
	if got := e.up.Requests()[len(e.up.Requests())-1].Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("upstream got %q", got)
	}
	list := e.do("GET", "/api/providers", "", nil)
	if strings.Contains(string(list.body), key) {
		t.Error("provider list reveals the key")
	}
	// The database holds no plaintext key.
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"freelane.db", "freelane.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(e.dir, f))
		if strings.Contains(string(b), "0123456789abcdef") {
			t.Errorf("%s holds the key in plaintext", f)
		}
	}
}

func TestAdminValidationNamesTheField(t *testing.T) {
	e := newEnv(t, nil)
	cases := []struct{ body, param string }{
		{`{"name":"x","tier":"free","base_url":"nope","models":[{"id":"m"}]}`, "base_url"},
		{`{"name":"x","tier":"paid","base_url":"http://a","models":[{"id":"m"}]}`, "tier"},
		{`{"name":"x","tier":"free","base_url":"http://a","models":[]}`, "models"},
		{`{"name":"x","tier":"free","base_url":"http://a","models":[{"id":"m"}],"timeouts":{"idle":"later"}}`, "timeouts.idle"},
		{`{"name":"b","tier":"free","base_url":"http://a","models":[{"id":"m"}]}`, "name"},
	}
	for _, tc := range cases {
		r := e.do("POST", "/api/providers", tc.body, nil)
		if r.status/100 != 4 || r.param() != tc.param || r.errorMessage() == "" {
			t.Errorf("%s: %d param %q %s", tc.param, r.status, r.param(), r.body)
		}
	}
	if r := e.do("POST", "/api/providers", `{"name":"x","bogus":1}`, nil); r.status != 400 || !strings.Contains(r.errorMessage(), "bogus") {
		t.Errorf("unknown field: %d %s", r.status, r.body)
	}
}

func TestAdminChainOrderTakesEffectOnNextRequest(t *testing.T) {
	e := newEnv(t, nil)
	if r := e.post("/v1/chat/completions", chat("main", false)); r.header.Get("X-FreeLane-Backend") != "a/ma" {
		t.Fatalf("before: %q", r.attempts())
	}
	r := e.do("PUT", "/api/chains/main", `{"backends":["c/mc","a/ma","b/mb"]}`, nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"backends":["c/mc","a/ma","b/mb"]`) {
		t.Fatalf("reorder: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/chat/completions", chat("main", false)); r.header.Get("X-FreeLane-Backend") != "c/mc" {
		t.Errorf("after reorder: %q", r.attempts())
	}
	// Bad references are refused with the field named.
	r = e.do("PUT", "/api/chains/main", `{"backends":["c/mc","zz/top"]}`, nil)
	if r.status != 400 || r.param() != "backends[1]" {
		t.Errorf("bad backend: %d %q %s", r.status, r.param(), r.body)
	}
	// Editing auto turns it into a user chain.
	r = e.do("PUT", "/api/chains/auto", `{"backends":["l/ml"]}`, nil)
	if r.status != 200 || strings.Contains(string(r.body), `"generated":true`) {
		t.Fatalf("auto: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/chat/completions", chat("auto", false)); r.attempts() != "l/ml=ok" {
		t.Errorf("auto after edit: %q", r.attempts())
	}
}

func TestAdminAddingAKeyMakesAProviderServe(t *testing.T) {
	// The config file gives b no key, so the dashboard's is the one used.
	e := newEnv(t, func(c *config.Config) { c.Providers[1].APIKey = "" })
	r := e.post("/v1/chat/completions", chat("b/mb", false))
	if r.status != 503 || !strings.Contains(r.errorMessage(), "add a key for b in the dashboard") {
		t.Fatalf("without a key: %d %s", r.status, r.body)
	}
	r = e.do("PUT", "/api/providers/b/key", `{"key":"sk-new-key-for-b-9876"}`, nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"source":"dashboard"`) {
		t.Fatalf("set key: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/chat/completions", chat("b/mb", false)); r.status != 200 {
		t.Fatalf("with the key: %d %s", r.status, r.body)
	}
	if got := e.up.Requests()[len(e.up.Requests())-1].Header.Get("Authorization"); got != "Bearer sk-new-key-for-b-9876" {
		t.Errorf("upstream saw %q", got)
	}
}

func TestAdminRefusesOtherOrigins(t *testing.T) {
	e := newEnv(t, nil)
	if r := e.do("GET", "/api/providers", "", map[string]string{"Origin": "http://evil.example"}); r.status != 403 {
		t.Errorf("foreign origin: %d", r.status)
	}
	if r := e.do("POST", "/api/chains", `{"name":"x","backends":["a/ma"]}`, map[string]string{"Origin": "http://evil.example"}); r.status != 403 {
		t.Errorf("foreign origin write: %d", r.status)
	}
	if r := e.do("GET", "/api/providers", "", map[string]string{"Origin": e.base}); r.status != 200 {
		t.Errorf("own origin: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/providers", "", nil); r.status != 200 {
		t.Errorf("no origin: %d", r.status)
	}
}

func TestAdminChangesSurviveRestartWithoutConfig(t *testing.T) {
	e := newEnv(t, nil)
	if r := e.do("POST", "/api/chains", `{"name":"fast","backends":["c/mc"]}`, nil); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := gateway.New(context.Background(), gateway.Options{DataDir: e.dir, Listen: "127.0.0.1:0", Logger: log, Clock: e.clock, ManualProbes: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	e.g, e.base = g, "http://"+g.Addr()
	if r := e.post("/v1/chat/completions", chat("fast", false)); r.status != 200 || r.attempts() != "c/mc=ok" {
		t.Errorf("after restart: %d %q %s", r.status, r.attempts(), r.body)
	}
	var st struct {
		SeededFrom string `json:"seeded_from"`
	}
	_ = json.Unmarshal(e.do("GET", "/api/state", "", nil).body, &st)
	if st.SeededFrom != "" {
		t.Errorf("seeded_from %q without --config", st.SeededFrom)
	}
}

func TestWebSocketSnapshotThenUpdates(t *testing.T) {
	e := newEnv(t, nil)
	url := "ws" + strings.TrimPrefix(e.base, "http") + "/api/ws"
	// A foreign page cannot open it.
	if _, resp, err := e.dialer().Dial(url, http.Header{"Origin": {"http://evil.example"}}); err == nil || resp.StatusCode != 403 {
		t.Fatalf("foreign origin: %v %v", err, resp)
	}
	c, _, err := e.dialer().Dial(url, http.Header{"Origin": {e.base}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var first struct {
		Type string
		Data struct {
			Backends []struct{ Name, Status string }
			Chains   []struct{ Name string }
			Endpoint string
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := c.ReadJSON(&first); err != nil {
		t.Fatal(err)
	}
	if first.Type != "snapshot" || len(first.Data.Backends) != 4 || first.Data.Chains[0].Name != "auto" || !strings.HasSuffix(first.Data.Endpoint, "/v1") {
		t.Fatalf("snapshot %+v", first)
	}
	e.up.Set("ma", fakeupstream.Behavior{Status: 503})
	e.post("/v1/chat/completions", chat("main", false))
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var m struct {
			Type     string
			Requests []struct {
				Backend  string
				Attempts []struct{ Backend string }
			}
			Backends []struct {
				Name    string
				Windows map[string]struct{ Requests int }
			}
		}
		if err := c.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "update" && len(m.Requests) == 1 {
			if m.Requests[0].Backend != "b/mb" || len(m.Requests[0].Attempts) != 2 {
				t.Errorf("request %+v", m.Requests[0])
			}
			for _, b := range m.Backends {
				if b.Name == "a/ma" && b.Windows["1m"].Requests != 1 {
					t.Errorf("a/ma window %+v", b.Windows)
				}
			}
			return
		}
	}
	t.Fatal("no update with the request")
}

func TestPrometheusMetrics(t *testing.T) {
	e := newEnv(t, nil)
	e.post("/v1/chat/completions", chat("main", false))
	r := e.do("GET", "/metrics", "", nil)
	if r.status != 200 || !strings.Contains(string(r.body), `freelane_backend_requests_total{backend="a/ma"`) {
		t.Errorf("metrics: %d %s", r.status, r.body)
	}
}

// TestWebSocketUnderLoad sends 50 requests per second for 3 seconds and
// checks the dashboard stays at no more than 4 messages per second while
// every request reaches it; it logs what was pushed.
func TestWebSocketUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	e := newEnv(t, nil)
	url := "ws" + strings.TrimPrefix(e.base, "http") + "/api/ws"
	c, _, err := e.dialer().Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _, _ = c.ReadMessage() // snapshot
	const rps, seconds = 50, 3
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / rps)
		defer tick.Stop()
		for i := 0; i < rps*seconds; i++ {
			<-tick.C
			resp, err := http.Post(e.base+"/v1/chat/completions", "application/json", strings.NewReader(chat("main", i%2 == 0)))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}()
	start := time.Now()
	msgs, bytes, requests := 0, 0, 0
	for requests < rps*seconds && time.Since(start) < 10*time.Second {
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, data, err := c.ReadMessage()
		if err != nil {
			break
		}
		var m struct{ Requests []json.RawMessage }
		_ = json.Unmarshal(data, &m)
		msgs++
		bytes += len(data)
		requests += len(m.Requests)
	}
	<-done
	elapsed := time.Since(start).Seconds()
	t.Logf("under %d req/s: %d messages in %.1f s (%.1f/s), %.1f KiB/s, %d of %d requests pushed",
		rps, msgs, elapsed, float64(msgs)/elapsed, float64(bytes)/1024/elapsed, requests, rps*seconds)
	if requests != rps*seconds {
		t.Errorf("%d of %d requests reached the dashboard", requests, rps*seconds)
	}
	if rate := float64(msgs) / elapsed; rate > 4.5 {
		t.Errorf("%.1f messages per second, want at most 4", rate)
	}
}
