// Package metrics keeps rolling per-backend request metrics for the
// dashboard and for Prometheus: request, failure and failover counts, and
// latency and time-to-first-token distributions over the last minute, five
// minutes and hour.
//
// # Design
//
// Every backend has three rings of time slots, one per standard window:
//
//	window  slot width  slots
//	1m      1 s         60
//	5m      10 s        30
//	1h      1 min       60
//
// Each slot holds counters and two distributions (latency of successful
// attempts, TTFT of successful streams), each a log-spaced histogram of 183
// bins about 9 % wide from 100 µs to 10 min (see histogram.go) plus the
// exact smallest and largest sample. Observe adds one sample to the current
// slot of every ring. When the clock moves into a new slot, the slot that
// falls out of the window is subtracted from a running per-ring sum and
// cleared, so reading a standard window copies one sum instead of adding up
// dozens of slots, and the backend's lock is held for a copy, not a scan of
// every bin.
//
// A window always includes the current, partly filled slot, so it covers
// between (slots-1)×width and slots×width of history: 59-60 s for 1m,
// 4m50s-5m for 5m, 59-60 min for 1h. Rates divide by the span really
// covered (and never by more than the time since the Registry started),
// so a fresh process does not under-report its rate.
//
// Slot boundaries are measured from the Registry's start with
// time.Time.Sub, which uses the monotonic clock when both times carry one:
// wall clock jumps do not scramble the rings.
//
// Percentiles come from the histograms, never from averages: the bin that
// holds the target rank is found by walking the cumulative counts, the
// value is interpolated linearly inside that bin and then clamped to the
// window's exact smallest and largest sample. The error is at most one bin
// (about 9 %) and usually far less; a constant latency is reported exactly.
//
// Memory is about 235 KB per backend that has ever been observed (153
// slots of 1.5 KB); backends that never served a request cost nothing.
//
// # Time series
//
// Series (series.go) keeps the dashboard's charts: fixed buckets with
// explicit start times, of every request, each chain and each backend. The
// last hour is a ring of 10 s buckets in memory; the minute and hour
// buckets being filled are in memory and written whole, every 10 s, to the
// database's series table, which keeps 25 hours of minutes and 91 days of
// hours. Its histograms join pairs of the bins above (about 19 % wide) to
// keep a series' hour of buckets near 310 KB; each bucket's smallest and
// largest sample still pin the extreme percentiles to real values.
package metrics

import (
	"iter"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/clock"
)

// Outcome is the result of one attempt on one backend.
type Outcome struct {
	// OK is true when the backend served the request.
	OK bool
	// Failover is true when the attempt failed here and the request moved
	// on to the next backend. A failover always counts as a failure, even
	// if OK is also set.
	Failover bool
	// Latency is the attempt's total duration.
	Latency time.Duration
	// TTFT is the time to the first token of a stream; 0 for non-streaming
	// requests, which are then left out of the TTFT percentiles.
	TTFT time.Duration
}

// Percentiles are latency quantiles in milliseconds, 0 when there is no
// data.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// Window is one rolling window of one backend, shaped like the dashboard
// contract's Window.
type Window struct {
	// Requests is the number of attempts that reached the backend.
	Requests int64 `json:"requests"`
	// RPS is Requests divided by the span the window covers.
	RPS float64 `json:"rps"`
	// SuccessRate is the share of successful attempts, 1 when there were
	// none.
	SuccessRate float64 `json:"success_rate"`
	// Failures counts failed attempts, failovers included.
	Failures int64 `json:"failures"`
	// Failovers counts attempts that failed here and moved on.
	Failovers int64 `json:"failovers"`
	// LatencyMS is the total latency of successful attempts.
	LatencyMS Percentiles `json:"latency_ms"`
	// TTFTMS is the time to first token of successful streams.
	TTFTMS Percentiles `json:"ttft_ms"`
}

// Counters are a backend's totals since the Registry started.
type Counters struct {
	Requests  int64 // every attempt
	Successes int64
	Failures  int64 // failovers included
	Failovers int64
}

// Standard window lengths and the keys Windows uses for them.
const (
	Window1m = time.Minute
	Window5m = 5 * time.Minute
	Window1h = time.Hour
)

// ringSpec describes one ring of time slots.
type ringSpec struct {
	key   string
	width time.Duration // one slot
	slots int
}

// specs are ordered from the finest to the coarsest ring; Window relies on
// that order to pick the finest ring that covers a requested length.
var specs = [numRings]ringSpec{
	{key: "1m", width: time.Second, slots: 60},
	{key: "5m", width: 10 * time.Second, slots: 30},
	{key: "1h", width: time.Minute, slots: 60},
}

const (
	numRings = 3
	ring5m   = 1 // index of the 5m ring in specs, used by WritePrometheus
)

// dist is one latency distribution: a histogram plus the exact extremes.
// The extremes let quantiles snap to real values at the edges of the
// distribution (a backend that always answers in 42 ms reports 42 ms, not
// the middle of the bin holding 42 ms).
type dist struct {
	n      uint32        // samples in h
	lo, hi time.Duration // smallest and largest sample; meaningless when n == 0
	h      hist
}

func (d *dist) observe(bin int, v time.Duration) {
	if d.n == 0 || v < d.lo {
		d.lo = v
	}
	if d.n == 0 || v > d.hi {
		d.hi = v
	}
	d.n++
	d.h[bin]++
}

// mergeExtremes widens d's extremes with o's.
func (d *dist) mergeExtremes(o *dist) {
	if o.n == 0 {
		return
	}
	if d.n == 0 || o.lo < d.lo {
		d.lo = o.lo
	}
	if d.n == 0 || o.hi > d.hi {
		d.hi = o.hi
	}
}

// slot is what one time slot holds. A ring's running sum is also a slot,
// but only its counts and histograms are kept up to date: extremes cannot
// be subtracted, so readers take them from the slots themselves.
type slot struct {
	requests, failures, failovers uint32
	lat, ttft                     dist
}

// add adds o's counts and histograms to s and widens s's extremes.
func (s *slot) add(o *slot) {
	s.requests += o.requests
	s.failures += o.failures
	s.failovers += o.failovers
	s.lat.mergeExtremes(&o.lat)
	s.ttft.mergeExtremes(&o.ttft)
	s.lat.n += o.lat.n
	s.ttft.n += o.ttft.n
	for i := range s.lat.h {
		s.lat.h[i] += o.lat.h[i]
		s.ttft.h[i] += o.ttft.h[i]
	}
}

// sub removes o's counts and histograms from s (extremes are left alone).
func (s *slot) sub(o *slot) {
	s.requests -= o.requests
	s.failures -= o.failures
	s.failovers -= o.failovers
	s.lat.n -= o.lat.n
	s.ttft.n -= o.ttft.n
	for i := range s.lat.h {
		s.lat.h[i] -= o.lat.h[i]
		s.ttft.h[i] -= o.ttft.h[i]
	}
}

// ring is a circular buffer of slots plus their running sum.
type ring struct {
	width time.Duration
	slots []slot
	head  int64 // index (elapsed/width) of the newest slot
	sum   slot  // sum of every slot in the ring
}

// advance moves the ring so that slot idx is the newest one, expiring the
// slots that fall out. A clock that goes backwards leaves the ring alone:
// the samples then land in the newest slot, which is the least surprising
// place for them.
func (g *ring) advance(idx int64) {
	if idx <= g.head {
		return
	}
	n := int64(len(g.slots))
	if idx-g.head >= n {
		// Everything expired: clearing in one go is cheaper than
		// subtracting slot by slot.
		clear(g.slots)
		g.sum = slot{}
		g.head = idx
		return
	}
	for k := g.head + 1; k <= idx; k++ {
		s := &g.slots[k%n]
		g.sum.sub(s)
		*s = slot{}
	}
	g.head = idx
}

// readSum copies the ring's running sum into s and fills in the extremes
// from the slots.
func (g *ring) readSum(s *slot) {
	var ext slot
	for i := range g.slots {
		o := &g.slots[i]
		ext.lat.mergeExtremes(&o.lat)
		ext.lat.n += o.lat.n
		ext.ttft.mergeExtremes(&o.ttft)
		ext.ttft.n += o.ttft.n
	}
	*s = g.sum
	s.lat.lo, s.lat.hi = ext.lat.lo, ext.lat.hi
	s.ttft.lo, s.ttft.hi = ext.ttft.lo, ext.ttft.hi
}

// backend holds one backend's rings and totals. Its mutex is held only for
// a handful of increments (Observe) or one copy (reads).
type backend struct {
	mu     sync.Mutex
	rings  [numRings]ring
	totals Counters
}

func newBackend() *backend {
	b := &backend{}
	for i, sp := range specs {
		b.rings[i] = ring{width: sp.width, slots: make([]slot, sp.slots)}
	}
	return b
}

// Registry holds the metrics of every backend. It is safe for concurrent
// use.
type Registry struct {
	clock clock.Clock
	start time.Time

	// backends is a copy-on-write map: Observe looks a backend up with one
	// atomic load and no lock, and only the first observation of a new
	// backend takes mu to publish a new map.
	backends atomic.Pointer[map[string]*backend]
	mu       sync.Mutex
	// labels, when set, redacts label values in the exposition.
	labels interface{ String(string) string }
}

// RedactLabels has WritePrometheus pass every label value through red.
// Backend names hold model ids, which a provider's model list supplies,
// and /metrics is readable by every program on the machine. Call it
// before the Registry is used.
func (r *Registry) RedactLabels(red interface{ String(string) string }) { r.labels = red }

func (r *Registry) label(v string) string {
	if r.labels == nil {
		return v
	}
	return r.labels.String(v)
}

// New returns an empty Registry reading time from clk (nil: the wall
// clock).
func New(clk clock.Clock) *Registry {
	clk = clock.OrReal(clk)
	r := &Registry{clock: clk, start: clk.Now()}
	m := map[string]*backend{}
	r.backends.Store(&m)
	return r
}

func (r *Registry) lookup(name string) *backend {
	return (*r.backends.Load())[name]
}

func (r *Registry) getOrCreate(name string) *backend {
	if b := r.lookup(name); b != nil {
		return b
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.backends.Load()
	if b := old[name]; b != nil {
		return b
	}
	m := make(map[string]*backend, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	b := newBackend()
	m[name] = b
	r.backends.Store(&m)
	return b
}

// elapsed is the time since the Registry started, never negative.
func (r *Registry) elapsed(now time.Time) time.Duration {
	return max(now.Sub(r.start), 0)
}

// Observe records one attempt on backend. It is on the request path: it
// does not allocate once the backend is known and holds the backend's lock
// only for a few increments.
func (r *Registry) Observe(backendName string, o Outcome) {
	r.observe(r.getOrCreate(backendName), r.elapsed(r.clock.Now()), o, true)
}

// observe adds o to b's rings at elapsed time el, and to its totals when
// counted is set.
func (r *Registry) observe(b *backend, el time.Duration, o Outcome, counted bool) {
	failed := !o.OK || o.Failover
	latBin, ttftBin := -1, -1
	if !failed {
		latBin = binIndex(o.Latency)
		if o.TTFT > 0 {
			ttftBin = binIndex(o.TTFT)
		}
	}
	var fail, fo uint32
	if failed {
		fail = 1
	}
	if o.Failover {
		fo = 1
	}

	b.mu.Lock()
	if counted {
		b.totals.Requests++
		b.totals.Failures += int64(fail)
		b.totals.Successes += int64(1 - fail)
		b.totals.Failovers += int64(fo)
	}
	for i := range b.rings {
		g := &b.rings[i]
		idx := int64(el / g.width)
		g.advance(idx)
		s := &g.slots[g.head%int64(len(g.slots))]
		s.requests++
		s.failures += fail
		s.failovers += fo
		g.sum.requests++
		g.sum.failures += fail
		g.sum.failovers += fo
		if latBin >= 0 {
			s.lat.observe(latBin, o.Latency)
			g.sum.lat.n++
			g.sum.lat.h[latBin]++
		}
		if ttftBin >= 0 {
			s.ttft.observe(ttftBin, o.TTFT)
			g.sum.ttft.n++
			g.sum.ttft.h[ttftBin]++
		}
	}
	b.mu.Unlock()
}

// Past is one attempt observed by an earlier run, for Restore.
type Past struct {
	// At is when the attempt was observed: when its request finished.
	At      time.Time
	Backend string
	Outcome Outcome
}

// Restore puts attempts an earlier run observed back into the windows, so
// that the last minute, five minutes and hour read the same after a
// restart as before it. past gives them oldest first (an attempt out of
// order counts in the newest slot so far). Restore must be called before
// the first Observe, while nothing else uses the Registry. Attempts more
// than an hour old are left out, as the windows would have dropped them;
// attempts dated after now count as now. The totals since start
// (Counters, and the counters of WritePrometheus) are left alone: for
// them a restart starts over, as Prometheus expects of a counter.
//
// The Registry's start moves back to the oldest attempt restored, so rates
// are divided by the span the restored history really covers.
func (r *Registry) Restore(past iter.Seq[Past]) {
	now := r.clock.Now()
	cut := now.Add(-Window1h)
	first := true
	for p := range past {
		if p.At.Before(cut) {
			continue
		}
		if p.At.After(now) {
			p.At = now
		}
		if first && p.At.Before(r.start) {
			r.start = p.At
		}
		first = false
		r.observe(r.getOrCreate(p.Backend), r.elapsed(p.At), p.Outcome, false)
	}
}

// Window returns backend's metrics over the last w. The standard lengths
// (1m, 5m, 1h) read a precomputed sum; other lengths add up slots of the
// finest ring that covers w and are rounded up to that ring's slot width.
// Lengths above an hour are capped at an hour. An unknown backend or a
// non-positive w gives an empty Window.
func (r *Registry) Window(backendName string, w time.Duration) Window {
	b := r.lookup(backendName)
	if b == nil || w <= 0 {
		return emptyWindow()
	}
	ri := numRings - 1
	for i, sp := range specs {
		if w <= sp.width*time.Duration(sp.slots) {
			ri = i
			break
		}
	}
	sp := specs[ri]
	n := min(int64((w+sp.width-1)/sp.width), int64(sp.slots))

	now := r.clock.Now()
	el := r.elapsed(now)
	var s slot // about 1.5 KB on the stack; filled under the lock, read after it
	b.mu.Lock()
	g := &b.rings[ri]
	g.advance(int64(el / g.width))
	head := g.head
	if n == int64(len(g.slots)) {
		g.readSum(&s)
	} else {
		for k := max(head-n+1, 0); k <= head; k++ {
			s.add(&g.slots[k%int64(len(g.slots))])
		}
	}
	b.mu.Unlock()
	return s.window(covered(el, head, n, g.width))
}

// Windows returns backend's 1m, 5m and 1h windows keyed "1m", "5m", "1h",
// all read at the same instant.
func (r *Registry) Windows(backendName string) map[string]Window {
	out := make(map[string]Window, numRings)
	b := r.lookup(backendName)
	if b == nil {
		for _, sp := range specs {
			out[sp.key] = emptyWindow()
		}
		return out
	}
	el := r.elapsed(r.clock.Now())
	var sums [numRings]slot
	var heads [numRings]int64
	b.mu.Lock()
	for i := range b.rings {
		g := &b.rings[i]
		g.advance(int64(el / g.width))
		g.readSum(&sums[i])
		heads[i] = g.head
	}
	b.mu.Unlock()
	for i, sp := range specs {
		out[sp.key] = sums[i].window(covered(el, heads[i], int64(sp.slots), sp.width))
	}
	return out
}

// Counters returns backend's totals since the Registry started (zero for
// an unknown backend).
func (r *Registry) Counters(backendName string) Counters {
	b := r.lookup(backendName)
	if b == nil {
		return Counters{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.totals
}

// Backends returns the names of every backend observed so far, sorted.
func (r *Registry) Backends() []string {
	m := *r.backends.Load()
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// covered is the span of history a window of n slots ending at slot head
// really covers at elapsed time el: from the start of its oldest slot (or
// the Registry's start, whichever is later) to now. It is at least one
// second so that the first requests after start do not report absurd
// rates.
func covered(el time.Duration, head, n int64, width time.Duration) time.Duration {
	oldest := max(head-n+1, 0)
	span := el - time.Duration(oldest)*width
	return max(span, time.Second)
}

func emptyWindow() Window { return Window{SuccessRate: 1} }

// window turns summed counts into a Window. It runs outside any lock.
func (s *slot) window(span time.Duration) Window {
	w := emptyWindow()
	w.Requests = int64(s.requests)
	w.Failures = int64(s.failures)
	w.Failovers = int64(s.failovers)
	if s.requests > 0 {
		w.RPS = round(float64(s.requests)/span.Seconds(), 4)
		w.SuccessRate = round(float64(s.requests-s.failures)/float64(s.requests), 4)
	}
	w.LatencyMS = s.lat.percentiles()
	w.TTFTMS = s.ttft.percentiles()
	return w
}

// quantile returns the q-quantile of d in nanoseconds (0 when empty),
// clamped to the exact extremes.
func (d *dist) quantile(q float64) float64 {
	if d.n == 0 {
		return 0
	}
	v := quantile(&d.h, q)
	return min(max(v, float64(d.lo)), float64(d.hi))
}

func (d *dist) percentiles() Percentiles {
	const ms = float64(time.Millisecond)
	// Three decimals (microseconds) keep the JSON short without hiding
	// sub-millisecond local backends.
	return Percentiles{
		P50: round(d.quantile(0.50)/ms, 3),
		P95: round(d.quantile(0.95)/ms, 3),
		P99: round(d.quantile(0.99)/ms, 3),
	}
}

func round(v float64, decimals int) float64 {
	p := math.Pow10(decimals)
	return math.Round(v*p) / p
}
