package gateway

import (
	"freelane/backend/events"
)

// SetRoutingPaused pauses or resumes routing. While paused /v1 answers 503
// with a message saying so; the dashboard, the admin API and the probes
// keep working. The change is announced on the event bus, which also pushes
// it to the dashboard.
func (g *Gateway) SetRoutingPaused(paused bool) {
	if g.api.Paused() == paused {
		return
	}
	g.api.SetPaused(paused)
	e := events.Event{Time: g.clock.Now(), Kind: events.Resumed, Level: events.Info, Reason: "routing resumed"}
	if paused {
		e.Kind, e.Level, e.Reason = events.Paused, events.Warn, "routing paused: /v1 answers 503 until resumed"
	}
	g.bus.Publish(e)
}

// RoutingPaused reports whether routing is paused.
func (g *Gateway) RoutingPaused() bool { return g.api.Paused() }

// Snapshot returns what the dashboard starts from: every backend's state,
// the chains, recent requests and events, and today's totals. The desktop
// shell derives the tray's colour and status line from it.
func (g *Gateway) Snapshot() Snapshot { return g.snapshot() }
