package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
)

// openers bounds how many connections the harness opens at once: the
// kernel's listen backlog (net.core.somaxconn, often 4096) drops what
// overflows it, and a dropped SYN costs a second's retransmission that
// would be counted against the target.
const openers = 256

// liveEvery is how often the router's health and metrics endpoints are
// asked while long streams are open; slow requests, open for a shorter
// time, are checked four times over their upstream's delay.
const liveEvery = 5 * time.Second

// liveStat is what the checks of one endpoint saw.
type liveStat struct {
	Path     string  `json:"path"`
	Checks   int     `json:"checks"`
	Failures int     `json:"failures"`
	MaxMS    float64 `json:"max_ms"`
	// FirstFailure says why the first failing check failed.
	FirstFailure string `json:"first_failure,omitempty"`
}

// openPhase is N requests held open at once through one target.
type openPhase struct {
	Kind   string `json:"kind"` // "streams" or "slow"
	Target string `json:"target"`
	N      int    `json:"n"`
	// PeakOpen is the most requests that were open at the same moment.
	PeakOpen    int64   `json:"peak_open"`
	OpenSeconds float64 `json:"seconds_to_open_all"`
	IdleRSS     int64   `json:"idle_rss_kb"`
	// AtOpenRSS is the memory the moment the last request opened, and
	// OpenRSS the most it was until the first one ended.
	AtOpenRSS int64 `json:"rss_when_all_opened_kb"`
	OpenRSS   int64 `json:"open_rss_kb"`
	PeakRSS   int64 `json:"peak_rss_kb"`
	// PerOpenKB is (OpenRSS - IdleRSS) / N.
	PerOpenKB float64 `json:"kb_per_open_request"`
	CPUPerReq float64 `json:"cpu_us_per_request"`
	Completed int     `json:"completed"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
	Max       float64 `json:"max_ms"`
	Errors    int64   `json:"errors"`
	// FirstError says why the first failed request failed.
	FirstError string     `json:"first_error,omitempty"`
	Live       []liveStat `json:"live,omitempty"`
}

// openMany sends n requests at once through t and holds them open until
// each ends. A stream counts as open from its first byte, when it flows
// end to end; a non-stream request from when it was sent, since nothing
// comes back before the upstream's delay. The target's memory is read
// from the moment all n are open until the first one ends, and the
// router's health and metrics endpoints (live, when set) are asked every
// interval until the last one ends.
func (l loader) openMany(ctx context.Context, kind string, t target, c call, n int, bound, every time.Duration, live []string) (openPhase, error) {
	ph := openPhase{Kind: kind, Target: t.name, N: n}
	idle, _, err := memory(t.pid)
	if err != nil {
		return ph, err
	}
	ph.IdleRSS = idle
	cpu0, err := cpuTicks(t.pid)
	if err != nil {
		return ph, err
	}
	client := newClient(openers)
	defer client.CloseIdleConnections()
	body := c.body(t.model)
	url := t.base + "/v1/chat/completions"
	var (
		sem      = make(chan struct{}, openers)
		settled  atomic.Int64 // requests that opened or failed before
		inFlight atomic.Int64
		peak     atomic.Int64
		ended    atomic.Int64 // opened requests that have ended
		errs     atomic.Int64
		firstErr atomic.Pointer[string]
		allOpen  = make(chan struct{})
		openOnce sync.Once
		mu       sync.Mutex
		lats     []time.Duration
		wg       sync.WaitGroup
	)
	start := l.clk.Now()
	markSettled := func() {
		if settled.Add(1) == int64(n) {
			openOnce.Do(func() { close(allOpen) })
		}
	}
	fail := func(err error) {
		errs.Add(1)
		msg := err.Error()
		firstErr.CompareAndSwap(nil, &msg)
	}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				fail(ctx.Err())
				markSettled()
				return
			}
			var (
				released, opened sync.Once
				wasOpen          atomic.Bool
			)
			release := func() { released.Do(func() { <-sem }) }
			// open may run on the transport's goroutine, which reports
			// the request written, or on this one at the first byte.
			open := func() {
				opened.Do(func() {
					wasOpen.Store(true)
					cur := inFlight.Add(1)
					for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
					}
					markSettled()
				})
			}
			trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
				// The connection is made and the request sent: the next
				// one may dial.
				release()
				if !c.stream {
					open()
				}
			}}
			t0 := l.clk.Now()
			err := l.hold(httptrace.WithClientTrace(ctx, trace), client, url, body, c.stream, open)
			release()
			// A request that failed before it opened settles here, so
			// that a failure cannot keep the phase waiting.
			opened.Do(markSettled)
			if wasOpen.Load() {
				inFlight.Add(-1)
				ended.Add(1)
			}
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			lats = append(lats, l.clk.Since(t0))
			mu.Unlock()
		}()
	}
	select {
	case <-allOpen:
	case <-ctx.Done():
		wg.Wait()
		return ph, ctx.Err()
	}
	ph.OpenSeconds = l.clk.Since(start).Seconds()
	done := make(chan struct{})
	var bgWG sync.WaitGroup
	// The memory with all open is the most the target held between the
	// moment the last request opened and the moment the first one ended:
	// a slow request's answer, for one, is only built near its end.
	bgWG.Add(1)
	go func() {
		defer bgWG.Done()
		ph.AtOpenRSS, ph.OpenRSS = l.sampleWhileOpen(t.pid, func() bool { return ended.Load() == 0 }, done)
	}()
	stats := make([]liveStat, len(live))
	if len(live) > 0 {
		bgWG.Add(1)
		go func() {
			defer bgWG.Done()
			l.checkLive(ctx, t.base, live, bound, every, stats, done)
		}()
	}
	wg.Wait()
	close(done)
	bgWG.Wait()
	cpu1, err := cpuTicks(t.pid)
	if err != nil {
		return ph, err
	}
	if _, hwm, err := memory(t.pid); err == nil {
		ph.PeakRSS = hwm
	}
	ph.PeakOpen = peak.Load()
	ph.Errors = errs.Load()
	if p := firstErr.Load(); p != nil {
		ph.FirstError = *p
	}
	ph.Completed = len(lats)
	ph.P50, ph.P99 = percentile(lats, 50), percentile(lats, 99)
	if len(lats) > 0 {
		ph.Max = float64(lats[len(lats)-1]) / float64(time.Millisecond)
		ph.CPUPerReq = float64(cpu1-cpu0) * (1e6 / clockTicks) / float64(len(lats))
	}
	ph.PerOpenKB = float64(ph.OpenRSS-ph.IdleRSS) / float64(n)
	if len(live) > 0 {
		ph.Live = stats
	}
	return ph, ctx.Err()
}

// hold sends one request and reads the whole answer, calling open at the
// first byte of a stream. An answer other than 200, and a stream that ends
// without its [DONE], are errors.
func (l loader) hold(ctx context.Context, client *http.Client, url string, body []byte, stream bool, open func()) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	// Thousands of these run at once, so each reads through a small
	// buffer.
	buf := make([]byte, 4<<10)
	var tail []byte
	total := 0
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if total == 0 && stream {
				open()
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
			return fmt.Errorf("reading the answer after %d bytes: %w", total, rerr)
		}
	}
	if total == 0 {
		return errors.New("an empty answer")
	}
	if stream && !bytes.Contains(tail, doneMarker) {
		return fmt.Errorf("the stream ended without [DONE] after %d bytes: ...%q", total, tail)
	}
	return nil
}

// rssEvery is how often the memory is read while every request is open.
const rssEvery = 100 * time.Millisecond

// sampleWhileOpen reads pid's resident memory at once and every rssEvery
// while open holds, and returns the first reading and the most it saw,
// in kB.
func (l loader) sampleWhileOpen(pid int, open func() bool, done <-chan struct{}) (first, most int64) {
	sample := func() {
		if rss, _, err := memory(pid); err == nil {
			most = max(most, rss)
		}
	}
	sample()
	first = most
	tk, tick := l.clk.NewTicker(rssEvery)
	defer tk.Stop()
	for open() {
		select {
		case <-done:
			return first, most
		case <-tick:
			sample()
		}
	}
	return first, most
}

// checkLive asks each of paths on base at once and then every interval
// until done is closed. A check fails when it errs, answers other than
// 200 or takes longer than bound.
func (l loader) checkLive(ctx context.Context, base string, paths []string, bound, every time.Duration, stats []liveStat, done <-chan struct{}) {
	client := newClient(len(paths))
	client.Timeout = bound
	defer client.CloseIdleConnections()
	for i, p := range paths {
		stats[i].Path = p
	}
	check := func() {
		for i, p := range paths {
			t0 := l.clk.Now()
			err := get(ctx, client, base+p)
			d := l.clk.Since(t0)
			st := &stats[i]
			st.Checks++
			st.MaxMS = max(st.MaxMS, float64(d)/float64(time.Millisecond))
			if err == nil && d > bound {
				err = fmt.Errorf("answered after %v, over the %v bound", d.Round(time.Millisecond), bound)
			}
			if err != nil {
				st.Failures++
				if st.FirstFailure == "" {
					st.FirstFailure = err.Error()
				}
			}
		}
	}
	check()
	tk, tick := l.clk.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick:
			check()
		}
	}
}

// get fetches url and reads its body, failing on any status but 200.
func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	return nil
}
