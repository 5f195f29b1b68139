// Command loadbench measures what FreeLane costs on the request path,
// against the thinnest reverse proxy Go makes, in the same run.
//
// It builds and starts three programs on free loopback ports, each in a
// process of its own: the fake upstream (backend/cmd/fakeupstream), a bare
// httputil.ReverseProxy in front of it (backend/cmd/bareproxy) and the
// headless FreeLane router (freelane serve) in front of it, with a config
// of its own in a temporary directory. The load generator runs in this
// process, whose CPU is not counted: each target's CPU time and memory
// are read from /proc.
//
// The normal mode runs rounds of every scenario, the bare proxy and
// FreeLane interleaved: same-dialect non-stream and stream answers of
// -chunks chunks, a cross-dialect route (an OpenAI client, an Anthropic
// upstream) and a response-cache hit, the last two on FreeLane only. Each
// is measured for throughput and latency at -c clients, for CPU time per
// request at -cpu-c clients, and (the first two) for latency at one client
// against the upstream's own. Resident memory is read when idle after
// start and after the load.
//
// The scale mode (-streams N, -slow N) holds N requests open at once
// through each target: N streams that send a chunk every second for
// -stream-dur, or N non-stream requests whose upstream answers after
// -slow-latency. It reports errors, memory per open request and whether
// FreeLane's /healthz and /metrics still answer within -live-bound.
//
// With -redis it also starts redis-server and a second FreeLane whose
// config adds state.redis, so that every request's quota and budget check
// is a round trip to Redis, and compares the two FreeLanes' throughput and
// latency on the same-dialect scenarios.
//
// Any failed request makes the command exit with status 1, after the
// report.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"freelane/backend/clock"
)

// options are the command's flags.
type options struct {
	conc, cpuConc int
	dur, warm     time.Duration
	rounds        int
	chunks        int
	settle        time.Duration

	streams     int
	streamDur   time.Duration
	slow        int
	slowLatency time.Duration
	liveBound   time.Duration

	timeout  time.Duration
	jsonPath string
	binDir   string
	tags     string
	keep     bool
	// redis also measures FreeLane counting its quotas and budgets with a
	// team on Redis.
	redis bool
	// durable has FreeLane end each answer only once its rows are
	// written.
	durable bool
	// tls has the fake upstream serve HTTPS and HTTP/2, as vendors do.
	tls bool
}

func main() {
	var o options
	flag.IntVar(&o.conc, "c", 32, "concurrent clients for throughput and latency")
	flag.IntVar(&o.cpuConc, "cpu-c", 8, "concurrent clients for CPU time per request")
	flag.DurationVar(&o.dur, "d", 1500*time.Millisecond, "measuring window of each run")
	flag.DurationVar(&o.warm, "warmup", 300*time.Millisecond, "warm-up before each measuring window")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of every run; the report gives the best and the median")
	flag.IntVar(&o.chunks, "chunks", 8, "content chunks of each answer")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "wait after start before the idle memory is read")
	flag.IntVar(&o.streams, "streams", 0, "scale mode: hold this many long streams open through each target")
	flag.DurationVar(&o.streamDur, "stream-dur", 60*time.Second, "scale mode: how long each stream lasts, a chunk a second")
	flag.IntVar(&o.slow, "slow", 0, "scale mode: hold this many slow non-stream requests open through each target")
	flag.DurationVar(&o.slowLatency, "slow-latency", 2*time.Second, "scale mode: the upstream's delay before it answers a slow request")
	flag.DurationVar(&o.liveBound, "live-bound", time.Second, "scale mode: how fast FreeLane's /healthz and /metrics must answer under load")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole run, builds included")
	flag.StringVar(&o.jsonPath, "json", "", "also write every figure to this file as JSON")
	flag.StringVar(&o.binDir, "bin", "", "take freelane, fakeupstream and bareproxy from this directory instead of building them")
	flag.StringVar(&o.tags, "tags", "", "build tags for FreeLane, such as desktop,production,webkit2_41 for the desktop binary (default: the headless one)")
	flag.BoolVar(&o.keep, "keep", false, "keep the run's directory (config, data, the children's logs)")
	flag.BoolVar(&o.durable, "durable", false, "run every FreeLane with request_log.durable, holding each answer's end until its request and ledger rows are written")
	flag.BoolVar(&o.tls, "tls", false, "the fake upstream serves HTTPS and HTTP/2, as vendors' endpoints do, so that each proxy multiplexes its upstream requests over a few connections")
	flag.BoolVar(&o.redis, "redis", false, "also measure a second FreeLane that counts its quotas and budgets on a redis-server (from PATH) started for the run, as a team's instances do")
	flag.Parse()
	if err := run(context.Background(), clock.Real{}, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

// report is the JSON the run writes with -json.
type report struct {
	Machine map[string]any `json:"machine"`
	Load    *loadReport    `json:"load,omitempty"`
	Scale   []openPhase    `json:"scale,omitempty"`
}

// run is the whole command: checks, builds, the chosen mode, the report.
func run(ctx context.Context, clk clock.Clock, o options, stdout, stderr io.Writer) error {
	if supported != "" {
		return errors.New(supported)
	}
	if err := o.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	began := clk.Now()

	open := max(o.streams, o.slow)
	// Each open request holds a descriptor on each side of a proxy, and
	// the generator one per client; the rest is headroom for the
	// database, the listeners and idle pooled connections. Over HTTP/2
	// a proxy's upstream requests share a few connections.
	sides := 2
	if o.tls {
		sides = 1
	}
	need := uint64(sides*max(open, o.conc) + 512)
	soft, hard, err := raiseFileLimit(need)
	if err != nil {
		if open > 0 {
			return fmt.Errorf("%w; at most %d requests can be held open at once here", err, (int(hard)-512)/sides)
		}
		return err
	}
	if open > 0 {
		ports, err := portRange()
		if err != nil {
			return err
		}
		if ports < open+1000 {
			return fmt.Errorf("the kernel hands out %d local ports (net.ipv4.ip_local_port_range), too few for %d connections at once to one address", ports, open)
		}
	}
	machine := map[string]any{"cpus": runtime.NumCPU(), "go": runtime.Version(), "clk_tck": clockTicks,
		"nofile_soft": soft, "nofile_hard": hard, "runtime": tunedRuntime(), "started": began.UTC().Format(time.RFC3339)}
	fmt.Fprintf(stderr, "loadbench: %d CPUs, open-file limit %d (hard %d); building the targets\n", runtime.NumCPU(), soft, hard)

	dir, err := os.MkdirTemp("", "loadbench-")
	if err != nil {
		return fmt.Errorf("making the run's directory: %w", err)
	}
	if o.keep {
		fmt.Fprintf(stderr, "loadbench: keeping %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	var bin binaries
	dashboard := true
	if o.binDir != "" {
		bin, err = prebuilt(o.binDir)
	} else {
		bin, dashboard, err = buildAll(ctx, filepath.Join(dir, "bin"), o.tags)
	}
	if err != nil {
		return err
	}
	machine["freelane_tags"] = o.tags
	machine["dashboard_built"] = dashboard
	switch {
	case o.binDir != "":
		fmt.Fprintf(stdout, "loadbench: the targets from %s", o.binDir)
	case o.tags != "":
		fmt.Fprintf(stdout, "loadbench: FreeLane built with tags %s", o.tags)
	default:
		fmt.Fprint(stdout, "loadbench: FreeLane built headless (no build tags)")
	}
	machine["durable"] = o.durable
	machine["upstream_tls"] = o.tls
	if o.tls {
		fmt.Fprint(stdout, "; the upstream serves HTTPS and HTTP/2")
	}
	if o.durable {
		fmt.Fprint(stdout, "; every answer waits for its rows to be written (request_log.durable)")
	}
	if !dashboard {
		fmt.Fprint(stdout, "; the dashboard is not built (frontend/dist is empty; make frontend builds it), so the binary embeds none of it")
	}
	fmt.Fprintln(stdout)
	progress := func(s string) { fmt.Fprintln(stderr, "loadbench:", s) }
	rep := report{Machine: machine}
	sc := stackConfig{chunks: o.chunks, longChunks: int(o.streamDur/time.Second) + 1, slowLatency: o.slowLatency, tls: o.tls}

	var failed int64
	if open == 0 {
		sc.redis, sc.durable = o.redis, o.durable
		s, err := startStack(ctx, clk, bin, filepath.Join(dir, "load"), sc)
		if err != nil {
			return err
		}
		lr, err := benchLoad(ctx, clk, o, s, progress)
		s.stop(clk)
		if err != nil {
			return err
		}
		lr.Duration = clk.Since(began).Seconds()
		rep.Load = lr
		printLoad(stdout, lr, o)
		for _, r := range lr.Summary {
			failed += r.Errors
		}
	} else {
		phases, err := benchScale(ctx, clk, o, bin, dir, sc, progress)
		rep.Scale = phases
		printScale(stdout, phases, o)
		if err != nil {
			return err
		}
		for _, p := range phases {
			failed += p.Errors
			for _, l := range p.Live {
				failed += int64(l.Failures)
			}
		}
	}
	fmt.Fprintf(stdout, "\nloadbench: the run took %.0f s\n", clk.Since(began).Seconds())
	if o.jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the report: %w", err)
		}
		if err := os.WriteFile(o.jsonPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d requests or checks failed", failed)
	}
	return nil
}

// check refuses flags that cannot make a meaningful run.
func (o options) check() error {
	switch {
	case o.conc < 1 || o.cpuConc < 1:
		return errors.New("-c and -cpu-c must be at least 1")
	case o.rounds < 1:
		return errors.New("-rounds must be at least 1")
	case o.dur <= 0 || o.warm < 0 || o.settle < 0:
		return errors.New("-d must be positive, -warmup and -settle not negative")
	case o.chunks < 1:
		return errors.New("-chunks must be at least 1")
	case o.tls && o.streams == 0 && o.slow == 0:
		return errors.New("-tls is for the scale mode: give -streams or -slow")
	case o.streams < 0 || o.slow < 0:
		return errors.New("-streams and -slow must not be negative")
	case o.streams > 0 && o.streamDur < time.Second:
		return errors.New("-stream-dur must be at least 1s: the streams send a chunk a second")
	case o.slow > 0 && o.slowLatency <= 0:
		return errors.New("-slow-latency must be positive")
	case o.liveBound <= 0 || o.timeout <= 0:
		return errors.New("-live-bound and -timeout must be positive")
	}
	return nil
}

// benchScale runs the scale mode: for each kind of load asked for, a fresh
// set of targets, so that the idle memory of each is that of a router not
// yet used, then the load through the bare proxy and through FreeLane.
func benchScale(ctx context.Context, clk clock.Clock, o options, bin binaries, dir string, sc stackConfig, progress func(string)) ([]openPhase, error) {
	var phases []openPhase
	l := loader{clk}
	type kind struct {
		name  string
		n     int
		call  call
		model string
		chain string
	}
	kinds := []kind{
		{"streams", o.streams, call{stream: true, temperature: "0.2"}, modelLong, chainLong},
		{"slow", o.slow, call{temperature: "0.2"}, modelSlow, chainSlow},
	}
	for _, k := range kinds {
		if k.n == 0 {
			continue
		}
		s, err := startStack(ctx, clk, bin, filepath.Join(dir, k.name), sc)
		if err != nil {
			return phases, err
		}
		if !l.wait(ctx, o.settle) {
			s.stop(clk)
			return phases, ctx.Err()
		}
		for _, t := range []target{
			{name: "proxy", base: s.proxy.url, pid: s.proxy.pid(), model: k.model},
			{name: "freelane", base: s.freelane.url, pid: s.freelane.pid(), model: k.chain},
		} {
			var live []string
			if t.name == "freelane" {
				live = []string{"/healthz", "/metrics"}
			}
			progress(fmt.Sprintf("%s: %d at once through %s", k.name, k.n, label(t.name)))
			every := liveEvery
			if k.name == "slow" {
				every = max(50*time.Millisecond, o.slowLatency/4)
			}
			ph, err := l.openMany(ctx, k.name, t, k.call, k.n, o.liveBound, every, live)
			phases = append(phases, ph)
			if err == nil {
				err = s.alive()
			}
			if err != nil {
				s.stop(clk)
				return phases, fmt.Errorf("%s through %s: %w", k.name, label(t.name), err)
			}
			progress(fmt.Sprintf("%s through %s: %d completed, %d errors, %.1f kB per open request", k.name, label(t.name), ph.Completed, ph.Errors, ph.PerOpenKB))
		}
		s.stop(clk)
	}
	return phases, nil
}
