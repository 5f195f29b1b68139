package breaker

import (
	"fmt"
	"time"

	"freelane/backend/llm"
)

// Team shares what one instance learns about its backends with the other
// instances of a team, so that a backend one of them found failing, rate
// limited, gone or refusing its key is passed by on all of them.
// backend/redisstate implements it. Its methods are called with the
// set's lock held and must not block.
type Team interface {
	// Tell sends a mark to the other instances.
	Tell(m Mark)
	// Failed counts a failure of a closed backend for the team; when the
	// team's failures in a row reach threshold, the team calls TripByTeam
	// on this instance, which opens the breaker and tells the others.
	// Succeeded ends the team's run of failures.
	Failed(id llm.BackendID, threshold int, why string)
	Succeeded(id llm.BackendID)
}

// Trials is the part of a Team that hands out half-open trials: one
// across all instances. It is asked outside the set's lock and may take a
// round trip.
type Trials interface {
	// ClaimTrial reports whether this instance may send id's trial
	// request; false means another instance holds it.
	ClaimTrial(id llm.BackendID) bool
}

// MarkKind says what a Mark tells.
type MarkKind uint8

// Marks one instance tells the others.
const (
	MarkOpen    MarkKind = iota + 1 // the breaker opened until Until
	MarkClosed                      // the breaker closed (a trial passed)
	MarkCooling                     // rate limited until Until
	MarkKeyOff                      // the key was refused until Until
	MarkRetired                     // the model is gone
)

// Mark is one thing an instance learned about a backend.
type Mark struct {
	Kind  MarkKind      `json:"kind"`
	ID    llm.BackendID `json:"-"`
	Until time.Time     `json:"until,omitzero"`
	Level int           `json:"level,omitempty"`
	Why   string        `json:"why"`
}

// ShareWith makes the set tell a team's other instances what it learns
// and count failures with them. Call it before traffic.
func (b *Set) ShareWith(t Team) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.team = t
	b.trials, _ = t.(Trials)
}

// tell sends m to the team unless the set is applying a mark it was told.
// Called with b.mu held.
func (b *Set) tell(m Mark) {
	if b.team != nil && !b.applying {
		b.team.Tell(m)
	}
}

// Apply records a mark another instance told, as if this instance had
// learned it itself, without telling it again. from names that instance.
func (b *Set) Apply(m Mark, from string) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.applying = true
	defer func() { b.applying = false }()
	st := b.get(m.ID)
	b.tick(st, now)
	why := fmt.Sprintf("%s (on %s)", m.Why, from)
	switch m.Kind {
	case MarkOpen:
		if !m.Until.After(now) || (st.state == Open && !m.Until.After(st.openUntil)) {
			return
		}
		st.level = min(max(m.Level, st.level), len(b.s.OpenTimes)-1)
		st.levelAt = now
		st.openUntil, st.openWhy, st.failures = m.Until, why, 0
		st.probeOKs, st.probeFails = 0, 0
		if st.state == Open {
			return
		}
		b.setState(st, Open, now, why)
	case MarkClosed:
		if st.state != Closed {
			b.setHealth(st, 0.7, now)
			b.setState(st, Closed, now, why)
		}
	case MarkCooling:
		if m.Until.After(st.coolUntil) {
			st.coolUntil, st.coolWhy = m.Until, why
		}
	case MarkKeyOff:
		k := m.ID.KeyID()
		if ks := b.keys[k]; ks != nil && !m.Until.After(ks.until) {
			return
		}
		b.disableKey(k, st, now, why, "the provider rejected the key: ")
		b.keys[k].until = m.Until
	case MarkRetired:
		b.retire(st, now, why)
	}
}

// TripByTeam opens a closed backend whose failures in a row across the
// team reached the threshold, and tells the others.
func (b *Set) TripByTeam(id llm.BackendID, failures int, why string) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.get(id)
	b.tick(st, now)
	if st.state != Closed {
		return
	}
	b.trip(st, now, fmt.Sprintf("%d failures in a row across the team's instances, last: %s", failures, why), true)
}

// claimTrial asks the team for id's half-open trial after this instance
// took its own; without a team the local trial is the only one.
func (b *Set) claimTrial(id llm.BackendID) bool {
	b.mu.Lock()
	trials := b.trials
	b.mu.Unlock()
	return trials == nil || trials.ClaimTrial(id)
}
