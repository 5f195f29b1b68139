package metrics

import (
	"math"
	"time"
)

// The latency histograms use log-spaced bins: bin edges grow by a factor of
// 2^(1/binsPerOctave) ≈ 1.0905, so every bin is about 9 % wide and a value
// reported from inside a bin is at most about 4.5 % away from the real
// sample. Log spacing gives the same relative precision to a 2 ms local
// model and a 3 minute reasoning model, which linear bins cannot do with a
// fixed memory budget.
const (
	binsPerOctave = 8

	// minLatency is the lower edge of the first log bin. The brief asks for
	// resolution from 1 ms; starting at 100 µs also keeps in-process fake
	// upstreams (tests, benchmarks) readable at the cost of a few bins.
	minLatency = 100 * time.Microsecond

	// maxLatency is the smallest value that must still have its own bin.
	// Anything slower lands in the overflow bin.
	maxLatency = 10 * time.Minute

	// logBins is ceil(binsPerOctave * log2(maxLatency/minLatency)), so
	// maxLatency falls inside the last log bin rather than in the overflow
	// bin (checked when binEdges is built).
	logBins = 181

	// numBins adds an underflow bin (below minLatency, index 0) and an
	// overflow bin (at or above the last edge, index numBins-1).
	numBins = logBins + 2
)

// binEdges[i] is the lower edge, in nanoseconds, of log bin i (histogram
// index i+1); binEdges[logBins] is the upper edge of the last log bin.
var binEdges = func() [logBins + 1]float64 {
	var e [logBins + 1]float64
	for i := range e {
		e[i] = float64(minLatency) * math.Exp2(float64(i)/binsPerOctave)
	}
	if e[logBins-1] > float64(maxLatency) || e[logBins] <= float64(maxLatency) {
		panic("metrics: logBins does not cover maxLatency")
	}
	return e
}()

// octaveEdges[k] is 2^(k/binsPerOctave): the sub-octave bin edges of a
// mantissa in [1, 2).
var octaveEdges = func() [binsPerOctave]float64 {
	var e [binsPerOctave]float64
	for k := range e {
		e[k] = math.Exp2(float64(k) / binsPerOctave)
	}
	return e
}()

// hist counts samples per bin. uint32 is enough: the largest count, the
// 1h ring's running sum, would need more than a million requests per
// second to overflow, and it halves the memory of every time slot compared
// to uint64.
type hist [numBins]uint32

// binIndex maps a duration to its histogram index. It does not allocate and
// is called outside any lock.
func binIndex(d time.Duration) int {
	if d < minLatency {
		return 0
	}
	// log2(x) is the binary exponent of x plus log2 of its mantissa in
	// [1, 2). Reading both from the float's bits and placing the mantissa
	// against the precomputed sub-octave edges avoids math.Log2, which was
	// a third of Observe's cost.
	bits := math.Float64bits(float64(d) / float64(minLatency))
	exp := int(bits>>52&0x7ff) - 1023
	mant := math.Float64frombits(bits&(1<<52-1) | 1023<<52)
	sub := 0
	for sub < binsPerOctave-1 && mant >= octaveEdges[sub+1] {
		sub++
	}
	i := exp*binsPerOctave + sub
	i = min(i, logBins) // logBins here means the overflow bin.
	// Floating point rounding can put a value that sits exactly on an edge
	// into the neighbouring bin; correct it against the precomputed edges.
	if i > 0 && float64(d) < binEdges[i] {
		i--
	} else if i < logBins && float64(d) >= binEdges[i+1] {
		i++
	}
	if i >= logBins {
		return numBins - 1
	}
	return i + 1
}

// binBounds returns the lower and upper edges of histogram index b in
// nanoseconds. The overflow bin has no upper edge, so both edges are its
// lower edge: a quantile falling there reports the largest bounded value.
func binBounds(b int) (lo, hi float64) {
	switch {
	case b == 0:
		return 0, binEdges[0]
	case b == numBins-1:
		return binEdges[logBins], binEdges[logBins]
	default:
		return binEdges[b-1], binEdges[b]
	}
}

// quantile returns the q-quantile (0 < q <= 1) of h in nanoseconds, or 0
// when h is empty. Inside the bin that holds the target rank it
// interpolates linearly, which assumes samples are spread evenly across
// the bin; the error is bounded by the bin width either way.
func quantile(h *hist, q float64) float64 {
	var total uint64
	for _, c := range h {
		total += uint64(c)
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var cum uint64
	for b, c := range h {
		if c == 0 {
			continue
		}
		if float64(cum+uint64(c)) >= rank {
			frac := (rank - float64(cum)) / float64(c)
			frac = min(max(frac, 0), 1)
			lo, hi := binBounds(b)
			return lo + (hi-lo)*frac
		}
		cum += uint64(c)
	}
	// Only reachable through rounding with q == 1: report the highest bin.
	for b := numBins - 1; b >= 0; b-- {
		if h[b] != 0 {
			_, hi := binBounds(b)
			return hi
		}
	}
	return 0
}
