package catalog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// publicSite serves a catalog over https under the name example.com,
// which the fetch's resolver places at a public address (203.0.113.7,
// a documentation range); every connection is then made to the local
// test server instead, so no traffic leaves the machine. dials records
// where the fetch asked to connect.
type publicSite struct {
	srv   *httptest.Server
	mu    sync.Mutex
	dials []string
	names map[string][]netip.Addr
}

func newPublicSite(t *testing.T, h http.HandlerFunc) *publicSite {
	t.Helper()
	s := &publicSite{srv: httptest.NewTLSServer(h), names: map[string][]netip.Addr{
		"example.com": {netip.MustParseAddr("203.0.113.7")},
	}}
	t.Cleanup(s.srv.Close)
	return s
}

func (s *publicSite) options(allowLoopback bool) FetchOptions {
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	local := s.srv.Listener.Addr().String()
	return FetchOptions{
		AllowLoopback: allowLoopback,
		tlsConfig:     &tls.Config{RootCAs: pool},
		resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if ip, err := netip.ParseAddr(host); err == nil {
				return []netip.Addr{ip}, nil
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			ips, ok := s.names[host]
			if !ok {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			return ips, nil
		},
		dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			s.mu.Lock()
			s.dials = append(s.dials, addr)
			s.mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, local)
		},
	}
}

func (s *publicSite) port() string {
	_, p, _ := net.SplitHostPort(s.srv.Listener.Addr().String())
	return p
}

func (s *publicSite) dialled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.dials...)
}

const tinyCatalog = "date: 2099-01-01\nproviders: []\n"

func TestFetchFromAPublicHTTPSServer(t *testing.T) {
	s := newPublicSite(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old.yaml" {
			// A redirect within the same host is followed.
			http.Redirect(w, r, "/new.yaml", http.StatusMovedPermanently)
			return
		}
		_, _ = io.WriteString(w, tinyCatalog)
	})
	data, u, err := Fetch(context.Background(), "https://example.com:"+s.port()+"/old.yaml", s.options(false))
	if err != nil || string(data) != tinyCatalog || u.Path != "/new.yaml" {
		t.Fatalf("fetch: %q from %v, %v", data, u, err)
	}
	if d := s.dialled(); len(d) != 2 || !strings.HasPrefix(d[0], "203.0.113.7:") {
		t.Fatalf("dialled %v", d)
	}
}

func TestFetchRefusesURLs(t *testing.T) {
	s := newPublicSite(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, tinyCatalog) })
	for _, tc := range []struct {
		url   string
		allow bool
		want  string
	}{
		{"http://example.com/c.yaml", false, "must be https"},
		{"http://example.com/c.yaml", true, "must be https"},
		{"http://127.0.0.1:" + s.port() + "/c.yaml", false, "catalog.allow_http_loopback"},
		{"https://127.0.0.1:" + s.port() + "/c.yaml", false, "catalog.allow_http_loopback"},
		{"http://localhost:" + s.port() + "/c.yaml", false, "catalog.allow_http_loopback"},
		{"https://[::1]:" + s.port() + "/c.yaml", false, "catalog.allow_http_loopback"},
		{"https://10.0.0.5/c.yaml", true, "private network address"},
		{"https://192.168.1.20/c.yaml", true, "private network address"},
		{"https://169.254.169.254/latest", true, "private network address"},
		{"https://[::ffff:10.1.2.3]/c.yaml", true, "private network address"},
		{"ftp://example.com/c.yaml", false, "https address"},
		{"https://user:pw@example.com/c.yaml", false, "user name or password"},
		{"example.com/c.yaml", false, "https address"},
		{"https://example.com/" + strings.Repeat("a", MaxURL), false, "at most"},
	} {
		_, _, err := Fetch(context.Background(), tc.url, s.options(tc.allow))
		var ue *URLError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s (allow %v): got %v, want a refusal with %q", tc.url, tc.allow, err, tc.want)
		}
	}
	if d := s.dialled(); len(d) != 0 {
		t.Fatalf("refused URLs were dialled: %v", d)
	}
}

// With the setting, a loopback URL may be fetched, over http too.
func TestFetchFromLoopbackWithTheSetting(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, tinyCatalog) }))
	t.Cleanup(srv.Close)
	if data, _, err := Fetch(context.Background(), srv.URL+"/c.yaml", FetchOptions{AllowLoopback: true}); err != nil || string(data) != tinyCatalog {
		t.Fatalf("fetch: %q, %v", data, err)
	}
}

// A public server cannot send the fetch to this machine or elsewhere: a
// redirect to another host or scheme is refused, and so is a name that
// resolves to a loopback or private address, when it is first looked up
// or on the second look (DNS rebinding).
func TestFetchRefusesRedirectsAndInnerAddresses(t *testing.T) {
	var s *publicSite
	s = newPublicSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-loopback":
			http.Redirect(w, r, "https://127.0.0.1:"+s.port()+"/c.yaml", http.StatusFound)
		case "/to-other":
			http.Redirect(w, r, "https://other.example:"+s.port()+"/c.yaml", http.StatusFound)
		case "/to-http":
			http.Redirect(w, r, "http://example.com:"+s.port()+"/c.yaml", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/rebind":
			s.mu.Lock()
			s.names["example.com"] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
			s.mu.Unlock()
			http.Redirect(w, r, "/c.yaml", http.StatusFound)
		default:
			_, _ = io.WriteString(w, tinyCatalog)
		}
	})
	s.names["other.example"] = []netip.Addr{netip.MustParseAddr("203.0.113.8")}
	s.names["inner.example"] = []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("127.0.0.1")}
	base := "https://example.com:" + s.port()
	for _, tc := range []struct{ url, want string }{
		{base + "/to-loopback", "redirected to another host or scheme"},
		{base + "/to-other", "redirected to another host or scheme"},
		{base + "/to-http", "redirected to another host or scheme"},
		{base + "/loop", "redirected more than 3 times"},
		{base + "/rebind", "loopback or private network address"},
		{"https://inner.example:" + s.port() + "/c.yaml", "loopback or private network address"},
	} {
		before := len(s.dialled())
		_, _, err := Fetch(context.Background(), tc.url, s.options(false))
		var fe *FetchError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.url, err, tc.want)
		}
		for _, d := range s.dialled()[before:] {
			if !strings.HasPrefix(d, "203.0.113.") {
				t.Errorf("%s: dialled %s", tc.url, d)
			}
		}
		if strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "other.example") {
			t.Errorf("%s: the error repeats where the server pointed: %v", tc.url, err)
		}
	}
}

// What the server answers besides a catalog is not repeated: not its
// status text, not its body; and a file over the bound is refused.
func TestFetchFailuresRepeatNothing(t *testing.T) {
	s := newPublicSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "secret-body-text")
		case "/huge":
			w.Header().Set("Content-Type", "text/plain")
			chunk := strings.Repeat("x", 64<<10)
			for range MaxFile/len(chunk) + 2 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		}
	})
	base := "https://example.com:" + s.port()
	_, _, err := Fetch(context.Background(), base+"/missing", s.options(false))
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "Not Found") {
		t.Fatalf("404: %v", err)
	}
	if _, _, err := Fetch(context.Background(), base+"/huge", s.options(false)); err == nil || !strings.Contains(err.Error(), "larger than 1024 KiB") {
		t.Fatalf("huge: %v", err)
	}
	// A certificate the fetch does not trust is refused.
	o := s.options(false)
	o.tlsConfig = nil
	if _, _, err := Fetch(context.Background(), base+"/c.yaml", o); err == nil || !strings.Contains(err.Error(), "TLS certificate") {
		t.Fatalf("untrusted certificate: %v", err)
	}
}
