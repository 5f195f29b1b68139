package breaker_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/events"
	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
)

var t0 = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

const (
	prov = "groq"
	be   = "groq/llama-3.3-70b"
)

// recPub records every published event.
type recPub struct {
	mu  sync.Mutex
	evs []events.Event
}

func (p *recPub) Publish(e events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = append(p.evs, e)
}

func (p *recPub) all() []events.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]events.Event(nil), p.evs...)
}

func (p *recPub) of(k events.Kind) []events.Event {
	var out []events.Event
	for _, e := range p.all() {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func (p *recPub) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = nil
}

// env is a Set on a manual clock with a recording publisher.
type env struct {
	t     *testing.T
	s     *breaker.Set
	clock *clocktest.Clock
	pub   *recPub

	mu   sync.Mutex
	seen map[uint64]bool // tickets handed out
}

func newEnv(t *testing.T, s breaker.Settings) *env {
	t.Helper()
	clock := clocktest.New(t0)
	pub := &recPub{}
	return &env{t: t, s: breaker.New(s, clock, pub), clock: clock, pub: pub}
}

func (e *env) now() time.Time { return e.clock.Now() }

// bid is the backend a test names by its provider and text form; the two
// must agree.
func bid(provider, name string) llm.BackendID {
	id, err := llm.ParseBackendID(name)
	if err != nil || id.Provider != provider {
		panic(fmt.Sprintf("test names backend %q of provider %q", name, provider))
	}
	return id
}

// Failures of every class the breaker tells apart.
func e503() *llm.Error {
	return &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503: overloaded"}
}
func timeout() *llm.Error {
	return &llm.Error{Class: llm.Transient, Sub: llm.SubTimeout, Message: "first token timeout after 20s"}
}
func connect() *llm.Error {
	return &llm.Error{Class: llm.Transient, Sub: llm.SubConnect, Message: "connection refused"}
}
func empty() *llm.Error     { return llm.SoftError(llm.SubEmpty, "empty answer") }
func malformed() *llm.Error { return llm.SoftError(llm.SubMalformed, "unparseable body") }
func quota() *llm.Error     { return llm.SoftError(llm.SubQuota, "quota exceeded") }
func limited(d time.Duration) *llm.Error {
	return &llm.Error{Class: llm.RateLimited, Status: 429, Message: "HTTP 429: slow down", RetryAfter: d}
}
func credential() *llm.Error {
	return &llm.Error{Class: llm.Credential, Status: 401, Message: "HTTP 401: Invalid API Key"}
}
func gone() *llm.Error {
	return &llm.Error{Class: llm.Gone, Status: 404, Message: "HTTP 404: model decommissioned"}
}

// errOf is a skip as an error, nil for none.
func errOf(s *llm.Skip) error {
	if s == nil {
		return nil
	}
	return s
}

// why returns the reason and time of an Available/Acquire error, "" for nil.
func why(t *testing.T, err error) (breaker.Reason, time.Time, *breaker.Unavailable) {
	t.Helper()
	if err == nil {
		return "", time.Time{}, nil
	}
	var u *breaker.Unavailable
	if !errors.As(err, &u) {
		t.Fatalf("error %T %v is not an *Unavailable", err, err)
	}
	return u.Reason, u.Until, u
}

// avail checks Available(provider, name): reason "" means available; until
// is checked when reason is set (zero means "no time").
func (e *env) avail(provider, name string, reason breaker.Reason, until time.Time) *breaker.Unavailable {
	e.t.Helper()
	r, u, un := why(e.t, errOf(e.s.Available(bid(provider, name))))
	if r != reason {
		e.t.Fatalf("at +%v Available(%s) = %q, want %q", e.now().Sub(t0), name, r, reason)
	}
	if reason != "" && !u.Equal(until) {
		e.t.Fatalf("at +%v Available(%s) until = %v, want %v", e.now().Sub(t0), name, u, until)
	}
	return un
}

// acquire calls Acquire and checks the ticket contract: a granted call gets
// a ticket no other call got (never 0, which means "not acquired"), a
// refused one gets 0. It uses Errorf, so goroutines may call it.
func (e *env) acquire(provider, name string) (uint64, error) {
	e.t.Helper()
	ticket, err := e.s.Acquire(bid(provider, name))
	switch {
	case err != nil && ticket != 0:
		e.t.Errorf("Acquire(%s) refused (%v) with ticket %d, want 0", name, err, ticket)
	case err == nil && ticket == 0:
		e.t.Errorf("Acquire(%s) admitted with ticket 0, the ticket of calls made without Acquire", name)
	case err == nil:
		e.mu.Lock()
		if e.seen == nil {
			e.seen = map[uint64]bool{}
		}
		if e.seen[ticket] {
			e.t.Errorf("Acquire(%s) handed out ticket %d twice", name, ticket)
		}
		e.seen[ticket] = true
		e.mu.Unlock()
	}
	return ticket, err
}

// admit acquires name, which must be admitted, and returns its ticket.
func (e *env) admit(provider, name string) uint64 {
	e.t.Helper()
	ticket, err := e.acquire(provider, name)
	if err != nil {
		e.t.Fatalf("at +%v Acquire(%s) = %v, want admitted", e.now().Sub(t0), name, err)
	}
	return ticket
}

// refused returns the error of an Acquire that must be refused.
func (e *env) refused(provider, name string) error {
	e.t.Helper()
	_, err := e.acquire(provider, name)
	if err == nil {
		e.t.Fatalf("at +%v Acquire(%s) admitted, want refused", e.now().Sub(t0), name)
	}
	return err
}

// call acquires name (which must be admitted) and reports the outcome with
// its ticket.
func (e *env) call(provider, name string, le *llm.Error, firstByte time.Duration) {
	e.t.Helper()
	e.s.Report(bid(provider, name), e.admit(provider, name), le, firstByte)
}

func (e *env) status(name string) breaker.Status { return e.s.Status(bid(prov, name)) }

func (e *env) state(name string) breaker.State { return e.status(name).State }

func (e *env) wantState(name string, want breaker.State) {
	e.t.Helper()
	if got := e.state(name); got != want {
		e.t.Fatalf("at +%v state of %s = %s, want %s", e.now().Sub(t0), name, got, want)
	}
}

func (e *env) wantHealth(name string, want float64) {
	e.t.Helper()
	if got := e.status(name).Health; math.Abs(got-want) > 1e-9 {
		e.t.Fatalf("health of %s = %.10f, want %.10f", name, got, want)
	}
}

// tripByTraffic reports 503s on a closed backend until it opens and returns
// how many it took (at most max).
func (e *env) tripByTraffic(name string, max int) int {
	e.t.Helper()
	for n := 1; n <= max; n++ {
		e.call(prov, name, e503(), 0)
		if e.state(name) == breaker.Open {
			return n
		}
	}
	e.t.Fatalf("%s still %s after %d failures", name, e.state(name), max)
	return 0
}

// recover lets the open time of name pass and closes it with a trial.
func (e *env) recover(name string) {
	e.t.Helper()
	until := e.status(name).OpenUntil
	if d := until.Sub(e.now()); d > 0 {
		e.clock.Advance(d)
	}
	e.wantState(name, breaker.HalfOpen)
	e.call(prov, name, nil, 100*time.Millisecond)
	e.wantState(name, breaker.Closed)
}

func TestUnknownBackendIsAvailable(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.avail(prov, be, "", time.Time{})
	e.admit(prov, be)
	st := e.status(be)
	if st.State != breaker.Closed || st.Health != 1 || st.Failures != 0 || st.Level != 0 || st.Backend != be || st.Provider != prov {
		t.Fatalf("fresh Status = %+v", st)
	}
	// A Set with the wall clock and no publisher works too.
	s := breaker.New(breaker.Settings{}, nil, nil)
	if err := s.Available(bid(prov, be)); err != nil {
		t.Fatal(err)
	}
	// Calls made without Acquire report ticket 0; on a closed backend
	// they count like any other.
	s.Report(bid(prov, be), 0, e503(), 0)
	s.Report(bid(prov, be), 0, e503(), 0)
	if r, _, _ := why(t, errOf(s.Available(bid(prov, be)))); r != breaker.ReasonOpen {
		t.Fatalf("system clock set: reason %q after two failures, want open", r)
	}
	if len(e.pub.all()) != 0 {
		t.Fatalf("events for a backend nothing happened to: %+v", e.pub.all())
	}
}

func TestFailuresInARowTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings breaker.Settings
		fails    []*llm.Error
	}{
		{"defaults 5xx", breaker.Settings{}, []*llm.Error{e503(), e503()}},
		{"defaults timeout", breaker.Settings{}, []*llm.Error{timeout(), timeout()}},
		{"defaults connect", breaker.Settings{}, []*llm.Error{connect(), connect()}},
		// Soft failures alone keep health above 0.6 after two (0.775, 0.606):
		// it is the count that trips.
		{"defaults soft empty", breaker.Settings{}, []*llm.Error{empty(), empty()}},
		{"defaults mixed", breaker.Settings{}, []*llm.Error{empty(), e503()}},
		// A threshold low enough that health never trips isolates the count.
		{"three in a row", breaker.Settings{Failures: 3, HealthThreshold: 0.01}, []*llm.Error{e503(), timeout(), malformed()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.settings)
			for i, f := range tc.fails {
				e.avail(prov, be, "", time.Time{})
				e.clock.Advance(time.Second)
				e.call(prov, be, f, 0)
				if i < len(tc.fails)-1 {
					e.wantState(be, breaker.Closed)
					if got := e.status(be).Failures; got != i+1 {
						t.Fatalf("Failures = %d after %d failures", got, i+1)
					}
				}
			}
			until := e.now().Add(30 * time.Second)
			u := e.avail(prov, be, breaker.ReasonOpen, until)
			last := tc.fails[len(tc.fails)-1].Message
			if u.RateLimited() {
				t.Error("an open breaker reports RateLimited")
			}
			if want := fmt.Sprintf("%d failures in a row", len(tc.fails)); !strings.Contains(u.Detail, want) || !strings.Contains(u.Detail, last) {
				t.Errorf("Detail = %q, want %q and the last failure %q", u.Detail, want, last)
			}
			if !strings.HasPrefix(u.Error(), "open until 12:00:") || !strings.Contains(u.Error(), u.Detail) {
				t.Errorf("Error() = %q", u.Error())
			}
			if r, _, _ := why(t, e.refused(prov, be)); r != breaker.ReasonOpen {
				t.Fatalf("Acquire on an open backend refused with %q, want open", r)
			}
			// Other backends, also of the same provider, are not affected.
			e.avail(prov, "groq/other", "", time.Time{})

			// Open -> half-open exactly when the open time ends.
			e.clock.Advance(30*time.Second - time.Nanosecond)
			e.avail(prov, be, breaker.ReasonOpen, until)
			e.wantState(be, breaker.Open)
			e.clock.Advance(time.Nanosecond)
			e.avail(prov, be, "", time.Time{})
			e.wantState(be, breaker.HalfOpen)
		})
	}
}

func TestSuccessResetsTheCount(t *testing.T) {
	e := newEnv(t, breaker.Settings{HealthThreshold: 0.01})
	for range 10 {
		e.call(prov, be, e503(), 0)
		e.clock.Advance(time.Second)
		e.call(prov, be, nil, 0)
		e.wantState(be, breaker.Closed)
		if f := e.status(be).Failures; f != 0 {
			t.Fatalf("Failures = %d after a success", f)
		}
	}
	e.call(prov, be, e503(), 0)
	e.call(prov, be, e503(), 0)
	e.avail(prov, be, breaker.ReasonOpen, e.now().Add(30*time.Second))

	// With the default threshold too: failures spaced by enough successes
	// never trip, however many.
	e = newEnv(t, breaker.Settings{})
	for range 20 {
		e.call(prov, be, e503(), 0)
		for range 3 {
			e.call(prov, be, nil, 0)
		}
	}
	e.wantState(be, breaker.Closed)
}

func TestHalfOpenAdmitsOneTrial(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.tripByTraffic(be, 2)
	e.clock.Advance(30 * time.Second)

	// Available does not take the slot, however often it is asked.
	for range 3 {
		e.avail(prov, be, "", time.Time{})
	}
	trial := e.admit(prov, be)
	for range 3 {
		r, until, u := why(t, e.refused(prov, be))
		if r != breaker.ReasonHalfOpen || !until.IsZero() || u.RateLimited() {
			t.Fatalf("second Acquire = %v, want half_open without a time", u)
		}
		if !strings.HasPrefix(u.Error(), "half_open (") {
			t.Errorf("Error() = %q", u.Error())
		}
	}
	e.avail(prov, be, breaker.ReasonHalfOpen, time.Time{})
	e.avail(prov, "groq/other", "", time.Time{})

	// The trial succeeds: closed, health starts again from 0.7.
	e.s.Report(bid(prov, be), trial, nil, 100*time.Millisecond)
	e.wantState(be, breaker.Closed)
	e.wantHealth(be, 0.7)
	if st := e.status(be); st.Failures != 0 || !st.ClosedAt.Equal(e.now()) {
		t.Fatalf("after recovery Status = %+v", st)
	}
	for range 3 {
		e.admit(prov, be)
	}
}

func TestTrialFailureReopensForTheSameTime(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.tripByTraffic(be, 2)
	for i := range 5 {
		e.clock.Advance(30 * time.Second)
		e.call(prov, be, e503(), 0)
		until := e.now().Add(30 * time.Second)
		e.avail(prov, be, breaker.ReasonOpen, until)
		u := e.avail(prov, be, breaker.ReasonOpen, until)
		if !strings.Contains(u.Detail, "trial") {
			t.Errorf("Detail = %q, want it to say the trial failed", u.Detail)
		}
		if st := e.status(be); st.Level != 0 {
			t.Fatalf("failed trial %d raised the level to %d", i+1, st.Level)
		}
	}
	// A soft failure of the trial re-opens it too.
	e.clock.Advance(30 * time.Second)
	e.call(prov, be, empty(), 0)
	e.avail(prov, be, breaker.ReasonOpen, e.now().Add(30*time.Second))

	// A failed trial is not flapping even soon after a recovery: with a
	// long FlapWindow, trials failing within it keep the level.
	e = newEnv(t, breaker.Settings{FlapWindow: time.Hour})
	e.tripByTraffic(be, 2)
	e.recover(be)
	e.clock.Advance(time.Minute)
	e.tripByTraffic(be, 2) // flapping: level 1, 5 min
	for range 3 {
		e.clock.Advance(5 * time.Minute)
		e.call(prov, be, e503(), 0)
		if st := e.status(be); st.Level != 1 || st.OpenUntil.Sub(e.now()) != 5*time.Minute {
			t.Fatalf("failed trial: level %d open for %v, want 1 and 5m", st.Level, st.OpenUntil.Sub(e.now()))
		}
	}
}

// outage runs a free tier's typical outage against the breaker alone: the primary
// fails for outage while a request arrives every step; it returns how many
// trial (half-open) calls it got during the outage, how many open periods
// there were, and how long after the outage the primary served again.
func outage(t *testing.T, outage, step time.Duration) (trials, periods int, back time.Duration) {
	t.Helper()
	e := newEnv(t, breaker.Settings{})
	end := t0.Add(outage)
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("the primary never served again")
		}
		now := e.now()
		if ticket, err := e.acquire(prov, be); err == nil {
			wasHalfOpen := e.state(be) == breaker.HalfOpen
			if now.Before(end) {
				if wasHalfOpen {
					trials++
				}
				e.s.Report(bid(prov, be), ticket, e503(), 0)
			} else {
				e.s.Report(bid(prov, be), ticket, nil, 100*time.Millisecond)
				e.wantState(be, breaker.Closed)
				back = now.Sub(end)
				break
			}
		}
		e.clock.Advance(step)
	}
	for _, ev := range e.pub.of(events.StateChange) {
		if ev.To == string(breaker.Open) {
			periods++
		}
	}
	return trials, periods, back
}

func TestStaysDownRetriedOncePerPeriod(t *testing.T) {
	for _, step := range []time.Duration{4 * time.Second, time.Second, 100 * time.Millisecond} {
		t.Run(step.String(), func(t *testing.T) {
			trials, periods, back := outage(t, 60*time.Second, step)
			if periods == 0 || trials > periods {
				t.Errorf("%d trial calls in %d open periods, want at most one per period", trials, periods)
			}
			// 60 s of outage with 30 s periods: tripped, one failed trial,
			// then the trial that finds it back.
			if periods != 2 || trials != 1 {
				t.Errorf("periods %d trials %d, want 2 and 1", periods, trials)
			}
			if back > 30*time.Second {
				t.Errorf("served again %v after the outage, want within 30s", back)
			}
		})
	}
}

func TestFlappingGrowsTheOpenTime(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	openFor := func(want time.Duration, level int) {
		t.Helper()
		st := e.status(be)
		if st.State != breaker.Open || st.OpenUntil.Sub(e.now()) != want || st.Level != level {
			t.Fatalf("at +%v: %s for %v at level %d, want open for %v at level %d",
				e.now().Sub(t0), st.State, st.OpenUntil.Sub(e.now()), st.Level, want, level)
		}
	}
	e.tripByTraffic(be, 2)
	openFor(30*time.Second, 0)
	e.recover(be)
	// Failing again within FlapWindow of recovering: 5 min.
	e.clock.Advance(time.Minute)
	e.tripByTraffic(be, 2)
	openFor(5*time.Minute, 1)
	e.recover(be)
	e.clock.Advance(5*time.Minute - time.Nanosecond)
	e.tripByTraffic(be, 2)
	openFor(30*time.Minute, 2)
	// Capped at the longest.
	e.recover(be)
	e.clock.Advance(time.Second)
	e.tripByTraffic(be, 2)
	openFor(30*time.Minute, 2)
	// A failed trial keeps the level.
	e.clock.Advance(30 * time.Minute)
	e.call(prov, be, e503(), 0)
	openFor(30*time.Minute, 2)

	// A healthy stretch closed steps the level down, one step per stretch.
	e.recover(be)
	e.clock.Advance(10*time.Minute - time.Nanosecond)
	if l := e.status(be).Level; l != 2 {
		t.Fatalf("level %d just before the healthy stretch, want 2", l)
	}
	e.clock.Advance(time.Nanosecond)
	if l := e.status(be).Level; l != 1 {
		t.Fatalf("level %d after one healthy stretch, want 1", l)
	}
	e.clock.Advance(10*time.Minute - time.Nanosecond)
	if l := e.status(be).Level; l != 1 {
		t.Fatalf("level %d before the second stretch, want 1", l)
	}
	e.clock.Advance(time.Nanosecond)
	if l := e.status(be).Level; l != 0 {
		t.Fatalf("level %d after two healthy stretches, want 0", l)
	}
	e.clock.Advance(time.Hour)
	if l := e.status(be).Level; l != 0 {
		t.Fatalf("level %d, never below 0", l)
	}
	// Long after recovering, a trip is not flapping: the shortest time.
	e.tripByTraffic(be, 2)
	openFor(30*time.Second, 0)
}

func TestFailingLongAfterRecoveryIsNotFlapping(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.tripByTraffic(be, 2)
	e.recover(be)
	e.clock.Advance(time.Minute)
	e.tripByTraffic(be, 2)
	e.recover(be)
	// Level 1 now; a trip exactly FlapWindow after recovering keeps it.
	e.clock.Advance(5 * time.Minute)
	e.tripByTraffic(be, 2)
	if st := e.status(be); st.Level != 1 || st.OpenUntil.Sub(e.now()) != 5*time.Minute {
		t.Fatalf("level %d open for %v, want 1 and 5m", st.Level, st.OpenUntil.Sub(e.now()))
	}
}

// The level is a function of how long the backend stayed closed, not of
// how often somebody looked at it.
func TestHealthyStretchesCountWithoutLookups(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.tripByTraffic(be, 2)
	e.recover(be)
	e.clock.Advance(time.Minute)
	e.tripByTraffic(be, 2)
	e.recover(be)
	e.clock.Advance(time.Minute)
	e.tripByTraffic(be, 2)
	e.recover(be) // level 2, closed now
	// Nobody asks about the backend for two healthy stretches.
	e.clock.Advance(20 * time.Minute)
	e.tripByTraffic(be, 2)
	st := e.status(be)
	if st.Level != 0 || st.OpenUntil.Sub(e.now()) != 30*time.Second {
		t.Fatalf("after 20m closed without lookups: level %d, open for %v; want level 0, 30s (two stretches, two steps)",
			st.Level, st.OpenUntil.Sub(e.now()))
	}
}

func TestHealthPenalties(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     *llm.Error
		penalty float64
	}{
		{"timeout", timeout(), 0},
		{"5xx", e503(), 0},
		{"connect", connect(), 0},
		{"rate limited", limited(time.Second), 0.3},
		{"empty", empty(), 0.1},
		{"malformed", malformed(), 0.2},
		{"quota", quota(), 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, breaker.Settings{Failures: 5})
			e.call(prov, be, nil, 0)
			e.wantHealth(be, 1)
			e.call(prov, be, tc.err, 0)
			e.wantHealth(be, 0.75+0.25*tc.penalty)
			e.wantState(be, breaker.Closed)
		})
	}
}

func TestHealthEWMA(t *testing.T) {
	e := newEnv(t, breaker.Settings{Failures: 5})
	h := 1.0
	for i, o := range []struct {
		err   *llm.Error
		score float64
	}{
		{nil, 1}, {e503(), 0}, {nil, 1}, {empty(), 0.1}, {nil, 1}, {quota(), 0.3},
	} {
		e.call(prov, be, o.err, 0)
		h = 0.25*o.score + 0.75*h
		e.wantHealth(be, h)
		e.wantState(be, breaker.Closed)
		if i == 1 {
			e.wantHealth(be, 0.75)
		}
	}
	e.wantHealth(be, 0.6193359375) // the sequence above, worked by hand
	if f := e.status(be).Failures; f != 1 {
		t.Fatalf("Failures = %d, want 1", f)
	}
	// One more failure brings health below 0.6: it trips with 2 failures in
	// a row, fewer than Settings.Failures.
	e.call(prov, be, malformed(), 0)
	e.wantHealth(be, 0.514501953125)
	u := e.avail(prov, be, breaker.ReasonOpen, e.now().Add(30*time.Second))
	if !strings.Contains(u.Detail, "health") || !strings.Contains(u.Detail, "unparseable body") {
		t.Errorf("Detail = %q, want the health and the last failure", u.Detail)
	}
}

func TestHealthTripsBeforeTheCount(t *testing.T) {
	e := newEnv(t, breaker.Settings{Failures: 5})
	e.call(prov, be, e503(), 0) // 0.75
	e.wantState(be, breaker.Closed)
	e.call(prov, be, nil, 0)     // 0.8125
	e.call(prov, be, empty(), 0) // 0.634375
	e.wantState(be, breaker.Closed)
	e.call(prov, be, malformed(), 0) // 0.52578125, 2 failures in a row
	e.wantHealth(be, 0.52578125)
	e.wantState(be, breaker.Open)
}

func TestRateLimitCoolsDownButNeverTrips(t *testing.T) {
	t.Run("retry-after", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		e.call(prov, be, limited(120*time.Second), 0)
		until := t0.Add(120 * time.Second)
		u := e.avail(prov, be, breaker.ReasonCooling, until)
		if !u.RateLimited() || u.Detail != "HTTP 429: slow down" || !strings.HasPrefix(u.Error(), "cooling until 12:02:00") {
			t.Fatalf("Unavailable = %+v (%q)", u, u.Error())
		}
		if r, _, _ := why(t, e.refused(prov, be)); r != breaker.ReasonCooling {
			t.Fatalf("Acquire on a cooling backend refused with %q, want cooling", r)
		}
		e.avail(prov, "groq/other", "", time.Time{})
		e.clock.Advance(120*time.Second - time.Nanosecond)
		e.avail(prov, be, breaker.ReasonCooling, until)
		e.clock.Advance(time.Nanosecond)
		e.avail(prov, be, "", time.Time{})
		ev := e.pub.of(events.Cooldown)
		if len(ev) != 1 || !ev[0].Until.Equal(until) || ev[0].Backend != be || ev[0].Provider != prov || !ev[0].Time.Equal(t0) {
			t.Fatalf("cooldown events = %+v", ev)
		}
	})
	for _, tc := range []struct {
		name     string
		settings breaker.Settings
		want     []time.Duration // the rest after each 429 in a row
	}{
		{"default cooldown doubles from 5s to 60s", breaker.Settings{},
			[]time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 60 * time.Second, 60 * time.Second}},
		{"configured cap", breaker.Settings{RateLimitCooldown: 5 * time.Minute},
			[]time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute}},
		{"cap below 5s", breaker.Settings{RateLimitCooldown: 2 * time.Second},
			[]time.Duration{2 * time.Second, 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.settings)
			for _, want := range tc.want {
				start := e.now()
				e.call(prov, be, limited(0), 0)
				e.avail(prov, be, breaker.ReasonCooling, start.Add(want))
				e.clock.Advance(want - time.Nanosecond)
				e.avail(prov, be, breaker.ReasonCooling, start.Add(want))
				e.clock.Advance(time.Nanosecond)
				e.avail(prov, be, "", time.Time{})
			}
		})
	}
	t.Run("a success starts the doubling again", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		for _, want := range []time.Duration{5 * time.Second, 10 * time.Second} {
			start := e.now()
			e.call(prov, be, limited(0), 0)
			e.avail(prov, be, breaker.ReasonCooling, start.Add(want))
			e.clock.Advance(want)
		}
		e.call(prov, be, nil, time.Millisecond)
		start := e.now()
		e.call(prov, be, limited(0), 0)
		e.avail(prov, be, breaker.ReasonCooling, start.Add(5*time.Second))
	})
	t.Run("a 429 that says how long does not count", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		e.call(prov, be, limited(0), 0)
		e.clock.Advance(5 * time.Second)
		e.call(prov, be, limited(30*time.Second), 0)
		e.clock.Advance(30 * time.Second)
		start := e.now()
		e.call(prov, be, limited(0), 0)
		e.avail(prov, be, breaker.ReasonCooling, start.Add(10*time.Second))
	})
	t.Run("three in a row lower health and do not trip", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		for i, h := range []float64{0.825, 0.69375, 0.5953125} {
			e.call(prov, be, limited(time.Second), 0)
			e.wantHealth(be, h)
			if st := e.status(be); st.State != breaker.Closed || st.Failures != 0 {
				t.Fatalf("after %d rate limits: %s with %d failures, want closed with 0", i+1, st.State, st.Failures)
			}
			e.avail(prov, be, breaker.ReasonCooling, e.now().Add(time.Second))
			e.clock.Advance(time.Second)
		}
		e.avail(prov, be, "", time.Time{})
		if ev := e.pub.of(events.StateChange); len(ev) != 0 {
			t.Fatalf("rate limits changed the state: %+v", ev)
		}
	})
	t.Run("a later 429 sets a new cooldown", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		e.call(prov, be, limited(time.Minute), 0)
		e.clock.Advance(10 * time.Second)
		// A call made while it cooled (every backend was unavailable, so
		// without Acquire) reports ticket 0.
		e.s.Report(bid(prov, be), 0, limited(5*time.Second), 0)
		e.avail(prov, be, breaker.ReasonCooling, t0.Add(15*time.Second))
	})
	t.Run("a rate-limited trial closes the breaker and cools", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		e.tripByTraffic(be, 2)
		e.clock.Advance(30 * time.Second)
		e.call(prov, be, limited(time.Minute), 0)
		e.wantState(be, breaker.Closed)
		e.avail(prov, be, breaker.ReasonCooling, e.now().Add(time.Minute))
	})
}

func TestOpenWinsOverCooling(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.call(prov, be, limited(5*time.Minute), 0)
	// Cooling: later calls are made without Acquire.
	e.s.Report(bid(prov, be), 0, e503(), 0)
	e.s.Report(bid(prov, be), 0, e503(), 0)
	e.avail(prov, be, breaker.ReasonOpen, t0.Add(30*time.Second))
	e.clock.Advance(30 * time.Second)
	e.avail(prov, be, breaker.ReasonCooling, t0.Add(5*time.Minute))
}

func TestTooSlow(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	// Nine successes are not enough to judge: 1 s is not "too slow" yet.
	for i := range 9 {
		e.call(prov, be, nil, time.Duration(96+i)*time.Millisecond)
	}
	e.call(prov, be, nil, time.Second)
	e.wantHealth(be, 1)

	e = newEnv(t, breaker.Settings{})
	for i := range 10 {
		e.call(prov, be, nil, time.Duration(96+i)*time.Millisecond) // median about 100 ms
	}
	e.wantHealth(be, 1)
	e.call(prov, be, nil, 400*time.Millisecond) // above 3x the median: scores 0.6
	e.wantHealth(be, 0.9)
	e.call(prov, be, nil, 250*time.Millisecond) // below 3x: scores 1
	e.wantHealth(be, 0.925)
	// An unknown latency (zero) is never slow.
	e.call(prov, be, nil, 0)
	e.wantHealth(be, 0.94375)
	// Slow successes are successes: they never trip, and they reset the count.
	e.call(prov, be, e503(), 0)
	for range 20 {
		e.call(prov, be, nil, time.Hour)
	}
	e.wantState(be, breaker.Closed)
	if f := e.status(be).Failures; f != 0 {
		t.Fatalf("Failures = %d after slow successes", f)
	}

	// Configured: factor 2, 3 samples.
	e = newEnv(t, breaker.Settings{SlowFactor: 2, SlowSamples: 3})
	for range 3 {
		e.call(prov, be, nil, 100*time.Millisecond)
	}
	e.call(prov, be, nil, 250*time.Millisecond)
	e.wantHealth(be, 0.9)

	// Once the window is full the median follows the backend's new usual
	// latency within a few samples: 64 successes at 100 ms, then 40 at 1 s,
	// and 1.5 s is no longer slow, while 4 s is.
	e = newEnv(t, breaker.Settings{})
	for range 64 {
		e.call(prov, be, nil, 100*time.Millisecond)
	}
	for range 40 {
		e.call(prov, be, nil, time.Second)
	}
	// Health moves a quarter of the way to each call's score: 1, or 0.6
	// for a slow success.
	h := e.status(be).Health
	e.call(prov, be, nil, 1500*time.Millisecond)
	e.wantHealth(be, 0.75*h+0.25)
	e.call(prov, be, nil, 4*time.Second)
	e.wantHealth(be, 0.75*(0.75*h+0.25)+0.25*0.6)
}

func TestCredentialDisablesTheProvidersKey(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings breaker.Settings
		want     time.Duration
	}{
		{"default", breaker.Settings{}, time.Hour},
		{"configured", breaker.Settings{CredentialCooldown: 10 * time.Minute}, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.settings)
			e.call("groq", "groq/a", credential(), 0)
			until := t0.Add(tc.want)
			for _, b := range []string{"groq/a", "groq/b", "groq/never-seen"} {
				u := e.avail("groq", b, breaker.ReasonKeyOff, until)
				if u.RateLimited() || u.Detail != "HTTP 401: Invalid API Key" {
					t.Errorf("Unavailable = %+v", u)
				}
				if r, _, _ := why(t, e.refused("groq", b)); r != breaker.ReasonKeyOff {
					t.Fatalf("Acquire(%s) with a disabled key refused with %q, want key_disabled", b, r)
				}
			}
			// Another provider serving a model of the same name is fine.
			e.avail("cerebras", "cerebras/a", "", time.Time{})
			// The key's failure says nothing about the backend's health.
			if st := e.s.Status(bid("groq", "groq/a")); st.State != breaker.Closed || st.Health != 1 || !st.KeyOffUntil.Equal(until) {
				t.Fatalf("Status = %+v", st)
			}
			ev := e.pub.of(events.KeyDisabled)
			if len(ev) != 1 || ev[0].Level != events.Alert || ev[0].Provider != "groq" || !ev[0].Until.Equal(until) ||
				!strings.Contains(ev[0].Reason, "Invalid API Key") {
				t.Fatalf("key events = %+v, want one alert", ev)
			}
			// Successes elsewhere do not re-enable the key.
			e.s.Report(bid("groq", "groq/b"), 0, nil, 0)
			e.avail("groq", "groq/b", breaker.ReasonKeyOff, until)

			e.clock.Advance(tc.want - time.Nanosecond)
			e.avail("groq", "groq/a", breaker.ReasonKeyOff, until)
			e.clock.Advance(time.Nanosecond)
			for _, b := range []string{"groq/a", "groq/b"} {
				e.avail("groq", b, "", time.Time{})
			}
		})
	}
}

func TestGoneRetiresTheBackend(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.call(prov, be, gone(), 0)
	u := e.avail(prov, be, breaker.ReasonRetired, time.Time{})
	if u.RateLimited() || !strings.Contains(u.Detail, "decommissioned") {
		t.Errorf("Unavailable = %+v", u)
	}
	if r, _, _ := why(t, e.refused(prov, be)); r != breaker.ReasonRetired {
		t.Fatalf("Acquire on a retired backend refused with %q, want retired", r)
	}
	e.avail(prov, "groq/other", "", time.Time{})
	if st := e.status(be); !st.Retired || !st.RetiredAt.Equal(t0) {
		t.Fatalf("Status = %+v", st)
	}
	ev := e.pub.of(events.Retired)
	if len(ev) != 1 || ev[0].Level != events.Warn || ev[0].Backend != be || !strings.Contains(ev[0].Reason, "decommissioned") {
		t.Fatalf("retired events = %+v", ev)
	}
	// Retired wins over an open breaker and a cooldown.
	// (Calls to a retired backend are made without Acquire: ticket 0.)
	e.s.Report(bid(prov, be), 0, limited(time.Minute), 0)
	e.s.Report(bid(prov, be), 0, e503(), 0)
	e.s.Report(bid(prov, be), 0, e503(), 0)
	e.avail(prov, be, breaker.ReasonRetired, time.Time{})
	// A second 404 does not announce it again.
	e.s.Report(bid(prov, be), 0, gone(), 0)
	if n := len(e.pub.of(events.Retired)); n != 1 {
		t.Fatalf("%d retired events", n)
	}

	// A passing probe restores it at once.
	e.clock.Advance(time.Hour)
	e.s.ProbeResult(bid(prov, be), nil)
	if e.status(be).Retired {
		t.Fatal("still retired after a passing probe")
	}
	if r, _, _ := why(t, errOf(e.s.Available(bid(prov, be)))); r == breaker.ReasonRetired {
		t.Fatal("Available still says retired")
	}
	ev = e.pub.of(events.Restored)
	if len(ev) != 1 || ev[0].Level != events.Info || ev[0].Backend != be {
		t.Fatalf("restored events = %+v", ev)
	}

	// Nobody probes it: the retirement ends after RetireFallback.
	e = newEnv(t, breaker.Settings{})
	e.call(prov, be, gone(), 0)
	e.clock.Advance(24*time.Hour - time.Nanosecond)
	e.avail(prov, be, breaker.ReasonRetired, time.Time{})
	e.clock.Advance(time.Nanosecond)
	e.avail(prov, be, "", time.Time{})
	if n := len(e.pub.of(events.Restored)); n != 1 {
		t.Fatalf("%d restored events after the fallback, want 1", n)
	}
	e = newEnv(t, breaker.Settings{RetireFallback: 2 * time.Hour})
	e.call(prov, be, gone(), 0)
	e.clock.Advance(2 * time.Hour)
	e.avail(prov, be, "", time.Time{})
}

func TestIgnoredClassesChangeNothing(t *testing.T) {
	ignored := []*llm.Error{
		{Class: llm.Cancelled, Message: "client went away"},
		{Class: llm.Caller, Status: 400, Message: "HTTP 400: bad tools"},
		{Class: llm.TooLong, Status: 400, Message: "HTTP 400: context length exceeded"},
	}
	t.Run("closed", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		e.call(prov, be, e503(), 0)
		before := e.status(be)
		e.pub.reset()
		for range 5 {
			for _, le := range ignored {
				e.call(prov, be, le, time.Hour)
			}
		}
		if after := e.status(be); after != before {
			t.Fatalf("ignored classes changed the state:\n%+v\n%+v", before, after)
		}
		if ev := e.pub.all(); len(ev) != 0 {
			t.Fatalf("events: %+v", ev)
		}
		// Nor did they reset the count: one more failure trips.
		e.call(prov, be, e503(), 0)
		e.wantState(be, breaker.Open)
	})
	for _, le := range ignored {
		t.Run("half-open "+string(le.Class), func(t *testing.T) {
			e := newEnv(t, breaker.Settings{})
			e.tripByTraffic(be, 2)
			e.clock.Advance(30 * time.Second)
			e.wantState(be, breaker.HalfOpen)
			before := e.status(be)
			e.pub.reset()
			e.call(prov, be, le, 0)
			// The slot is free again, nothing else moved.
			if after := e.status(be); after != before {
				t.Fatalf("state changed:\n%+v\n%+v", before, after)
			}
			if ev := e.pub.all(); len(ev) != 0 {
				t.Fatalf("events: %+v", ev)
			}
			e.call(prov, be, nil, 0)
			e.wantState(be, breaker.Closed)
		})
	}
}

func TestProbeResult(t *testing.T) {
	probeFail := &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503: probe"}
	t.Run("two failures open a closed backend", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		e.s.ProbeResult(bid(prov, be), probeFail)
		st := e.status(be)
		if st.State != breaker.Closed || st.ProbeFails != 1 || !st.LastProbe.Equal(t0) || st.LastProbeOK || st.LastProbeMsg != "HTTP 503: probe" {
			t.Fatalf("after one failed probe: %+v", st)
		}
		// A pass in between resets the count.
		e.clock.Advance(time.Minute)
		e.s.ProbeResult(bid(prov, be), nil)
		e.s.ProbeResult(bid(prov, be), probeFail)
		e.wantState(be, breaker.Closed)
		e.clock.Advance(time.Minute)
		e.s.ProbeResult(bid(prov, be), probeFail)
		u := e.avail(prov, be, breaker.ReasonOpen, e.now().Add(30*time.Second))
		if !strings.Contains(u.Detail, "2 probes failed") {
			t.Errorf("Detail = %q", u.Detail)
		}
		// Probes are kept apart from traffic: health is untouched.
		if st := e.status(be); st.Health != 1 || st.Failures != 0 || !st.LastProbe.Equal(e.now()) {
			t.Fatalf("Status = %+v", st)
		}
	})
	t.Run("two passes close an open backend", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		e.tripByTraffic(be, 2)
		e.clock.Advance(10 * time.Second)
		e.s.ProbeResult(bid(prov, be), nil)
		e.wantState(be, breaker.Open)
		e.clock.Advance(10 * time.Second)
		e.s.ProbeResult(bid(prov, be), nil)
		e.wantState(be, breaker.Closed)
		e.wantHealth(be, 0.7)
		st := e.status(be)
		if !st.LastProbe.Equal(e.now()) || !st.LastProbeOK || st.LastProbeMsg != "ok" || st.ProbeFails != 0 {
			t.Fatalf("Status = %+v", st)
		}
		e.avail(prov, be, "", time.Time{})
	})
	t.Run("custom counts", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{ProbeFailures: 3})
		e.s.ProbeResult(bid(prov, be), probeFail)
		e.s.ProbeResult(bid(prov, be), probeFail)
		e.wantState(be, breaker.Closed)
		e.s.ProbeResult(bid(prov, be), probeFail)
		e.wantState(be, breaker.Open)
	})
	t.Run("a pass restores a retired backend", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		e.call(prov, be, gone(), 0)
		e.s.ProbeResult(bid(prov, be), nil)
		e.avail(prov, be, "", time.Time{})
		if ev := e.pub.of(events.Restored); len(ev) != 1 || !strings.Contains(ev[0].Reason, "probe") {
			t.Fatalf("restored events = %+v", ev)
		}
	})
	t.Run("a 404 probe retires, a 401 probe disables the key", func(t *testing.T) {
		e := newEnv(t, breaker.Settings{})
		e.s.ProbeResult(bid(prov, be), gone())
		e.avail(prov, be, breaker.ReasonRetired, time.Time{})
		e.s.ProbeResult(bid(prov, "groq/b"), credential())
		e.avail(prov, "groq/c", breaker.ReasonKeyOff, t0.Add(time.Hour))
		if ev := e.pub.of(events.KeyDisabled); len(ev) != 1 || ev[0].Level != events.Alert {
			t.Fatalf("key events = %+v", ev)
		}
	})
}

func TestRetireByProbe(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	// Busy is not gone.
	e.s.RetireByProbe(bid(prov, be), limited(time.Minute))
	st := e.status(be)
	if st.Retired || !st.LastProbe.Equal(t0) || st.LastProbeOK || st.LastProbeMsg != "HTTP 429: slow down" {
		t.Fatalf("after a rate-limited daily probe: %+v", st)
	}
	e.avail(prov, be, "", time.Time{})

	// Any other failure retires it, whatever its traffic says.
	e.call(prov, be, nil, 0)
	e.clock.Advance(time.Hour)
	e.s.RetireByProbe(bid(prov, be), e503())
	u := e.avail(prov, be, breaker.ReasonRetired, time.Time{})
	if !strings.Contains(u.Detail, "daily probe") || !strings.Contains(u.Detail, "HTTP 503") {
		t.Errorf("Detail = %q", u.Detail)
	}
	if st := e.status(be); !st.Retired || !st.RetiredAt.Equal(e.now()) || !st.LastProbe.Equal(e.now()) {
		t.Fatalf("Status = %+v", st)
	}
	if ev := e.pub.of(events.Retired); len(ev) != 1 || ev[0].Level != events.Warn {
		t.Fatalf("retired events = %+v", ev)
	}

	// The next day's pass restores it.
	e.clock.Advance(23 * time.Hour)
	e.s.RetireByProbe(bid(prov, be), nil)
	e.avail(prov, be, "", time.Time{})
	st = e.status(be)
	if st.Retired || !st.LastProbe.Equal(e.now()) || !st.LastProbeOK || st.LastProbeMsg != "ok" {
		t.Fatalf("after a passing daily probe: %+v", st)
	}
	if ev := e.pub.of(events.Restored); len(ev) != 1 || ev[0].Level != events.Info {
		t.Fatalf("restored events = %+v", ev)
	}
	// A pass of a backend that was never retired announces nothing.
	e.s.RetireByProbe(bid(prov, "groq/other"), nil)
	if n := len(e.pub.of(events.Restored)); n != 1 {
		t.Fatalf("%d restored events", n)
	}
}

func TestStateChangeEvents(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.call(prov, be, e503(), 0)
	e.clock.Advance(time.Second)
	tripped := e.now()
	e.call(prov, be, e503(), 0)
	e.clock.Advance(30 * time.Second)
	halfOpenAt := e.now()
	e.avail(prov, be, "", time.Time{})
	e.clock.Advance(2 * time.Second)
	closedAt := e.now()
	e.call(prov, be, nil, 0)

	want := []events.Event{
		{Time: tripped, Kind: events.StateChange, Level: events.Warn, From: "closed", To: "open", Until: tripped.Add(30 * time.Second)},
		{Time: halfOpenAt, Kind: events.StateChange, Level: events.Info, From: "open", To: "half_open"},
		{Time: closedAt, Kind: events.StateChange, Level: events.Info, From: "half_open", To: "closed"},
	}
	got := e.pub.of(events.StateChange)
	if len(got) != len(want) {
		t.Fatalf("state events:\n%+v\nwant %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if !g.Time.Equal(w.Time) || g.Level != w.Level || g.From != w.From || g.To != w.To || !g.Until.Equal(w.Until) ||
			g.Backend != be || g.Provider != prov || g.Reason == "" {
			t.Errorf("event %d = %+v\nwant %+v", i, g, w)
		}
	}
	// The trip is announced after the health drop that led to it.
	all := e.pub.all()
	if len(all) < 2 || all[0].Kind != events.Health || all[1].Kind != events.StateChange {
		t.Errorf("events in order: %+v", all)
	}
}

func TestHealthCrossingEvents(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	// Three 429s take health from 1 to 0.595: one event when it crosses.
	for range 3 {
		e.call(prov, be, limited(time.Second), 0)
		e.clock.Advance(time.Second)
	}
	down := e.pub.of(events.Health)
	if len(down) != 1 || down[0].Level != events.Warn || down[0].Backend != be || !down[0].Time.Equal(t0.Add(2*time.Second)) ||
		!strings.Contains(down[0].Reason, "0.60") {
		t.Fatalf("health events = %+v, want one warning", down)
	}
	// Another 429 keeps it below (0.521): nothing new.
	e.call(prov, be, limited(time.Second), 0)
	e.clock.Advance(time.Second)
	if n := len(e.pub.of(events.Health)); n != 1 {
		t.Fatalf("%d health events while staying below", n)
	}
	e.call(prov, be, nil, 0) // 0.641: back above
	e.call(prov, be, nil, 0) // 0.731: still above, nothing new
	up := e.pub.of(events.Health)
	if len(up) != 2 || up[1].Level != events.Info || up[1].Backend != be || !strings.Contains(up[1].Reason, "recovered") {
		t.Fatalf("health events = %+v, want one recovery", up)
	}
}

// A trial success resets health from below the threshold to 0.7: that is a
// crossing too, and the dashboard, fed by events, must hear of it.
func TestHealthResetOnRecoveryIsAnnounced(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.tripByTraffic(be, 2) // health 0.5625: one "fell below" event
	e.clock.Advance(30 * time.Second)
	e.call(prov, be, nil, 0)
	e.wantHealth(be, 0.7)
	ev := e.pub.of(events.Health)
	if len(ev) != 2 || ev[1].Level != events.Info {
		t.Fatalf("health events = %+v: health went from 0.5625 to 0.7 without a \"recovered above\" event", ev)
	}

	// The same when passing probes bring it back.
	e = newEnv(t, breaker.Settings{})
	e.tripByTraffic(be, 2)
	e.s.ProbeResult(bid(prov, be), nil)
	e.s.ProbeResult(bid(prov, be), nil)
	e.wantState(be, breaker.Closed)
	e.wantHealth(be, 0.7)
	ev = e.pub.of(events.Health)
	if len(ev) != 2 || ev[1].Level != events.Info || !strings.Contains(ev[1].Reason, "recovered") {
		t.Fatalf("health events = %+v: probes took health from 0.5625 to 0.7 without a \"recovered above\" event", ev)
	}
}

func TestSnapshotRestore(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	// groq/a: open at level 1 (flapped once).
	e.tripByTraffic("groq/a", 2)
	e.recover("groq/a")
	e.clock.Advance(time.Minute)
	e.tripByTraffic("groq/a", 2)
	openUntil := e.status("groq/a").OpenUntil
	// groq/b: cooling after a 429.
	e.call(prov, "groq/b", limited(10*time.Minute), 0)
	coolUntil := e.now().Add(10 * time.Minute)
	// groq/c: retired.
	e.call(prov, "groq/c", gone(), 0)
	// mistral: key rejected.
	e.call("mistral", "mistral/large", credential(), 0)
	keyUntil := e.now().Add(time.Hour)
	// groq/d: half-open with its trial in flight when the process stops.
	e.tripByTraffic("groq/d", 2)
	e.clock.Advance(30 * time.Second)
	e.admit(prov, "groq/d")
	e.clock.Advance(time.Second)

	saved := e.s.Snapshot()
	if len(saved) != 5 || saved[0].Backend != "groq/a" || saved[4].Backend != "mistral/large" {
		t.Fatalf("Snapshot = %+v, want 5 backends sorted by name", saved)
	}
	data, err := json.Marshal(saved)
	if err != nil {
		t.Fatal(err)
	}
	var loaded []breaker.Status
	if err := json.Unmarshal(data, &loaded); err != nil {
		t.Fatal(err)
	}

	// A new process, same clock.
	r := &env{t: t, clock: e.clock, pub: &recPub{}}
	r.s = breaker.New(breaker.Settings{}, r.clock, r.pub)
	if err := r.s.Restore(loaded); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(r.s.Snapshot())
	if string(again) != string(data) {
		t.Errorf("restored snapshot differs:\n%s\n%s", again, data)
	}

	r.avail(prov, "groq/a", breaker.ReasonOpen, openUntil)
	r.avail(prov, "groq/b", breaker.ReasonCooling, coolUntil)
	r.avail(prov, "groq/c", breaker.ReasonRetired, time.Time{})
	r.avail("mistral", "mistral/large", breaker.ReasonKeyOff, keyUntil)
	r.avail("mistral", "mistral/small", breaker.ReasonKeyOff, keyUntil)
	// The cut trial does not block a fresh one.
	r.admit(prov, "groq/d")
	if reason, _, _ := why(t, r.refused(prov, "groq/d")); reason != breaker.ReasonHalfOpen {
		t.Fatalf("second trial after restart refused with %q, want half_open", reason)
	}
	if st := r.status("groq/a"); st.Level != 1 || math.Abs(st.Health-e.status("groq/a").Health) > 1e-12 {
		t.Fatalf("restored groq/a = %+v", st)
	}

	// Still open until the saved time, then half-open, then it closes on a trial.
	r.clock.Advance(openUntil.Sub(r.now()) - time.Nanosecond)
	r.avail(prov, "groq/a", breaker.ReasonOpen, openUntil)
	r.clock.Advance(time.Nanosecond)
	r.avail(prov, "groq/a", "", time.Time{})
	r.wantState("groq/a", breaker.HalfOpen)
	r.call(prov, "groq/a", nil, 0)
	r.wantState("groq/a", breaker.Closed)
	if ev := r.pub.of(events.StateChange); len(ev) != 2 || ev[0].To != "half_open" || ev[1].To != "closed" {
		t.Fatalf("events after restore = %+v", ev)
	}
	// The other states are still in force until their own times.
	r.avail(prov, "groq/b", breaker.ReasonCooling, coolUntil)
	r.avail("mistral", "mistral/large", breaker.ReasonKeyOff, keyUntil)
	r.clock.Advance(coolUntil.Sub(r.now()))
	r.avail(prov, "groq/b", "", time.Time{})
	r.clock.Advance(keyUntil.Sub(r.now()))
	r.avail("mistral", "mistral/large", "", time.Time{})
	r.avail(prov, "groq/c", breaker.ReasonRetired, time.Time{})
}

func TestRestoreLaterThanTheOpenTime(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.tripByTraffic(be, 2)
	saved := e.s.Snapshot()
	e.clock.Advance(5 * time.Minute) // the restart took a while
	s := breaker.New(breaker.Settings{}, e.clock, nil)
	if err := s.Restore(saved); err != nil {
		t.Fatal(err)
	}
	if ticket, err := s.Acquire(bid(prov, be)); err != nil || ticket == 0 {
		t.Fatalf("open time over during the restart: ticket %d, %v; want one trial", ticket, err)
	}
	if st := s.Status(bid(prov, be)); st.State != breaker.HalfOpen {
		t.Fatalf("state %s, want half_open", st.State)
	}
}

func TestRestoreRejectsBadState(t *testing.T) {
	good := breaker.Status{Backend: be, Provider: prov, State: breaker.Closed, Health: 1}
	for _, tc := range []struct {
		name string
		bad  breaker.Status
	}{
		{"unknown state", breaker.Status{Backend: be, Provider: prov, State: "ajar", Health: 1}},
		{"empty state", breaker.Status{Backend: be, Provider: prov, Health: 1}},
		{"no name", breaker.Status{Provider: prov, State: breaker.Open}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := breaker.New(breaker.Settings{}, clocktest.New(t0), nil)
			err := s.Restore([]breaker.Status{good, tc.bad})
			if !errors.Is(err, breaker.ErrBadState) {
				t.Fatalf("Restore = %v, want ErrBadState", err)
			}
		})
	}
	// Out-of-range numbers are clamped, not trusted.
	s := breaker.New(breaker.Settings{}, clocktest.New(t0), nil)
	if err := s.Restore([]breaker.Status{{Backend: be, Provider: prov, State: breaker.Closed, Health: 7, Level: 99, LevelAt: t0}}); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(bid(prov, be)); st.Health != 1 || st.Level != 2 {
		t.Fatalf("restored Status = %+v, want health 1 and level 2", st)
	}
}

func TestConcurrentUse(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	outcomes := []*llm.Error{nil, nil, e503(), timeout(), empty(), limited(time.Second), limited(0),
		credential(), gone(), {Class: llm.Caller}, {Class: llm.Cancelled}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				p := fmt.Sprintf("p%d", (g+i)%3)
				b := fmt.Sprintf("%s/m%d", p, i%5)
				ticket, acqErr := e.acquire(p, b)
				for _, err := range []error{errOf(e.s.Available(bid(p, b))), acqErr} {
					if err != nil {
						var u *breaker.Unavailable
						if !errors.As(err, &u) {
							t.Errorf("error %T", err)
							return
						}
					}
				}
				// A refused call is made anyway now and then, as the router
				// does when every backend is unavailable: ticket 0.
				e.s.Report(bid(p, b), ticket, outcomes[(g*7+i)%len(outcomes)], time.Duration(i%300)*time.Millisecond)
				switch i % 100 {
				case 0:
					e.clock.Advance(time.Second)
				case 1:
					_ = e.s.Snapshot()
				case 2:
					e.s.ProbeResult(bid(p, b), nil)
				case 3:
					_ = e.s.Status(bid(p, b))
				}
			}
		})
	}
	wg.Wait()
	// Once every timer has run out and a probe passed, everything is
	// available again or half-open (a trial away from closing).
	e.clock.Advance(25 * time.Hour)
	for p := range 3 {
		for m := range 5 {
			pv, b := fmt.Sprintf("p%d", p), fmt.Sprintf("p%d/m%d", p, m)
			e.s.ProbeResult(bid(pv, b), nil)
			if err := e.s.Available(bid(pv, b)); err != nil {
				t.Errorf("%s still unavailable: %v", b, err)
			}
		}
	}
}

func TestConcurrentAcquireOnHalfOpen(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	for round := range 20 {
		e.tripByTraffic(be, 2)
		e.clock.Advance(e.status(be).OpenUntil.Sub(e.now()))
		var admitted atomic.Int32
		var trial atomic.Uint64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				<-start
				if ticket, err := e.acquire(prov, be); err == nil {
					admitted.Add(1)
					trial.Store(ticket)
				} else if u := (*breaker.Unavailable)(nil); !errors.As(err, &u) || u.Reason != breaker.ReasonHalfOpen {
					t.Errorf("refused with %v, want half_open", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := admitted.Load(); n != 1 {
			t.Fatalf("round %d: %d of 32 concurrent Acquire calls admitted, want exactly 1", round, n)
		}
		e.s.Report(bid(prov, be), trial.Load(), nil, 0)
		e.wantState(be, breaker.Closed)
		e.clock.Advance(time.Hour) // not flapping next round
	}
}

// Probe passes counted while the backend was healthy must not count toward
// bringing it back after traffic took it down: it needs ProbeSuccesses
// passes after going down.
func TestProbePassesBeforeATripDoNotCount(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	e.s.ProbeResult(bid(prov, be), nil)
	e.s.ProbeResult(bid(prov, be), nil)
	e.clock.Advance(time.Hour)
	e.tripByTraffic(be, 2)
	e.clock.Advance(time.Second)
	e.s.ProbeResult(bid(prov, be), nil)
	if st := e.state(be); st != breaker.Open {
		t.Fatalf("one probe pass after a trip: %s, want still open (2 passes needed; the passes from an hour ago counted)", st)
	}
	e.s.ProbeResult(bid(prov, be), nil)
	e.wantState(be, breaker.Closed)
}

// A probe that was rate limited or cut short (shutdown, offline pause) says
// nothing about whether the backend works: it must not mark it down.
func TestProbesThatSayNothingDoNotMarkDown(t *testing.T) {
	for _, le := range []*llm.Error{limited(time.Minute), {Class: llm.Cancelled, Message: "probe cancelled"}} {
		t.Run(string(le.Class), func(t *testing.T) {
			e := newEnv(t, breaker.Settings{})
			for range 3 {
				e.s.ProbeResult(bid(prov, be), le)
			}
			if st := e.state(be); st != breaker.Closed {
				t.Fatalf("three %s probe results: %s, want closed", le.Class, st)
			}
		})
	}
}

// Only the call that took the half-open trial slot may give it back or
// decide the trial. A call acquired while the backend was still closed (a
// long stream) that ends after the backend went half-open reports with its
// own ticket: that must neither free the slot of the trial in flight (or two
// requests reach the half-open backend at once) nor close or reopen the
// breaker. Nor may a call made without Acquire (ticket 0: every backend was
// unavailable). Such reports only move health; the trial's own report decides.
func TestStaleReportDoesNotFreeTheTrialSlot(t *testing.T) {
	const tripped = 0.5625 // health after the two 503s that trip it
	for _, x := range []struct {
		name   string
		acqd   bool // X was acquired (while closed); else it reports ticket 0
		err    *llm.Error
		health float64 // after X's report
	}{
		{"cancelled", true, &llm.Error{Class: llm.Cancelled, Message: "client went away"}, tripped},
		{"caller error", true, &llm.Error{Class: llm.Caller, Status: 400, Message: "HTTP 400: bad tools"}, tripped},
		{"success", true, nil, 0.25 + 0.75*tripped},
		{"503", true, e503(), 0.75 * tripped},
		{"soft empty", true, empty(), 0.25*0.1 + 0.75*tripped},
		{"success without Acquire", false, nil, 0.25 + 0.75*tripped},
		{"503 without Acquire", false, e503(), 0.75 * tripped},
	} {
		for _, trialOK := range []bool{true, false} {
			name := x.name + "/trial fails"
			if trialOK {
				name = x.name + "/trial succeeds"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, breaker.Settings{})
				var stale uint64
				if x.acqd {
					stale = e.admit(prov, be) // X: a long stream, started while closed
				}
				e.tripByTraffic(be, 2) // other requests trip it
				e.wantHealth(be, tripped)
				e.clock.Advance(30 * time.Second)
				trial := e.admit(prov, be) // W: the trial
				if trial == stale {
					t.Fatalf("the trial got the stale call's ticket %d", stale)
				}
				e.wantState(be, breaker.HalfOpen)
				changes := len(e.pub.of(events.StateChange))

				e.s.Report(bid(prov, be), stale, x.err, 0) // X ends
				if reason, _, _ := why(t, e.refused(prov, be)); reason != breaker.ReasonHalfOpen {
					t.Fatalf("after the stale report Acquire refused with %q, want half_open: the trial is still in flight", reason)
				}
				e.wantState(be, breaker.HalfOpen)
				if ev := e.pub.of(events.StateChange); len(ev) != changes {
					t.Fatalf("the stale report changed the state: %+v", ev[changes:])
				}
				e.wantHealth(be, x.health)
				if f := e.status(be).Failures; f != 0 {
					t.Fatalf("Failures = %d after the stale report, want 0: only health moves while half-open", f)
				}

				// W ends: its report, and only its, decides.
				if trialOK {
					e.s.Report(bid(prov, be), trial, nil, 0)
					e.wantState(be, breaker.Closed)
					e.wantHealth(be, 0.7)
					e.admit(prov, be)
				} else {
					e.s.Report(bid(prov, be), trial, e503(), 0)
					u := e.avail(prov, be, breaker.ReasonOpen, e.now().Add(30*time.Second))
					if !strings.Contains(u.Detail, "trial") {
						t.Errorf("Detail = %q, want it to say the trial failed", u.Detail)
					}
				}
			})
		}
	}
}

// A trial ticket only holds the slot of its own half-open period: if the
// breaker reopened meanwhile (here by probes) and a new trial started, the
// old trial's late report decides nothing.
func TestTrialTicketOfAnEarlierPeriodDecidesNothing(t *testing.T) {
	probeFail := &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503: probe"}
	e := newEnv(t, breaker.Settings{})
	e.tripByTraffic(be, 2)
	e.clock.Advance(30 * time.Second)
	first := e.admit(prov, be)
	e.s.ProbeResult(bid(prov, be), probeFail)
	e.s.ProbeResult(bid(prov, be), probeFail)
	e.avail(prov, be, breaker.ReasonOpen, e.now().Add(30*time.Second))
	e.clock.Advance(30 * time.Second)
	second := e.admit(prov, be)

	e.s.Report(bid(prov, be), first, nil, 0)
	e.wantState(be, breaker.HalfOpen)
	if reason, _, _ := why(t, e.refused(prov, be)); reason != breaker.ReasonHalfOpen {
		t.Fatalf("after the old trial's report Acquire refused with %q, want half_open", reason)
	}
	e.s.Report(bid(prov, be), second, nil, 0)
	e.wantState(be, breaker.Closed)
}

// A key refused by the provider is per key: another key of the same
// provider keeps serving.
func TestCredentialIsKeptPerKey(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	work := llm.BackendID{Provider: "groq", Key: "work", Model: "a"}
	home := llm.BackendID{Provider: "groq", Key: "home", Model: "a"}
	e.s.Unchecked(work)(credential(), 0)
	if sk := e.s.Available(work); sk == nil || sk.Word != llm.SkipKeyDisabled {
		t.Fatalf("refused key: skip = %+v, want key_disabled", sk)
	}
	if sk := e.s.Available(home); sk != nil {
		t.Fatalf("another key of the same provider is skipped: %+v", sk)
	}
	if ks := e.s.Key(work.KeyID()); !ks.Off || ks.NextCheck != t0.Add(time.Minute) {
		t.Fatalf("Key(work) = %+v, want off with a check in a minute", ks)
	}
}

// A replaced key serves at once: its refusal and its backends' breaker
// history belonged to the old key.
func TestKeyReplacedClearsStateAndHistory(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	a := bid("groq", "groq/a")
	for range 2 {
		e.s.Unchecked(a)(e503(), 0)
	}
	e.s.Unchecked(bid("groq", "groq/b"))(credential(), 0)
	if st := e.s.Status(a); st.State != breaker.Open || st.KeyOffUntil.IsZero() {
		t.Fatalf("before: %+v", st)
	}
	other := bid("cerebras", "cerebras/a")
	for range 2 {
		e.s.Unchecked(other)(e503(), 0)
	}
	e.s.KeyReplaced(a.KeyID(), "the key was replaced")
	if sk := e.s.Available(a); sk != nil {
		t.Fatalf("after the key was replaced: %+v", sk)
	}
	if st := e.s.Status(a); st.State != breaker.Closed || st.Health != 1 || st.Failures != 0 || !st.KeyOffUntil.IsZero() {
		t.Fatalf("after: %+v", st)
	}
	if st := e.s.Status(other); st.State != breaker.Open {
		t.Fatalf("another provider's breaker was reset too: %+v", st)
	}
	if ev := e.pub.of(events.KeyRestored); len(ev) != 1 || ev[0].Provider != "groq" {
		t.Fatalf("key_restored events = %+v", ev)
	}
}

// A refused key is checked on a widening schedule and re-armed by the
// first check that passes; a check that could not reach the provider
// proves nothing.
func TestRefusedKeyIsCheckedAndRearmed(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	a := bid("groq", "groq/a")
	e.s.Unchecked(a)(credential(), 0)
	k := a.KeyID()
	if due := e.s.KeysDue(); len(due) != 0 {
		t.Fatalf("checked at once: %v", due)
	}
	e.clock.Advance(time.Minute)
	due := e.s.KeysDue()
	if len(due) != 1 || due[0] != k {
		t.Fatalf("due after a minute = %v", due)
	}
	if again := e.s.KeysDue(); len(again) != 0 {
		t.Fatalf("a check in flight was handed out twice: %v", again)
	}
	e.s.KeyChecked(k, credential())
	if ks := e.s.Key(k); !ks.Off || ks.Checks != 1 || ks.NextCheck != e.now().Add(2*time.Minute) {
		t.Fatalf("after a refused check: %+v", ks)
	}
	e.clock.Advance(2 * time.Minute)
	if due := e.s.KeysDue(); len(due) != 1 {
		t.Fatalf("second check not due: %v", due)
	}
	e.s.KeyChecked(k, connect())
	if ks := e.s.Key(k); !ks.Off || ks.Checks != 1 {
		t.Fatalf("an unreachable provider changed the count: %+v", ks)
	}
	// The refusal stays as long as checks keep failing, past the hour a
	// refusal alone would last.
	for range 8 {
		e.clock.Advance(time.Hour)
		for _, k := range e.s.KeysDue() {
			e.s.KeyChecked(k, credential())
		}
		if sk := e.s.Available(a); sk == nil {
			t.Fatalf("a key still refused came back at %v", e.now().Sub(t0))
		}
	}
	e.clock.Advance(time.Hour)
	for _, k := range e.s.KeysDue() {
		e.s.KeyChecked(k, nil)
	}
	if sk := e.s.Available(a); sk != nil {
		t.Fatalf("after a passing check: %+v", sk)
	}
	if ev := e.pub.of(events.KeyRestored); len(ev) != 1 || !strings.Contains(ev[0].Reason, "works again") {
		t.Fatalf("key_restored events = %+v", ev)
	}
}

// The refusal survives a restart and is checked again soon after it.
func TestRefusedKeyRestoredIsCheckedSoon(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	a := llm.BackendID{Provider: "groq", Key: "work", Model: "a"}
	e.s.Unchecked(a)(credential(), 0)
	saved := e.s.Snapshot()
	e.clock.Advance(30 * time.Minute)
	fresh := breaker.New(breaker.Settings{}, e.clock, nil)
	if err := fresh.Restore(saved); err != nil {
		t.Fatal(err)
	}
	if sk := fresh.Available(a); sk == nil {
		t.Fatal("the refusal was lost in the restart")
	}
	if sk := fresh.Available(llm.BackendID{Provider: "groq", Model: "a"}); sk != nil {
		t.Fatalf("the restored refusal spread to the provider's other key: %+v", sk)
	}
	if ks := fresh.Key(a.KeyID()); ks.NextCheck.After(e.now().Add(time.Minute)) {
		t.Fatalf("after a restart: %+v", ks)
	}
}

// A key a check re-armed but traffic refuses again resumes its widening
// schedule: a provider whose model list needs no valid key cannot make a
// dead key flap every minute.
func TestRearmedKeyRefusedAgainKeepsItsSchedule(t *testing.T) {
	e := newEnv(t, breaker.Settings{})
	a := bid("groq", "groq/a")
	k := a.KeyID()
	e.s.Unchecked(a)(credential(), 0)
	for _, d := range []time.Duration{time.Minute, 2 * time.Minute} {
		e.clock.Advance(d)
		for _, k := range e.s.KeysDue() {
			e.s.KeyChecked(k, credential())
		}
	}
	e.clock.Advance(5 * time.Minute)
	for _, k := range e.s.KeysDue() {
		e.s.KeyChecked(k, nil)
	}
	if sk := e.s.Available(a); sk != nil {
		t.Fatalf("not re-armed: %+v", sk)
	}
	e.s.Unchecked(a)(credential(), 0)
	if ks := e.s.Key(k); ks.NextCheck != e.now().Add(15*time.Minute) {
		t.Fatalf("refused again right after the check: next check %v after now, want 15m", ks.NextCheck.Sub(e.now()))
	}
	// A key the user's own test request re-armed starts afresh.
	e.s.KeyPassed(k, "a test request succeeded")
	e.s.Unchecked(a)(credential(), 0)
	if ks := e.s.Key(k); ks.NextCheck != e.now().Add(time.Minute) {
		t.Fatalf("after a passing test: next check in %v, want 1m", ks.NextCheck.Sub(e.now()))
	}
}
