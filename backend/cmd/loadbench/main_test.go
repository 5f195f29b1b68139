package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"freelane/backend/clock"
)

// TestHarness runs both modes with tiny numbers, the targets built and
// started as they are for a real run, so that the harness cannot rot
// unnoticed. The figures depend on the machine; what is checked is that
// every scenario ran, nothing failed and the report holds them all. The
// first run on a machine builds FreeLane, which takes a minute on a cold
// build cache; after that it takes some twenty seconds.
func TestHarness(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip(supported)
	}
	if testing.Short() {
		t.Skip("starts three processes and runs real-time load for some twenty seconds")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH to build the targets")
	}
	dir := t.TempDir()
	// The health checks' bound is loose: make test runs every package at
	// once on a small machine, and what is checked here is that the
	// checks run, not how fast.
	base := options{conc: 2, cpuConc: 2, dur: 150 * time.Millisecond, warm: 50 * time.Millisecond, rounds: 1, chunks: 8,
		settle: 100 * time.Millisecond, streamDur: 2 * time.Second, slowLatency: 500 * time.Millisecond,
		liveBound: 10 * time.Second, timeout: 4 * time.Minute}

	// The load mode. Each run builds the targets; the second finds them
	// in the build cache.
	o := base
	o.jsonPath = filepath.Join(dir, "load.json")
	// With redis-server installed (make test installs it) the load mode
	// also measures FreeLane counting on Redis.
	rows, wants := 7, []string{"non-stream", "cross stream", "cache hit", "bare proxy", "FreeLane", "CPU per request, FreeLane / bare proxy", "idle RSS, FreeLane"}
	if _, err := exec.LookPath("redis-server"); err == nil {
		o.redis, rows = true, 9
		wants = append(wants, "FreeLane on Redis", "throughput, FreeLane on Redis / FreeLane alone")
	}
	var out, progress bytes.Buffer
	if err := run(context.Background(), clock.Real{}, o, &out, &progress); err != nil {
		t.Fatalf("load mode: %v\n%s\n%s", err, out.String(), progress.String())
	}
	for _, want := range wants {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	var rep report
	b, err := os.ReadFile(o.jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Load == nil || len(rep.Load.Summary) != rows {
		t.Fatalf("the JSON report has no summary of %d rows: %s", rows, b)
	}
	for _, r := range rep.Load.Summary {
		if r.RPS.Best <= 0 || r.Errors != 0 || r.Misses != 0 {
			t.Errorf("%s on %s: %+v", r.Scenario, r.Target, r)
		}
	}
	if rep.Load.Idle["freelane"].RSS <= 0 || rep.Load.Idle["proxy"].RSS <= 0 {
		t.Errorf("idle memory: %+v", rep.Load.Idle)
	}

	// The scale mode, as make bench-scale runs it: a few streams and slow
	// requests held open through each target, to an HTTPS and HTTP/2
	// upstream.
	o = base
	o.streams, o.slow, o.tls = 50, 20, true
	o.jsonPath = filepath.Join(dir, "scale.json")
	out.Reset()
	progress.Reset()
	if err := run(context.Background(), clock.Real{}, o, &out, &progress); err != nil {
		t.Fatalf("scale mode: %v\n%s\n%s", err, out.String(), progress.String())
	}
	if b, err = os.ReadFile(o.jsonPath); err != nil {
		t.Fatal(err)
	}
	rep = report{}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Machine["upstream_tls"] != true {
		t.Errorf("the report does not say the upstream served HTTPS: %v", rep.Machine)
	}
	if len(rep.Scale) != 4 {
		t.Fatalf("want 4 scale phases, got %d: %s", len(rep.Scale), b)
	}
	for _, p := range rep.Scale {
		if p.Completed != p.N || p.Errors != 0 || p.OpenRSS <= 0 {
			t.Errorf("%s through %s: %+v", p.Kind, p.Target, p)
		}
		if p.Target == "freelane" && (len(p.Live) != 2 || p.Live[0].Checks == 0 || p.Live[0].Failures != 0) {
			t.Errorf("%s through FreeLane: live checks %+v", p.Kind, p.Live)
		}
	}
	if !strings.Contains(out.String(), "memory per open stream, FreeLane / bare proxy") {
		t.Errorf("the scale report lacks the per-stream ratio:\n%s", out.String())
	}
}

// TestDashboardOrigin reads FreeLane's address from the line serve prints.
func TestDashboardOrigin(t *testing.T) {
	got, ok := dashboardOrigin("FreeLane dashboard: http://127.0.0.1:43081/#login=abc")
	if !ok || got != "http://127.0.0.1:43081" {
		t.Errorf("got %q, %v", got, ok)
	}
	if _, ok := dashboardOrigin("(the link signs one browser in)"); ok {
		t.Error("a line without the address matched")
	}
}

// TestSummarize takes the best round and the median, and the added
// latency against the upstream of the same round.
func TestSummarize(t *testing.T) {
	o := options{conc: 32, cpuConc: 8}
	var runs []result
	for i, v := range []float64{100, 300, 200} {
		runs = append(runs,
			result{Scenario: "non-stream", Target: "proxy", Conc: 32, RPS: v, Round: i + 1},
			result{Scenario: "non-stream", Target: "proxy", Conc: 8, CPUPerReq: v, Round: i + 1},
			result{Scenario: "non-stream", Target: "proxy", Conc: 1, P50: v / 100, Round: i + 1},
			result{Scenario: "non-stream", Target: "upstream", Conc: 1, P50: v / 200, Round: i + 1})
	}
	rows := summarize(runs, o)
	var px summaryRow
	for _, r := range rows {
		if r.Scenario == "non-stream" && r.Target == "proxy" {
			px = r
		}
	}
	if px.RPS != (stat{Best: 300, Median: 200}) || px.CPU != (stat{Best: 100, Median: 200}) {
		t.Errorf("rps %+v, cpu %+v", px.RPS, px.CPU)
	}
	// Added p50 per round: 0.5, 1.5, 1.0.
	if px.AddedP50 != (stat{Best: 0.5, Median: 1.0}) {
		t.Errorf("added p50 %+v", px.AddedP50)
	}
}
