// Command loadbench measures what FreeLane costs on the request path. It
// starts the fake upstream, a bare httputil.ReverseProxy in front of it and a
// FreeLane gateway in front of it, then sends the same load (N concurrent
// clients, stream and non-stream) straight to the upstream, through the
// proxy and through FreeLane, and prints throughput and latency for each.
// Everything runs on loopback in this process.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/tier"
)

type result struct {
	rps      float64
	p50, p99 time.Duration
	errors   int64
}

func main() {
	conc := flag.Int("c", 32, "concurrent clients")
	dur := flag.Duration("d", 5*time.Second, "measuring time per target and mode")
	warm := flag.Duration("warmup", time.Second, "warm-up time per target and mode")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadbench:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(*conc, *dur, *warm); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(conc int, dur, warm time.Duration) error {
	up := fakeupstream.Start()
	defer up.Close()
	up.SetRecording(false)
	upURL, _ := url.Parse(up.URL)

	// The bare proxy: what any reverse proxy costs, the yardstick.
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: upURL.Scheme, Host: upURL.Host})
	rp.FlushInterval = -1
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: conc * 2, MaxIdleConns: conc * 4}
	rp.ErrorLog = nil
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	proxySrv := &http.Server{Handler: rp}
	go func() { _ = proxySrv.Serve(ln) }()
	defer proxySrv.Close()

	dir, err := os.MkdirTemp("", "loadbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The model is priced and limited, with a budget, so every request
	// goes through quota admission, cost accounting and the ledger; the
	// limits are high enough never to refuse.
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(sub string, noLedger bool) (*gateway.Gateway, error) {
		// A fresh config each time: the gateway takes the key out of it.
		cfg := config.Default()
		cfg.Listen = "127.0.0.1:0"
		cfg.Providers = []config.Provider{{Name: "bench", Kind: "openai", Tier: tier.Free, BaseURL: up.URL, APIKey: "sk-bench",
			Limits: &config.Limits{RPM: 1 << 30, TPD: 1 << 40, Concurrency: 1 << 20},
			Models: []config.Model{{ID: "m", ParamsB: 70, Price: &config.Price{Input: 0.15, Output: 0.6},
				Limits: &config.Limits{RPD: 1 << 30}}}}}
		cfg.Budgets = []config.Budget{{Scope: "global", Period: "month", Limit: 1e9, Action: "block"}}
		g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: dir + "/" + sub, Logger: log, NoLedger: noLedger})
		if err != nil {
			return nil, err
		}
		return g, g.Start()
	}
	g, err := start("ledger", false)
	if err != nil {
		return err
	}
	defer g.Shutdown(context.Background())
	// The same gateway without the usage ledger, quotas and budgets, to
	// measure what they add to the request path.
	g0, err := start("noledger", true)
	if err != nil {
		return err
	}
	defer g0.Shutdown(context.Background())

	targets := []struct{ name, base, model string }{
		{"upstream", up.URL, "m"},
		{"proxy", "http://" + ln.Addr().String() + "/v1", "m"},
		{"freelane", "http://" + g.Addr() + "/v1", "auto"},
		{"no-ledger", "http://" + g0.Addr() + "/v1", "auto"},
	}
	fmt.Printf("loadbench: %d concurrent clients, %v per run, GOMAXPROCS=%d\n\n", conc, dur, runtime.GOMAXPROCS(0))
	for _, stream := range []bool{false, true} {
		mode := map[bool]string{false: "non-stream", true: "stream"}[stream]
		res := map[string]result{}
		for _, t := range targets {
			body := []byte(fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"system","content":"You are a helpful coding assistant."},{"role":"user","content":"Write a function that adds two numbers."}],"temperature":0.2}`, t.model, stream))
			load(t.base, body, conc, warm)
			res[t.name] = load(t.base, body, conc, dur)
		}
		fmt.Printf("%s\n%-10s %10s %10s %10s %8s\n", mode, "target", "req/s", "p50", "p99", "errors")
		for _, t := range targets {
			r := res[t.name]
			fmt.Printf("%-10s %10.0f %10v %10v %8d\n", t.name, r.rps, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.errors)
		}
		d, p, f, f0 := res["upstream"], res["proxy"], res["freelane"], res["no-ledger"]
		fmt.Printf("freelane/proxy throughput: %.2fx   freelane/upstream: %.2fx   proxy/upstream: %.2fx\n", f.rps/p.rps, f.rps/d.rps, p.rps/d.rps)
		fmt.Printf("added latency vs upstream: freelane p50 +%v p99 +%v; proxy p50 +%v p99 +%v\n",
			(f.p50 - d.p50).Round(time.Microsecond), (f.p99 - d.p99).Round(time.Microsecond),
			(p.p50 - d.p50).Round(time.Microsecond), (p.p99 - d.p99).Round(time.Microsecond))
		fmt.Printf("the ledger, quotas and budgets add: p50 %+v p99 %+v, throughput %.2fx\n\n",
			(f.p50 - f0.p50).Round(time.Microsecond), (f.p99 - f0.p99).Round(time.Microsecond), f.rps/f0.rps)
	}
	return nil
}

// load runs conc clients in a closed loop for d and reports what they saw.
func load(base string, body []byte, conc int, d time.Duration) result {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc * 2, MaxIdleConns: conc * 4}}
	defer client.CloseIdleConnections()
	var (
		mu    sync.Mutex
		lats  []time.Duration
		errs  atomic.Int64
		wg    sync.WaitGroup
		start = time.Now()
		stop  = start.Add(d)
	)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 4096)
			for time.Now().Before(stop) {
				t0 := time.Now()
				resp, err := client.Post(base+"/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					errs.Add(1)
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					errs.Add(1)
					continue
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			lats = append(lats, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lats)
	r := result{errors: errs.Load(), rps: float64(len(lats)) / elapsed.Seconds()}
	if n := len(lats); n > 0 {
		r.p50, r.p99 = lats[n/2], lats[min(n-1, n*99/100)]
	}
	return r
}
