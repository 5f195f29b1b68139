package api

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"freelane/backend/auth"
	"freelane/backend/dialects"
	"freelane/backend/sockowner"
)

func TestServerCallerIdentity(t *testing.T) {
	const token = "inbound-token-0123456789abcdef"
	withToken := New(Options{Token: auth.NewToken(token), Dialects: dialects.Registry()})
	without := New(Options{Dialects: dialects.Registry()})
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7788}
	req := func(remote, header, value string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/v1/responses/resp_x", nil)
		r.RemoteAddr = remote
		if strings.HasPrefix(remote, "127.") {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, lo))
		}
		if header != "" {
			r.Header.Set(header, value)
		}
		return r
	}
	cases := []struct {
		s    *Server
		r    *http.Request
		want string
	}{
		// A network caller is the token's holder, or its address.
		{withToken, req("192.0.2.7:4000", "Authorization", "Bearer "+token), identityToken},
		{withToken, req("192.0.2.7:4000", "X-Api-Key", token), identityToken},
		{withToken, req("192.0.2.7:4000", "Authorization", "Bearer another-token-0123456789"), "net:192.0.2.7"},
		// Without a configured token, a key sent is a tool's dummy key and
		// says nothing about who sent it.
		{without, req("192.0.2.7:4000", "Authorization", "Bearer "+token), "net:192.0.2.7"},
	}
	for _, c := range cases {
		if got := c.s.callerIdentity(c.r); got != c.want || strings.Contains(got, token) {
			t.Errorf("%s %v: identity %q, want %q", c.r.RemoteAddr, c.r.Header, got, c.want)
		}
	}

	// A program of a known account is that account, token or not.
	playOwners(t, ownersKnownHere, func(netip.AddrPort, netip.AddrPort) (uint32, error) { return 4242, nil })
	for _, r := range []*http.Request{req("127.0.0.1:5000", "Authorization", "Bearer "+token), req("127.0.0.1:5000", "", "")} {
		if got := withToken.callerIdentity(r); got != "uid:4242" {
			t.Errorf("account 4242 %v: identity %q", r.Header, got)
		}
	}

	// Where the system does not say who owns a socket, every local caller
	// is one: the token's holder, or nobody in particular.
	playOwners(t, func() error { return sockowner.ErrUnsupported }, func(netip.AddrPort, netip.AddrPort) (uint32, error) { return 0, sockowner.ErrUnsupported })
	for _, c := range []struct {
		s    *Server
		r    *http.Request
		want string
	}{
		{withToken, req("127.0.0.1:5000", "Authorization", "Bearer "+token), identityToken},
		{withToken, req("127.0.0.1:5000", "", ""), identityAnonymous},
		{without, req("127.0.0.1:5000", "Authorization", "Bearer "+token), identityAnonymous},
	} {
		if got := c.s.callerIdentity(c.r); got != c.want {
			t.Errorf("unknown owners %v: identity %q, want %q", c.r.Header, got, c.want)
		}
	}
}
