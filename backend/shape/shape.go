// Package shape paces the calls FreeLane makes to each backend, so that it
// stays under a provider's limits instead of collecting its 429s: a
// concurrency limit with a short first-in, first-out queue, and a
// requests-per-minute token bucket fed by the configured limits and by
// what the provider's rate-limit headers said.
//
// Limits apply at two levels, as a provider's allowance does: a provider's
// limits are shared by all the models called with one of its keys, and a
// model's limits by the calls to that backend alone. A call needs a slot
// and a token at both levels.
//
// Time comes from an injected clock: the buckets are driven with the
// limiter's methods that take a time, and waits use the clock's timers, so
// tests move time instead of sleeping. No goroutine is started: a request
// waits in its own goroutine and leaves the queue when its context ends.
package shape

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"freelane/backend/clock"
	"freelane/backend/llm"
)

// DefaultQueueWait is how long a request waits for a slot or a token when
// the limits set no queue wait: long enough to ride out a short burst, short
// enough that the next backend of the chain is tried while the client still
// waits.
const DefaultQueueWait = 2 * time.Second

// Limits are the pacing settings of a provider or a backend. Zero means no
// limit.
type Limits struct {
	// RPM is the requests per minute the bucket lets through, one every
	// 60/RPM seconds.
	RPM int64
	// Concurrency is how many calls may run at once.
	Concurrency int64
	// QueueWait, when set, is how long a request waits for a slot or a
	// token before the backend is passed by; zero does not wait. Nil
	// leaves it to the provider's setting or DefaultQueueWait.
	QueueWait *time.Duration
}

func (l Limits) limited() bool { return l.RPM > 0 || l.Concurrency > 0 }

// Settings are every provider's and backend's pacing.
type Settings struct {
	// Providers maps a provider name to the limits each of its keys has,
	// shared by the models called with it.
	Providers map[string]Limits
	// Backends maps a backend to its own limits. A backend of a key pool
	// that is missing here takes the limits given for the backend without
	// a key.
	Backends map[llm.BackendID]Limits
}

// Shaper paces calls per backend. It is safe for concurrent use; the zero
// value is not, use New.
type Shaper struct {
	clock clock.Clock

	mu       sync.Mutex
	settings Settings
	keys     map[llm.KeyID]*scope
	backends map[llm.BackendID]*scope
	// queue holds the requests waiting for a slot, oldest first. No
	// request in it could start now: whenever a slot frees, the oldest
	// that can start is given it.
	queue []*waiter
	// waits are the requests inside Acquire that wait for a slot or a
	// token, with when their wait ends.
	waits []*wait
}

// wait is one request waiting in Acquire: for a slot (w set) or a token,
// until at the latest.
type wait struct {
	w     *waiter
	until time.Time
}

// New returns a Shaper with no limits.
func New(clk clock.Clock) *Shaper {
	return &Shaper{clock: clock.OrReal(clk), keys: map[llm.KeyID]*scope{}, backends: map[llm.BackendID]*scope{}}
}

// scope is the pacing state of one key of a provider or of one backend.
type scope struct {
	name string
	// conc is the concurrency limit (0: none) and active the calls holding
	// a slot.
	conc, active int64
	// configured and learned are the requests per minute the limits and
	// the provider's headers gave; the bucket runs at the lower one set.
	configured, learned int64
	bucket              *rate.Limiter
	// busy and paced are the skips Available returns, made when the
	// limits change, so that the check allocates nothing.
	busy, paced *llm.Skip
}

// rpm is the rate the bucket runs at, 0 for none.
func (sc *scope) rpm() int64 {
	switch {
	case sc.configured > 0 && sc.learned > 0:
		return min(sc.configured, sc.learned)
	case sc.configured > 0:
		return sc.configured
	}
	return sc.learned
}

// set installs limits, keeping the bucket's tokens and the slots held.
func (sc *scope) set(now time.Time, conc, configured, learned int64) {
	sc.conc, sc.configured, sc.learned = conc, configured, learned
	rpm := sc.rpm()
	switch {
	case rpm == 0:
		sc.bucket = nil
	case sc.bucket == nil:
		// A burst of one spaces the calls evenly: a provider that
		// enforces its per-minute limit over shorter periods, as many
		// do, sees no burst either.
		sc.bucket = rate.NewLimiter(perMinute(rpm), 1)
	default:
		sc.bucket.SetLimitAt(now, perMinute(rpm))
	}
	sc.busy = &llm.Skip{Word: llm.SkipBusy, Class: llm.RateLimited,
		Reason: fmt.Sprintf("%s: %d requests already in flight (concurrency limit %d)", sc.name, conc, conc)}
	sc.paced = &llm.Skip{Word: llm.SkipPaced, Class: llm.RateLimited,
		Reason: fmt.Sprintf("%s: paced to %s; the next request is not due yet", sc.name, sc.rateText())}
}

// rateText names the bucket's rate and where it came from.
func (sc *scope) rateText() string {
	rpm := sc.rpm()
	if sc.learned > 0 && rpm == sc.learned && (sc.configured == 0 || sc.learned < sc.configured) {
		return fmt.Sprintf("%d requests per minute (the provider's rate-limit headers say so)", rpm)
	}
	return fmt.Sprintf("%d requests per minute", rpm)
}

func perMinute(rpm int64) rate.Limit { return rate.Limit(float64(rpm) / 60) }

// free reports whether the scope has a slot for one more call.
func (sc *scope) free() bool { return sc == nil || sc.conc <= 0 || sc.active < sc.conc }

// due is how long from now the scope's bucket has a token, 0 when it has
// one now.
func (sc *scope) due(now time.Time) time.Duration {
	if sc == nil || sc.bucket == nil {
		return 0
	}
	t := sc.bucket.TokensAt(now)
	if t >= 1 {
		return 0
	}
	return time.Duration((1 - t) / float64(sc.bucket.Limit()) * float64(time.Second))
}

// waiter is a request queued for a slot.
type waiter struct {
	k, b    *scope
	ready   chan struct{}
	granted bool
}

// Configure installs new limits. The slots held, the requests queued and
// the buckets' tokens of the keys and backends that remain carry over;
// queued requests that the new limits let start are started.
func (s *Shaper) Configure(set Settings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settings = set
	now := s.clock.Now()
	for k, sc := range s.keys {
		l := set.Providers[k.Provider]
		if !l.limited() && sc.active == 0 && !s.queuedLocked(sc) {
			delete(s.keys, k)
			continue
		}
		sc.set(now, l.Concurrency, l.RPM, 0)
	}
	for id, sc := range s.backends {
		l, _ := s.backendLimitsLocked(id)
		if !l.limited() && sc.learned == 0 && sc.active == 0 && !s.queuedLocked(sc) {
			delete(s.backends, id)
			continue
		}
		sc.set(now, l.Concurrency, l.RPM, sc.learned)
	}
	s.dispatchLocked()
}

// Learn tells the shaper the requests per minute a backend's provider
// announced in its rate-limit headers, 0 when it announced none. The
// bucket runs at the lower of it and the configured limit.
func (s *Shaper) Learn(id llm.BackendID, rpm int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.backends[id]
	if sc == nil {
		if rpm <= 0 {
			return
		}
		sc = &scope{name: id.String()}
		s.backends[id] = sc
	}
	if sc.learned == rpm {
		return
	}
	l, _ := s.backendLimitsLocked(id)
	now := s.clock.Now()
	had := sc.bucket != nil
	sc.set(now, l.Concurrency, l.RPM, max(rpm, 0))
	if !had && sc.bucket != nil {
		// The call that taught the limit counts against it.
		sc.bucket.AllowN(now, 1)
	}
}

func (s *Shaper) queuedLocked(sc *scope) bool {
	return slices.ContainsFunc(s.queue, func(w *waiter) bool { return w.k == sc || w.b == sc })
}

// backendLimitsLocked is a backend's own limits: those given for it, or
// for the same backend without a key.
func (s *Shaper) backendLimitsLocked(id llm.BackendID) (Limits, bool) {
	if l, ok := s.settings.Backends[id]; ok {
		return l, true
	}
	if id.Key != "" {
		id.Key = ""
		l, ok := s.settings.Backends[id]
		return l, ok
	}
	return Limits{}, false
}

// scopesLocked returns the key's and the backend's scopes, nil for a level
// without limits; with create it makes those the settings limit.
func (s *Shaper) scopesLocked(id llm.BackendID, create bool) (k, b *scope) {
	k, b = s.keys[id.KeyID()], s.backends[id]
	if !create {
		return k, b
	}
	now := s.clock.Now()
	if k == nil {
		if l := s.settings.Providers[id.Provider]; l.limited() {
			k = &scope{name: id.KeyID().String()}
			k.set(now, l.Concurrency, l.RPM, 0)
			s.keys[id.KeyID()] = k
		}
	}
	if b == nil {
		if l, _ := s.backendLimitsLocked(id); l.limited() {
			b = &scope{name: id.String()}
			b.set(now, l.Concurrency, l.RPM, 0)
			s.backends[id] = b
		}
	}
	return k, b
}

// queueWaitLocked is how long a request for id may wait.
func (s *Shaper) queueWaitLocked(id llm.BackendID) time.Duration {
	if l, _ := s.backendLimitsLocked(id); l.QueueWait != nil {
		return max(*l.QueueWait, 0)
	}
	if l := s.settings.Providers[id.Provider]; l.QueueWait != nil {
		return max(*l.QueueWait, 0)
	}
	return DefaultQueueWait
}

// Available tells, without waiting and without taking anything, whether a
// call to id could start now: a free slot and a token at both levels. It
// allocates nothing.
func (s *Shaper) Available(id llm.BackendID) *llm.Skip {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, b := s.scopesLocked(id, false)
	if k == nil && b == nil {
		return nil
	}
	if !k.free() {
		return k.busy
	}
	if !b.free() {
		return b.busy
	}
	now := s.clock.Now()
	if k.due(now) > 0 {
		return k.paced
	}
	if b.due(now) > 0 {
		return b.paced
	}
	return nil
}

// Waiting is how many requests wait for a slot or a token now: those
// whose wait has not run out and, in the queue, who got no slot yet.
func (s *Shaper) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	n := 0
	for _, wt := range s.waits {
		if wt.until.After(now) && (wt.w == nil || !wt.w.granted) {
			n++
		}
	}
	return n
}

func noRelease() {}

// Acquire waits for a slot and a token for a call to id, no longer than
// the backend's queue wait and never past ctx. It returns the function
// that gives the slot back, which the caller must call once the call has
// ended; a skip means no slot or token came in time (or the client went
// away) and nothing is held. A backend without limits is never waited for.
func (s *Shaper) Acquire(ctx context.Context, id llm.BackendID) (release func(), skip *llm.Skip) {
	s.mu.Lock()
	k, b := s.scopesLocked(id, true)
	if k == nil && b == nil {
		s.mu.Unlock()
		return noRelease, nil
	}
	wait := s.queueWaitLocked(id)
	start := s.clock.Now()
	if k.free() && b.free() {
		take(k, b)
	} else {
		if wait <= 0 {
			sk := busySkip(k, b, wait)
			s.mu.Unlock()
			return nil, sk
		}
		w := &waiter{k: k, b: b, ready: make(chan struct{})}
		s.queue = append(s.queue, w)
		ok := s.awaitUnlock(ctx, w, wait)
		if !w.granted {
			s.queue = slices.DeleteFunc(s.queue, func(q *waiter) bool { return q == w })
			s.mu.Unlock()
			if !ok && ctx.Err() != nil {
				return nil, goneSkip(llm.SkipBusy, id)
			}
			return nil, busySkip(k, b, wait)
		}
		// The slot came, maybe just as the wait ran out: it is used.
		if ctx.Err() != nil {
			s.giveBackLocked(k, b)
			s.mu.Unlock()
			return nil, goneSkip(llm.SkipBusy, id)
		}
	}
	// A slot is held; now a token, within what is left of the wait.
	now := s.clock.Now()
	left := wait - now.Sub(start)
	due, late := max(k.due(now), b.due(now)), k
	if b.due(now) > k.due(now) {
		late = b
	}
	if due == 0 {
		allow(k, now)
		allow(b, now)
		s.mu.Unlock()
		return s.releaser(k, b), nil
	}
	if due > left {
		s.giveBackLocked(k, b)
		s.mu.Unlock()
		return nil, &llm.Skip{Word: llm.SkipPaced, Class: llm.RateLimited, Until: now.Add(due),
			Reason: fmt.Sprintf("%s: paced to %s; the next request may start in %s, past the %s queue wait",
				late.name, late.rateText(), due.Round(time.Millisecond), wait)}
	}
	rk, rb := reserve(k, now), reserve(b, now)
	due = max(delay(rk, now), delay(rb, now))
	ok := s.awaitUnlock(ctx, nil, due)
	if !ok {
		now := s.clock.Now()
		cancel(rk, now)
		cancel(rb, now)
		s.giveBackLocked(k, b)
		s.mu.Unlock()
		return nil, goneSkip(llm.SkipPaced, id)
	}
	s.mu.Unlock()
	return s.releaser(k, b), nil
}

// awaitUnlock counts the caller as waiting, unlocks s.mu and waits for
// w's slot (w nil: for none), for d on the clock, or for ctx; it reports
// false only when ctx ended first. The timer is armed before the lock is
// let go, so whoever sees the request waiting may move the clock past it.
// The caller holds s.mu again when it returns.
func (s *Shaper) awaitUnlock(ctx context.Context, w *waiter, d time.Duration) bool {
	t, fired := s.clock.NewTimer(d)
	wt := &wait{w: w, until: s.clock.Now().Add(d)}
	s.waits = append(s.waits, wt)
	s.mu.Unlock()
	defer func() {
		t.Stop()
		s.mu.Lock()
		s.waits = slices.DeleteFunc(s.waits, func(x *wait) bool { return x == wt })
	}()
	var ready <-chan struct{}
	if w != nil {
		ready = w.ready
	}
	select {
	case <-ready:
		return true
	case <-fired:
		return true
	case <-ctx.Done():
		return false
	}
}

// releaser returns the function that gives k's and b's slots back, once.
func (s *Shaper) releaser(k, b *scope) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.giveBackLocked(k, b)
		})
	}
}

func take(k, b *scope) {
	for _, sc := range [2]*scope{k, b} {
		if sc != nil {
			sc.active++
		}
	}
}

// giveBackLocked frees k's and b's slots and starts who can start now.
func (s *Shaper) giveBackLocked(k, b *scope) {
	for _, sc := range [2]*scope{k, b} {
		if sc != nil {
			sc.active--
		}
	}
	s.dispatchLocked()
}

// dispatchLocked gives free slots to the queued requests, oldest first. A
// request whose backend is still full does not hold up one behind it that
// waits for another backend of the same key.
func (s *Shaper) dispatchLocked() {
	s.queue = slices.DeleteFunc(s.queue, func(w *waiter) bool {
		if !w.k.free() || !w.b.free() {
			return false
		}
		take(w.k, w.b)
		w.granted = true
		close(w.ready)
		return true
	})
}

// allow takes a token that due said is there.
func allow(sc *scope, now time.Time) {
	if sc != nil && sc.bucket != nil {
		sc.bucket.AllowN(now, 1)
	}
}

func reserve(sc *scope, now time.Time) *rate.Reservation {
	if sc == nil || sc.bucket == nil {
		return nil
	}
	return sc.bucket.ReserveN(now, 1)
}

func delay(r *rate.Reservation, now time.Time) time.Duration {
	if r == nil {
		return 0
	}
	return r.DelayFrom(now)
}

func cancel(r *rate.Reservation, now time.Time) {
	if r != nil {
		r.CancelAt(now)
	}
}

// busySkip is the skip of a request that found no slot within wait.
func busySkip(k, b *scope, wait time.Duration) *llm.Skip {
	full := b
	if !k.free() {
		full = k
	}
	reason := fmt.Sprintf("%s: %d requests already in flight (concurrency limit %d)", full.name, full.active, full.conc)
	if wait > 0 {
		reason += fmt.Sprintf("; none finished within the %s queue wait", wait)
	}
	return &llm.Skip{Word: llm.SkipBusy, Class: llm.RateLimited, Reason: reason}
}

// goneSkip is the skip of a request whose client went away while it
// waited.
func goneSkip(w llm.SkipWord, id llm.BackendID) *llm.Skip {
	return &llm.Skip{Word: w, Class: llm.Cancelled, Reason: "the client went away while waiting for " + id.String()}
}
