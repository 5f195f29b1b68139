package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/notify"
)

// TestBreakerNotificationReachesTheDashboard fails a backend until its
// breaker opens: the notification arrives over a real websocket in an
// update, is listed by the admin API and is in the next snapshot; with
// breaker notifications switched off from the API, the next opening
// raises none.
func TestBreakerNotificationReachesTheDashboard(t *testing.T) {
	e := newEnv(t, nil)
	url := "ws" + strings.TrimPrefix(e.base, "http") + "/api/ws"
	c, _, err := e.dialer().Dial(url, http.Header{"Origin": {e.base}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var first struct {
		Type string
		Data struct{ Notifications []notify.Notification }
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := c.ReadJSON(&first); err != nil {
		t.Fatal(err)
	}
	if first.Type != "snapshot" || first.Data.Notifications == nil || len(first.Data.Notifications) != 0 {
		t.Fatalf("first snapshot: %+v", first)
	}

	e.up.Set("ma", fakeupstream.Behavior{Status: 500, Body: `{"error":{"message":"sk-test-a is broken"}}`})
	for range 2 {
		e.post("/v1/chat/completions", chat("main", false))
	}
	var got notify.Notification
	deadline := time.Now().Add(5 * time.Second)
	for got.ID == 0 && time.Now().Before(deadline) {
		var m struct {
			Type          string
			Notifications []notify.Notification
		}
		if err := c.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "update" && len(m.Notifications) > 0 {
			got = m.Notifications[0]
		}
	}
	if got.Kind != notify.Breaker || got.Subject != "a/ma" || !strings.Contains(got.Body, "a/ma keeps failing") || got.Time.IsZero() {
		t.Fatalf("over the websocket: %+v", got)
	}

	r := e.do("GET", "/api/notifications", "", nil)
	var list []notify.Notification
	if err := json.Unmarshal(r.body, &list); err != nil || r.status != 200 {
		t.Fatalf("GET /api/notifications: %d %s", r.status, r.body)
	}
	if len(list) != 1 || list[0] != got {
		t.Fatalf("listed %+v, want %+v", list, got)
	}
	if strings.Contains(string(r.body), "sk-test-a") {
		t.Errorf("the list holds a key: %s", r.body)
	}
	// The API needs a session like every admin route.
	if r := e.do("GET", "/api/notifications", "", map[string]string{"X-FreeLane-Session": ""}); r.status != 401 {
		t.Errorf("without a session: %d", r.status)
	}

	// Switched off from the dashboard, stored, and in force at once.
	r = e.do("PUT", "/api/notifications/settings", `{"breaker": false}`, nil)
	var sw notify.Switches
	if err := json.Unmarshal(r.body, &sw); err != nil || r.status != 200 || sw.Breaker || !sw.Key || !sw.Budget {
		t.Fatalf("PUT settings: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/api/notifications/settings", `{"breaker": "no"}`, nil); r.status != 400 {
		t.Errorf("a bad value: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/notifications/settings", "", nil); !strings.Contains(string(r.body), `"breaker":false`) {
		t.Errorf("GET settings: %s", r.body)
	}
	sub := e.g.Notifications().Subscribe(8)
	defer sub.Close()
	e.up.Set("mb", fakeupstream.Behavior{Status: 500})
	for range 3 {
		e.post("/v1/chat/completions", chat("b/mb", false))
	}
	// A key refused is still told; b/mb's opening, published before it,
	// is not.
	e.up.Set("mc", fakeupstream.Behavior{Status: 401})
	e.post("/v1/chat/completions", chat("c/mc", false))
	select {
	case n := <-sub.C():
		if n.Kind != notify.Key || n.Subject != "c" {
			t.Fatalf("after switching breaker notifications off: %+v", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the refused key was not told")
	}
	if st := e.g.Snapshot(); len(st.Notifications) != 2 {
		t.Errorf("the snapshot holds %+v", st.Notifications)
	}
	stored := e.g.Control().Notifications()
	if stored.Breaker || !stored.Key {
		t.Errorf("stored switches %+v", stored)
	}
}

// TestNotificationSwitchesFromConfig starts with kinds switched off in
// the configuration file.
func TestNotificationSwitchesFromConfig(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		off := false
		c.Notifications.Key = &off
	})
	r := e.do("GET", "/api/notifications/settings", "", nil)
	var sw notify.Switches
	if err := json.Unmarshal(r.body, &sw); err != nil || sw.Key || !sw.Breaker || !sw.Quota || !sw.Local {
		t.Fatalf("settings: %s", r.body)
	}
	if got := e.g.Notifications().Switches(); got != sw {
		t.Errorf("in force %+v, configured %+v", got, sw)
	}
}

// TestLocalServerGoneAndBackNotifications stops and restarts a fake
// Ollama that discovery found: the scans tell it gone, then back, and the
// server found at start is no notification.
func TestLocalServerGoneAndBackNotifications(t *testing.T) {
	e, srv, name := localEnv(t)
	sub := e.g.Notifications().Subscribe(8)
	defer sub.Close()
	next := func(what string) notify.Notification {
		t.Helper()
		select {
		case n := <-sub.C():
			return n
		case <-time.After(5 * time.Second):
			t.Fatalf("no notification: %s", what)
		}
		return notify.Notification{}
	}
	srv.Stop()
	e.g.ScanLocal(context.Background())
	n := next("the server stopped")
	if n.Kind != notify.Local || n.Subject != name || !strings.Contains(n.Body, "stopped answering on port") || !strings.Contains(n.Body, "sets its models aside") {
		t.Fatalf("gone: %+v", n)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	e.g.ScanLocal(context.Background())
	n = next("the server answers again")
	if n.Kind != notify.Local || n.Subject != name || !strings.Contains(n.Title, "back") {
		t.Fatalf("back: %+v", n)
	}
	if got := e.g.Notifications().Recent(); len(got) != 2 {
		t.Errorf("recent = %+v, want gone and back only", got)
	}
}
