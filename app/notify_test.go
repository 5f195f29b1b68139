package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/events"
	"freelane/backend/llm"
	"freelane/backend/notify"
)

func TestAlerterEvents(t *testing.T) {
	a := newAlerter()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	q0 := events.Event{Kind: events.QuotaWarning, Level: events.Warn, Backend: "groq/llama", Reason: "80% of daily tokens used"}
	if _, ok := a.fromEvent(q0, now); !ok {
		t.Fatal("quota warning not shown")
	}
	// The same alert stays quiet for a while, then may show again.
	if _, ok := a.fromEvent(q0, now.Add(time.Minute)); ok {
		t.Error("repeated within the quiet period")
	}
	if _, ok := a.fromEvent(q0, now.Add(notifyRepeat+time.Second)); !ok {
		t.Error("not shown again after the quiet period")
	}
	// Another backend's quota is another alert.
	other := q0
	other.Backend = "cerebras/qwen"
	if _, ok := a.fromEvent(other, now.Add(time.Minute)); !ok {
		t.Error("a second backend's quota was not shown")
	}
	a = newAlerter()
	q := events.Event{Kind: events.QuotaWarning, Level: events.Warn, Backend: "groq/llama", Reason: "80% of daily tokens used"}
	if n, ok := a.fromEvent(q, now); !ok || !strings.Contains(n.Body, "80% of daily tokens used") {
		t.Errorf("quota warning: %v %+v", ok, n)
	}
	// The pool changing on its own is worth a word: a local server found
	// or gone, a provider's list naming new models.
	for _, c := range []struct {
		e    events.Event
		want string
	}{
		{events.Event{Kind: events.LocalFound, Provider: "ollama", Reason: "Ollama answers on port 11434"}, "Ollama answers on port 11434"},
		{events.Event{Kind: events.LocalForeign, Reason: "Ollama answers on port 11500 but is run by another user of this machine (bob, user id 1001)"}, "user id 1001"},
		{events.Event{Kind: events.LocalForeign, Reason: "Ollama answers on port 11600 but is run by another user of this machine (eve, user id 1002)"}, "user id 1002"},
		{events.Event{Kind: events.ModelsJoined, Provider: "openrouter", Reason: "openrouter's model list names new models, which now serve: x:free"}, "x:free"},
		{events.Event{Kind: events.Retired, Backend: "openrouter/y:free", Reason: "the provider's model list no longer names it"}, "openrouter/y:free no longer serves"},
	} {
		if n, ok := a.fromEvent(c.e, now); !ok || !strings.Contains(n.Body, c.want) {
			t.Errorf("%s: %v %+v", c.e.Kind, ok, n)
		}
	}
	// Events a user need not act on are not notifications.
	// Nor are those the notifier tells (showNotices): a key refused, a
	// budget spent, a local server gone and back.
	for _, k := range []events.Kind{events.StateChange, events.Cooldown, events.Online, events.Paused,
		events.KeyDisabled, events.BudgetExceeded, events.LocalGone} {
		if _, ok := a.fromEvent(events.Event{Kind: k, Backend: "x/y"}, now); ok {
			t.Errorf("%s raised a notification", k)
		}
	}
}

func TestAlerterTurnsRed(t *testing.T) {
	a := newAlerter()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	red := trayView{Level: levelRed, Status: `No backend of "auto" can serve`}
	if n, ok := a.fromTray(red, now); !ok || !strings.Contains(n.Body, "can serve") {
		t.Fatalf("turning red: %v %+v", ok, n)
	}
	if _, ok := a.fromTray(red, now.Add(time.Second)); ok {
		t.Error("staying red notified again")
	}
	if _, ok := a.fromTray(trayView{Level: levelGreen}, now.Add(2*time.Second)); ok {
		t.Error("green notified")
	}
	// Red again soon after: quiet; much later: shown.
	if _, ok := a.fromTray(red, now.Add(time.Minute)); ok {
		t.Error("flapping red notified within the quiet period")
	}
	a.fromTray(trayView{Level: levelGreen}, now.Add(notifyRepeat))
	if _, ok := a.fromTray(red, now.Add(notifyRepeat+time.Minute)); !ok {
		t.Error("red after the quiet period was not shown")
	}
}

// TestLocalServerBackIsTheNotifiers leaves a server's return to the
// notifier, which tells it as "back"; a server found first is the
// alerter's.
func TestLocalServerBackIsTheNotifiers(t *testing.T) {
	a := newAlerter()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	found := events.Event{Kind: events.LocalFound, Provider: "ollama", Reason: "Ollama answers on port 11434"}
	if _, ok := a.fromEvent(found, now); !ok {
		t.Fatal("a server found was not shown")
	}
	a.fromEvent(events.Event{Kind: events.LocalGone, Provider: "ollama"}, now.Add(time.Hour))
	if n, ok := a.fromEvent(found, now.Add(2*time.Hour)); ok {
		t.Errorf("a server back was shown by the alerter too: %+v", n)
	}
}

// TestNoticesReachTheDesktop runs the path the desktop app runs: a real
// breaker opens on a real bus, the notifier raises the notification, and
// showNotices hands it to the desktop.
func TestNoticesReachTheDesktop(t *testing.T) {
	// The wall clock: nothing here waits on time (backend/internal's
	// fake clock is out of this package's reach).
	bus := events.NewBus(nil)
	n := notify.New(notify.Options{})
	feed := bus.Subscribe(64)
	sub := n.Subscribe(8)
	ctx, cancel := context.WithCancel(context.Background())
	shown := make(chan notification, 8)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); n.Run(ctx, feed.C()) }()
	go func() { defer wg.Done(); showNotices(ctx, sub, func(x notification) { shown <- x }) }()
	defer func() { cancel(); wg.Wait(); feed.Close(); sub.Close() }()

	b := breaker.New(breaker.Settings{Failures: 1}, nil, bus)
	done, _ := b.Allow(llm.BackendID{Provider: "groq", Model: "llama"})
	done(&llm.Error{Class: llm.Transient, Status: 503, Message: "HTTP 503: overloaded"}, 0)
	select {
	case x := <-shown:
		if x.Title != "FreeLane: Backend failing: groq/llama" || !strings.Contains(x.Body, "groq/llama keeps failing") {
			t.Fatalf("shown %+v", x)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing reached the desktop")
	}
}
