package clock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Rare says yes to the first ask, then to none until the interval has
// passed, and to exactly one of many goroutines asking at once.
func TestRareOncePerInterval(t *testing.T) {
	var r Rare
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if !r.Now(t0, time.Minute) {
		t.Fatal("the first ask was refused")
	}
	if r.Now(t0.Add(59*time.Second), time.Minute) {
		t.Fatal("a second ask within the interval was let through")
	}
	var yes atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.Now(t0.Add(time.Minute), time.Minute) {
				yes.Add(1)
			}
		}()
	}
	wg.Wait()
	if yes.Load() != 1 {
		t.Fatalf("%d of 32 concurrent asks after the interval were let through, want 1", yes.Load())
	}
}
