package gateway_test

// Attacks on FreeLane's trust boundaries, each through the real HTTP server
// (and the real websocket client): who may reach the admin plane, who may
// spend the keys through /v1, and what a browser is told about framing and
// sniffing.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gorilla/websocket"

	"freelane/backend/api"
	"freelane/backend/auth"
	"freelane/backend/config"
	"freelane/backend/gateway"
)

// raw sends one request with exactly the given headers, signed in to
// nothing.
func (e *env) raw(method, path, body string, header map[string]string) reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.base+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
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

func (r reply) code() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Code
}

// noUsage fails the test if anything reached the ledger or the request log.
func (e *env) noUsage() {
	e.t.Helper()
	time.Sleep(400 * time.Millisecond) // the ledger writer flushes every 250 ms
	from := e.clock.Now().AddDate(0, 0, -1).Format(time.DateOnly)
	var u struct {
		Rows []json.RawMessage `json:"rows"`
	}
	r := e.do("GET", "/api/usage?group_by=chain&from="+from, "", nil)
	if err := json.Unmarshal(r.body, &u); err != nil || len(u.Rows) != 0 {
		e.t.Errorf("the ledger holds rows after refused requests: %s", r.body)
	}
	if r := e.do("GET", "/api/requests", "", nil); string(r.body) != "[]" {
		e.t.Errorf("the request log holds refused requests: %s", r.body)
	}
}

// TestAttackKeyCaptureNeedsSession is the key capture: any local process
// (or LAN peer) points a provider at its own server and asks FreeLane to
// test it, which would send the stored key there. Without a dashboard
// session both steps are refused, with or without an Origin header.
func TestAttackKeyCaptureNeedsSession(t *testing.T) {
	e := newEnv(t, nil)
	var captured atomic.Int32
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		captured.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(attacker.Close)

	steps := []struct{ method, path, body string }{
		{"PUT", "/api/providers/a", `{"base_url":"` + attacker.URL + `/v1"}`},
		{"POST", "/api/providers/a/test", `{}`},
	}
	for _, origin := range []string{"", e.base} {
		for _, s := range steps {
			h := map[string]string{"Content-Type": "application/json"}
			if origin != "" {
				h["Origin"] = origin
			}
			r := e.raw(s.method, s.path, s.body, h)
			if r.status != http.StatusUnauthorized || r.code() != "session_required" || !strings.Contains(r.errorMessage(), "freelane dashboard-url") {
				t.Errorf("%s %s (Origin %q) without a session: %d %s, want 401 saying how to get in", s.method, s.path, origin, r.status, r.body)
			}
		}
	}
	// A forged session header does not help either.
	for _, s := range steps {
		r := e.raw(s.method, s.path, s.body, map[string]string{"Content-Type": "application/json",
			api.SessionHeader: "x.1.forged"})
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s %s with a forged session: %d %s", s.method, s.path, r.status, r.body)
		}
	}
	var providers []struct {
		Name    string `json:"name"`
		BaseURL string `json:"base_url"`
	}
	_ = json.Unmarshal(e.do("GET", "/api/providers", "", nil).body, &providers)
	for _, p := range providers {
		if p.Name == "a" && p.BaseURL != e.up.URL {
			t.Errorf("provider a now points at %s", p.BaseURL)
		}
	}
	if n := captured.Load(); n != 0 {
		t.Errorf("the attacker's server received %d requests", n)
	}
}

func port(base string) string {
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	return p
}

// TestAttackCrossSitePostToV1 is a web page on any site posting to /v1 as a
// CORS "simple" request (no preflight) to spend the user's keys: every
// simple content type, a sandboxed frame's Origin: null, and a request that
// only carries Sec-Fetch-Site: cross-site are refused before routing.
func TestAttackCrossSitePostToV1(t *testing.T) {
	e := newEnv(t, nil)
	body := chat("a/ma", false)
	cases := []struct {
		name   string
		header map[string]string
		status int
	}{
		{"text/plain from another site", map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, 403},
		{"form from another site", map[string]string{"Origin": "https://evil.example", "Content-Type": "application/x-www-form-urlencoded"}, 403},
		{"multipart from another site", map[string]string{"Origin": "https://evil.example", "Content-Type": "multipart/form-data; boundary=x"}, 403},
		{"JSON from another site", map[string]string{"Origin": "https://evil.example", "Content-Type": "application/json"}, 403},
		{"Origin: null", map[string]string{"Origin": "null", "Content-Type": "text/plain"}, 403},
		{"another port of this machine", map[string]string{"Origin": "http://127.0.0.1:1", "Content-Type": "text/plain"}, 403},
		{"Sec-Fetch-Site: cross-site", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}, 403},
		{"text/plain without Origin", map[string]string{"Content-Type": "text/plain"}, 415},
		{"form without Origin", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"multipart without Origin", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415},
	}
	for _, c := range cases {
		r := e.raw("POST", "/v1/chat/completions", body, c.header)
		if r.status != c.status || r.errorMessage() == "" {
			t.Errorf("%s: %d %s, want %d in the OpenAI error shape", c.name, r.status, r.body, c.status)
		}
		if r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: answered with Access-Control-Allow-Origin %q", c.name, r.header.Get("Access-Control-Allow-Origin"))
		}
	}
	if r := e.raw("POST", "/v1/chat/completions", body, map[string]string{"Content-Type": "text/plain"}); !strings.Contains(r.errorMessage(), "Content-Type: application/json") {
		t.Errorf("415 does not say what to send: %s", r.errorMessage())
	}
	// The preflight of a non-simple request is refused the CORS way.
	r := e.raw("OPTIONS", "/v1/chat/completions", "", map[string]string{"Origin": "https://evil.example",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
	if r.status/100 == 2 || r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Access-Control-Allow-Headers") != "" {
		t.Errorf("preflight from another site: %d %v", r.status, r.header)
	}
	if n := e.up.Calls("ma"); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
	e.noUsage()

	// What must keep working: tools (no Origin), the dashboard's own
	// page, JSON with a charset, and a body without Content-Type.
	for name, h := range map[string]map[string]string{
		"a tool":                {"Content-Type": "application/json", "Authorization": "Bearer sk-dummy"},
		"the dashboard":         {"Content-Type": "application/json", "Origin": e.base, "Sec-Fetch-Site": "same-origin"},
		"JSON with a charset":   {"Content-Type": "application/json; charset=utf-8"},
		"no Content-Type":       {},
		"Sec-Fetch-Site: none":  {"Content-Type": "application/json", "Sec-Fetch-Site": "none"},
		"upper-case media type": {"Content-Type": "Application/JSON"},
	} {
		if r := e.raw("POST", "/v1/chat/completions", body, h); r.status != 200 {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
}

// TestAllowedOriginsAnswerThePreflight lets a web UI the user listed in
// allowed_origins call /v1 from its page, preflight included.
func TestAllowedOriginsAnswerThePreflight(t *testing.T) {
	const ui = "http://localhost:3000"
	e := newEnv(t, func(c *config.Config) { c.AllowedOrigins = []string{ui} })
	r := e.raw("OPTIONS", "/v1/chat/completions", "", map[string]string{"Origin": ui,
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"})
	if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != ui ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Authorization") || !strings.Contains(r.header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight from %s: %d %v", ui, r.status, r.header)
	}
	r = e.raw("POST", "/v1/chat/completions", chat("a/ma", false), map[string]string{"Origin": ui, "Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"})
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != ui {
		t.Errorf("POST from %s: %d %v %s", ui, r.status, r.header, r.body)
	}
	if r := e.raw("POST", "/v1/chat/completions", chat("a/ma", false), map[string]string{"Origin": "http://localhost:3001", "Content-Type": "application/json"}); r.status != 403 {
		t.Errorf("an origin not listed: %d", r.status)
	}
}

// TestAttackWebSocketWithoutSession opens the dashboard's websocket,
// which streams every request and the whole state, without a session.
func TestAttackWebSocketWithoutSession(t *testing.T) {
	e := newEnv(t, nil)
	url := "ws" + strings.TrimPrefix(e.base, "http") + "/api/ws"
	for _, h := range []http.Header{nil, {"Origin": {e.base}}} {
		c, resp, err := websocket.DefaultDialer.Dial(url, h)
		if err == nil {
			c.Close()
			t.Fatalf("the websocket opened without a session (Origin %q)", h.Get("Origin"))
		}
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("websocket without a session (Origin %q): %v %v, want 401", h.Get("Origin"), err, resp)
		}
	}
	c, _, err := e.dialer().Dial(url, http.Header{"Origin": {e.base}})
	if err != nil {
		t.Fatalf("the signed-in dashboard cannot open the websocket: %v", err)
	}
	c.Close()
}

// TestAttackNonLoopbackListenWithoutToken is FreeLane started on every
// interface with no inbound token: it must refuse to start, saying how to
// set one.
func TestAttackNonLoopbackListenWithoutToken(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1")
	cfg.Listen = "0.0.0.0:0"
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ManualProbes: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	err = g.Start()
	if !errors.Is(err, gateway.ErrNoToken) || !strings.Contains(err.Error(), "FREELANE_TOKEN") || !strings.Contains(err.Error(), "server.token") {
		t.Fatalf("Start on 0.0.0.0 without a token: %v", err)
	}
	// The port is not left open.
	if c, err := net.Dial("tcp", g.Addr()); err == nil {
		c.Close()
		t.Errorf("something still listens on %s", g.Addr())
	}
	// A token that is too short is refused as well.
	_, err = gateway.New(context.Background(), gateway.Options{Config: testConfig("http://127.0.0.1:1"), DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ManualProbes: true, Token: "short"})
	if err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("a 5-character token: %v", err)
	}
}

// TestAttackV1WithoutToken runs FreeLane on every interface with a token:
// /v1 refuses callers without it (or with a wrong one) and takes it in each
// of the three headers SDKs send keys in.
func TestAttackV1WithoutToken(t *testing.T) {
	const token = "lan-token-0123456789abcdef"
	e := newEnv(t, func(c *config.Config) {
		c.Listen = "0.0.0.0:0"
		c.Server.Token = token
	})
	e.base = "http://127.0.0.1:" + port("http://"+e.g.Addr())
	body := chat("a/ma", false)
	for name, h := range map[string]map[string]string{
		"no token":       {},
		"a dummy key":    {"Authorization": "Bearer sk-dummy"},
		"a wrong key":    {"x-api-key": token + "x"},
		"a token prefix": {"x-goog-api-key": token[:10]},
	} {
		h["Content-Type"] = "application/json"
		if r := e.raw("POST", "/v1/chat/completions", body, h); r.status != http.StatusUnauthorized || r.code() != "invalid_api_key" {
			t.Errorf("%s: %d %s, want 401", name, r.status, r.body)
		}
	}
	if r := e.raw("GET", "/v1/models", "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("GET /v1/models without the token: %d", r.status)
	}
	if n := e.up.Calls("ma"); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
	for name, h := range map[string]map[string]string{
		"Authorization: Bearer": {"Authorization": "Bearer " + token},
		"x-api-key":             {"x-api-key": token},
		"x-goog-api-key":        {"x-goog-api-key": token},
	} {
		h["Content-Type"] = "application/json"
		if r := e.raw("POST", "/v1/chat/completions", body, h); r.status != 200 {
			t.Errorf("%s: %d %s, want 200", name, r.status, r.body)
		}
	}
	// The token is no way into the admin plane: that takes a session.
	if r := e.raw("GET", "/api/state", "", map[string]string{"Authorization": "Bearer " + token}); r.status != http.StatusUnauthorized {
		t.Errorf("GET /api/state with the inbound token: %d", r.status)
	}
}

// TestDummyKeysWorkOnLoopback keeps IDE plugins working: on loopback with
// no token set, whatever key they send is accepted.
func TestDummyKeysWorkOnLoopback(t *testing.T) {
	e := newEnv(t, nil)
	for _, h := range []string{"Authorization", "x-api-key", "x-goog-api-key"} {
		if r := e.raw("POST", "/v1/chat/completions", chat("a/ma", false), map[string]string{h: "sk-dummy", "Content-Type": "application/json"}); r.status != 200 {
			t.Errorf("%s: sk-dummy: %d %s", h, r.status, r.body)
		}
	}
}

// TestAttackFramingAndSniffing checks the headers that keep the dashboard
// out of other sites' frames and every answer from being sniffed into a
// script or a page.
func TestAttackFramingAndSniffing(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(up.Close)
	g, err := gateway.New(context.Background(), gateway.Options{Config: testConfig(up.URL), DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ManualProbes: true,
		Assets: fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>FreeLane</title>")}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	e := &env{t: t, g: g, base: "http://" + g.Addr()}
	for _, path := range []string{"/", "/index.html"} {
		r := e.raw("GET", path, "", nil)
		if r.status != 200 || r.header.Get("X-Frame-Options") != "DENY" ||
			!strings.Contains(r.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
			!strings.Contains(r.header.Get("Content-Security-Policy"), "default-src 'self'") ||
			r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d %v", path, r.status, r.header)
		}
	}
	for _, c := range []struct {
		method, path string
		header       map[string]string
	}{
		{"GET", "/v1/models", nil},
		{"GET", "/healthz", nil},
		{"GET", "/api/state", nil},
		{"GET", "/metrics", nil},
		{"POST", "/v1/chat/completions", map[string]string{"Origin": "https://evil.example"}},
		{"GET", "/v1/models", map[string]string{"Host": "evil.example"}},
	} {
		req, _ := http.NewRequest(c.method, e.base+c.path, nil)
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		if h := c.header["Host"]; h != "" {
			req.Host = h
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s %v: %d without nosniff", c.method, c.path, c.header, resp.StatusCode)
		}
	}
}

// TestLoginLinkWorksOnceAndExpires checks the one-time dashboard links: the
// code travels in the fragment and is exchanged with POST /api/login; it
// signs in once, then is useless; an unused one expires after
// auth.LoginTTL on the gateway's clock; a foreign page cannot exchange
// one; and no answer sets a cookie or may be cached.
func TestLoginLinkWorksOnceAndExpires(t *testing.T) {
	e := newEnv(t, nil)
	link := e.g.LoginURL()
	u, err := url.Parse(link)
	if err != nil || u.Path != "/" || u.RawQuery != "" || !strings.HasPrefix(u.Fragment, "login=") || !strings.HasPrefix(link, e.base+"/#login=") {
		t.Fatalf("login link %q: want %s/#login=CODE", link, e.base)
	}
	code := strings.TrimPrefix(u.Fragment, "login=")
	exchange := func(code string, header map[string]string) reply {
		t.Helper()
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range header {
			h[k] = v
		}
		return e.raw("POST", "/api/login", `{"code":"`+code+`"}`, h)
	}
	// The page the link opens is the plain dashboard: the server never
	// sees the code, and sets nothing.
	if r := e.raw("GET", "/", "", nil); r.header.Get("Set-Cookie") != "" {
		t.Errorf("GET / set a cookie: %q", r.header.Get("Set-Cookie"))
	}
	// A page of another origin (another port of 127.0.0.1) cannot
	// exchange it, and does not use it up.
	if r := exchange(code, map[string]string{"Origin": "http://127.0.0.1:1"}); r.status != http.StatusForbidden {
		t.Errorf("POST /api/login from another origin: %d %s, want 403", r.status, r.body)
	}
	r := exchange(code, map[string]string{"Origin": e.base})
	var v api.LoginView
	if err := json.Unmarshal(r.body, &v); err != nil || r.status != 200 || v.Session == "" {
		t.Fatalf("POST /api/login: %d %s", r.status, r.body)
	}
	if r.header.Get("Set-Cookie") != "" || r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("POST /api/login answered Set-Cookie %q Cache-Control %q", r.header.Get("Set-Cookie"), r.header.Get("Cache-Control"))
	}
	if want := e.clock.Now().Add(auth.SessionTTL); v.Expires.Before(want.Add(-2*time.Second)) || v.Expires.After(want.Add(time.Second)) {
		t.Errorf("the session expires at %s, want about %s", v.Expires, want)
	}
	withSession := map[string]string{api.SessionHeader: v.Session}
	if r := e.raw("GET", "/api/state", "", withSession); r.status != 200 {
		t.Errorf("GET /api/state with the new session: %d %s", r.status, r.body)
	}
	if r := e.raw("GET", "/api/session", "", withSession); r.status != 200 || r.header.Get("Cache-Control") != "no-store" || !strings.Contains(string(r.body), `"expires"`) {
		t.Errorf("GET /api/session: %d %q %s", r.status, r.header.Get("Cache-Control"), r.body)
	}
	// The same code again signs nobody in, and says how to get a new one.
	if r := exchange(code, nil); r.status != http.StatusUnauthorized || r.code() != "login_failed" || !strings.Contains(r.errorMessage(), "freelane dashboard-url") {
		t.Errorf("a used code again: %d %s, want 401 login_failed", r.status, r.body)
	}
	// An unused code dies after the login lifetime.
	late := strings.TrimPrefix(e.g.LoginURL(), e.base+"/#login=")
	e.clock.Advance(auth.LoginTTL + time.Second)
	if r := exchange(late, nil); r.status != http.StatusUnauthorized {
		t.Errorf("an expired code: %d %s, want 401", r.status, r.body)
	}
	// A session outlives the link that made it, until its own lifetime.
	if r := e.raw("GET", "/api/state", "", withSession); r.status != 200 {
		t.Errorf("the session after %s: %d", auth.LoginTTL, r.status)
	}
	e.clock.Advance(auth.SessionTTL)
	if r := e.raw("GET", "/api/state", "", withSession); r.status != 401 {
		t.Errorf("the session after %s: %d, want 401", auth.SessionTTL, r.status)
	}
}

// TestAttackMetricsFromTheNetwork reads /metrics from another address
// than loopback: it needs the inbound token (or a session) there, and
// stays open to this machine.
func TestAttackMetricsFromTheNetwork(t *testing.T) {
	const token = "lan-token-0123456789abcdef"
	e := newEnv(t, func(c *config.Config) {
		c.Listen = "0.0.0.0:0"
		c.Server.Token = token
	})
	var lan net.IP
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			lan = n.IP
			break
		}
	}
	if lan == nil {
		t.Skip("this machine has no non-loopback IPv4 address to call from")
	}
	p := port("http://" + e.g.Addr())
	session := e.signedIn()
	e.base = "http://" + net.JoinHostPort(lan.String(), p)
	if r := e.raw("GET", "/metrics", "", nil); r.status != http.StatusUnauthorized || r.code() != "token_required" {
		t.Errorf("/metrics from %s without the token: %d %s", lan, r.status, r.body)
	}
	if r := e.raw("GET", "/metrics", "", map[string]string{"Authorization": "Bearer " + token}); r.status != 200 {
		t.Errorf("/metrics from %s with the token: %d", lan, r.status)
	}
	// A dashboard session opens it in its header, never as a cookie.
	if r := e.raw("GET", "/metrics", "", map[string]string{api.SessionHeader: session}); r.status != 200 {
		t.Errorf("/metrics from %s with a session: %d", lan, r.status)
	}
	if r := e.raw("GET", "/metrics", "", map[string]string{"Cookie": "freelane_session_" + p + "=" + session}); r.status != http.StatusUnauthorized {
		t.Errorf("/metrics from %s with the session as a cookie: %d, want 401", lan, r.status)
	}
	e.base = "http://127.0.0.1:" + p
	if r := e.raw("GET", "/metrics", "", nil); r.status != 200 {
		t.Errorf("/metrics from loopback: %d", r.status)
	}
}
