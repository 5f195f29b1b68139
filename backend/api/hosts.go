package api

import (
	"net"
	"net/http"
	"os"
	"strings"
)

// HostGuard refuses requests whose Host header names anything but this
// server. A web page on another site can make a browser send requests to
// 127.0.0.1 through a DNS name it controls (DNS rebinding); checking Host
// stops those, since the browser sends the attacker's name.
type HostGuard struct {
	allowed map[string]bool
}

// NewHostGuard allows the loopback names on any port, the listen host with
// the listening port, and extra names (with or without port). When the server
// listens on every interface it also allows this machine's addresses and
// hostname.
func NewHostGuard(listen string, extra []string) *HostGuard {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		host, port = listen, ""
	}
	g := &HostGuard{allowed: map[string]bool{}}
	add := func(h string) {
		h = strings.ToLower(strings.Trim(h, "[]"))
		if h == "" {
			return
		}
		hp := net.JoinHostPort(h, port)
		g.allowed[hp] = true
		if port == "80" || port == "" {
			g.allowed[h] = true
			if strings.Contains(h, ":") {
				g.allowed["["+h+"]"] = true
			}
		}
	}
	for _, h := range []string{"127.0.0.1", "localhost", "::1", host} {
		add(h)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok {
					add(ipn.IP.String())
				}
			}
		}
		if hn, err := os.Hostname(); err == nil {
			add(hn)
		}
	}
	for _, h := range extra {
		if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") && strings.Count(h, ":") == 1 {
			g.allowed[strings.ToLower(h)] = true
			continue
		}
		add(h)
	}
	return g
}

// Allowed reports whether a Host header value names this server.
//
// The loopback names are allowed with any port: a browser only sends them
// for a page it loaded from this machine, so they carry no rebinding risk,
// and a tunnel (ssh -L 9000:127.0.0.1:7788) or a port forward makes clients
// send their own local port rather than the one FreeLane listens on.
func (g *HostGuard) Allowed(host string) bool {
	host = strings.ToLower(host)
	return g.allowed[host] || loopbackHost(host)
}

// loopbackHost reports whether host is 127.0.0.1, localhost or [::1] with a
// port, or without one.
func loopbackHost(host string) bool {
	name, port := host, ""
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		name, port = host[:i], host[i+1:]
		if !validPort(port) {
			return false
		}
	}
	switch name {
	case "127.0.0.1", "localhost", "[::1]":
		return true
	}
	return false
}

// validPort reports whether p is a decimal port number, 1 to 65535.
func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n >= 1 && n <= 65535
}

// Wrap puts the guard in front of h.
func (g *HostGuard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.Allowed(r.Host) {
			WriteError(w, http.StatusForbidden, "invalid_request_error", "host_not_allowed",
				"Host "+quoteHost(r.Host)+" is not this FreeLane server; use http://127.0.0.1 or localhost (any port, such as a tunnel's), or add the name to allowed_hosts in the config", "")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func quoteHost(h string) string {
	if len(h) > 100 {
		h = h[:100]
	}
	return "\"" + strings.Map(func(r rune) rune {
		if r < 0x20 || r == '"' {
			return -1
		}
		return r
	}, h) + "\""
}
