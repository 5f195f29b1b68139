package clocktest

import (
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC)

func fired(ch <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		return time.Time{}, false
	}
}

func TestTimerFiresWhenTheClockReachesIt(t *testing.T) {
	c := New(t0)
	tm, ch := c.NewTimer(time.Minute)
	c.Advance(59 * time.Second)
	if _, ok := fired(ch); ok {
		t.Fatal("fired early")
	}
	c.Advance(time.Second)
	if v, ok := fired(ch); !ok || !v.Equal(t0.Add(time.Minute)) {
		t.Fatalf("fired %v %v", v, ok)
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer reports it pending")
	}
	if tm.Reset(time.Second); c.Timers() != 1 {
		t.Fatal("Reset did not re-arm")
	}
	if !tm.Stop() || c.Timers() != 0 {
		t.Fatal("Stop of a pending timer")
	}
}

func TestTickerDropsMissedTicks(t *testing.T) {
	c := New(t0)
	tk, ch := c.NewTicker(10 * time.Second)
	defer tk.Stop()
	c.Advance(35 * time.Second)
	if v, ok := fired(ch); !ok || !v.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("first tick %v %v", v, ok)
	}
	if _, ok := fired(ch); ok {
		t.Fatal("a receiver that fell behind got more than one tick")
	}
	c.Advance(5 * time.Second)
	if v, ok := fired(ch); !ok || !v.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("next tick %v %v", v, ok)
	}
	tk.Reset(time.Hour)
	c.Advance(59 * time.Minute)
	if _, ok := fired(ch); ok {
		t.Fatal("reset ticker fired early")
	}
}

func TestAfterFuncAndFollowing(t *testing.T) {
	c := Following(t0)
	var n atomic.Int32
	done := make(chan struct{})
	c.AfterFunc(time.Hour, func() { n.Add(1); close(done) })
	c.Advance(time.Hour)
	<-done
	// A following clock moves on its own and fires timers in real time.
	_, ch := c.NewTimer(20 * time.Millisecond)
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("a following clock's timer never fired in real time")
	}
	if got := c.Now(); !got.After(t0.Add(time.Hour)) {
		t.Fatalf("following clock at %v", got)
	}
	c.Set(t0)
	if got := c.Now(); got.Before(t0) || got.After(t0.Add(time.Second)) {
		t.Fatalf("Set: %v", got)
	}
}
