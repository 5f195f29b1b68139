package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/clock"
)

// target is where a load is sent: the upstream itself, the bare proxy or
// FreeLane.
type target struct {
	name  string // "upstream", "proxy" or "freelane"
	base  string // origin, such as http://127.0.0.1:PORT
	pid   int
	model string // what the body names: a model or a chain
	// sidePid, when set, is a server the target calls on every request
	// (redis-server), whose CPU time is reported beside the target's.
	sidePid int
}

// call is one kind of request.
type call struct {
	stream bool
	// temperature 0 makes the request deterministic, the only kind the
	// response cache answers.
	temperature string
	// wantHit counts answers that did not come from the response cache.
	wantHit bool
}

// body is the chat request a call sends to t: a short coding question,
// and for streams the usage chunk asked for, as coding agents ask for it,
// so that the upstream sends the same stream whichever hop asked.
func (c call) body(model string) []byte {
	streamPart := ""
	if c.stream {
		streamPart = `"stream":true,"stream_options":{"include_usage":true},`
	}
	return fmt.Appendf(nil, `{"model":%q,%s"messages":[{"role":"system","content":"You are a helpful coding assistant."},`+
		`{"role":"user","content":"Write a function that adds two numbers."}],"temperature":%s}`, model, streamPart, c.temperature)
}

// result is what one measuring window saw.
type result struct {
	Target      string  `json:"target"`
	Scenario    string  `json:"scenario"`
	Round       int     `json:"round"`
	Conc        int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	Seconds     float64 `json:"seconds"`
	RPS         float64 `json:"rps"`
	P50         float64 `json:"p50_ms"`
	P99         float64 `json:"p99_ms"`
	FirstByte50 float64 `json:"first_byte_p50_ms,omitempty"`
	CPUTicks    int64   `json:"cpu_ticks"`
	CPUPerReq   float64 `json:"cpu_us_per_request"`
	// SideCPUPerReq is the CPU of the server the target calls on every
	// request (redis-server), per request; 0 for the others.
	SideCPUPerReq float64 `json:"side_cpu_us_per_request,omitempty"`
	Errors        int64   `json:"errors"`
	CacheMisses   int64   `json:"cache_misses,omitempty"`
	FirstError    string  `json:"first_error,omitempty"`
}

// phases of a load: the warm-up, whose requests are not counted, the
// measuring window and the end, when workers finish what they sent.
const (
	phaseWarm int32 = iota
	phaseMeasure
	phaseStop
)

// loader sends closed-loop load: each of conc workers sends a request,
// reads the whole answer and sends the next.
type loader struct {
	clk clock.Clock
}

// newClient is a client with a connection for each worker, kept alive
// between requests as any real client keeps it, and without transparent
// gzip, which no hop here uses.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// run warms t up for warm, then measures for dur: requests completed in
// the window, their latencies and the CPU time t's process used over
// exactly that window.
func (l loader) run(ctx context.Context, t target, c call, conc int, warm, dur time.Duration) (result, error) {
	client := newClient(conc)
	defer client.CloseIdleConnections()
	body := c.body(t.model)
	url := t.base + "/v1/chat/completions"
	var (
		phase    atomic.Int32
		errs     atomic.Int64
		misses   atomic.Int64
		firstErr atomic.Pointer[string]
		mu       sync.Mutex
		lats     []time.Duration
		firsts   []time.Duration
		wg       sync.WaitGroup
	)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			var myLats, myFirsts []time.Duration
			for phase.Load() != phaseStop && ctx.Err() == nil {
				start := l.clk.Now()
				first, hit, err := l.do(ctx, client, url, body, c.stream, buf)
				end := l.clk.Now()
				if err != nil {
					if ctx.Err() != nil {
						break
					}
					errs.Add(1)
					msg := err.Error()
					firstErr.CompareAndSwap(nil, &msg)
					continue
				}
				if phase.Load() != phaseMeasure {
					continue
				}
				myLats = append(myLats, end.Sub(start))
				if c.stream {
					myFirsts = append(myFirsts, first.Sub(start))
				}
				if c.wantHit && !hit {
					misses.Add(1)
				}
			}
			mu.Lock()
			lats = append(lats, myLats...)
			firsts = append(firsts, myFirsts...)
			mu.Unlock()
		}()
	}
	finish := func() { phase.Store(phaseStop); wg.Wait() }
	if !l.wait(ctx, warm) {
		finish()
		return result{}, ctx.Err()
	}
	cpu0, err := cpuTicks(t.pid)
	if err != nil {
		finish()
		return result{}, err
	}
	var side0 int64
	if t.sidePid != 0 {
		if side0, err = cpuTicks(t.sidePid); err != nil {
			finish()
			return result{}, err
		}
	}
	t0 := l.clk.Now()
	phase.Store(phaseMeasure)
	if !l.wait(ctx, dur) {
		finish()
		return result{}, ctx.Err()
	}
	phase.Store(phaseStop)
	elapsed := l.clk.Since(t0)
	cpu1, err := cpuTicks(t.pid)
	var side1 int64
	if err == nil && t.sidePid != 0 {
		side1, err = cpuTicks(t.sidePid)
	}
	wg.Wait()
	if err != nil {
		return result{}, err
	}
	r := result{Target: t.name, Conc: conc, Requests: len(lats), Seconds: elapsed.Seconds(),
		CPUTicks: cpu1 - cpu0, Errors: errs.Load(), CacheMisses: misses.Load()}
	if p := firstErr.Load(); p != nil {
		r.FirstError = *p
	}
	r.RPS = float64(r.Requests) / elapsed.Seconds()
	if r.Requests > 0 {
		r.CPUPerReq = float64(r.CPUTicks) * (1e6 / clockTicks) / float64(r.Requests)
		r.SideCPUPerReq = float64(side1-side0) * (1e6 / clockTicks) / float64(r.Requests)
	}
	r.P50, r.P99 = percentile(lats, 50), percentile(lats, 99)
	r.FirstByte50 = percentile(firsts, 50)
	return r, nil
}

// wait waits for d of real time; it is false when ctx ended first.
func (l loader) wait(ctx context.Context, d time.Duration) bool {
	t, expired := l.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-expired:
		return true
	case <-ctx.Done():
		return false
	}
}

// doneMarker ends every OpenAI stream that finished normally.
var doneMarker = []byte("data: [DONE]")

// do sends one request and reads the whole answer. It returns when the
// first byte of the body came and whether the response cache answered. An
// answer other than 200, and a stream that ends without its [DONE], are
// errors.
func (l loader) do(ctx context.Context, client *http.Client, url string, body []byte, stream bool, buf []byte) (first time.Time, hit bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return first, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return first, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return first, false, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	hit = resp.Header.Get("X-FreeLane-Cache") == "hit"
	// The tail keeps the last bytes read, enough to hold the end marker
	// whatever the reads' boundaries.
	var tail []byte
	total := 0
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if total == 0 {
				first = l.clk.Now()
			}
			total += n
			tail = append(tail, buf[:n]...)
			if len(tail) > 64 {
				tail = append(tail[:0], tail[len(tail)-64:]...)
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return first, hit, fmt.Errorf("reading the answer after %d bytes: %w", total, rerr)
		}
	}
	if total == 0 {
		return first, hit, errors.New("an empty answer")
	}
	if stream && !bytes.Contains(tail, doneMarker) {
		return first, hit, fmt.Errorf("the stream ended without [DONE] after %d bytes: ...%q", total, tail)
	}
	return first, hit, nil
}

// percentile is the p-th percentile of ds in milliseconds, sorting ds;
// zero for none.
func percentile(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := (len(ds)*p + 99) / 100
	i = min(max(i-1, 0), len(ds)-1)
	return float64(ds[i]) / float64(time.Millisecond)
}
