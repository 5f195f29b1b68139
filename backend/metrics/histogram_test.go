package metrics

import (
	"math"
	"testing"
	"time"
)

func TestBinIndexMonotonicAndBounded(t *testing.T) {
	prev := 0
	for d := time.Duration(0); d < 20*time.Minute; d = d*1001/1000 + time.Microsecond {
		b := binIndex(d)
		if b < prev {
			t.Fatalf("binIndex(%v) = %d, below binIndex of a smaller value (%d)", d, b, prev)
		}
		if b < 0 || b >= numBins {
			t.Fatalf("binIndex(%v) = %d out of range", d, b)
		}
		lo, hi := binBounds(b)
		if b != numBins-1 && (float64(d) < lo || float64(d) >= hi) {
			t.Fatalf("%v put in bin %d [%v, %v)", d, b, time.Duration(lo), time.Duration(hi))
		}
		prev = b
	}
	// Values right at and just below every edge, where floating point
	// rounding could misplace them, land in the bin that contains them.
	for i := 0; i <= logBins; i++ {
		e := time.Duration(math.Ceil(binEdges[i]))
		for _, d := range []time.Duration{e - 1, e} {
			b := binIndex(d)
			lo, hi := binBounds(b)
			if float64(d) < lo || (b != numBins-1 && float64(d) >= hi) {
				t.Fatalf("edge %d: %v put in bin %d [%v, %v)", i, d, b, lo, hi)
			}
		}
	}
	if binIndex(maxLatency) == numBins-1 {
		t.Fatalf("maxLatency %v fell into the overflow bin", maxLatency)
	}
	if binIndex(time.Hour) != numBins-1 {
		t.Fatalf("an hour should overflow")
	}
}

func TestBinWidthWithinResolution(t *testing.T) {
	// Every bounded bin between 1 ms and 10 min is at most 10 % wide
	// relative to its lower edge, so a midpoint is within 5 % of any
	// sample in it.
	for b := binIndex(time.Millisecond); b <= binIndex(maxLatency); b++ {
		lo, hi := binBounds(b)
		if w := (hi - lo) / lo; w > 0.10 {
			t.Fatalf("bin %d [%v, %v) is %.1f %% wide", b, time.Duration(lo), time.Duration(hi), w*100)
		}
	}
}

func TestBinIndexDoesNotAllocate(t *testing.T) {
	if a := testing.AllocsPerRun(100, func() { _ = binIndex(123 * time.Millisecond) }); a != 0 {
		t.Fatalf("binIndex allocates %v times", a)
	}
}
