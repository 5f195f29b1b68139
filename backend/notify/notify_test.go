package notify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/events"
	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/notify"
	"freelane/backend/protocol/openai"
	"freelane/backend/quota"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// rig is a Notifier fed by a real bus on its own goroutine, as the
// gateway runs it, with a subscriber the test reads.
type rig struct {
	t     *testing.T
	clock *clocktest.Clock
	bus   *events.Bus
	n     *notify.Notifier
	sub   *notify.Subscription
	// feed is the bus subscription Run reads; the test waits for it to
	// be drained before saying nothing was raised.
	feed *events.Subscription
}

func newRig(t *testing.T, o notify.Options) *rig {
	t.Helper()
	clk := clocktest.New(t0)
	o.Clock = clk
	r := &rig{t: t, clock: clk, bus: events.NewBus(nil), n: notify.New(o)}
	r.feed = r.bus.Subscribe(256)
	r.sub = r.n.Subscribe(64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.n.Run(ctx, r.feed.C())
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		r.feed.Close()
		r.sub.Close()
	})
	return r
}

// next waits for the next notification.
func (r *rig) next() notify.Notification {
	r.t.Helper()
	select {
	case n := <-r.sub.C():
		return n
	case <-time.After(5 * time.Second):
		r.t.Fatal("no notification was raised")
	}
	return notify.Notification{}
}

// none checks that nothing was raised for what was published so far: a
// marker event that raises a notification of its own is published last
// and must be the next one seen.
func (r *rig) none(why string) {
	r.t.Helper()
	marker := "marker/" + why
	r.bus.Publish(events.Event{Time: r.clock.Now(), Kind: events.QuotaExhausted, Backend: marker, Until: r.clock.Now().Add(time.Hour)})
	if n := r.next(); n.Subject != marker {
		r.t.Fatalf("%s: raised %+v", why, n)
	}
}

func chatRequest(t *testing.T) *llm.Request {
	t.Helper()
	req, err := openai.ParseRequest(llm.Chat, []byte(`{"model":"auto","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func failure() *llm.Error {
	return &llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503: overloaded"}
}

func call(b *breaker.Set, id llm.BackendID, e *llm.Error) {
	done, skip := b.Allow(id)
	if skip != nil {
		return
	}
	done(e, time.Millisecond)
}

func TestBreakerOpenedAndClosed(t *testing.T) {
	r := newRig(t, notify.Options{PerMinute: 100})
	b := breaker.New(breaker.Settings{Failures: 2, OpenTimes: []time.Duration{30 * time.Second}}, r.clock, r.bus)
	id := llm.BackendID{Provider: "groq", Model: "llama"}
	call(b, id, failure())
	call(b, id, failure())
	n := r.next()
	if n.Kind != notify.Breaker || n.Subject != "groq/llama" || n.Level != events.Warn || !n.Time.Equal(t0) ||
		!strings.Contains(n.Title, "groq/llama") || !strings.Contains(n.Body, "next backend") || !strings.Contains(n.Body, "in 30 s") {
		t.Fatalf("open: %+v", n)
	}
	if strings.Contains(n.Body, "HTTP 503") || strings.Contains(n.Body, "overloaded") {
		t.Errorf("the body quotes the upstream: %q", n.Body)
	}
	// The open time passes, the trial succeeds: the breaker closes.
	r.clock.Advance(31 * time.Second)
	call(b, id, nil)
	n = r.next()
	if n.Kind != notify.Breaker || n.Level != events.Info || !strings.Contains(n.Title, "serves again") || !n.Time.Equal(t0.Add(31*time.Second)) {
		t.Fatalf("closed: %+v", n)
	}
	if got := r.n.Recent(); len(got) != 2 || got[0].ID != n.ID {
		t.Fatalf("recent = %+v, want the two, newest first", got)
	}
}

// TestFlappingBreakerIsQuiet opens and closes one backend's breaker over
// and over: the user hears of the first opening and its recovery, then
// nothing until the quiet period is over.
func TestFlappingBreakerIsQuiet(t *testing.T) {
	r := newRig(t, notify.Options{Repeat: 10 * time.Minute, PerMinute: 100})
	b := breaker.New(breaker.Settings{Failures: 1, OpenTimes: []time.Duration{10 * time.Second}, FlapWindow: time.Nanosecond}, r.clock, r.bus)
	id := llm.BackendID{Provider: "groq", Model: "llama"}
	flap := func() {
		call(b, id, failure())
		r.clock.Advance(11 * time.Second)
		call(b, id, nil)
		r.clock.Advance(time.Second)
	}
	flap()
	if n := r.next(); !strings.Contains(n.Title, "failing") {
		t.Fatalf("first: %+v", n)
	}
	if n := r.next(); !strings.Contains(n.Title, "serves again") {
		t.Fatalf("second: %+v", n)
	}
	for range 20 {
		flap()
	}
	r.none("flapping within the quiet period")
	if r.n.Held() == 0 {
		t.Error("nothing counted as held back")
	}
	r.clock.Advance(10 * time.Minute)
	flap()
	if n := r.next(); !strings.Contains(n.Title, "failing") {
		t.Fatalf("after the quiet period: %+v", n)
	}
}

func TestGlobalCapPerMinute(t *testing.T) {
	r := newRig(t, notify.Options{PerMinute: 3})
	b := breaker.New(breaker.Settings{Failures: 1}, r.clock, r.bus)
	// A provider goes down: all its models open at once.
	for _, m := range []string{"a", "b", "c", "d", "e"} {
		call(b, llm.BackendID{Provider: "groq", Model: m}, failure())
	}
	for _, want := range []string{"groq/a", "groq/b", "groq/c"} {
		if n := r.next(); n.Subject != want {
			t.Fatalf("got %+v, want %s", n, want)
		}
	}
	// The notifier reads the bus in a goroutine of its own: the last two
	// must have been held back within this minute before time moves on,
	// or they would count in the next one.
	deadline := time.Now().Add(5 * time.Second)
	for r.n.Held() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("held back %d notifications of the five at once, want 2", r.n.Held())
		}
		time.Sleep(time.Millisecond)
	}
	r.clock.Advance(time.Minute)
	call(b, llm.BackendID{Provider: "groq", Model: "f"}, failure())
	if n := r.next(); n.Subject != "groq/f" {
		t.Fatalf("a minute later: %+v", n)
	}
	if len(r.n.Recent()) != 4 {
		t.Errorf("kept %d, want 4", len(r.n.Recent()))
	}
}

func TestKeyRefusedAndRearmed(t *testing.T) {
	r := newRig(t, notify.Options{PerMinute: 100})
	b := breaker.New(breaker.Settings{}, r.clock, r.bus)
	id := llm.BackendID{Provider: "groq", Key: "work", Model: "llama"}
	call(b, id, &llm.Error{Class: llm.Credential, Status: 401, Message: "HTTP 401: Invalid API Key sk-secret-123"})
	n := r.next()
	if n.Kind != notify.Key || n.Subject != "groq" || n.Level != events.Alert || !strings.Contains(n.Body, "groq@work refused its API key") ||
		!strings.Contains(n.Body, "Providers & keys") {
		t.Fatalf("key off: %+v", n)
	}
	if strings.Contains(n.Title+n.Body, "sk-secret") || strings.Contains(n.Body, "HTTP 401") {
		t.Errorf("leaks the upstream's text: %+v", n)
	}
	b.KeyPassed(id.KeyID(), "a test request passed")
	n = r.next()
	if n.Kind != notify.Key || n.Level != events.Info || !strings.Contains(n.Title, "works again") {
		t.Fatalf("key on: %+v", n)
	}
}

func TestQuotaUsedUp(t *testing.T) {
	r := newRig(t, notify.Options{PerMinute: 100})
	m := quota.New(r.clock, r.bus, time.UTC)
	id := llm.BackendID{Provider: "groq", Model: "llama"}
	perMinute := llm.BackendID{Provider: "groq", Model: "fast"}
	m.Configure(quota.Settings{Backends: []quota.Backend{
		{ID: id, Limits: quota.Limits{RPD: 2}},
		{ID: perMinute, Limits: quota.Limits{RPM: 1}},
	}})
	admit := func(id llm.BackendID) bool {
		h, sk := m.Admit(chatRequest(t), "auto", quota.Target{ID: id})
		if sk != nil {
			return false
		}
		h.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 10, CompletionTokens: 1}})
		return true
	}
	// A per-minute limit is waited out: no notification.
	admit(perMinute)
	admit(perMinute)
	r.none("a per-minute limit")
	for i := range 2 {
		if !admit(id) {
			t.Fatalf("request %d was refused", i+1)
		}
	}
	n := r.next()
	if n.Kind != notify.Quota || n.Subject != "groq/llama" || !strings.Contains(n.Body, "used up its quota") || !strings.Contains(n.Body, "resets in 12 h") {
		t.Fatalf("quota: %+v", n)
	}
	if admit(id) {
		t.Fatal("a third request was admitted")
	}
	r.none("the same quota again")
}

func TestBudgetAt80And100(t *testing.T) {
	r := newRig(t, notify.Options{PerMinute: 100})
	m := quota.New(r.clock, r.bus, time.UTC)
	id := llm.BackendID{Provider: "paid", Model: "big"}
	m.Configure(quota.Settings{
		Backends: []quota.Backend{{ID: id, Price: quota.Price{Input: 1, Output: 1}}},
		Budgets:  []quota.Budget{{Scope: "global", Period: quota.PeriodDay, Limit: 1, Action: quota.ActionFreeOnly}},
	})
	spend := func(tokens int) {
		h, sk := m.Admit(chatRequest(t), "auto", quota.Target{ID: id})
		if sk != nil {
			t.Fatalf("refused: %s", sk.Reason)
		}
		h.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: tokens, CompletionTokens: 1}})
	}
	spend(500_000) // $0.50
	r.none("half the budget")
	spend(350_000) // $0.85
	n := r.next()
	if n.Kind != notify.Budget || n.Subject != "global|day" || n.Level != events.Warn || !strings.Contains(n.Title, "80%") ||
		!strings.Contains(n.Title, "daily global budget") || !strings.HasPrefix(n.Body, "85% of the global daily budget of $1.00 spent;") {
		t.Fatalf("80%%: %+v", n)
	}
	spend(200_000) // $1.05
	n = r.next()
	if n.Kind != notify.Budget || n.Level != events.Alert || !strings.HasPrefix(n.Title, "Budget spent") ||
		!strings.Contains(n.Body, "only free and local backends serve") || strings.Count(n.Body, ".") != 3 {
		t.Fatalf("100%%: %+v", n)
	}
}

// TestLocalGoneAndBack feeds the events the pool publishes when discovery
// stops and then again finds a server; the pool's own tests drive real
// scans.
func TestLocalGoneAndBack(t *testing.T) {
	r := newRig(t, notify.Options{PerMinute: 100})
	found := events.Event{Kind: events.LocalFound, Level: events.Info, Provider: "ollama", Reason: "Ollama answers on port 11434"}
	gone := events.Event{Kind: events.LocalGone, Level: events.Warn, Provider: "ollama", Reason: "Ollama stopped answering on port 11434"}
	r.bus.Publish(found)
	r.none("a server found at start")
	r.bus.Publish(gone)
	n := r.next()
	if n.Kind != notify.Local || n.Subject != "ollama" || n.Body != "Ollama stopped answering on port 11434, so FreeLane sets its models aside until it answers again." {
		t.Fatalf("gone: %+v", n)
	}
	r.bus.Publish(found)
	n = r.next()
	if n.Kind != notify.Local || n.Level != events.Info || !strings.HasPrefix(n.Body, "Ollama answers on port 11434 again") {
		t.Fatalf("back: %+v", n)
	}
}

func TestSwitchesAndRedaction(t *testing.T) {
	r := newRig(t, notify.Options{PerMinute: 100, Redact: func(s string) string { return strings.ReplaceAll(s, "secret", "[redacted]") }})
	off := notify.AllOn()
	off.Breaker = false
	r.n.Configure(off)
	b := breaker.New(breaker.Settings{Failures: 1, OpenTimes: []time.Duration{time.Second}}, r.clock, r.bus)
	id := llm.BackendID{Provider: "groq", Model: "llama"}
	call(b, id, failure())
	r.none("breaker notifications switched off")
	// Switched on while the breaker is open: its recovery is no news.
	r.n.Configure(notify.AllOn())
	r.clock.Advance(2 * time.Second)
	call(b, id, nil)
	r.none("the end of a trouble never shown")
	for _, k := range notify.Kinds {
		if !notify.AllOn().On(k) {
			t.Errorf("%s is off in AllOn", k)
		}
	}
	r.bus.Publish(events.Event{Kind: events.LocalGone, Provider: "secretbox", Reason: "secretbox stopped answering on port 1"})
	if n := r.next(); strings.Contains(n.Title+n.Body, "secret") {
		t.Errorf("not redacted: %+v", n)
	}
}

func TestKeepsTheLastFew(t *testing.T) {
	r := newRig(t, notify.Options{PerMinute: 1000, Keep: 5})
	for i := range 8 {
		r.bus.Publish(events.Event{Time: t0, Kind: events.QuotaExhausted, Backend: "p/m" + string(rune('a'+i))})
		r.next()
	}
	got := r.n.Recent()
	if len(got) != 5 || got[0].Subject != "p/mh" || got[4].Subject != "p/md" {
		t.Fatalf("recent = %+v", got)
	}
	if s := r.n.Since(got[1].ID); len(s) != 1 || s[0].Subject != "p/mh" {
		t.Fatalf("since = %+v", s)
	}
}
