package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/clock"
	"freelane/backend/llm"
	"freelane/backend/store"
)

// The series' resolutions. The last hour is kept in memory at FineWidth;
// the last day at MinuteWidth and the last 90 days at HourWidth are kept
// in memory only for the buckets still filling and stored in SQLite by
// the series writer.
const (
	FineWidth   = 10 * time.Second
	MinuteWidth = time.Minute
	HourWidth   = time.Hour

	fineSlots = int(time.Hour / FineWidth)

	// MinuteKeep and HourKeep are how long stored buckets are kept; older
	// ones are pruned. Each is a little more than the longest window read
	// at that resolution, so a window never misses its oldest bucket.
	MinuteKeep = 25 * time.Hour
	HourKeep   = 91 * 24 * time.Hour

	// maxSeries bounds the series held in memory. Backends and chains come
	// from the configuration, not from callers, so this is only a guard
	// against a configuration churning through thousands of names.
	maxSeries = 4096

	// maxSpill bounds the closed buckets of one level waiting for the
	// writer.
	maxSpill = 64
)

// Writer timing: buckets are written every seriesFlushEvery, and old ones
// pruned every seriesPruneEvery.
const (
	seriesFlushEvery = 10 * time.Second
	seriesPruneEvery = time.Hour
)

// SeriesWindow is one of the windows Series answers, with the resolution
// it is read at.
type SeriesWindow struct {
	Name  string
	Span  time.Duration
	Width time.Duration
}

// SeriesWindows are the windows the dashboard charts, finest first.
var SeriesWindows = []SeriesWindow{
	{Name: "1m", Span: time.Minute, Width: FineWidth},
	{Name: "5m", Span: 5 * time.Minute, Width: FineWidth},
	{Name: "1h", Span: time.Hour, Width: FineWidth},
	{Name: "24h", Span: 24 * time.Hour, Width: MinuteWidth},
	{Name: "7d", Span: 7 * 24 * time.Hour, Width: HourWidth},
}

// LookupSeriesWindow returns the window named name.
func LookupSeriesWindow(name string) (SeriesWindow, bool) {
	for _, w := range SeriesWindows {
		if w.Name == name {
			return w, true
		}
	}
	return SeriesWindow{}, false
}

// failure classes counted apart in a bucket; every other class that is not
// OK counts as classOther.
var seriesClasses = [...]llm.Class{llm.RateLimited, llm.Transient, llm.Soft, llm.Credential, llm.Gone,
	llm.TooLong, llm.Caller, llm.Cancelled, llm.Quota}

const (
	classOther = len(seriesClasses)
	numClasses = classOther + 1
)

func classIndex(c llm.Class) int {
	for i, k := range seriesClasses {
		if k == c {
			return i
		}
	}
	return classOther
}

// coarseBins is the series histograms' bin count: two bins of the metrics
// histogram make one, so a bin is about 19 % wide. Every bucket of every
// series holds two of them, and the last hour alone is 360 buckets a
// series; the per-bucket smallest and largest sample pull the extreme
// percentiles back to real values.
const coarseBins = (numBins + 1) / 2

type coarseHist [coarseBins]uint32

// sdist is a latency distribution of one bucket.
type sdist struct {
	n      uint32
	lo, hi time.Duration
	h      coarseHist
}

func (d *sdist) observe(v time.Duration, bin int) {
	if d.n == 0 || v < d.lo {
		d.lo = v
	}
	if d.n == 0 || v > d.hi {
		d.hi = v
	}
	d.n++
	d.h[bin]++
}

// coarseBounds returns the edges of coarse bin c in nanoseconds.
func coarseBounds(c int) (lo, hi float64) {
	lo, _ = binBounds(2 * c)
	_, hi = binBounds(min(2*c+1, numBins-1))
	return lo, hi
}

// quantile is the q-quantile of d in nanoseconds, clamped to its extremes.
func (d *sdist) quantile(q float64) float64 {
	if d.n == 0 {
		return 0
	}
	var total uint64
	for _, c := range d.h {
		total += uint64(c)
	}
	rank := q * float64(total)
	var cum uint64
	v := float64(d.hi)
	for b, c := range d.h {
		if c == 0 {
			continue
		}
		if float64(cum+uint64(c)) >= rank {
			frac := min(max((rank-float64(cum))/float64(c), 0), 1)
			lo, hi := coarseBounds(b)
			v = lo + (hi-lo)*frac
			break
		}
		cum += uint64(c)
	}
	return min(max(v, float64(d.lo)), float64(d.hi))
}

func (d *sdist) percentiles() Percentiles {
	const ms = float64(time.Millisecond)
	return Percentiles{
		P50: round(d.quantile(0.50)/ms, 3),
		P95: round(d.quantile(0.95)/ms, 3),
		P99: round(d.quantile(0.99)/ms, 3),
	}
}

// bucket is what one time bucket of one series counts.
type bucket struct {
	requests  uint32
	errs      [numClasses]uint32
	quota     uint32 // backends passed over because a limit or budget was used up
	prompt    uint64
	output    uint64
	estimated uint64 // the part of prompt+output counted by FreeLane's tokenizer
	cost      float64
	lat, ttft sdist
}

// sample is one request (or one call) as a bucket counts it, with its
// histogram bins found before any lock is taken.
type sample struct {
	counted         bool // a request or call, not only a quota skip
	class           int  // -1 for success
	quota           uint32
	prompt, output  uint64
	estimated       uint64
	cost            float64
	lat, ttft       time.Duration
	latBin, ttftBin int // -1 when not observed
}

func (b *bucket) put(s *sample) {
	if s.counted {
		b.requests++
		if s.class >= 0 {
			b.errs[s.class]++
		}
	}
	b.quota += s.quota
	b.prompt += s.prompt
	b.output += s.output
	b.estimated += s.estimated
	b.cost += s.cost
	if s.latBin >= 0 {
		b.lat.observe(s.lat, s.latBin)
	}
	if s.ttftBin >= 0 {
		b.ttft.observe(s.ttft, s.ttftBin)
	}
}

// stored is a minute or hour bucket while it fills, and after it closed
// until the writer has stored its last state. ver counts changes and
// saved is the ver the writer last stored, so the writer stores only what
// changed.
type stored struct {
	start      int64 // Unix seconds; 0 before the first sample
	ver, saved uint64
	b          bucket
}

func (s *stored) dirty() bool { return s.ver != s.saved }

// level is one stored resolution of one series: the bucket filling now,
// the one before it, and any older ones that closed before the writer got
// to them (only when the writer is stalled).
type level struct {
	width int64
	cur   stored
	prev  stored
	spill []stored
}

// roll makes the bucket starting at start current. A start older than the
// current bucket's (a clock that went back) leaves it current, so the
// sample counts there.
func (l *level) roll(start int64) {
	if start <= l.cur.start {
		return
	}
	// A closed bucket the writer has not stored yet waits in spill; the
	// writer stores one every 10 s, so more than a few mean it is stuck,
	// and further ones are then given up rather than held without bound.
	if l.prev.dirty() && len(l.spill) < maxSpill {
		l.spill = append(l.spill, l.prev)
	}
	if l.cur.start != 0 && start == l.cur.start+l.width {
		l.prev = l.cur
	} else {
		// Buckets in between had no samples; keep the last one only if
		// it still has to be stored.
		l.prev = stored{}
		if l.cur.dirty() && len(l.spill) < maxSpill {
			l.spill = append(l.spill, l.cur)
		}
	}
	l.cur = stored{start: start}
}

// line is one series: its fine ring for the last hour and its minute and
// hour levels.
type line struct {
	name string // the stored series name

	mu     sync.Mutex
	ring   []bucket // fineSlots buckets; ring[idx%fineSlots] holds fine index idx
	head   int64    // fine index (unix/10 s) of the newest bucket
	minute level
	hour   level
}

func newLine(name string) *line {
	return &line{
		name:   name,
		ring:   make([]bucket, fineSlots),
		minute: level{width: int64(MinuteWidth / time.Second)},
		hour:   level{width: int64(HourWidth / time.Second)},
	}
}

// advance moves the ring so that fine index idx is the newest bucket.
func (l *line) advance(idx int64) {
	if idx <= l.head {
		return
	}
	if idx-l.head >= int64(fineSlots) {
		clear(l.ring)
	} else {
		for k := l.head + 1; k <= idx; k++ {
			l.ring[k%int64(fineSlots)] = bucket{}
		}
	}
	l.head = idx
}

// put adds s at Unix second sec. It is called with l.mu held.
func (l *line) put(sec int64, s *sample) {
	fine := sec / int64(FineWidth/time.Second)
	l.advance(fine)
	l.ring[l.head%int64(fineSlots)].put(s)
	for _, lv := range [...]*level{&l.minute, &l.hour} {
		lv.roll(sec - sec%lv.width)
		lv.cur.b.put(s)
		lv.cur.ver++
	}
}

// SeriesStore is where Series keeps its minute and hour buckets; *store.DB
// provides it.
type SeriesStore interface {
	WriteSeries(ctx context.Context, rows []store.SeriesRow) error
	SeriesRange(ctx context.Context, width int64, series string, from, to int64) ([]store.SeriesRow, error)
	SeriesAt(ctx context.Context, width, start int64) ([]store.SeriesRow, error)
	PruneSeries(ctx context.Context, width, before int64) (int64, error)
}

// Series keeps the dashboard's time series: requests, failures by class,
// latency and time-to-first-token percentiles, tokens, cost and quota
// skips, for every request, every chain and every backend, at 10 s for
// the last hour (in memory), 1 min for the last day and 1 h for 90 days
// (in SQLite, written by Run in batches). Record is on the request path:
// it takes one lock per series touched and does not allocate once the
// series exist.
//
// Lifecycle: Load once before the first Record, Run in a goroutine its
// owner stops by cancelling the context; Run writes what is pending
// before it returns.
type Series struct {
	clock clock.Clock
	db    SeriesStore
	log   *slog.Logger

	// backends and chains are copy-on-write maps from a name to its line,
	// as Registry.backends is; mu serialises their writers and count
	// counts their lines.
	backends atomic.Pointer[map[string]*line]
	chains   atomic.Pointer[map[string]*line]
	mu       sync.Mutex
	count    int

	// total has its own field: every request touches it.
	total *line
}

// NewSeries returns an empty Series storing in db, reading time from clk
// (nil: the wall clock).
func NewSeries(db SeriesStore, clk clock.Clock, log *slog.Logger) *Series {
	if log == nil {
		log = slog.Default()
	}
	s := &Series{clock: clock.OrReal(clk), db: db, log: log.With("component", "metrics.series"), total: newLine("")}
	b, c := map[string]*line{}, map[string]*line{}
	s.backends.Store(&b)
	s.chains.Store(&c)
	return s
}

// The stored series names: "" is every request, these prefixes a
// backend's calls and a chain's requests.
const (
	backendPrefix = "b:"
	chainPrefix   = "c:"
)

// lineOf returns the line of a backend or a chain (prefix says which),
// creating it on first use; nil when maxSeries lines exist. The lookup is
// by the bare name in the prefix's own map, so it builds no string.
func (s *Series) lineOf(prefix, name string) *line {
	set := &s.backends
	if prefix == chainPrefix {
		set = &s.chains
	}
	if l := (*set.Load())[name]; l != nil {
		return l
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *set.Load()
	if l := old[name]; l != nil {
		return l
	}
	if s.count >= maxSeries {
		return nil
	}
	m := make(map[string]*line, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	l := newLine(prefix + name)
	m[name] = l
	set.Store(&m)
	s.count++
	return l
}

// find returns the line of a stored series name, nil when there is none.
func (s *Series) find(name string) *line {
	switch {
	case name == "":
		return s.total
	case len(name) > 2 && name[:2] == backendPrefix:
		return (*s.backends.Load())[name[2:]]
	case len(name) > 2 && name[:2] == chainPrefix:
		return (*s.chains.Load())[name[2:]]
	}
	return nil
}

// all returns every line.
func (s *Series) all() []*line {
	b, c := *s.backends.Load(), *s.chains.Load()
	out := make([]*line, 0, 1+len(b)+len(c))
	out = append(out, s.total)
	for _, l := range b {
		out = append(out, l)
	}
	for _, l := range c {
		out = append(out, l)
	}
	return out
}

// sampleOfTrace is the request as the total and chain series count it.
func sampleOfTrace(t *llm.Trace) sample {
	s := sample{counted: true, class: -1, latBin: -1, ttftBin: -1}
	if t.Class != llm.OK {
		s.class = classIndex(t.Class)
	} else {
		s.lat, s.latBin = t.Latency, coarseIndex(t.Latency)
		if t.TTFT > 0 {
			s.ttft, s.ttftBin = t.TTFT, coarseIndex(t.TTFT)
		}
	}
	for i := range t.Attempts {
		a := &t.Attempts[i]
		if a.Skipped {
			if a.Skip == llm.SkipQuota {
				s.quota++
			}
			continue
		}
		s.prompt += uint64(max(a.PromptTokens, 0))
		s.output += uint64(max(a.CompletionTokens, 0))
		if a.Estimated {
			s.estimated += uint64(max(a.PromptTokens, 0) + max(a.CompletionTokens, 0))
		}
		s.cost += a.Cost
	}
	return s
}

// sampleOfAttempt is one attempt as its backend's series counts it.
func sampleOfAttempt(a *llm.Attempt) sample {
	s := sample{class: -1, latBin: -1, ttftBin: -1}
	if a.Skipped {
		if a.Skip == llm.SkipQuota {
			s.quota = 1
		}
		return s
	}
	s.counted = true
	if a.Class != llm.OK {
		s.class = classIndex(a.Class)
	} else {
		s.lat, s.latBin = a.Latency, coarseIndex(a.Latency)
		if a.TTFT > 0 {
			s.ttft, s.ttftBin = a.TTFT, coarseIndex(a.TTFT)
		}
	}
	s.prompt = uint64(max(a.PromptTokens, 0))
	s.output = uint64(max(a.CompletionTokens, 0))
	if a.Estimated {
		s.estimated = s.prompt + s.output
	}
	s.cost = a.Cost
	return s
}

func coarseIndex(d time.Duration) int { return binIndex(max(d, 0)) / 2 }

// Record adds one finished request to the series of every request, of its
// chain and of each backend it called or passed over for a quota. It is
// on the request path: no disk, no allocation once the series exist.
func (s *Series) Record(t llm.Trace) {
	sec := s.clock.Now().Unix()
	smp := sampleOfTrace(&t)
	s.total.mu.Lock()
	s.total.put(sec, &smp)
	s.total.mu.Unlock()
	if t.Chain != "" {
		if l := s.lineOf(chainPrefix, t.Chain); l != nil {
			l.mu.Lock()
			l.put(sec, &smp)
			l.mu.Unlock()
		}
	}
	for i := range t.Attempts {
		a := &t.Attempts[i]
		if a.Skipped && a.Skip != llm.SkipQuota {
			continue
		}
		l := s.lineOf(backendPrefix, a.Backend)
		if l == nil {
			continue
		}
		as := sampleOfAttempt(a)
		l.mu.Lock()
		l.put(sec, &as)
		l.mu.Unlock()
	}
}

// Load picks up the minute and hour buckets still filling that an earlier
// run stored, so that the rest of them adds to what it counted instead of
// replacing it. Call it once, before the first Record.
func (s *Series) Load(ctx context.Context) error {
	now := s.clock.Now().Unix()
	for _, w := range []int64{int64(MinuteWidth / time.Second), int64(HourWidth / time.Second)} {
		rows, err := s.db.SeriesAt(ctx, w, now-now%w)
		if err != nil {
			return fmt.Errorf("loading the stored time series: %w", err)
		}
		for _, r := range rows {
			var b bucket
			if err := decodeBucket(r.Data, &b); err != nil {
				s.log.Warn("a stored time series bucket could not be read; it starts over", "series", r.Series, "err", err)
				continue
			}
			b.requests = uint32(r.Requests)
			l := s.lineNamed(r.Series)
			if l == nil {
				continue
			}
			l.mu.Lock()
			lv := l.levelOf(w)
			lv.cur = stored{start: r.Start, b: b}
			l.mu.Unlock()
		}
	}
	return nil
}

// lineNamed returns the line of a stored series name, creating it.
func (s *Series) lineNamed(name string) *line {
	if name == "" {
		return s.total
	}
	if len(name) > 2 && (name[:2] == backendPrefix || name[:2] == chainPrefix) {
		return s.lineOf(name[:2], name[2:])
	}
	return nil
}

func (l *line) levelOf(width int64) *level {
	if width == l.minute.width {
		return &l.minute
	}
	return &l.hour
}

// pendingRow is a bucket the writer stores, with what it needs to mark the
// bucket saved afterwards.
type pendingRow struct {
	l     *line
	width int64
	start int64
	ver   uint64
	row   store.SeriesRow
}

// collect copies every bucket that changed since it was last stored.
func (s *Series) collect() []pendingRow {
	var out []pendingRow
	for _, l := range s.all() {
		l.mu.Lock()
		for _, lv := range [...]*level{&l.minute, &l.hour} {
			for _, st := range lv.spill {
				out = append(out, pendingRow{row: rowOf(l.name, lv.width, &st)})
			}
			lv.spill = nil
			for _, st := range [...]*stored{&lv.prev, &lv.cur} {
				if st.start == 0 || !st.dirty() {
					continue
				}
				out = append(out, pendingRow{l: l, width: lv.width, start: st.start, ver: st.ver, row: rowOf(l.name, lv.width, st)})
			}
		}
		l.mu.Unlock()
	}
	return out
}

func rowOf(name string, width int64, st *stored) store.SeriesRow {
	return store.SeriesRow{Width: width, Series: name, Start: st.start, Requests: int64(st.b.requests), Data: encodeBucket(&st.b)}
}

// Flush stores every bucket that changed since it was last stored.
func (s *Series) Flush(ctx context.Context) error {
	pend := s.collect()
	if len(pend) == 0 {
		return nil
	}
	rows := make([]store.SeriesRow, len(pend))
	for i := range pend {
		rows[i] = pend[i].row
	}
	if err := s.db.WriteSeries(ctx, rows); err != nil {
		// The buckets stay dirty (spilled ones are lost), so the next
		// flush tries again.
		return err
	}
	for _, p := range pend {
		if p.l == nil {
			continue
		}
		p.l.mu.Lock()
		lv := p.l.levelOf(p.width)
		for _, st := range [...]*stored{&lv.prev, &lv.cur} {
			if st.start == p.start && st.ver >= p.ver {
				st.saved = p.ver
			}
		}
		p.l.mu.Unlock()
	}
	return nil
}

// Prune deletes stored buckets older than the series keep them.
func (s *Series) Prune(ctx context.Context) error {
	now := s.clock.Now()
	var errs []error
	for _, p := range []struct {
		width time.Duration
		keep  time.Duration
	}{{MinuteWidth, MinuteKeep}, {HourWidth, HourKeep}} {
		if _, err := s.db.PruneSeries(ctx, int64(p.width/time.Second), now.Add(-p.keep).Unix()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run writes changed buckets every 10 s and prunes old ones every hour
// until ctx ends, then writes what is left and returns.
func (s *Series) Run(ctx context.Context) {
	flush, flushC := s.clock.NewTicker(seriesFlushEvery)
	defer flush.Stop()
	prune, pruneC := s.clock.NewTicker(seriesPruneEvery)
	defer prune.Stop()
	if err := s.Prune(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("could not delete old time series buckets", "err", err)
	}
	for {
		select {
		case <-ctx.Done():
			// The final write gets its own short deadline: ctx is done.
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.Flush(fctx); err != nil {
				s.log.Warn("could not store the last time series buckets", "err", err)
			}
			cancel()
			return
		case <-flushC:
			if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("could not store time series buckets; retrying", "err", err)
			}
		case <-pruneC:
			if err := s.Prune(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("could not delete old time series buckets", "err", err)
			}
		}
	}
}

// SeriesQuery selects one series and window. Backend and Chain are
// exclusive; neither selects every request.
type SeriesQuery struct {
	Window  SeriesWindow
	Backend string
	Chain   string
}

// ErrorCounts are a bucket's failures by class.
type ErrorCounts struct {
	RateLimited int64 `json:"rate_limited,omitzero"`
	Transient   int64 `json:"transient,omitzero"`
	Soft        int64 `json:"soft,omitzero"`
	Credential  int64 `json:"credential,omitzero"`
	Gone        int64 `json:"gone,omitzero"`
	TooLong     int64 `json:"too_long,omitzero"`
	Caller      int64 `json:"caller,omitzero"`
	Cancelled   int64 `json:"cancelled,omitzero"`
	Quota       int64 `json:"quota,omitzero"`
	Other       int64 `json:"other,omitzero"`
}

// SeriesBucket is one bucket of a series as the admin API answers it.
// Every figure but the start and the requests is left out when it is
// zero: most buckets of a day are quiet, and a quiet bucket is then about
// 30 bytes of JSON instead of 350.
type SeriesBucket struct {
	// Start is the bucket's start in Unix seconds; it lasts the answer's
	// resolution.
	Start int64 `json:"start"`
	// Requests counts requests (a backend's series: calls) that ended in
	// the bucket; Failures those that failed, by class in Errors.
	Requests int64       `json:"requests"`
	Failures int64       `json:"failures,omitzero"`
	Errors   ErrorCounts `json:"errors,omitzero"`
	// QuotaSkips counts the times a backend was passed over because one
	// of its limits or a budget was used up.
	QuotaSkips int64 `json:"quota_skips,omitzero"`
	// LatencyMS and TTFTMS are percentiles of the successful ones, left
	// out when there were none.
	LatencyMS Percentiles `json:"latency_ms,omitzero"`
	TTFTMS    Percentiles `json:"ttft_ms,omitzero"`
	// Tokens in and out; EstimatedTokens is the part of them the upstream
	// did not report, counted by FreeLane's tokenizer.
	PromptTokens     int64   `json:"prompt_tokens,omitzero"`
	CompletionTokens int64   `json:"completion_tokens,omitzero"`
	EstimatedTokens  int64   `json:"estimated_tokens,omitzero"`
	Cost             float64 `json:"cost,omitzero"`
}

// SeriesView is one window of one series: every bucket from the window's
// start to now, empty ones included, oldest first.
type SeriesView struct {
	Window string `json:"window"`
	// ResolutionS is the buckets' length in seconds.
	ResolutionS int64 `json:"resolution_s"`
	// From and To are the window's edges in Unix seconds: To is now and
	// From is To less the window. Every bucket starts after From.
	From    int64          `json:"from"`
	To      int64          `json:"to"`
	Backend string         `json:"backend,omitempty"`
	Chain   string         `json:"chain,omitempty"`
	Buckets []SeriesBucket `json:"buckets"`
}

// Window returns the buckets of q's window, read at its resolution.
func (s *Series) Window(ctx context.Context, q SeriesQuery) (SeriesView, error) {
	now := s.clock.Now().Unix()
	w := q.Window
	width := int64(w.Width / time.Second)
	n := int64(w.Span / w.Width)
	last := now - now%width
	first := last - (n-1)*width
	v := SeriesView{Window: w.Name, ResolutionS: width, From: now - int64(w.Span/time.Second), To: now,
		Backend: q.Backend, Chain: q.Chain}
	buckets := make([]bucket, n)

	name := ""
	switch {
	case q.Backend != "":
		name = backendPrefix + q.Backend
	case q.Chain != "":
		name = chainPrefix + q.Chain
	}
	l := s.find(name)

	if w.Width == FineWidth {
		if l != nil {
			l.mu.Lock()
			l.advance(last / width)
			for i := range n {
				idx := (first + i*width) / width
				if idx > l.head-int64(fineSlots) {
					buckets[i] = l.ring[idx%int64(fineSlots)]
				}
			}
			l.mu.Unlock()
		}
	} else {
		rows, err := s.db.SeriesRange(ctx, width, name, first, last)
		if err != nil {
			return SeriesView{}, fmt.Errorf("reading the stored time series: %w", err)
		}
		for _, r := range rows {
			i := (r.Start - first) / width
			if i < 0 || i >= n || (r.Start-first)%width != 0 {
				continue
			}
			if err := decodeBucket(r.Data, &buckets[i]); err != nil {
				return SeriesView{}, fmt.Errorf("reading the stored time series: %w", err)
			}
			buckets[i].requests = uint32(r.Requests)
		}
		// What is in memory is newer than what is stored, or not stored
		// yet: it replaces the stored bucket.
		if l != nil {
			l.mu.Lock()
			lv := l.levelOf(width)
			over := func(st *stored) {
				i := (st.start - first) / width
				if st.start != 0 && i >= 0 && i < n {
					buckets[i] = st.b
				}
			}
			for i := range lv.spill {
				over(&lv.spill[i])
			}
			over(&lv.prev)
			over(&lv.cur)
			l.mu.Unlock()
		}
	}
	v.Buckets = make([]SeriesBucket, n)
	for i := range buckets {
		v.Buckets[i] = buckets[i].view(first + int64(i)*width)
	}
	return v, nil
}

func (b *bucket) view(start int64) SeriesBucket {
	e := func(c llm.Class) int64 { return int64(b.errs[classIndex(c)]) }
	var failed int64
	for _, c := range b.errs {
		failed += int64(c)
	}
	return SeriesBucket{
		Start:    start,
		Requests: int64(b.requests),
		Failures: failed,
		Errors: ErrorCounts{RateLimited: e(llm.RateLimited), Transient: e(llm.Transient), Soft: e(llm.Soft),
			Credential: e(llm.Credential), Gone: e(llm.Gone), TooLong: e(llm.TooLong), Caller: e(llm.Caller),
			Cancelled: e(llm.Cancelled), Quota: e(llm.Quota), Other: int64(b.errs[classOther])},
		QuotaSkips:       int64(b.quota),
		LatencyMS:        b.lat.percentiles(),
		TTFTMS:           b.ttft.percentiles(),
		PromptTokens:     int64(b.prompt),
		CompletionTokens: int64(b.output),
		EstimatedTokens:  int64(b.estimated),
		Cost:             round(b.cost, 6),
	}
}
