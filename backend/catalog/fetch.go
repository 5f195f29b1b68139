package catalog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Bounds of a catalog fetch. A catalog is a small file: whatever takes
// longer, redirects more or weighs more is not one.
const (
	// FetchTimeout bounds a whole fetch: connecting, every redirect and
	// reading the body.
	FetchTimeout = 20 * time.Second
	// MaxRedirects is how many redirects a fetch follows, each within the
	// same https host.
	MaxRedirects = 3
	// MaxURL bounds the URL given.
	MaxURL = 2048

	stepTimeout = 10 * time.Second
)

// FetchOptions say where a catalog may be fetched from.
type FetchOptions struct {
	// AllowLoopback lets the URL name a loopback address (127.0.0.0/8,
	// ::1, localhost), over http or https: the config's
	// catalog.allow_http_loopback, for tests and local mirrors. Private
	// network addresses are never allowed.
	AllowLoopback bool

	// Tests reach a server on this machine under a public name through
	// these; nil means the system's resolver, dialer and TLS roots.
	resolve   func(ctx context.Context, host string) ([]netip.Addr, error)
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	tlsConfig *tls.Config
}

// URLError is a catalog URL refused before anything was fetched; its
// message says which rule it breaks.
type URLError struct{ msg string }

func (e *URLError) Error() string { return e.msg }

// FetchError is a catalog that could not be fetched. Its message is in
// FreeLane's own words: nothing the server sent (a status text, a
// redirect target, a certificate name, the body) is repeated.
type FetchError struct{ msg string }

func (e *FetchError) Error() string { return e.msg }

// errAddress is a connection refused because of where it would go.
var errAddress = errors.New("the catalog's host is a loopback or private network address")

// errRedirect is a redirect that leaves the URL's scheme and host.
var errRedirect = errors.New("redirect refused")

// errTooManyRedirects is a chain of redirects over MaxRedirects.
var errTooManyRedirects = errors.New("too many redirects")

// Fetch reads a catalog file from raw, an https URL (or, with
// AllowLoopback, an http or https URL of a loopback address). It follows
// only redirects within the same scheme and host, at most MaxRedirects,
// connects to no loopback or private address unless the URL itself is an
// allowed loopback one, and reads at most MaxFile bytes within
// FetchTimeout. It returns the file and the URL it was read from.
func Fetch(ctx context.Context, raw string, o FetchOptions) ([]byte, *url.URL, error) {
	u, loopback, err := checkFetchURL(raw, o.AllowLoopback)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	resolve := o.resolve
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	dial := o.dial
	if dial == nil {
		d := &net.Dialer{Timeout: stepTimeout}
		dial = d.DialContext
	}
	tr := &http.Transport{
		// A proxy would connect for us, past the address check.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ips, err := resolve(ctx, host)
			if err != nil {
				return nil, err
			}
			var lastErr error = errAddress
			for _, ip := range ips {
				// Each address is checked as it is dialled, so a name
				// that resolves elsewhere on the second look (DNS
				// rebinding) or after a redirect is caught too.
				if !allowedAddr(ip, loopback) {
					continue
				}
				c, err := dial(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
				if err == nil {
					return c, nil
				}
				lastErr = err
			}
			return nil, lastErr
		},
		TLSClientConfig:        o.tlsConfig,
		TLSHandshakeTimeout:    stepTimeout,
		ResponseHeaderTimeout:  stepTimeout,
		MaxResponseHeaderBytes: 64 << 10,
		DisableKeepAlives:      true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		Timeout:   FetchTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return errTooManyRedirects
			}
			if req.URL.Scheme != u.Scheme || !strings.EqualFold(req.URL.Host, u.Host) || req.URL.User != nil {
				return errRedirect
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, &URLError{msg: "url must be an https address of a catalog file"}
	}
	req.Header.Set("Accept", "application/yaml, text/yaml, text/plain")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, &FetchError{msg: fetchFailure(err, u.Hostname())}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, &FetchError{msg: fmt.Sprintf("the catalog could not be fetched: %s answered HTTP %d, not 200 with the catalog file", u.Hostname(), resp.StatusCode)}
	}
	tooLarge := &FetchError{msg: fmt.Sprintf("the catalog could not be fetched: the file is larger than %d KiB, the most a catalog may be", MaxFile>>10)}
	if resp.ContentLength > MaxFile {
		return nil, nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxFile+1))
	if err != nil {
		return nil, nil, &FetchError{msg: fetchFailure(err, u.Hostname())}
	}
	if len(data) > MaxFile {
		return nil, nil, tooLarge
	}
	return data, resp.Request.URL, nil
}

// checkFetchURL checks the URL a catalog is to be fetched from, and says
// whether it names a loopback address (allowed only with allowLoopback).
func checkFetchURL(raw string, allowLoopback bool) (*url.URL, bool, error) {
	raw = strings.TrimSpace(raw)
	const rule = "url must be an https address of a catalog file"
	if raw == "" || len(raw) > MaxURL {
		return nil, false, &URLError{msg: fmt.Sprintf("%s, at most %d characters", rule, MaxURL)}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, false, &URLError{msg: rule + " (https://host/path/catalog.yaml)"}
	}
	if u.User != nil {
		return nil, false, &URLError{msg: rule + "; it must not hold a user name or password"}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, false, &URLError{msg: rule + "; its port must be a number from 1 to 65535"}
		}
	}
	u.Fragment, u.RawFragment = "", ""
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	loopback := host == "localhost" || strings.HasSuffix(host, ".localhost")
	if ip, err := netip.ParseAddr(host); err == nil {
		loopback = ip.Unmap().IsLoopback()
		if !loopback && !allowedAddr(ip, false) {
			return nil, false, &URLError{msg: "the catalog URL names a private network address; FreeLane fetches catalogs only from public https servers (or, with catalog.allow_http_loopback, from this machine)"}
		}
	}
	switch {
	case loopback && !allowLoopback:
		return nil, false, &URLError{msg: "the catalog URL names this machine (a loopback address); FreeLane fetches catalogs only from public https servers unless catalog.allow_http_loopback is true in the config file"}
	case u.Scheme == "http" && !loopback:
		return nil, false, &URLError{msg: "the catalog URL must be https: a catalog sent over plain http could be changed on the way; plain http is allowed only to a loopback address (127.0.0.1, ::1, localhost) with catalog.allow_http_loopback: true in the config file"}
	}
	return u, loopback, nil
}

// allowedAddr reports whether a catalog fetch may connect to ip: a public
// address, or a loopback one when loopback is allowed.
func allowedAddr(ip netip.Addr, loopback bool) bool {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return loopback
	case !ip.IsValid(), ip.IsUnspecified(), ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsInterfaceLocalMulticast(), ip.IsMulticast():
		return false
	}
	for _, p := range reserved {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// reserved are address ranges that are not on the public internet besides
// those netip names: "this network", carrier-grade NAT and IPv4
// broadcast.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("255.255.255.255/32"),
}

// fetchFailure says why a fetch failed, in FreeLane's words.
func fetchFailure(err error, host string) string {
	const head = "the catalog could not be fetched: "
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var netErr net.Error
	switch {
	case errors.Is(err, errRedirect):
		return head + host + " redirected to another host or scheme; FreeLane follows only redirects within the same https host, so give the file's final address"
	case errors.Is(err, errTooManyRedirects):
		return head + fmt.Sprintf("%s redirected more than %d times", host, MaxRedirects)
	case errors.Is(err, errAddress):
		return head + host + " is a loopback or private network address; FreeLane fetches catalogs only from public servers (loopback ones with catalog.allow_http_loopback)"
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return head + fmt.Sprintf("%s did not answer within %s", host, FetchTimeout)
	case errors.As(err, &dnsErr):
		return head + "the host name " + host + " could not be resolved"
	case errors.As(err, &certErr):
		return head + host + "'s TLS certificate is not valid for it; FreeLane fetches catalogs only over verified https"
	case errors.Is(err, context.Canceled):
		return head + "the request was cancelled"
	}
	return head + host + " could not be reached or broke the connection"
}
