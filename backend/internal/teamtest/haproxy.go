package teamtest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// HAProxy is a running HAProxy that forwards TCP to the test binary's
// Redis and PostgreSQL, so that a test can cut either off (Down) and bring
// it back (Up) without restarting it, as a network fault would.
type HAProxy struct {
	// RedisAddr and PostgresAddr are loopback addresses that reach Redis
	// and PostgreSQL through HAProxy.
	RedisAddr    string
	PostgresAddr string
	// Took is how long HAProxy took to start (not counting what it fronts).
	Took  time.Duration
	admin string // the runtime API's unix socket
}

// Backend names for Down and Up.
const (
	BackendRedis    = "redis"
	BackendPostgres = "postgres"
)

var haOnce once[*HAProxy]

// StartHAProxy returns the test binary's HAProxy, starting it (and the
// Redis and PostgreSQL it fronts) on first use; it skips tb when any of
// the three is not installed.
func StartHAProxy(tb testing.TB) *HAProxy {
	tb.Helper()
	r, p := StartRedis(tb), StartPostgres(tb)
	h := haOnce.get(tb, "HAProxy", "haproxy", func() (*HAProxy, error) { return startHAProxy(r.Addr, p.Addr) })
	return h
}

func startHAProxy(redisAddr, pgAddr string) (*HAProxy, error) {
	bin, err := lookPath("haproxy", "/usr/sbin/haproxy")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "teamtest-haproxy-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*HAProxy, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	rp, err := freePort()
	if err != nil {
		return fail(err)
	}
	pp, err := freePort()
	if err != nil {
		return fail(err)
	}
	h := &HAProxy{RedisAddr: hostPort(rp), PostgresAddr: hostPort(pp), admin: filepath.Join(dir, "admin.sock")}
	// on-marked-down shutdown-sessions: taking a server down also cuts the
	// connections already open through it, as a failed link would.
	conf := fmt.Sprintf(`global
	stats socket %s mode 600 level admin
	maxconn 200
defaults
	mode tcp
	timeout connect 2s
	timeout client 1h
	timeout server 1h
frontend fe_redis
	bind %s
	default_backend %s
frontend fe_postgres
	bind %s
	default_backend %s
backend %s
	server s1 %s on-marked-down shutdown-sessions
backend %s
	server s1 %s on-marked-down shutdown-sessions
`, h.admin, h.RedisAddr, BackendRedis, h.PostgresAddr, BackendPostgres,
		BackendRedis, redisAddr, BackendPostgres, pgAddr)
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
		return fail(err)
	}
	cmd := exec.Command(bin, "-db", "-f", cfgPath)
	s, err := start("haproxy", dir, "unix", h.admin, "", cmd)
	if err != nil {
		return fail(err)
	}
	onStop(func() { s.stop(os.Interrupt) })
	return h, nil
}

// Down cuts backend (BackendRedis or BackendPostgres) off: new connections
// through HAProxy fail and open ones are closed.
func (h *HAProxy) Down(tb testing.TB, backend string) {
	tb.Helper()
	h.command(tb, "set server "+backend+"/s1 state maint")
	h.command(tb, "shutdown sessions server "+backend+"/s1")
}

// Up brings backend back after Down.
func (h *HAProxy) Up(tb testing.TB, backend string) {
	tb.Helper()
	h.command(tb, "set server "+backend+"/s1 state ready")
}

// command sends one command to HAProxy's runtime API; the API answers a
// good command with nothing or a blank line.
func (h *HAProxy) command(tb testing.TB, cmd string) {
	tb.Helper()
	c, err := net.DialTimeout("unix", h.admin, 2*time.Second)
	if err != nil {
		tb.Fatalf("teamtest: HAProxy's runtime API: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "%s\n", cmd); err != nil {
		tb.Fatalf("teamtest: HAProxy %q: %v", cmd, err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		out.WriteString(sc.Text())
	}
	if s := strings.TrimSpace(out.String()); s != "" {
		tb.Fatalf("teamtest: HAProxy %q answered %q", cmd, s)
	}
}
