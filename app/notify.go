package main

import (
	"fmt"
	"sync"
	"time"

	"freelane/backend/events"
)

// notification is a desktop notification.
type notification struct {
	Title string
	Body  string
}

// notifyRepeat is how long the same alert stays quiet after it was shown:
// a key that keeps being rejected should not flood the desktop.
const notifyRepeat = 15 * time.Minute

// alerter turns events and tray changes into notifications, only for what
// the user must act on: a rejected key, a quota nearly used, a budget
// spent, nothing able to serve.
type alerter struct {
	mu   sync.Mutex
	last map[string]time.Time
	red  bool
}

func newAlerter() *alerter { return &alerter{last: map[string]time.Time{}} }

// fromEvent returns the notification an event calls for, if any.
func (a *alerter) fromEvent(e events.Event, now time.Time) (notification, bool) {
	var n notification
	who := e.Backend
	if who == "" {
		who = e.Provider
	}
	switch e.Kind {
	case events.KeyDisabled:
		n = notification{Title: "FreeLane: API key rejected",
			Body: fmt.Sprintf("%s rejected its key (%s). Add a working key in the dashboard under Providers & keys.", who, e.Reason)}
	case events.QuotaWarning:
		n = notification{Title: "FreeLane: quota nearly used", Body: fmt.Sprintf("%s: %s.", who, e.Reason)}
	case events.BudgetExceeded:
		n = notification{Title: "FreeLane: budget spent", Body: e.Reason}
	case events.Retired:
		n = notification{Title: "FreeLane: model set aside", Body: fmt.Sprintf("%s no longer serves (%s); requests go to the next backend.", who, e.Reason)}
	case events.ModelsJoined:
		n = notification{Title: "FreeLane: new models", Body: e.Reason + "."}
	case events.LocalFound:
		n = notification{Title: "FreeLane: local server found", Body: e.Reason + "; its models now serve as the last backends of auto."}
	case events.LocalForeign:
		n = notification{Title: "FreeLane: local server of another user", Body: e.Reason + "."}
		// No provider names such a server; each one found is worth a word.
		return n, a.allow(string(e.Kind)+"|"+e.Reason, now)
	case events.LocalGone:
		n = notification{Title: "FreeLane: local server stopped", Body: e.Reason + "; its models are set aside until it answers again."}
	default:
		return n, false
	}
	return n, a.allow(string(e.Kind)+"|"+who, now)
}

// fromTray returns a notification when the tray turns red (nothing can
// serve); it fires again only after the tray was not red in between.
func (a *alerter) fromTray(v trayView, now time.Time) (notification, bool) {
	a.mu.Lock()
	wasRed := a.red
	a.red = v.Level == levelRed
	a.mu.Unlock()
	if v.Level != levelRed || wasRed {
		return notification{}, false
	}
	return notification{Title: "FreeLane: no backend can serve", Body: v.Status + ". Requests fail until a backend recovers; see the dashboard."},
		a.allow("red", now)
}

func (a *alerter) allow(key string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.last[key]; ok && now.Sub(t) < notifyRepeat {
		return false
	}
	a.last[key] = now
	return true
}
