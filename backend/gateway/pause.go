package gateway

import (
	"freelane/backend/events"
)

// SetRoutingPaused pauses or resumes routing. While paused /v1 answers 503
// with a message saying so; the dashboard, the admin API and the probes
// keep working. The change is announced on the event bus, which also pushes
// it to the dashboard. In a team sharing state on Redis it pauses or
// resumes every instance.
func (g *Gateway) SetRoutingPaused(paused bool) {
	if !g.setRoutingPaused(paused, "") {
		return
	}
	if g.shared != nil {
		g.shared.TellPause(paused)
	}
}

// setRoutingPaused applies a pause decided on this instance (from empty)
// or on the team's instance from, and reports whether it changed anything.
func (g *Gateway) setRoutingPaused(paused bool, from string) bool {
	if g.api.Paused() == paused {
		return false
	}
	g.api.SetPaused(paused)
	e := events.Event{Time: g.clock.Now(), Kind: events.Resumed, Level: events.Info, Reason: "routing resumed"}
	if paused {
		e.Kind, e.Level, e.Reason = events.Paused, events.Warn, "routing paused: /v1 answers 503 until resumed"
	}
	if from != "" {
		e.Reason += " (on " + from + ")"
	}
	g.bus.Publish(e)
	return true
}

// teamPause applies the pause of a team's other instances (redisstate.Pauser).
type teamPause struct{ g *Gateway }

func (p teamPause) ApplyPause(paused bool, from string) { p.g.setRoutingPaused(paused, from) }

// RoutingPaused reports whether routing is paused.
func (g *Gateway) RoutingPaused() bool { return g.api.Paused() }

// Snapshot returns what the dashboard starts from: every backend's state,
// the chains, recent requests and events, and today's totals. The desktop
// shell derives the tray's colour and status line from it.
func (g *Gateway) Snapshot() Snapshot { return g.snapshot() }
