// Package breaker decides which backends the router may call right now.
//
// Each backend (provider x key x model) has a three-state circuit breaker
// (closed, open, half-open) driven by consecutive failures and by an EWMA
// health score, an open time that grows for backends that flap, cooldowns
// for rate limits, retirement for withdrawn models, and per provider whether
// its key was rejected. Probe results move backends down and up apart from
// traffic. Time comes from an injected clock so tests move time instead of
// sleeping, and the whole state can be saved and restored across restarts.
package breaker

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"freelane/backend/clock"
	"freelane/backend/defaults"
	"freelane/backend/events"
	"freelane/backend/llm"
)

// Publisher receives state changes; events.Bus implements it.
type Publisher interface{ Publish(events.Event) }

// Settings tune the breakers. Zero values mean the defaults in brackets,
// which come from package defaults.
type Settings struct {
	Failures int // consecutive failures that trip a closed backend [2]
	// HealthThreshold trips a backend whose health score falls below it on
	// a failure [0.6].
	HealthThreshold float64
	Alpha           float64 // EWMA weight of the newest outcome [0.25]
	// OpenTimes are the open periods, shortest first [30s, 5m, 30m]. A
	// backend starts at the first; one that trips again within FlapWindow
	// of recovering moves one step up; every HealthyStretch it stays closed
	// moves it one step down.
	OpenTimes      []time.Duration
	FlapWindow     time.Duration // [5m]
	HealthyStretch time.Duration // [10m]
	// RateLimitCooldown caps the rest after 429s that did not say how
	// long: the first rests 5 s, each further one in a row twice as long,
	// up to this [60s].
	RateLimitCooldown  time.Duration
	CredentialCooldown time.Duration // how long a rejected key stays disabled [1h]
	// RetireFallback ends a retirement on its own for backends nobody
	// probes (own keys with probes off) [24h]; a passing probe ends it sooner.
	RetireFallback time.Duration
	// SlowFactor marks a success "too slow" when its first-byte latency is
	// above SlowFactor times the backend's rolling median [3], once
	// SlowSamples successes are known [10].
	SlowFactor  float64
	SlowSamples int
	// ProbeFailures / ProbeSuccesses consecutive probe results mark a
	// backend down / bring it back [2, 2].
	ProbeFailures  int
	ProbeSuccesses int
}

// withDefaults is s with every unset or unusable value replaced by the
// default from package defaults.
func (s Settings) withDefaults() Settings {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if s.Failures <= 0 {
		s.Failures = defaults.BreakerFailures
	}
	if s.HealthThreshold <= 0 {
		s.HealthThreshold = defaults.HealthThreshold
	}
	if s.Alpha <= 0 || s.Alpha > 1 {
		s.Alpha = defaults.HealthAlpha
	}
	if len(s.OpenTimes) == 0 {
		s.OpenTimes = defaults.OpenTimes(defaults.BreakerOpen)
	}
	def(&s.FlapWindow, defaults.FlapWindow)
	def(&s.HealthyStretch, defaults.HealthyStretch)
	def(&s.RateLimitCooldown, defaults.RateLimitCooldown)
	def(&s.CredentialCooldown, defaults.CredentialCooldown)
	def(&s.RetireFallback, defaults.RetireFallback)
	if s.SlowFactor <= 0 {
		s.SlowFactor = defaults.SlowFactor
	}
	if s.SlowSamples <= 0 {
		s.SlowSamples = defaults.SlowSamples
	}
	if s.ProbeFailures <= 0 {
		s.ProbeFailures = defaults.ProbeFailures
	}
	if s.ProbeSuccesses <= 0 {
		s.ProbeSuccesses = defaults.ProbeSuccesses
	}
	return s
}

// State is a breaker state.
type State string

// Breaker states.
const (
	Closed   State = "closed"
	Open     State = "open"
	HalfOpen State = "half_open"
)

// Reason says why a backend is not available.
type Reason string

// Reasons a backend is skipped.
const (
	ReasonOpen     Reason = "open"         // tripped by failures (or marked down by probes)
	ReasonHalfOpen Reason = "half_open"    // its one trial request is already in flight
	ReasonCooling  Reason = "cooling"      // rate limited
	ReasonKeyOff   Reason = "key_disabled" // its provider's key was rejected
	ReasonRetired  Reason = "retired"      // the model is gone
)

// Unavailable is returned when a backend must be skipped.
type Unavailable struct {
	Reason Reason
	Until  time.Time // zero when it depends on another request or a probe
	Detail string
}

// RateLimited reports whether the backend is only waiting out a rate limit.
func (u *Unavailable) RateLimited() bool { return u.Reason == ReasonCooling }

// Skip is the router's record of the refusal: a backend waiting out a rate
// limit counts as rate limited, every other state as a transient failure.
func (u *Unavailable) Skip() *llm.Skip {
	class := llm.Transient
	if u.RateLimited() {
		class = llm.RateLimited
	}
	return &llm.Skip{Word: llm.SkipWord(u.Reason), Class: class, Until: u.Until, Reason: u.Error(), Err: u}
}

func (u *Unavailable) Error() string {
	if u.Until.IsZero() {
		return fmt.Sprintf("%s (%s)", u.Reason, u.Detail)
	}
	return fmt.Sprintf("%s until %s (%s)", u.Reason, u.Until.UTC().Format(time.TimeOnly), u.Detail)
}

// latencyWindow is how many recent first-byte latencies the slow test uses.
const latencyWindow = 64

type backend struct {
	id llm.BackendID
	// name is id's text form, kept for events so that they cost no
	// string building.
	name string

	state     State
	failures  int
	health    float64
	level     int // index into OpenTimes
	openUntil time.Time
	openWhy   string
	closedAt  time.Time // when it last recovered (zero: never tripped)
	levelAt   time.Time // when level last changed or a stretch was counted
	trial     bool      // half-open trial in flight
	trialTok  uint64    // ticket of the request holding the trial slot

	coolUntil time.Time
	coolWhy   string
	// limited counts the 429s in a row that did not say how long to wait.
	limited int

	retired    bool
	retiredAt  time.Time
	retiredWhy string

	probeFails, probeOKs int
	lastProbe            time.Time
	lastProbeOK          bool
	lastProbeMsg         string

	lats []time.Duration // ring of recent first-byte latencies of successes
	latN int
	// median is the median of lats as it was when latN was medianN; see
	// slow for when it is worked out again.
	median  time.Duration
	medianN int
}

// keyState is a key the provider refused. It stays off until a check
// passes (KeyChecked), the key is replaced (KeyReplaced) or, when nobody
// checks it, until.
type keyState struct {
	until time.Time
	why   string
	// checks counts the checks that found the key still refused; next is
	// when the next one is due.
	checks int
	next   time.Time
}

// keyBackoff spaces the checks of a refused key: soon at first, since the
// user may be fixing it right now, then hourly so a dead key costs nothing.
var keyBackoff = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}

func nextKeyCheck(now time.Time, checks int) time.Time {
	return now.Add(keyBackoff[min(checks, len(keyBackoff)-1)])
}

type rearm struct {
	at     time.Time
	checks int
}

// relapseWindow is how long after a check re-armed a key a new refusal
// counts as the same one.
const relapseWindow = time.Hour

// disableKey marks k refused. Called with b.mu held.
func (b *Set) disableKey(k llm.KeyID, st *backend, now time.Time, why, reason string) {
	ks := b.keys[k]
	if ks == nil || !now.Before(ks.until) {
		ks = &keyState{}
		if r, ok := b.rearmed[k]; ok && now.Sub(r.at) < relapseWindow {
			ks.checks = r.checks + 1
		}
		delete(b.rearmed, k)
		ks.next = nextKeyCheck(now, ks.checks)
		b.keys[k] = ks
	}
	ks.until, ks.why = now.Add(b.s.CredentialCooldown), why
	b.tell(Mark{Kind: MarkKeyOff, ID: st.id, Until: ks.until, Why: why})
	b.publish(events.Event{Time: now, Kind: events.KeyDisabled, Level: events.Alert, Provider: k.Provider, Backend: st.name,
		Reason: reason + why, Until: ks.until})
}

// KeyReplaced re-arms a key the user replaced: the refusal and the
// failures its backends gathered were the old key's, so they are
// forgotten. Retirements stay: a model withdrawn is withdrawn whatever the
// key.
func (b *Set) KeyReplaced(k llm.KeyID, why string) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	_, wasOff := b.keys[k]
	delete(b.keys, k)
	delete(b.rearmed, k)
	for id, st := range b.backends {
		if id.KeyID() != k {
			continue
		}
		st.failures, st.health, st.level, st.levelAt = 0, 1, 0, now
		st.openUntil, st.openWhy, st.coolUntil, st.coolWhy = time.Time{}, "", time.Time{}, ""
		st.probeFails, st.probeOKs = 0, 0
		b.setState(st, Closed, now, why)
	}
	if wasOff {
		b.publish(events.Event{Time: now, Kind: events.KeyRestored, Level: events.Info, Provider: k.Provider, Reason: why})
	}
}

// KeyPassed re-arms a refused key that a check outside traffic found
// working, such as the user's test request.
func (b *Set) KeyPassed(k llm.KeyID, why string) {
	b.pass(k, why, false)
}

// pass re-arms k; checked says a model-list check did it, which is
// remembered in case traffic refuses the key again.
func (b *Set) pass(k llm.KeyID, why string, checked bool) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	ks, off := b.keys[k]
	if !checked {
		delete(b.rearmed, k)
	}
	if !off {
		return
	}
	delete(b.keys, k)
	if checked {
		b.rearmed[k] = rearm{at: now, checks: ks.checks}
	}
	b.publish(events.Event{Time: now, Kind: events.KeyRestored, Level: events.Info, Provider: k.Provider, Reason: why})
}

// KeysDue returns the refused keys whose next check is due now, and
// pushes each one's next check out, so a slow check is not started twice.
// The caller checks each and reports with KeyChecked.
func (b *Set) KeysDue() []llm.KeyID {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	var due []llm.KeyID
	for k, ks := range b.keys {
		if !now.Before(ks.next) {
			due = append(due, k)
			ks.next = nextKeyCheck(now, ks.checks)
		}
	}
	slices.SortFunc(due, func(x, y llm.KeyID) int { return strings.Compare(x.String(), y.String()) })
	return due
}

// KeyChecked records a check of a refused key: nil re-arms it; another
// refusal keeps it off and spaces the next check further; any other
// failure (the provider unreachable, busy) proves nothing, and the check
// is tried again on the same schedule.
func (b *Set) KeyChecked(k llm.KeyID, e *llm.Error) {
	if e == nil {
		b.pass(k, "a check with the provider passed: the key works again", true)
		return
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	ks := b.keys[k]
	if ks == nil || e.Class != llm.Credential {
		return
	}
	ks.checks++
	ks.next = nextKeyCheck(now, ks.checks)
	if later := now.Add(b.s.CredentialCooldown); later.After(ks.until) {
		ks.until = later
	}
	ks.why = e.Message
}

// KeyStatus is a refused key's state, for the dashboard.
type KeyStatus struct {
	Off       bool
	Why       string
	Until     time.Time
	NextCheck time.Time
	Checks    int
}

// Key reports whether k is refused and when it is checked next.
func (b *Set) Key(k llm.KeyID) KeyStatus {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	ks := b.keys[k]
	if ks == nil || !now.Before(ks.until) {
		return KeyStatus{}
	}
	return KeyStatus{Off: true, Why: ks.why, Until: ks.until, NextCheck: ks.next, Checks: ks.checks}
}

// Set holds the state of every backend. It is safe for concurrent use.
type Set struct {
	s     Settings
	clock clock.Clock
	pub   Publisher

	mu       sync.Mutex
	backends map[llm.BackendID]*backend
	keys     map[llm.KeyID]*keyState
	// rearmed are keys a check re-armed lately, with the checks it took:
	// a provider whose model list any key may read can pass a check the
	// key then fails in traffic, and such a key resumes its widening
	// schedule instead of starting it again.
	rearmed map[llm.KeyID]rearm
	tickets uint64
	// team, when set, hears what the set learns and counts failures with
	// a team's other instances; trials hands out one half-open trial
	// across them. applying is set while a mark they told is recorded,
	// so that it is not told back.
	team     Team
	trials   Trials
	applying bool
}

// New returns an empty Set. pub may be nil.
func New(s Settings, clk clock.Clock, pub Publisher) *Set {
	return &Set{s: s.withDefaults(), clock: clock.OrReal(clk), pub: pub, backends: map[llm.BackendID]*backend{}, keys: map[llm.KeyID]*keyState{}, rearmed: map[llm.KeyID]rearm{}}
}

// Configure replaces the settings; state already recorded is kept.
func (b *Set) Configure(s Settings) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s = s.withDefaults()
	for _, st := range b.backends {
		st.level = min(st.level, len(b.s.OpenTimes)-1)
	}
}

func (b *Set) get(id llm.BackendID) *backend {
	st := b.backends[id]
	if st == nil {
		st = &backend{id: id, name: id.String(), state: Closed, health: 1}
		b.backends[id] = st
	}
	return st
}

// publish must be called with b.mu held; events go out in order.
func (b *Set) publish(e events.Event) {
	if b.pub != nil {
		b.pub.Publish(e)
	}
}

// tick applies what time alone changes: an open backend whose time is up
// becomes half-open, a long healthy stretch lowers the open time, a
// retirement nobody probes ends. Called with b.mu held.
func (b *Set) tick(st *backend, now time.Time) {
	if st.state == Open && !now.Before(st.openUntil) {
		b.setState(st, HalfOpen, now, "open time over: one trial request allowed")
	}
	for st.state == Closed && st.level > 0 && now.Sub(st.levelAt) >= b.s.HealthyStretch {
		// One step down per healthy stretch, however long nobody looked.
		st.level--
		st.levelAt = st.levelAt.Add(b.s.HealthyStretch)
	}
	if st.retired && now.Sub(st.retiredAt) >= b.s.RetireFallback {
		st.retired = false
		b.publish(events.Event{Time: now, Kind: events.Restored, Level: events.Info, Backend: st.name, Provider: st.id.Provider,
			Reason: "retirement expired without a probe"})
	}
}

func (b *Set) setState(st *backend, to State, now time.Time, why string) {
	if st.state == to {
		return
	}
	from := st.state
	st.state = to
	st.trial = false
	ev := events.Event{Time: now, Kind: events.StateChange, Level: events.Info, Backend: st.name, Provider: st.id.Provider,
		From: string(from), To: string(to), Reason: why}
	switch to {
	case Open:
		ev.Level, ev.Until = events.Warn, st.openUntil
		b.tell(Mark{Kind: MarkOpen, ID: st.id, Until: st.openUntil, Level: st.level, Why: why})
	case Closed:
		st.closedAt, st.levelAt = now, now
		st.failures = 0
		b.tell(Mark{Kind: MarkClosed, ID: st.id, Why: why})
	}
	b.publish(ev)
}

// availability is Available without the lock.
func (b *Set) availability(st *backend, key llm.KeyID, now time.Time) error {
	if k := b.keys[key]; k != nil && now.Before(k.until) {
		return &Unavailable{Reason: ReasonKeyOff, Until: k.until, Detail: k.why}
	}
	if st == nil {
		return nil
	}
	b.tick(st, now)
	switch {
	case st.retired:
		return &Unavailable{Reason: ReasonRetired, Detail: st.retiredWhy}
	case st.state == Open:
		return &Unavailable{Reason: ReasonOpen, Until: st.openUntil, Detail: st.openWhy}
	case st.state == HalfOpen && st.trial:
		return &Unavailable{Reason: ReasonHalfOpen, Detail: "its trial request is in flight"}
	case now.Before(st.coolUntil):
		return &Unavailable{Reason: ReasonCooling, Until: st.coolUntil, Detail: st.coolWhy}
	}
	return nil
}

// Available reports, without side effects, whether the backend could be
// called now; if not, the skip wraps an *Unavailable.
func (b *Set) Available(id llm.BackendID) *llm.Skip {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	return skipOf(b.availability(b.backends[id], id.KeyID(), now))
}

func skipOf(err error) *llm.Skip {
	if err == nil {
		return nil
	}
	return err.(*Unavailable).Skip()
}

// Allow admits a call about to be made and returns done, which reports its
// outcome: e is nil for a success, otherwise the classified failure;
// firstByte is the time to the first content (the whole latency for a
// non-streaming call). A half-open backend admits exactly one call until
// that call's done runs, so the caller defers done the moment it is
// admitted: a call that ends in any way, a panic included, gives its trial
// back. Calling done again does nothing.
func (b *Set) Allow(id llm.BackendID) (done func(e *llm.Error, firstByte time.Duration), skip *llm.Skip) {
	ticket, trial, err := b.acquire(id)
	if err != nil {
		return nil, skipOf(err)
	}
	if trial && !b.claimTrial(id) {
		// Another instance of the team sends the trial: this one gives
		// its own back untried.
		b.report(id, ticket, &llm.Error{Class: llm.Cancelled}, 0)
		return nil, (&Unavailable{Reason: ReasonHalfOpen, Detail: "its trial request is in flight on another instance of the team"}).Skip()
	}
	return b.doneFunc(id, ticket), nil
}

// Unchecked returns the done of a call made without Allow, which the
// router makes when every backend of a route is unavailable: it holds no
// trial, so it cannot decide a half-open backend's state, but its outcome
// still counts for health, cooldowns, keys and retirement.
func (b *Set) Unchecked(id llm.BackendID) (done func(e *llm.Error, firstByte time.Duration)) {
	return b.doneFunc(id, 0)
}

func (b *Set) doneFunc(id llm.BackendID, ticket uint64) func(*llm.Error, time.Duration) {
	var once sync.Once
	return func(e *llm.Error, firstByte time.Duration) {
		once.Do(func() { b.report(id, ticket, e, firstByte) })
	}
}

// acquire is Available for a call about to be made: a half-open backend
// admits exactly one such call until it is reported. The ticket goes back
// with report, so only the trial's own outcome can close or reopen the
// breaker; a call that started before the backend went half-open reports
// with a ticket that holds no slot.
func (b *Set) acquire(id llm.BackendID) (ticket uint64, trial bool, err error) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.backends[id]
	if err := b.availability(st, id.KeyID(), now); err != nil {
		return 0, false, err
	}
	b.tickets++
	if st != nil && st.state == HalfOpen {
		st.trial, st.trialTok = true, b.tickets
		trial = true
	}
	return b.tickets, trial, nil
}

// report records the outcome of one call acquired with acquire: e is nil for
// a success, otherwise the classified failure. firstByte is the time to the
// first content (the whole latency for a non-streaming call), used to spot a
// backend that has become too slow. Cancelled calls, the caller's own errors
// and prompts too long for the model only release a half-open trial slot:
// they say nothing about the backend.
func (b *Set) report(id llm.BackendID, ticket uint64, e *llm.Error, firstByte time.Duration) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.get(id)
	b.tick(st, now)
	wasTrial := st.state == HalfOpen && st.trial && st.trialTok == ticket && ticket != 0
	if wasTrial {
		st.trial = false
	}
	if e != nil && (e.Class == llm.Cancelled || e.Class == llm.Caller || e.Class == llm.TooLong) {
		// Not the backend's doing: only the trial slot is given back.
		return
	}
	// While half-open only the trial decides the state. Other calls (begun
	// before the breaker opened, or made when every backend was
	// unavailable) still count for health, cooldowns, keys and retirement.
	bystander := st.state == HalfOpen && !wasTrial
	if e == nil {
		score := 1.0
		if b.slow(st, firstByte) {
			score = 0.6
		}
		b.remember(st, firstByte)
		if bystander {
			b.score(st, score, now)
			return
		}
		st.failures, st.limited = 0, 0
		if b.team != nil && st.state == Closed {
			b.team.Succeeded(id)
		}
		if wasTrial {
			// A recovered backend starts from a cautious score:
			// good enough to serve, quick to trip again if it relapses.
			b.setHealth(st, 0.7, now)
			b.setState(st, Closed, now, "trial request succeeded")
			return
		}
		b.score(st, score, now)
		if st.retired {
			st.retired = false
			b.publish(events.Event{Time: now, Kind: events.Restored, Level: events.Info, Backend: st.name, Provider: st.id.Provider, Reason: "served a request"})
		}
		return
	}

	switch e.Class {
	case llm.RateLimited:
		// Switching beats waiting: the backend rests, but a rate limit is
		// the provider working as designed, not a breaker failure.
		b.score(st, 0.3, now)
		wait := e.RetryAfter
		if wait <= 0 {
			st.limited++
			wait = headerlessCooldown(st.limited, b.s.RateLimitCooldown)
		}
		st.coolUntil, st.coolWhy = now.Add(wait), e.Message
		b.tell(Mark{Kind: MarkCooling, ID: id, Until: st.coolUntil, Why: e.Message})
		b.publish(events.Event{Time: now, Kind: events.Cooldown, Level: events.Info, Backend: st.name, Provider: st.id.Provider,
			Reason: e.Message, Until: st.coolUntil})
		if wasTrial {
			b.setState(st, Closed, now, "trial request reached a working server (rate limited)")
		}
	case llm.Credential:
		b.disableKey(id.KeyID(), st, now, e.Message, "the provider rejected the key: ")
	case llm.Gone:
		b.score(st, 0, now)
		b.retire(st, now, e.Message)
	case llm.Transient, llm.Soft:
		b.score(st, penalty(e), now)
		if bystander {
			return
		}
		st.failures++
		if b.team != nil && st.state == Closed {
			b.team.Failed(id, b.s.Failures, e.Message)
		}
		switch {
		case wasTrial:
			b.trip(st, now, "trial request failed: "+e.Message, false)
		case st.state == Closed && st.failures >= b.s.Failures:
			b.trip(st, now, fmt.Sprintf("%d failures in a row, last: %s", st.failures, e.Message), true)
		case st.state == Closed && st.health < b.s.HealthThreshold:
			b.trip(st, now, fmt.Sprintf("health %.2f below %.2f, last: %s", st.health, b.s.HealthThreshold, e.Message), true)
		}
	}
}

// headerlessCooldown is the rest after the nth 429 in a row that did not
// say how long: 5 s doubling each time, never above capAt.
func headerlessCooldown(n int, capAt time.Duration) time.Duration {
	d := defaults.RateLimitFirstCooldown
	for i := 1; i < n && d < capAt; i++ {
		d *= 2
	}
	return min(d, capAt)
}

// penalty is the score of a failed outcome in the health EWMA: an empty
// or malformed answer still shows a working server, a timeout does not.
func penalty(e *llm.Error) float64 {
	switch e.Sub {
	case llm.SubEmpty:
		return 0.1
	case llm.SubMalformed:
		return 0.2
	case llm.SubQuota:
		return 0.3
	}
	return 0 // timeouts, 5xx, connection failures
}

// score folds one outcome into the health EWMA.
func (b *Set) score(st *backend, v float64, now time.Time) {
	b.setHealth(st, b.s.Alpha*v+(1-b.s.Alpha)*st.health, now)
}

// setHealth sets the score and announces crossings of the threshold.
func (b *Set) setHealth(st *backend, h float64, now time.Time) {
	before := st.health
	st.health = h
	th := b.s.HealthThreshold
	if (before >= th) != (st.health >= th) {
		lvl, word := events.Info, "recovered above"
		if st.health < th {
			lvl, word = events.Warn, "fell below"
		}
		b.publish(events.Event{Time: now, Kind: events.Health, Level: lvl, Backend: st.name, Provider: st.id.Provider,
			Reason: fmt.Sprintf("health %.2f %s %.2f", st.health, word, th)})
	}
}

// trip opens the breaker. fresh is false for a failed trial, which keeps
// the open time: a backend that stays down is retried once per period.
func (b *Set) trip(st *backend, now time.Time, why string, fresh bool) {
	if fresh && !st.closedAt.IsZero() && now.Sub(st.closedAt) < b.s.FlapWindow {
		// Failing again soon after recovering: flapping, so wait longer.
		st.level = min(st.level+1, len(b.s.OpenTimes)-1)
		st.levelAt = now
	}
	st.openUntil = now.Add(b.s.OpenTimes[st.level])
	st.openWhy = why
	st.failures = 0
	// Probe results before the trip say nothing about the backend now.
	st.probeOKs, st.probeFails = 0, 0
	b.setState(st, Open, now, why)
}

func (b *Set) retire(st *backend, now time.Time, why string) {
	if st.retired {
		return
	}
	st.retired, st.retiredAt, st.retiredWhy = true, now, why
	b.tell(Mark{Kind: MarkRetired, ID: st.id, Why: why})
	b.publish(events.Event{Time: now, Kind: events.Retired, Level: events.Warn, Backend: st.name, Provider: st.id.Provider, Reason: why})
}

// slow reports whether d is well above the backend's usual first-byte time.
func (b *Set) slow(st *backend, d time.Duration) bool {
	if d <= 0 || st.latN < b.s.SlowSamples {
		return false
	}
	return float64(d) > b.s.SlowFactor*float64(st.medianLatency())
}

// medianRefresh is how many successes a full latency window takes before
// its median is worked out again. Every success asks for the median, under
// the set's lock; sorting the window each time cost more than the rest of
// reporting a result, and a median a few samples old judges "well above
// usual" just as well.
const medianRefresh = 8

// medianLatency returns the median of the recent first-byte latencies:
// exact while the window fills, then at most medianRefresh samples old.
func (st *backend) medianLatency() time.Duration {
	if st.medianN == st.latN || (st.latN >= latencyWindow && st.latN-st.medianN < medianRefresh) {
		return st.median
	}
	var sorted [latencyWindow]time.Duration
	n := copy(sorted[:], st.lats[:min(st.latN, latencyWindow)])
	slices.Sort(sorted[:n])
	st.median, st.medianN = sorted[n/2], st.latN
	return st.median
}

func (b *Set) remember(st *backend, d time.Duration) {
	if d <= 0 {
		return
	}
	if st.lats == nil {
		st.lats = make([]time.Duration, latencyWindow)
	}
	st.lats[st.latN%latencyWindow] = d
	st.latN++
}

// ProbeResult records an active probe, kept apart from traffic: it moves a
// backend down after ProbeFailures failures in a row and back up after
// ProbeSuccesses successes, and a passing probe ends a retirement. e is nil
// for a pass.
func (b *Set) ProbeResult(id llm.BackendID, e *llm.Error) {
	if e != nil && (e.Class == llm.RateLimited || e.Class == llm.Cancelled) {
		// Busy is not down, and a probe cut short proved nothing.
		return
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.get(id)
	b.tick(st, now)
	st.lastProbe, st.lastProbeOK = now, e == nil
	if e == nil {
		st.lastProbeMsg = "ok"
		st.probeFails = 0
		st.probeOKs++
		if st.retired {
			st.retired = false
			b.publish(events.Event{Time: now, Kind: events.Restored, Level: events.Info, Backend: st.name, Provider: st.id.Provider, Reason: "a probe passed"})
		}
		if st.state != Closed && st.probeOKs >= b.s.ProbeSuccesses {
			b.setHealth(st, 0.7, now)
			b.setState(st, Closed, now, fmt.Sprintf("%d probes passed", st.probeOKs))
		}
		return
	}
	st.lastProbeMsg = e.Message
	st.probeOKs = 0
	st.probeFails++
	switch {
	case e.Class == llm.Gone:
		b.retire(st, now, "probe: "+e.Message)
	case e.Class == llm.Credential:
		b.disableKey(id.KeyID(), st, now, e.Message, "a probe was refused: ")
	case st.probeFails >= b.s.ProbeFailures && st.state != Open:
		b.trip(st, now, fmt.Sprintf("%d probes failed, last: %s", st.probeFails, e.Message), st.state == Closed)
	}
}

// RetireByProbe retires (or restores) a backend after the daily catalog
// probe, whatever its traffic said.
func (b *Set) RetireByProbe(id llm.BackendID, e *llm.Error) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.get(id)
	st.lastProbe, st.lastProbeOK = now, e == nil
	if e == nil {
		st.lastProbeMsg = "ok"
		if st.retired {
			st.retired = false
			b.publish(events.Event{Time: now, Kind: events.Restored, Level: events.Info, Backend: st.name, Provider: st.id.Provider, Reason: "passed the daily probe"})
		}
		return
	}
	st.lastProbeMsg = e.Message
	if e.Class == llm.RateLimited {
		return // busy is not gone
	}
	b.retire(st, now, "failed the daily probe: "+e.Message)
}

// Retire takes a backend out of routing for a reason found outside its
// traffic, such as its server no longer answering or its provider's
// model list no longer naming it.
func (b *Set) Retire(id llm.BackendID, why string) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.retire(b.get(id), now, why)
}

// Unretire ends a retirement that Retire began, when its cause is gone.
func (b *Set) Unretire(id llm.BackendID, why string) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.get(id)
	if st.retired {
		st.retired = false
		b.publish(events.Event{Time: now, Kind: events.Restored, Level: events.Info, Backend: st.name, Provider: st.id.Provider, Reason: why})
	}
}

// Status is one backend's state for the dashboard, probes and persistence.
type Status struct {
	// ID is the backend; Backend, Provider and Key are its parts as text,
	// which is how the state is saved across a restart.
	ID          llm.BackendID `json:"-"`
	Backend     string        `json:"backend"`
	Provider    string        `json:"provider"`
	Key         string        `json:"key,omitempty"`
	State       State         `json:"state"`
	Health      float64       `json:"health"`
	Failures    int           `json:"failures"`
	Level       int           `json:"level"`
	OpenUntil   time.Time     `json:"open_until,omitzero"`
	OpenWhy     string        `json:"open_why,omitempty"`
	ClosedAt    time.Time     `json:"closed_at,omitzero"`
	LevelAt     time.Time     `json:"level_at,omitzero"`
	CoolUntil   time.Time     `json:"cool_until,omitzero"`
	CoolWhy     string        `json:"cool_why,omitempty"`
	Retired     bool          `json:"retired,omitempty"`
	RetiredAt   time.Time     `json:"retired_at,omitzero"`
	RetiredWhy  string        `json:"retired_why,omitempty"`
	KeyOffUntil time.Time     `json:"key_off_until,omitzero"`
	KeyOffWhy   string        `json:"key_off_why,omitempty"`
	// KeyNextCheck is when a refused key is checked with the provider
	// again; KeyChecks how many checks found it still refused.
	KeyNextCheck time.Time `json:"key_next_check,omitzero"`
	KeyChecks    int       `json:"key_checks,omitempty"`
	ProbeFails   int       `json:"probe_fails,omitempty"`
	ProbeOKs     int       `json:"probe_oks,omitempty"`
	LastProbe    time.Time `json:"last_probe,omitzero"`
	LastProbeOK  bool      `json:"last_probe_ok,omitempty"`
	LastProbeMsg string    `json:"last_probe_msg,omitempty"`
}

// Status returns the state of one backend (a fresh closed state if unknown).
func (b *Set) Status(id llm.BackendID) Status {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.get(id)
	b.tick(st, now)
	return b.status(st, now)
}

func (b *Set) status(st *backend, now time.Time) Status {
	s := Status{
		Backend: st.name, Provider: st.id.Provider, Key: st.id.Key, ID: st.id, State: st.state, Health: st.health, Failures: st.failures,
		Level: st.level, OpenUntil: st.openUntil, OpenWhy: st.openWhy, ClosedAt: st.closedAt, LevelAt: st.levelAt,
		Retired: st.retired, RetiredAt: st.retiredAt, RetiredWhy: st.retiredWhy,
		ProbeFails: st.probeFails, ProbeOKs: st.probeOKs, LastProbe: st.lastProbe, LastProbeOK: st.lastProbeOK, LastProbeMsg: st.lastProbeMsg,
	}
	if now.Before(st.coolUntil) {
		s.CoolUntil, s.CoolWhy = st.coolUntil, st.coolWhy
	}
	if k := b.keys[st.id.KeyID()]; k != nil && now.Before(k.until) {
		s.KeyOffUntil, s.KeyOffWhy = k.until, k.why
		s.KeyNextCheck, s.KeyChecks = k.next, k.checks
	}
	return s
}

// Snapshot returns the state of every backend seen so far, sorted by name.
func (b *Set) Snapshot() []Status {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Status, 0, len(b.backends))
	for _, st := range b.backends {
		b.tick(st, now)
		out = append(out, b.status(st, now))
	}
	slices.SortFunc(out, func(x, y Status) int {
		if x.Backend < y.Backend {
			return -1
		}
		if x.Backend > y.Backend {
			return 1
		}
		return 0
	})
	return out
}

// ErrBadState is returned by Restore for a state it cannot use.
var ErrBadState = errors.New("breaker: bad saved state")

// Restore loads saved states (from Snapshot, across a restart). A backend
// that was open stays open until its saved time; a half-open one whose trial
// was cut by the restart is open for a fresh trial.
func (b *Set) Restore(saved []Status) error {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range saved {
		if s.Backend == "" {
			return fmt.Errorf("%w: backend without a name", ErrBadState)
		}
		id, err := llm.ParseBackendID(s.Backend)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadState, err)
		}
		switch s.State {
		case Closed, Open, HalfOpen:
		default:
			return fmt.Errorf("%w: %s has state %q", ErrBadState, s.Backend, s.State)
		}
		st := b.get(id)
		st.state, st.health, st.failures = s.State, s.Health, s.Failures
		st.level = min(max(s.Level, 0), len(b.s.OpenTimes)-1)
		st.openUntil, st.openWhy, st.closedAt, st.levelAt = s.OpenUntil, s.OpenWhy, s.ClosedAt, s.LevelAt
		st.coolUntil, st.coolWhy = s.CoolUntil, s.CoolWhy
		st.retired, st.retiredAt, st.retiredWhy = s.Retired, s.RetiredAt, s.RetiredWhy
		st.probeFails, st.probeOKs = s.ProbeFails, s.ProbeOKs
		st.lastProbe, st.lastProbeOK, st.lastProbeMsg = s.LastProbe, s.LastProbeOK, s.LastProbeMsg
		if st.health <= 0 || st.health > 1 {
			st.health = 1
		}
		if s.KeyOffUntil.After(now) {
			// The key is checked again soon after a restart: it may have
			// been fixed while FreeLane was not running.
			next := nextKeyCheck(now, 0)
			if !s.KeyNextCheck.IsZero() && s.KeyNextCheck.Before(next) {
				next = s.KeyNextCheck
			}
			b.keys[id.KeyID()] = &keyState{until: s.KeyOffUntil, why: s.KeyOffWhy, checks: s.KeyChecks, next: next}
		}
	}
	return nil
}
