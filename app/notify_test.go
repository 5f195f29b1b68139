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
