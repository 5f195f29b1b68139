package main

import (
	"strings"
	"testing"
	"time"

	"freelane/backend/events"
)

func TestAlerterEvents(t *testing.T) {
	a := newAlerter()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	key := events.Event{Kind: events.KeyDisabled, Level: events.Alert, Provider: "groq", Reason: "HTTP 401"}
	n, ok := a.fromEvent(key, now)
	if !ok || !strings.Contains(n.Title, "API key rejected") || !strings.Contains(n.Body, "groq") {
		t.Fatalf("key event: %v %+v", ok, n)
	}
	// The same alert stays quiet for a while, then may show again.
	if _, ok := a.fromEvent(key, now.Add(time.Minute)); ok {
		t.Error("repeated within the quiet period")
	}
	if _, ok := a.fromEvent(key, now.Add(notifyRepeat+time.Second)); !ok {
		t.Error("not shown again after the quiet period")
	}
	// Another provider's key is another alert.
	other := key
	other.Provider = "cerebras"
	if _, ok := a.fromEvent(other, now.Add(time.Minute)); !ok {
		t.Error("a second provider's rejected key was not shown")
	}
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
		{events.Event{Kind: events.LocalGone, Provider: "ollama", Reason: "Ollama stopped answering on port 11434"}, "set aside"},
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
	for _, k := range []events.Kind{events.StateChange, events.Cooldown, events.Online, events.Paused} {
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
