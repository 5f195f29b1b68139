// Package clocktest provides a fake clock.Clock, so time-driven logic is
// tested by moving time, not by sleeping.
//
// A clock made by New only moves when told to (Advance, Set). One made by
// Following also moves with real time from its start, which suits tests
// that drive real servers over real sockets (latencies stay real, loops
// tick) but must still pick the date and jump over hours or days. In both,
// timers and tickers fire when the clock reaches them, whichever way it got
// there.
package clocktest

import (
	"slices"
	"sync"
	"time"

	"freelane/backend/clock"
)

// Clock is a fake clock. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	// now is the clock's time at the wall reading base (when following) or
	// simply its time (when not).
	now    time.Time
	follow bool
	base   time.Time
	timers []*timer
}

var _ clock.Clock = (*Clock)(nil)

// New returns a Clock set to start that moves only when told to.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Following returns a Clock set to start that then moves with real time,
// besides the jumps made by Advance and Set.
func Following(start time.Time) *Clock {
	return &Clock{now: start, follow: true, base: time.Now()}
}

func (c *Clock) nowLocked() time.Time {
	if c.follow {
		return c.now.Add(time.Since(c.base))
	}
	return c.now
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

// Since returns the clock's time elapsed since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Freeze stops a following clock where it is: from then on it moves only
// when told to, so a test can compare times exactly.
func (c *Clock) Freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.nowLocked()
	c.follow = false
	for _, t := range c.timers {
		t.disarm()
	}
}

// Advance moves the clock forward by d, firing every timer it passes in
// the order of their deadlines.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.nowLocked().Add(d))
}

// Set moves the clock to t (backwards too, which fires nothing).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(t)
}

func (c *Clock) setLocked(t time.Time) {
	c.now = t
	if c.follow {
		c.base = time.Now()
	}
	c.fireLocked()
}

// fireLocked fires, earliest first, every timer whose deadline the clock
// has reached. A ticker fires once however many periods passed, as a
// time.Ticker does for a receiver that fell behind.
func (c *Clock) fireLocked() {
	now := c.nowLocked()
	for {
		i := -1
		for j, t := range c.timers {
			if !t.when.After(now) && (i < 0 || t.when.Before(c.timers[i].when)) {
				i = j
			}
		}
		if i < 0 {
			return
		}
		t := c.timers[i]
		at := t.when
		if t.period > 0 {
			for !t.when.After(now) {
				t.when = t.when.Add(t.period)
			}
			t.armLocked(now)
		} else {
			c.timers = slices.Delete(c.timers, i, i+1)
			t.disarm()
		}
		if t.f != nil {
			go t.f()
			continue
		}
		select {
		case t.ch <- at:
		default:
		}
	}
}

// poke fires what real time has brought due on a following clock.
func (c *Clock) poke() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fireLocked()
}

// timer is a pending timer, ticker (period > 0) or AfterFunc (f set).
type timer struct {
	c      *Clock
	when   time.Time
	period time.Duration
	ch     chan time.Time
	f      func()
	// wake fires the timer in real time on a following clock, where
	// nobody may call Advance.
	wake *time.Timer
}

func (t *timer) armLocked(now time.Time) {
	t.disarm()
	if t.c.follow {
		t.wake = time.AfterFunc(max(t.when.Sub(now), 0), t.c.poke)
	}
}

func (t *timer) disarm() {
	if t.wake != nil {
		t.wake.Stop()
		t.wake = nil
	}
}

func (c *Clock) add(t *timer, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(t, d)
}

func (c *Clock) addLocked(t *timer, d time.Duration) {
	now := c.nowLocked()
	t.when = now.Add(d)
	c.timers = append(c.timers, t)
	t.armLocked(now)
	c.fireLocked()
}

// stop removes t and reports whether it was pending.
func (c *Clock) stop(t *timer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopLocked(t)
}

// reset re-arms t to fire after d, with a new period for a ticker.
func (c *Clock) reset(t *timer, d, period time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.stopLocked(t)
	t.period = period
	c.addLocked(t, d)
	return was
}

func (c *Clock) stopLocked(t *timer) bool {
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	t.disarm()
	return true
}

// NewTimer returns a timer that fires when the clock has moved on by d.
func (c *Clock) NewTimer(d time.Duration) (clock.Timer, <-chan time.Time) {
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	c.add(t, d)
	return fakeTimer{t}, t.ch
}

// AfterFunc calls f in its own goroutine when the clock has moved on by d.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &timer{c: c, f: f}
	c.add(t, d)
	return fakeTimer{t}
}

// NewTicker returns a ticker firing every d of the clock's time.
func (c *Clock) NewTicker(d time.Duration) (clock.Ticker, <-chan time.Time) {
	if d <= 0 {
		panic("clocktest: non-positive interval for NewTicker")
	}
	t := &timer{c: c, period: d, ch: make(chan time.Time, 1)}
	c.add(t, d)
	return fakeTicker{t}, t.ch
}

// Timers is how many timers, tickers and AfterFuncs are pending, so a test
// can wait until the code under test has armed one before moving time.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type fakeTimer struct{ t *timer }

func (f fakeTimer) Stop() bool { return f.t.c.stop(f.t) }

func (f fakeTimer) Reset(d time.Duration) bool { return f.t.c.reset(f.t, d, 0) }

type fakeTicker struct{ t *timer }

func (f fakeTicker) Stop() { f.t.c.stop(f.t) }

func (f fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clocktest: non-positive interval for Ticker.Reset")
	}
	f.t.c.reset(f.t, d, d)
}
