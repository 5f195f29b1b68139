package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"freelane/backend/auth"
)

// TestProfilingEndpoints checks that /debug/pprof/ answers nobody while
// profiling is off, and once it is on answers the account running
// FreeLane and a dashboard session, never another account (even one
// trusted for /v1) or a profile longer than the bound.
func TestProfilingEndpoints(t *testing.T) {
	sessions := auth.New([]byte(strings.Repeat("k", 32)), nil)
	s := New(Options{Logger: slog.New(slog.DiscardHandler), Sessions: sessions, AllLocalUsers: true})
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.ConnContext = ConnContext
	srv.Start()
	t.Cleanup(srv.Close)
	client := func() *http.Client { return &http.Client{Transport: &http.Transport{}} }
	do := func(c *http.Client, path string, h ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}

	playOwners(t, ownersKnownHere, func(netip.AddrPort, netip.AddrPort) (uint32, error) { return selfUID, nil })
	if status, body := do(client(), "/debug/pprof/goroutine?debug=1"); status != http.StatusNotFound || !strings.Contains(body, "profiling is off") {
		t.Fatalf("profiling off: %d %s", status, body)
	}
	s.SetProfiling(true)
	if status, body := do(client(), "/debug/pprof/goroutine?debug=1"); status != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("own account: %d %.200s", status, body)
	}
	if status, body := do(client(), "/debug/pprof/profile?seconds=600"); status != http.StatusBadRequest || !strings.Contains(body, "from 1 to 120") {
		t.Errorf("a ten-minute profile: %d %s", status, body)
	}

	// Another account, though server.local_users: any lets it use the
	// models, is refused, unless it has a dashboard session.
	playOwners(t, ownersKnownHere, func(netip.AddrPort, netip.AddrPort) (uint32, error) { return selfUID + 4242, nil })
	if status, body := do(client(), "/debug/pprof/heap"); status != http.StatusForbidden || !strings.Contains(body, "open only to the account running FreeLane") {
		t.Errorf("another account: %d %.200s", status, body)
	}
	token, _ := sessions.NewSession()
	if status, body := do(client(), "/debug/pprof/heap?debug=1", SessionHeader, token); status != http.StatusOK || !strings.Contains(body, "heap profile:") {
		t.Errorf("another account with a session: %d %.200s", status, body)
	}
	s.SetProfiling(false)
	if status, _ := do(client(), "/debug/pprof/heap?debug=1", SessionHeader, token); status != http.StatusNotFound {
		t.Errorf("profiling turned off again: %d", status)
	}
}
