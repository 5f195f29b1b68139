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

// NewHostGuard allows the loopback names with the listening port, the listen
// host itself, and extra names (with or without port). When the server
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
func (g *HostGuard) Allowed(host string) bool {
	return g.allowed[strings.ToLower(host)]
}

// Wrap puts the guard in front of h.
func (g *HostGuard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.Allowed(r.Host) {
			WriteError(w, http.StatusForbidden, "invalid_request_error", "host_not_allowed",
				"Host "+quoteHost(r.Host)+" is not this FreeLane server; use http://127.0.0.1 or localhost with the listening port, or add the name to allowed_hosts in the config", "")
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
