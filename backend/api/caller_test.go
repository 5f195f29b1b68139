package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"freelane/backend/sockowner"
)

// playOwners makes the owner lookup answer with lookup (and the start-up
// check with check) for the rest of the test.
func playOwners(t *testing.T, check func() error, lookup func(local, remote netip.AddrPort) (uint32, error)) {
	t.Helper()
	oldCheck, oldLookup := ownersKnown, peerUID
	ownersKnown, peerUID = check, lookup
	t.Cleanup(func() { ownersKnown, peerUID = oldCheck, oldLookup })
}

func ownersKnownHere() error { return nil }

// guarded serves s's /v1 guard in front of a handler that answers 204, on
// a real loopback server with the gateway's ConnContext.
func guarded(t testing.TB, s *Server) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(s.guardV1(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})))
	srv.Config.ConnContext = ConnContext
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func get(t testing.TB, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestCallerLookedUpOncePerConnection(t *testing.T) {
	var lookups atomic.Int32
	playOwners(t, ownersKnownHere, func(local, remote netip.AddrPort) (uint32, error) {
		lookups.Add(1)
		return selfUID, nil
	})
	srv := guarded(t, New(Options{Logger: slog.New(slog.DiscardHandler)}))
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for range 5 {
		if status, body := get(t, c, srv.URL+"/v1/x"); status != http.StatusNoContent {
			t.Fatalf("%d %s", status, body)
		}
	}
	if n := lookups.Load(); n != 1 {
		t.Errorf("5 requests on one connection made %d lookups, want 1", n)
	}
	c.CloseIdleConnections()
	get(t, c, srv.URL+"/v1/x")
	if n := lookups.Load(); n != 2 {
		t.Errorf("a second connection made %d lookups in all, want 2", n)
	}
}

func TestCallerClasses(t *testing.T) {
	for _, c := range []struct {
		name   string
		uid    uint32
		err    error
		any    bool
		status int
		code   string
	}{
		{"this account", selfUID, nil, false, http.StatusNoContent, ""},
		{"root", 0, nil, false, http.StatusNoContent, ""},
		{"another account", 4242, nil, false, http.StatusUnauthorized, "local_user_not_allowed"},
		{"another account, local_users any", 4242, nil, true, http.StatusNoContent, ""},
		// A peer that is gone or unreadable is not known to be the user.
		{"owner not found", 0, sockowner.ErrNotFound, false, http.StatusUnauthorized, "local_user_not_allowed"},
		{"no owner on this system", 0, fmt.Errorf("x: %w", sockowner.ErrUnsupported), false, http.StatusNoContent, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			playOwners(t, ownersKnownHere, func(netip.AddrPort, netip.AddrPort) (uint32, error) { return c.uid, c.err })
			srv := guarded(t, New(Options{Logger: slog.New(slog.DiscardHandler), AllLocalUsers: c.any}))
			status, body := get(t, srv.Client(), srv.URL+"/v1/x")
			if status != c.status || c.code != "" && !strings.Contains(body, `"code":"`+c.code+`"`) {
				t.Errorf("%d %s; want %d %s", status, body, c.status, c.code)
			}
		})
	}
}

// TestCallerUnknownOwners: where the system cannot say who owns a
// connection, FreeLane says so once at start and serves loopback callers
// as before.
func TestCallerUnknownOwners(t *testing.T) {
	var lookups atomic.Int32
	playOwners(t, func() error { return sockowner.ErrUnsupported }, func(netip.AddrPort, netip.AddrPort) (uint32, error) {
		lookups.Add(1)
		return 4242, nil
	})
	var log strings.Builder
	s := New(Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	srv := guarded(t, s)
	for range 3 {
		if status, body := get(t, srv.Client(), srv.URL+"/v1/x"); status != http.StatusNoContent {
			t.Errorf("a loopback caller where owners are unknown: %d %s", status, body)
		}
	}
	if n := strings.Count(log.String(), "does not say which account a loopback connection comes from"); n != 1 {
		t.Errorf("%d start-up warnings, want 1:\n%s", n, log.String())
	}
	if lookups.Load() != 0 {
		t.Error("owners were looked up on a system that cannot tell them")
	}
	log.Reset()
	New(Options{Logger: slog.New(slog.NewTextHandler(&log, nil)), AllLocalUsers: true})
	if log.Len() != 0 {
		t.Errorf("warned with local_users any, which trusts every account anyway: %s", log.String())
	}
}

// TestCallerOwnersKnownHere runs the start-up check for real: on Linux it
// must find this process's own connection.
func TestCallerOwnersKnownHere(t *testing.T) {
	err := checkOwners()
	if _, lerr := sockowner.PeerUIDAddrPort(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2")); lerr == sockowner.ErrUnsupported {
		if err == nil {
			t.Error("owners are said to be known where lookups are unsupported")
		}
		return
	}
	if err != nil {
		t.Errorf("checkOwners: %v", err)
	}
}

func TestCallerIdentity(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	for c, want := range map[Caller]string{
		{Kind: CallerSelf, UID: 1000, UIDKnown: true, Addr: lo}:          "uid:1000",
		{Kind: CallerSelf, UID: 0, UIDKnown: true, Addr: lo}:             "uid:0",
		{Kind: CallerOtherAccount, UID: 65534, UIDKnown: true, Addr: lo}: "uid:65534",
		{Kind: CallerOtherAccount, Addr: lo}:                             "uid:unknown",
		{Kind: CallerNetwork, Addr: netip.MustParseAddr("192.168.1.7")}:  "net:192.168.1.7",
		{Kind: CallerNetwork, Addr: netip.MustParseAddr("2001:db8::1")}:  "net:2001:db8::1",
		{Kind: CallerUnknown, Addr: lo}:                                  "local",
	} {
		if got := c.Identity(); got != want {
			t.Errorf("%+v: Identity() = %q, want %q", c, got, want)
		}
	}
}

func TestCallerWithoutConnContext(t *testing.T) {
	playOwners(t, ownersKnownHere, func(netip.AddrPort, netip.AddrPort) (uint32, error) { return 4242, nil })
	r := httptest.NewRequest("GET", "/v1/x", nil)
	if c := callerOf(r); c.Kind != CallerNetwork || c.Identity() != "net:192.0.2.1" {
		t.Errorf("httptest's remote address: %+v", c)
	}
	r.RemoteAddr = "127.0.0.1:5000"
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7788}))
	if c := callerOf(r); c.Kind != CallerOtherAccount || c.UID != 4242 {
		t.Errorf("a loopback request without ConnContext: %+v", c)
	}
}

// BenchmarkGuardKeepAlive measures a request through the /v1 guard on a
// kept-alive loopback connection, against the same request without the
// guard, and with the owner looked up on every request instead of once
// per connection.
func BenchmarkGuardKeepAlive(b *testing.B) {
	noop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	s := New(Options{Logger: slog.New(slog.DiscardHandler)})
	for _, c := range []struct {
		name string
		h    http.Handler
		conn bool
	}{
		{"no guard", noop, true},
		{"guard", s.guardV1(noop), true},
		{"guard, lookup per request", s.guardV1(noop), false},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := httptest.NewUnstartedServer(c.h)
			if c.conn {
				srv.Config.ConnContext = ConnContext
			}
			srv.Start()
			defer srv.Close()
			cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := cl.Get(srv.URL + "/v1/x")
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					b.Fatal(resp.Status)
				}
			}
		})
	}
}

// BenchmarkCallerOfCached is the guard's own added work per request on a
// kept-alive connection: finding the connection's cached caller.
func BenchmarkCallerOfCached(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	conn, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctx := context.WithValue(ConnContext(context.Background(), conn), http.LocalAddrContextKey, conn.LocalAddr())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := httptest.NewRequest("GET", "/v1/x", nil).WithContext(ctx)
	if c := callerOf(r); c.Kind != CallerSelf {
		b.Fatalf("own connection classified as %+v", c)
	}
	b.ReportAllocs()
	for b.Loop() {
		if callerOf(r).Kind != CallerSelf {
			b.Fatal("changed")
		}
	}
}
