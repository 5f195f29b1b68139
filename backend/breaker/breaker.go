// Package breaker decides which backends the router may call right now. It
// keeps, per backend, the consecutive failures, an open (tripped) period, a
// rate-limit cooldown, and per provider key whether the key was rejected.
// Time comes from an injected clock so tests move time instead of sleeping.
package breaker

import (
	"fmt"
	"sync"
	"time"

	"freelane/backend/llm"
)

// Clock tells the time. Production code uses SystemClock.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Settings tune the breakers. Zero values mean the defaults.
type Settings struct {
	Failures           int           // consecutive failures that trip a backend (2)
	Open               time.Duration // how long a tripped backend is skipped (30 s)
	RateLimitCooldown  time.Duration // wait after a 429 without Retry-After (60 s)
	CredentialCooldown time.Duration // how long a rejected key is disabled (1 h)
	GoneCooldown       time.Duration // how long a withdrawn model is retired (1 h)
}

func (s Settings) withDefaults() Settings {
	if s.Failures <= 0 {
		s.Failures = 2
	}
	if s.Open <= 0 {
		s.Open = 30 * time.Second
	}
	if s.RateLimitCooldown <= 0 {
		s.RateLimitCooldown = 60 * time.Second
	}
	if s.CredentialCooldown <= 0 {
		s.CredentialCooldown = time.Hour
	}
	if s.GoneCooldown <= 0 {
		s.GoneCooldown = time.Hour
	}
	return s
}

// Reason says why a backend is not available.
type Reason string

// Reasons a backend is skipped.
const (
	Open       Reason = "open"         // tripped by consecutive failures
	CoolingOff Reason = "cooling"      // rate limited
	KeyOff     Reason = "key_disabled" // its provider's key was rejected
	Retired    Reason = "retired"      // the model is gone
)

// Unavailable is returned by Allow when a backend must be skipped.
type Unavailable struct {
	Reason Reason
	Until  time.Time
	Detail string
}

// RateLimited reports whether the backend is only waiting out a rate limit.
func (u *Unavailable) RateLimited() bool { return u.Reason == CoolingOff }

func (u *Unavailable) Error() string {
	return fmt.Sprintf("%s until %s (%s)", u.Reason, u.Until.Format(time.TimeOnly), u.Detail)
}

type backendState struct {
	failures  int
	openUntil time.Time
	openWhy   string
	coolUntil time.Time
	coolWhy   string
	goneUntil time.Time
	goneWhy   string
}

type keyState struct {
	until time.Time
	why   string
}

// Set holds the state of every backend. It is safe for concurrent use.
type Set struct {
	s     Settings
	clock Clock

	mu       sync.Mutex
	backends map[string]*backendState
	keys     map[string]*keyState
}

// New returns an empty Set.
func New(s Settings, clock Clock) *Set {
	if clock == nil {
		clock = SystemClock{}
	}
	return &Set{s: s.withDefaults(), clock: clock, backends: map[string]*backendState{}, keys: map[string]*keyState{}}
}

// Allow reports whether the backend (provider/model, served with the key
// of provider) may be called now; if not, the error is an *Unavailable.
func (b *Set) Allow(provider, backend string) error {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if k := b.keys[provider]; k != nil && now.Before(k.until) {
		return &Unavailable{Reason: KeyOff, Until: k.until, Detail: k.why}
	}
	st := b.backends[backend]
	if st == nil {
		return nil
	}
	switch {
	case now.Before(st.goneUntil):
		return &Unavailable{Reason: Retired, Until: st.goneUntil, Detail: st.goneWhy}
	case now.Before(st.openUntil):
		return &Unavailable{Reason: Open, Until: st.openUntil, Detail: st.openWhy}
	case now.Before(st.coolUntil):
		return &Unavailable{Reason: CoolingOff, Until: st.coolUntil, Detail: st.coolWhy}
	}
	return nil
}

// Report records the outcome of one call: e is nil for a success, otherwise
// the classified failure (a rate limit's RetryAfter sets its cooldown).
func (b *Set) Report(provider, backend string, e *llm.Error) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if e == nil {
		if st := b.backends[backend]; st != nil {
			st.failures = 0
			st.goneUntil = time.Time{}
		}
		return
	}
	st := b.backends[backend]
	if st == nil {
		st = &backendState{}
		b.backends[backend] = st
	}
	switch e.Class {
	case llm.RateLimited:
		wait := e.RetryAfter
		if wait <= 0 {
			wait = b.s.RateLimitCooldown
		}
		st.coolUntil = now.Add(wait)
		st.coolWhy = e.Message
	case llm.Transient, llm.Soft:
		st.failures++
		if st.failures >= b.s.Failures {
			st.openUntil = now.Add(b.s.Open)
			st.openWhy = fmt.Sprintf("%d failures in a row, last: %s", st.failures, e.Message)
			st.failures = 0
		}
	case llm.Credential:
		b.keys[provider] = &keyState{until: now.Add(b.s.CredentialCooldown), why: e.Message}
	case llm.Gone:
		st.goneUntil = now.Add(b.s.GoneCooldown)
		st.goneWhy = e.Message
	}
}
