package router

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// LatencyWindow is how long a backend's latency samples count: a backend
// not called for longer is scored as untried, since what it did then says
// little about now.
const LatencyWindow = 5 * time.Minute

// latencyAlpha is the weight of the newest sample in the moving averages:
// a few calls move the estimate, one slow call does not own it.
const latencyAlpha = 0.3

// stats are one backend's recent calls as the strategies read them: moving
// averages of the time to the first token (streams) and of the whole call
// (everything else), how many calls they rest on, the share of prompt
// tokens its provider's cache served, and the calls in flight now. They
// are written once per call and read on every selection, so reads are
// lock-free.
type stats struct {
	mu sync.Mutex // serialises writers
	// ttft and total are float64 nanoseconds as bits; cached the cached
	// prompt share, as bits.
	ttft, total, cached atomic.Uint64
	// ttftN and totalN count the samples behind each average (capped);
	// last is the latest sample's time in Unix nanoseconds.
	ttftN, totalN atomic.Int64
	last          atomic.Int64
	inflight      atomic.Int32
	// reported counts the backend's latest streams in a row that reported
	// their completion tokens (capped at trustUsageAfter); see keepsOutput.
	reported atomic.Int32
}

// trustUsageAfter is how many streams in a row must report their
// completion tokens before a backend's streams stop keeping their events
// for an estimate. Keeping them costs a copy of every event and, over a
// long answer, more memory than the rest of the stream's state; a
// backend that reports usage never needs them.
const trustUsageAfter = 3

// keepsOutput reports whether a stream of the backend should keep its
// content events for estimating tokens the upstream may not report.
func (s *stats) keepsOutput() bool { return s.reported.Load() < trustUsageAfter }

// streamEnded records whether a stream reported its completion tokens.
// One that did not, for whatever reason, makes the next streams keep
// their events again.
func (s *stats) streamEnded(reported bool) {
	switch {
	case !reported:
		s.reported.Store(0)
	case s.reported.Load() < trustUsageAfter:
		s.reported.Add(1)
	}
}

// maxSamples caps the sample counts, which only need to tell "few" from
// "enough".
const maxSamples = 1 << 20

func ewma(old float64, n int64, v float64) float64 {
	if n == 0 {
		return v
	}
	return old + latencyAlpha*(v-old)
}

// observe records one finished call. ttft is zero when no content came
// (a failed stream, a plain request); prompt and cached are the call's
// prompt tokens and those read from cache, when known.
func (s *stats) observe(now time.Time, stream bool, ttft, total time.Duration, prompt, cached int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stale(now) {
		s.ttftN.Store(0)
		s.totalN.Store(0)
	}
	if stream && ttft > 0 {
		n := s.ttftN.Load()
		s.ttft.Store(math.Float64bits(ewma(math.Float64frombits(s.ttft.Load()), n, float64(ttft))))
		s.ttftN.Store(min(n+1, maxSamples))
	}
	if !stream {
		n := s.totalN.Load()
		s.total.Store(math.Float64bits(ewma(math.Float64frombits(s.total.Load()), n, float64(total))))
		s.totalN.Store(min(n+1, maxSamples))
	}
	if prompt > 0 {
		share := float64(min(cached, prompt)) / float64(prompt)
		s.cached.Store(math.Float64bits(ewma(math.Float64frombits(s.cached.Load()), 1, share)))
	}
	s.last.Store(now.UnixNano())
}

// stale reports whether the latest sample is older than the window.
func (s *stats) stale(now time.Time) bool {
	last := s.last.Load()
	return last == 0 || now.UnixNano()-last > int64(LatencyWindow)
}

// latency returns the average that fits the request (time to first token
// for a stream, the whole call otherwise) and the samples behind it; 0
// samples when the backend is untried or its samples went stale.
func (s *stats) latency(now time.Time, stream bool) (time.Duration, int) {
	if s.stale(now) {
		return 0, 0
	}
	if stream {
		return time.Duration(math.Float64frombits(s.ttft.Load())), int(s.ttftN.Load())
	}
	return time.Duration(math.Float64frombits(s.total.Load())), int(s.totalN.Load())
}

// cachedShare is the recent share of prompt tokens served from the
// provider's cache.
func (s *stats) cachedShare() float64 { return math.Float64frombits(s.cached.Load()) }
