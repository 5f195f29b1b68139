// Package events is FreeLane's internal event bus: breakers, probes and
// quotas publish what changed, and the log, the dashboard and the tray
// subscribe. Publishing never blocks: a subscriber that does not keep up
// loses events (and is told how many), the publisher never waits for it.
package events

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Kind says what happened.
type Kind string

// Event kinds.
const (
	StateChange Kind = "state"        // breaker closed/open/half_open
	Cooldown    Kind = "cooldown"     // rate limited until a time
	Retired     Kind = "retired"      // model withdrawn (404) or failed the daily probe
	Restored    Kind = "restored"     // a retired or down backend is back
	KeyDisabled Kind = "key_disabled" // a provider's key was rejected
	KeyRestored Kind = "key_restored" // a rejected key was replaced, or a check found it works again
	Health      Kind = "health"       // health score crossed the threshold
	Probe       Kind = "probe"        // a probe result changed a backend's standing
	Offline     Kind = "offline"      // every backend failed to connect: the machine is offline
	Online      Kind = "online"
	Paused      Kind = "routing_paused"  // the user paused routing: /v1 answers 503
	Resumed     Kind = "routing_resumed" // routing resumed
	// GearSwitched is a chain's gear changed (From and To are the gears,
	// Reason names the chain).
	GearSwitched Kind = "gear_switched"

	QuotaWarning   Kind = "quota_warning"   // 80% of a backend's limit used in the current window
	QuotaExhausted Kind = "quota_exhausted" // a limit is used up until its reset
	BudgetWarning  Kind = "budget_warning"  // 80% of a budget spent
	BudgetExceeded Kind = "budget_exceeded" // a budget is spent; its action applies

	ModelsJoined Kind = "models_joined" // a provider's model list named new models, which now serve
	LocalFound   Kind = "local_found"   // a model server on this machine started answering
	LocalGone    Kind = "local_gone"    // a model server on this machine stopped answering
	LocalForeign Kind = "local_foreign" // a model server of another user of this machine was found; it is not used unless allowed
)

// Level is how much a person should care.
type Level string

// Levels.
const (
	Info  Level = "info"
	Warn  Level = "warn"
	Alert Level = "alert" // the user must act (a key rejected, nothing can serve)
)

// Event is one change. Backend is "provider/model" (empty for provider-wide
// events such as a disabled key, which set Provider).
type Event struct {
	Time     time.Time `json:"time"`
	Kind     Kind      `json:"kind"`
	Level    Level     `json:"level"`
	Backend  string    `json:"backend,omitempty"`
	Provider string    `json:"provider,omitempty"`
	// Budget is the id ("scope|period") of the budget a budget event is about.
	Budget string    `json:"budget,omitempty"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Until  time.Time `json:"until,omitzero"`
}

// Bus fans events out to subscribers and keeps the most recent ones.
type Bus struct {
	log *slog.Logger

	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	recent []Event // ring of the last keep events
	next   int
	full   bool
}

// keep is how many recent events a new subscriber (or the dashboard's first
// snapshot) can see.
const keep = 200

// NewBus returns a Bus that also writes every event to log (nil: no log).
func NewBus(log *slog.Logger) *Bus {
	return &Bus{log: log, subs: map[*Subscription]struct{}{}, recent: make([]Event, keep)}
}

// Publish delivers e to every subscriber without waiting for any of them.
func (b *Bus) Publish(e Event) {
	if b == nil {
		return
	}
	if b.log != nil {
		lvl := slog.LevelInfo
		if e.Level == Warn || e.Level == Alert {
			lvl = slog.LevelWarn
		}
		b.log.Log(context.Background(), lvl, "event", "kind", e.Kind, "level", e.Level, "backend", e.Backend,
			"provider", e.Provider, "from", e.From, "to", e.To, "reason", e.Reason, "until", e.Until)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recent[b.next] = e
	b.next = (b.next + 1) % keep
	if b.next == 0 {
		b.full = true
	}
	for s := range b.subs {
		select {
		case s.c <- e:
		default:
			s.dropped.Add(1)
		}
	}
}

// Recent returns the last events, oldest first.
func (b *Bus) Recent() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.recentLocked()
}

func (b *Bus) recentLocked() []Event {
	if !b.full {
		return append([]Event(nil), b.recent[:b.next]...)
	}
	return append(append([]Event(nil), b.recent[b.next:]...), b.recent[:b.next]...)
}

// Restore puts events an earlier run kept back among the recent ones,
// before any published since this Bus was made, so the dashboard's recent
// events and alerts read the same after a restart. They are not delivered
// to subscribers or logged again: they happened before. Only the newest
// keep events are kept in all.
func (b *Bus) Restore(old []Event) {
	if b == nil || len(old) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	all := append(slices.Clone(old), b.recentLocked()...)
	all = all[max(len(all)-keep, 0):]
	clear(b.recent)
	n := copy(b.recent, all)
	b.next, b.full = n%keep, n == keep
}

// Subscription receives events until Close.
type Subscription struct {
	b       *Bus
	c       chan Event
	dropped atomic.Uint64
	once    sync.Once
}

// Subscribe returns a subscription buffering up to buffer events.
func (b *Bus) Subscribe(buffer int) *Subscription {
	s := &Subscription{b: b, c: make(chan Event, buffer)}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// C is the channel events arrive on; it is closed by Close.
func (s *Subscription) C() <-chan Event { return s.c }

// Dropped is how many events this subscriber missed because its buffer was full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close stops delivery and closes C.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.b.mu.Lock()
		delete(s.b.subs, s)
		s.b.mu.Unlock()
		close(s.c)
	})
}
