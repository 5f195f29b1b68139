// Package clock is the one source of time for FreeLane. Everything that
// dates, schedules or measures (the router's traces, the ledger, quota
// windows, budget periods, breaker open times, probes, the dashboard's
// tickers) takes a Clock made once in the composition root, so that the
// whole program agrees about what day it is and tests can move time instead
// of sleeping.
//
// The shape follows tailscale's tstime.Clock: Now and Since, timers, tickers
// and AfterFunc, each with a small controller interface.
package clock

import (
	"sync/atomic"
	"time"
)

// Clock tells the time and makes timers. It is safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Since returns the time elapsed since t.
	Since(t time.Time) time.Duration
	// NewTimer returns a timer that fires once after d, and its channel.
	NewTimer(d time.Duration) (Timer, <-chan time.Time)
	// NewTicker returns a ticker that fires every d, and its channel. Like
	// time.Ticker it drops ticks a slow receiver has not taken.
	NewTicker(d time.Duration) (Ticker, <-chan time.Time)
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer controls a timer made by NewTimer or AfterFunc.
type Timer interface {
	// Stop prevents the timer from firing; it reports whether it did so.
	Stop() bool
	// Reset makes the timer fire after d; it reports whether the timer was
	// still pending.
	Reset(d time.Duration) bool
}

// Ticker controls a ticker made by NewTicker.
type Ticker interface {
	// Stop turns the ticker off.
	Stop()
	// Reset changes the ticker's period to d and restarts it.
	Reset(d time.Duration)
}

// Real is the wall clock: the only implementation that reads the system's
// time.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Since returns time.Since(t).
func (Real) Since(t time.Time) time.Duration { return time.Since(t) }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	t := time.NewTimer(d)
	return t, t.C
}

// NewTicker wraps time.NewTicker.
func (Real) NewTicker(d time.Duration) (Ticker, <-chan time.Time) {
	t := time.NewTicker(d)
	return t, t.C
}

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Deadline is the socket deadline d from now. net.Conn deadlines are
// absolute times that the network poller compares with the wall clock, so
// they are read off the wall clock whatever clock the caller dates its work
// with.
func Deadline(d time.Duration) time.Time { return time.Now().Add(d) }

// OrReal returns c, or the wall clock when c is nil, for constructors whose
// callers may leave the clock out.
func OrReal(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Sleep waits for d on c, or until done is closed; it reports whether the
// whole wait passed.
func Sleep(c Clock, d time.Duration, done <-chan struct{}) bool {
	t, ch := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-done:
		return false
	}
}

// Rare lets something happen at most once per interval, from any number
// of goroutines: a warning repeated by every request of an overload is
// logged once a minute, say. The zero value lets the first one through.
type Rare struct{ last atomic.Int64 }

// Now reports whether at least every has passed since the last time it
// said yes, and if so takes now as that time.
func (r *Rare) Now(now time.Time, every time.Duration) bool {
	n, last := now.UnixNano(), r.last.Load()
	return n-last >= int64(every) && r.last.CompareAndSwap(last, n)
}
