package teamtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Balancer is an HAProxy that spreads HTTP requests round-robin over a
// team's instances, as the load balancer in front of a team's servers
// does. Unlike the HAProxy that fronts Redis and PostgreSQL, each test
// starts its own, since each has its own instances.
type Balancer struct {
	// Addr is its loopback host:port.
	Addr string
}

// NewBalancer picks the balancer's address, which the instances must
// know before it starts (they accept requests only for the host names
// they serve); it skips tb when HAProxy is not installed.
func NewBalancer(tb testing.TB) *Balancer {
	tb.Helper()
	if _, err := lookPath("haproxy", "/usr/sbin/haproxy"); err != nil {
		tb.Skipf("teamtest: %v (install haproxy, or run .ci/deps test)", err)
	}
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	return &Balancer{Addr: hostPort(port)}
}

// Start starts HAProxy in front of the instances at addrs (host:port)
// and stops it when tb ends. Instances are checked through /healthz, so
// one that stops is taken out within a second.
func (b *Balancer) Start(tb testing.TB, addrs ...string) {
	tb.Helper()
	bin, err := lookPath("haproxy", "/usr/sbin/haproxy")
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	var servers strings.Builder
	for i, a := range addrs {
		fmt.Fprintf(&servers, "\tserver i%d %s check inter 500ms fall 1 rise 1\n", i+1, a)
	}
	conf := fmt.Sprintf(`global
	maxconn 2000
defaults
	mode http
	timeout connect 2s
	timeout client 2m
	timeout server 2m
	option http-server-close
frontend fe
	bind %s
	default_backend team
backend team
	balance roundrobin
	option httpchk
	http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host %s
	retry-on conn-failure empty-response
	retries 2
	option redispatch
%s`, b.Addr, b.Addr, servers.String())
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	s, err := start("haproxy", dir, "tcp", b.Addr, "", exec.Command(bin, "-db", "-f", cfgPath))
	if err != nil {
		tb.Fatalf("teamtest: starting HAProxy as a load balancer: %v", err)
	}
	tb.Cleanup(func() { s.stop(os.Interrupt) })
}
