package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"freelane/backend/events"
	"freelane/backend/notify"
)

// notification is a desktop notification.
type notification struct {
	Title string
	Body  string
}

// notifyRepeat is how long the same alert stays quiet after it was shown:
// a key that keeps being rejected should not flood the desktop.
const notifyRepeat = 15 * time.Minute

// fromNotice is a notification of the router's notifier (package notify)
// as the desktop shows it. The notifier already switched and rate limited
// it.
func fromNotice(n notify.Notification) notification {
	return notification{Title: "FreeLane: " + n.Title, Body: n.Body}
}

// showNotices shows every notification the notifier raises until ctx ends
// or sub is closed. The caller owns the goroutine and closes sub.
func showNotices(ctx context.Context, sub *notify.Subscription, show func(notification)) {
	for {
		select {
		case <-ctx.Done():
			return
		case n, ok := <-sub.C():
			if !ok {
				return
			}
			show(fromNotice(n))
		}
	}
}

// alerter turns the events the notifier does not cover, and tray changes,
// into notifications: a quota nearly used, a model set aside, new models,
// a local server found, nothing able to serve. A refused key, a budget
// spent and a local server gone come from the notifier (showNotices).
type alerter struct {
	mu   sync.Mutex
	last map[string]time.Time
	red  bool
	// gone are the local servers that stopped: their return is the
	// notifier's to tell, not a server found.
	gone map[string]bool
}

func newAlerter() *alerter { return &alerter{last: map[string]time.Time{}, gone: map[string]bool{}} }

// fromEvent returns the notification an event calls for, if any.
func (a *alerter) fromEvent(e events.Event, now time.Time) (notification, bool) {
	var n notification
	who := e.Backend
	if who == "" {
		who = e.Provider
	}
	switch e.Kind {
	case events.QuotaWarning:
		n = notification{Title: "FreeLane: quota nearly used", Body: fmt.Sprintf("%s: %s.", who, e.Reason)}
	case events.Retired:
		n = notification{Title: "FreeLane: model set aside", Body: fmt.Sprintf("%s no longer serves (%s); requests go to the next backend.", who, e.Reason)}
	case events.ModelsJoined:
		n = notification{Title: "FreeLane: new models", Body: e.Reason + "."}
	case events.LocalGone:
		a.mu.Lock()
		a.gone[e.Provider] = true
		a.mu.Unlock()
		return n, false
	case events.LocalFound:
		a.mu.Lock()
		back := a.gone[e.Provider]
		delete(a.gone, e.Provider)
		a.mu.Unlock()
		if back {
			return n, false
		}
		n = notification{Title: "FreeLane: local server found", Body: e.Reason + "; its models now serve as the last backends of auto."}
	case events.LocalForeign:
		n = notification{Title: "FreeLane: local server of another user", Body: e.Reason + "."}
		// No provider names such a server; each one found is worth a word.
		return n, a.allow(string(e.Kind)+"|"+e.Reason, now)
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
