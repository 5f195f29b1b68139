// Package notify turns the router's events into the few notifications a
// person should see: a backend's breaker opened (and closed again), a key
// refused (and working again), a quota used up, a budget at 80 % and at
// 100 %, a local model server gone (and back).
//
// The Notifier reads events from the bus on its own goroutine, so the
// request path does no more than the bus's non-blocking send. Every
// notification names what it is about (a backend, a provider, a budget)
// and says in one sentence what happened and what FreeLane does about it;
// it never quotes an upstream's answer, which may echo a key. The same
// notification for the same subject stays quiet for a while and all of
// them together are capped per minute, so a flapping breaker or a provider
// whose every model fails at once does not flood the user. The last few
// are kept in memory for the dashboard; subscribers (the dashboard's
// websocket, the desktop app) get each as it is raised.
package notify

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"freelane/backend/clock"
	"freelane/backend/events"
	"freelane/backend/llm"
)

// Kind is the switchable group a notification belongs to.
type Kind string

// Notification kinds; each can be switched off on its own.
const (
	Breaker Kind = "breaker" // a backend's breaker opened or closed
	Key     Kind = "key"     // a provider refused its key, or it works again
	Quota   Kind = "quota"   // a backend's quota is used up until its reset
	Budget  Kind = "budget"  // a budget is 80 % or fully spent
	Local   Kind = "local"   // a local model server stopped, or answers again
)

// Kinds are every kind, in the order the dashboard lists them.
var Kinds = []Kind{Breaker, Key, Quota, Budget, Local}

// Notification is one thing the user is told.
type Notification struct {
	// ID grows by one with every notification raised since start.
	ID   uint64    `json:"id"`
	Time time.Time `json:"time"`
	Kind Kind      `json:"kind"`
	// Level is warn or alert for trouble, info for a recovery.
	Level events.Level `json:"level"`
	Title string       `json:"title"`
	Body  string       `json:"body"`
	// Subject names what it is about: a backend ("groq/llama"), a
	// provider ("groq") or a budget ("global|day").
	Subject string `json:"subject"`
}

// Switches say which kinds are raised.
type Switches struct {
	Breaker bool `json:"breaker"`
	Key     bool `json:"key"`
	Quota   bool `json:"quota"`
	Budget  bool `json:"budget"`
	Local   bool `json:"local"`
}

// AllOn is every kind switched on, the default.
func AllOn() Switches {
	return Switches{Breaker: true, Key: true, Quota: true, Budget: true, Local: true}
}

// On reports whether kind k is switched on.
func (s Switches) On(k Kind) bool {
	switch k {
	case Breaker:
		return s.Breaker
	case Key:
		return s.Key
	case Quota:
		return s.Quota
	case Budget:
		return s.Budget
	case Local:
		return s.Local
	}
	return false
}

// Defaults of Options.
const (
	DefaultRepeat    = 10 * time.Minute
	DefaultPerMinute = 6
	DefaultKeep      = 50
	// shortReset is the reset time under which a used-up quota is not
	// worth a notification: a per-minute limit is routine, FreeLane just
	// waits it out or routes around it.
	shortReset = 5 * time.Minute
)

// Options configure a Notifier; zero values take the defaults.
type Options struct {
	Clock clock.Clock
	// Repeat is how long the same notification about the same subject
	// stays quiet after it was raised [10m].
	Repeat time.Duration
	// PerMinute caps the notifications raised in any minute [6].
	PerMinute int
	// Keep is how many recent notifications are kept [50].
	Keep int
	// Redact removes secrets from the text; nil leaves it as is.
	Redact func(string) string
	Logger *slog.Logger
}

// Notifier raises notifications from events. It is safe for concurrent use.
type Notifier struct {
	clock     clock.Clock
	repeat    time.Duration
	perMinute int
	keep      int
	redact    func(string) string
	log       *slog.Logger

	mu       sync.Mutex
	switches Switches
	next     uint64
	recent   []Notification         // oldest first, at most keep
	last     map[string]time.Time   // "kind|what|subject" -> when last raised
	told     map[string]bool        // subjects whose trouble was told and not yet its end
	minute   []time.Time            // raise times within the last minute
	subs     map[*Subscription]bool // live subscribers
	held     uint64                 // notifications held back by the limits
}

// New returns a Notifier with every kind switched on.
func New(o Options) *Notifier {
	n := &Notifier{
		clock: clock.OrReal(o.Clock), repeat: o.Repeat, perMinute: o.PerMinute, keep: o.Keep, redact: o.Redact, log: o.Logger,
		switches: AllOn(), last: map[string]time.Time{}, told: map[string]bool{}, subs: map[*Subscription]bool{},
	}
	if n.repeat <= 0 {
		n.repeat = DefaultRepeat
	}
	if n.perMinute <= 0 {
		n.perMinute = DefaultPerMinute
	}
	if n.keep <= 0 {
		n.keep = DefaultKeep
	}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	return n
}

// Configure sets which kinds are raised; it takes effect with the next event.
func (n *Notifier) Configure(s Switches) {
	n.mu.Lock()
	n.switches = s
	n.mu.Unlock()
}

// Switches are the kinds switched on now.
func (n *Notifier) Switches() Switches {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.switches
}

// Run raises the notifications the events on c call for until ctx ends or
// c is closed. The caller owns the goroutine running it.
func (n *Notifier) Run(ctx context.Context, c <-chan events.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-c:
			if !ok {
				return
			}
			n.Handle(e)
		}
	}
}

// Handle raises the notification e calls for, if any, and reports whether
// it did.
func (n *Notifier) Handle(e events.Event) (Notification, bool) {
	d, ok := describe(e)
	if !ok {
		return Notification{}, false
	}
	now := n.clock.Now()
	n.mu.Lock()
	if !n.switches.On(d.kind) {
		// A kind switched off forgets what it told, so switching it on
		// again does not raise the end of a trouble it never showed.
		delete(n.told, string(d.kind)+"|"+d.subject)
		n.mu.Unlock()
		return Notification{}, false
	}
	tk := string(d.kind) + "|" + d.subject
	switch {
	case d.end && !n.told[tk]:
		// The end of a trouble nobody was told of is no news.
		n.mu.Unlock()
		return Notification{}, false
	case d.end:
		delete(n.told, tk)
	}
	key := string(d.kind) + "|" + d.what + "|" + d.subject
	if t, seen := n.last[key]; seen && now.Sub(t) < n.repeat {
		n.held++
		n.mu.Unlock()
		return Notification{}, false
	}
	n.minute = dropBefore(n.minute, now.Add(-time.Minute))
	if len(n.minute) >= n.perMinute {
		n.held++
		n.mu.Unlock()
		n.log.Debug("notification held back: too many this minute", "kind", d.kind, "subject", d.subject)
		return Notification{}, false
	}
	n.minute = append(n.minute, now)
	n.last[key] = now
	if d.start {
		n.told[tk] = true
	}
	n.next++
	note := Notification{ID: n.next, Time: now, Kind: d.kind, Level: d.level, Title: n.clean(d.title), Body: n.clean(d.body), Subject: d.subject}
	n.recent = append(n.recent, note)
	if len(n.recent) > n.keep {
		n.recent = append(n.recent[:0:0], n.recent[len(n.recent)-n.keep:]...)
	}
	for s := range n.subs {
		select {
		case s.c <- note:
		default:
			s.dropped++
		}
	}
	n.forgetLocked(now)
	n.mu.Unlock()
	n.log.Info("notification", "kind", note.Kind, "subject", note.Subject, "title", note.Title)
	return note, true
}

// forgetLocked drops quiet periods that are over, so the map stays as
// small as the subjects lately told about.
func (n *Notifier) forgetLocked(now time.Time) {
	if len(n.last) < 256 {
		return
	}
	for k, t := range n.last {
		if now.Sub(t) >= n.repeat {
			delete(n.last, k)
		}
	}
}

func (n *Notifier) clean(s string) string {
	if n.redact != nil {
		return n.redact(s)
	}
	return s
}

func dropBefore(ts []time.Time, cut time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(cut) {
		i++
	}
	return ts[i:]
}

// Recent returns the notifications kept, newest first.
func (n *Notifier) Recent() []Notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Notification, len(n.recent))
	for i, x := range n.recent {
		out[len(out)-1-i] = x
	}
	return out
}

// Since returns the kept notifications with an ID above id, oldest first.
func (n *Notifier) Since(id uint64) []Notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Notification
	for _, x := range n.recent {
		if x.ID > id {
			out = append(out, x)
		}
	}
	return out
}

// Last is the ID of the newest notification, 0 before the first.
func (n *Notifier) Last() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.next
}

// Held is how many notifications the quiet period and the cap per minute
// held back since start.
func (n *Notifier) Held() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.held
}

// Subscription receives notifications as they are raised, until Close.
type Subscription struct {
	n       *Notifier
	c       chan Notification
	dropped uint64 // guarded by n.mu
	once    sync.Once
}

// Subscribe returns a subscription buffering up to buffer notifications;
// one that does not keep up loses the newest, the Notifier never waits.
func (n *Notifier) Subscribe(buffer int) *Subscription {
	s := &Subscription{n: n, c: make(chan Notification, max(buffer, 1))}
	n.mu.Lock()
	n.subs[s] = true
	n.mu.Unlock()
	return s
}

// C is the channel notifications arrive on; Close closes it.
func (s *Subscription) C() <-chan Notification { return s.c }

// Close stops delivery and closes C.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.n.mu.Lock()
		delete(s.n.subs, s)
		s.n.mu.Unlock()
		close(s.c)
	})
}

// description is what an event means as a notification. start marks the
// beginning of a trouble and end its end; an end is only raised after its
// start was.
type description struct {
	kind        Kind
	what        string
	subject     string
	level       events.Level
	title, body string
	start, end  bool
}

func describe(e events.Event) (description, bool) {
	switch e.Kind {
	case events.StateChange:
		return describeBreaker(e)
	case events.KeyDisabled:
		who := keyName(e)
		return description{kind: Key, what: "off", subject: e.Provider, level: events.Alert, start: true,
			title: "API key refused: " + who,
			body:  fmt.Sprintf("%s refused its API key, so FreeLane stops using it and checks it again later; add a working key under Providers & keys.", who)}, true
	case events.KeyRestored:
		return description{kind: Key, what: "on", subject: e.Provider, level: events.Info, end: true,
			title: "API key works again: " + e.Provider,
			body:  fmt.Sprintf("%s accepts its API key again, so FreeLane routes requests to it as before.", e.Provider)}, true
	case events.QuotaExhausted:
		if !e.Until.IsZero() && e.Until.Sub(e.Time) < shortReset {
			return description{}, false
		}
		when := "until the limit resets"
		if !e.Until.IsZero() {
			when = "until the limit resets in " + span(e.Until.Sub(e.Time))
		}
		return description{kind: Quota, what: "full", subject: e.Backend, level: events.Warn,
			title: "Quota used up: " + e.Backend,
			body:  fmt.Sprintf("%s has used up its quota, so FreeLane routes its requests to other backends %s.", e.Backend, when)}, true
	case events.BudgetWarning:
		return description{kind: Budget, what: "80", subject: e.Budget, level: events.Warn,
			title: "Budget 80% spent: " + budgetName(e.Budget),
			body: fmt.Sprintf("%s; FreeLane routes as before, and once it is all spent only free and local backends serve (or, for a blocking budget, requests are refused).",
				sentence(e.Reason))}, true
	case events.BudgetExceeded:
		return description{kind: Budget, what: "100", subject: e.Budget, level: events.Alert,
			title: "Budget spent: " + budgetName(e.Budget),
			body:  sentence(e.Reason) + "."}, true
	case events.LocalGone:
		return description{kind: Local, what: "gone", subject: e.Provider, level: events.Warn, start: true,
			title: "Local server stopped: " + e.Provider,
			body:  sentence(e.Reason) + ", so FreeLane sets its models aside until it answers again."}, true
	case events.LocalFound:
		return description{kind: Local, what: "back", subject: e.Provider, level: events.Info, end: true,
			title: "Local server back: " + e.Provider,
			body:  sentence(e.Reason) + " again, so FreeLane routes requests to its models as before."}, true
	}
	return description{}, false
}

func describeBreaker(e events.Event) (description, bool) {
	switch e.To {
	case "open":
		when := "later"
		if !e.Until.IsZero() {
			when = "in " + span(e.Until.Sub(e.Time))
		}
		return description{kind: Breaker, what: "open", subject: e.Backend, level: events.Warn, start: true,
			title: "Backend failing: " + e.Backend,
			body:  fmt.Sprintf("%s keeps failing, so FreeLane sends its requests to the next backend of the chain and tries it again %s.", e.Backend, when)}, true
	case "closed":
		return description{kind: Breaker, what: "closed", subject: e.Backend, level: events.Info, end: true,
			title: "Backend serves again: " + e.Backend,
			body:  fmt.Sprintf("%s answers again, so FreeLane routes requests to it as before.", e.Backend)}, true
	}
	return description{}, false
}

// keyName is the key an event is about: the provider, with the key's label
// when the provider has a pool of keys. The label is a name the user gave,
// never the key.
func keyName(e events.Event) string {
	if id, ok := llm.CutBackendID(e.Backend); ok && id.Key != "" {
		return id.KeyID().String()
	}
	return e.Provider
}

// budgetName reads a budget's id ("provider:groq|day") as words.
func budgetName(id string) string {
	scope, period, _ := strings.Cut(id, "|")
	adj := "daily"
	if period == "month" {
		adj = "monthly"
	}
	switch {
	case strings.HasPrefix(scope, "chain:"):
		return fmt.Sprintf("%s budget of chain %s", adj, strings.TrimPrefix(scope, "chain:"))
	case strings.HasPrefix(scope, "provider:"):
		return fmt.Sprintf("%s budget of provider %s", adj, strings.TrimPrefix(scope, "provider:"))
	case scope == "":
		return "a budget"
	}
	return adj + " global budget"
}

// sentence starts s with a capital letter and drops a final full stop, so
// it can open a sentence and be continued.
func sentence(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// span says a duration the way a person would: "30 s", "5 min", "3 h".
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", max(int(d.Round(time.Second)/time.Second), 1))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Round(time.Hour)/time.Hour))
	}
	return fmt.Sprintf("%d days", int(d.Round(24*time.Hour)/(24*time.Hour)))
}
