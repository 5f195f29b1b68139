package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"freelane/backend/clock"
)

// Models the fake upstream serves and the chains FreeLane routes them by.
// Clients of the bare proxy and of the upstream name the model; clients
// of FreeLane name the chain, as a user's tools do.
const (
	modelNormal = "m"    // the normal answer, -chunks content chunks
	modelLong   = "long" // a chunk every second for -stream-dur
	modelSlow   = "slow" // headers after -slow-latency

	chainSame   = "same"   // OpenAI client, OpenAI upstream
	chainCross  = "cross"  // OpenAI client, Anthropic upstream
	chainCached = "cached" // same, with the response cache on
	chainLong   = "long-streams"
	chainSlow   = "slow-answers"
)

// stack is one set of running children: the fake upstream, the bare proxy
// in front of it and FreeLane in front of it.
type stack struct {
	upstream, proxy, freelane *child
	// redis and team are, with stackConfig.redis, redis-server and the
	// FreeLane that counts on it.
	redis, team *child
	dir         string
}

// stackConfig shapes the fake upstream's answers.
type stackConfig struct {
	chunks      int
	longChunks  int
	slowLatency time.Duration
	redis       bool
	// durable has every FreeLane hold each answer's end until its rows
	// are written (request_log.durable).
	durable bool
	// tls has the fake upstream serve HTTPS and HTTP/2; the proxies
	// trust its certificate through SSL_CERT_FILE.
	tls bool
}

// startStack starts the three children on free loopback ports, each
// printing where it listens once it does.
func startStack(ctx context.Context, clk clock.Clock, bin binaries, dir string, sc stackConfig) (*stack, error) {
	s := &stack{dir: dir}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("making the children's home: %w", err)
	}
	env := childEnv(home)
	firstURL := func(line string) (string, bool) {
		line = strings.TrimSpace(line)
		return line, strings.HasPrefix(line, "http://") || strings.HasPrefix(line, "https://")
	}
	var err error
	upArgs := []string{"-chunks", fmt.Sprint(sc.chunks),
		"-model", fmt.Sprintf("%s=chunks=%d,chunk-delay=1s", modelLong, max(1, sc.longChunks)),
		"-model", fmt.Sprintf("%s=chunks=%d,header-delay=%s", modelSlow, max(1, sc.chunks), sc.slowLatency)}
	cert := filepath.Join(dir, "upstream-cert.pem")
	if sc.tls {
		upArgs = append(upArgs, "-tls-cert", cert)
	}
	if s.upstream, err = startChild(ctx, clk, "fakeupstream", bin.upstream, upArgs, env, dir, firstURL); err != nil {
		return nil, err
	}
	if sc.tls {
		env = append(env, "SSL_CERT_FILE="+cert)
	}
	// The fake prints its OpenAI base URL; the proxy forwards to the
	// origin and keeps the path.
	origin := strings.TrimSuffix(s.upstream.url, "/v1")
	if s.proxy, err = startChild(ctx, clk, "bareproxy", bin.proxy, []string{"-upstream", origin}, env, dir, firstURL); err != nil {
		s.stop(clk)
		return nil, err
	}
	cfgPath := filepath.Join(dir, "freelane.yaml")
	if err := os.WriteFile(cfgPath, []byte(freelaneConfig(s.upstream.url, sc.durable)), 0o600); err != nil {
		s.stop(clk)
		return nil, fmt.Errorf("writing FreeLane's config: %w", err)
	}
	args := []string{"serve", "--config", cfgPath, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--log-level", "warn"}
	if s.freelane, err = startChild(ctx, clk, "freelane", bin.freelane, args, env, dir, dashboardOrigin); err != nil {
		s.stop(clk)
		return nil, err
	}
	if sc.redis {
		if err := s.startTeam(ctx, clk, bin, env, sc.durable); err != nil {
			s.stop(clk)
			return nil, err
		}
	}
	return s, nil
}

// startTeam starts redis-server on a free port, in memory only, and a
// FreeLane whose config is the same but for state.redis.
func (s *stack) startTeam(ctx context.Context, clk clock.Clock, bin binaries, env []string, durable bool) error {
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("-redis needs redis-server on PATH (Debian: apt install redis-server): %w", err)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--logfile", "", "--dir", s.dir}
	ready := func(line string) (string, bool) {
		return "redis://" + addr + "/0", strings.Contains(line, "Ready to accept connections")
	}
	if s.redis, err = startChild(ctx, clk, "redis-server", redisBin, args, env, s.dir, ready); err != nil {
		return err
	}
	cfgPath := filepath.Join(s.dir, "freelane-redis.yaml")
	cfg := freelaneConfig(s.upstream.url, durable) + "instance: bench\nstate: {redis: " + strconv.Quote(s.redis.url) + "}\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("writing FreeLane's config: %w", err)
	}
	fargs := []string{"serve", "--config", cfgPath, "--data-dir", filepath.Join(s.dir, "data-redis"), "--listen", "127.0.0.1:0", "--log-level", "warn"}
	s.team, err = startChild(ctx, clk, "freelane+redis", bin.freelane, fargs, env, s.dir, dashboardOrigin)
	return err
}

// freePort is a loopback TCP port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// dashboardOrigin finds FreeLane's address in the line serve prints once
// it listens: "FreeLane dashboard: http://127.0.0.1:PORT/#login=...".
func dashboardOrigin(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "FreeLane dashboard: ")
	if !ok {
		return "", false
	}
	u, err := url.Parse(strings.Fields(rest + " ")[0])
	if err != nil || u.Host == "" {
		return "", false
	}
	return "http://" + u.Host, true
}

// stop ends every child that was started.
func (s *stack) stop(clk clock.Clock) {
	for _, c := range []*child{s.team, s.redis, s.freelane, s.proxy, s.upstream} {
		if c != nil {
			c.stop(clk)
		}
	}
}

// alive fails when a child has died.
func (s *stack) alive() error {
	var errs []error
	for _, c := range []*child{s.upstream, s.proxy, s.freelane, s.redis, s.team} {
		if c != nil {
			errs = append(errs, c.alive())
		}
	}
	return errors.Join(errs...)
}

// freelaneConfig is the router's config for the benchmark. Everything
// that would make FreeLane do work of its own or reach past loopback is
// off: the probes, the discovery of local servers and the catalog
// providers picked up from key variables. The models are priced and
// limited, with a budget, so that every request pays for quota admission,
// cost accounting and the usage ledger, as a user's requests do; the
// limits are high enough never to refuse. One provider speaks OpenAI's
// wire and one Anthropic's, both to the same fake, so that a chain on
// the second measures translation. The response cache is on for one
// chain only, so that no other scenario is answered from it.
func freelaneConfig(upstreamURL string, durable bool) string {
	provider := func(name, kind string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "  - name: %s\n    kind: %s\n    tier: free\n    base_url: %q\n    api_key: sk-bench-%s\n", name, kind, upstreamURL, name)
		b.WriteString("    limits: {rpm: 1073741824, tpd: 1099511627776, concurrency: 1048576}\n    models:\n")
		for _, m := range []string{modelNormal, modelLong, modelSlow} {
			fmt.Fprintf(&b, "      - {id: %s, params_b: 70, price: {input: 0.15, output: 0.6}, limits: {rpd: 1073741824}}\n", m)
		}
		return b.String()
	}
	return "listen: 127.0.0.1:0\n" +
		"probes: {disabled: true}\n" +
		"discovery: {disabled: true}\n" +
		"catalog: {env_keys: false}\n" +
		"providers:\n" + provider("oa", "openai") + provider("an", "anthropic") +
		"chains:\n" +
		"  - {name: " + chainSame + ", backends: [oa/" + modelNormal + "]}\n" +
		"  - {name: " + chainCross + ", backends: [an/" + modelNormal + "]}\n" +
		"  - {name: " + chainCached + ", backends: [oa/" + modelNormal + "], cache: {enabled: true}}\n" +
		"  - {name: " + chainLong + ", backends: [oa/" + modelLong + "]}\n" +
		"  - {name: " + chainSlow + ", backends: [oa/" + modelSlow + "]}\n" +
		"budgets:\n  - {scope: global, period: month, limit: 1000000000, action: block}\n" +
		"request_log: {durable: " + strconv.FormatBool(durable) + "}\n"
}
