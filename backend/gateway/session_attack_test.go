package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"freelane/backend/api"
	"freelane/backend/hub"
)

// TestAttackSessionReplayedFromAnotherPort is the neighbour's replay: a
// signed-in dashboard user follows one link to a server another account
// runs on another port of 127.0.0.1. Browsers keep cookies per host, not
// per port, so that server receives every cookie the browser holds for
// 127.0.0.1, with the headers a browser sends by itself, and replays them
// to FreeLane. None of it may open the admin API or its websocket: only the
// session header (or, on the websocket, the session subprotocol) does,
// which no page of another origin can send.
func TestAttackSessionReplayedFromAnotherPort(t *testing.T) {
	e := newEnv(t, nil)
	tok := e.signedIn()
	p := port(e.base)
	// Everything a browser would carry by itself: the cookies FreeLane
	// used to set, here even holding the real session token, and the
	// headers of a navigation. No session header: a page cannot add one.
	browser := map[string]string{
		"Cookie":                    "freelane_session_" + p + "=" + tok + "; freelane_csrf_" + p + "=" + tok + "; freelane_session=" + tok,
		"User-Agent":                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
		"Accept":                    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
		"Accept-Language":           "en-US,en;q=0.9",
		"Sec-Fetch-Site":            "none",
		"Sec-Fetch-Mode":            "navigate",
		"Sec-Fetch-Dest":            "document",
		"Upgrade-Insecure-Requests": "1",
	}
	if r := e.raw("GET", "/api/state", "", browser); r.status != http.StatusUnauthorized || r.code() != "session_required" {
		t.Errorf("GET /api/state with the browser's cookies and headers: %d %s, want 401", r.status, r.code())
	}
	write := map[string]string{"Content-Type": "application/json"}
	for k, v := range browser {
		write[k] = v
	}
	if r := e.raw("PUT", "/api/routing", `{"paused":true}`, write); r.status != http.StatusUnauthorized {
		t.Errorf("PUT /api/routing with the browser's cookies and headers: %d %s, want 401", r.status, r.body)
	}
	if r := e.do("GET", "/api/routing", "", nil); !strings.Contains(string(r.body), `"paused":false`) {
		t.Errorf("routing after the replayed write: %s", r.body)
	}

	wsURL := "ws" + strings.TrimPrefix(e.base, "http") + "/api/ws"
	header := http.Header{}
	for k, v := range browser {
		header.Set(k, v)
	}
	header.Set("Origin", e.base)
	// The websocket with the cookies, with only the plain subprotocol, and
	// with the token in the URL (which FreeLane does not read) is refused
	// before the upgrade.
	for _, try := range []struct {
		name   string
		url    string
		protos []string
	}{
		{"cookies only", wsURL, nil},
		{"the plain subprotocol", wsURL, []string{hub.Protocol}},
		{"a forged session subprotocol", wsURL, []string{hub.Protocol, api.SocketSessionPrefix + "x.1.forged"}},
		{"the token in the URL", wsURL + "?session=" + tok + "&token=" + tok, []string{hub.Protocol}},
	} {
		d := websocket.Dialer{Subprotocols: try.protos}
		c, resp, err := d.Dial(try.url, header)
		if err == nil {
			c.Close()
			t.Errorf("the websocket opened with %s", try.name)
			continue
		}
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the websocket with %s: %v %v, want 401", try.name, err, resp)
		}
	}
	// The dashboard's own socket, offering its session as a subprotocol,
	// connects and gets the snapshot; the server selects only the plain
	// protocol, so the token is not echoed back.
	c, resp, err := e.dialer().Dial(wsURL, http.Header{"Origin": {e.base}})
	if err != nil {
		t.Fatalf("the signed-in websocket: %v %v", err, resp)
	}
	defer c.Close()
	if c.Subprotocol() != hub.Protocol || strings.Contains(resp.Header.Get("Sec-WebSocket-Protocol"), tok) {
		t.Errorf("the server selected %q (answered %q), want %q", c.Subprotocol(), resp.Header.Get("Sec-WebSocket-Protocol"), hub.Protocol)
	}
	var first struct {
		Type string `json:"type"`
	}
	if err := c.ReadJSON(&first); err != nil || first.Type != "snapshot" {
		t.Errorf("first message: %+v %v, want the snapshot", first, err)
	}
	// And the session header opens the API to the page that holds it.
	if r := e.raw("GET", "/api/state", "", map[string]string{api.SessionHeader: tok}); r.status != http.StatusOK {
		t.Errorf("GET /api/state with the session header: %d %s", r.status, r.body)
	}
}
