package gateway

import (
	"log/slog"

	"freelane/backend/llm"
)

// CheckCredits runs the housekeeping loop's credit check now, so tests can
// move the clock past an expiry without waiting for the loop's ticker.
func (g *Gateway) CheckCredits() { g.checkCredits() }

// Logger is the logger every part of the gateway logs through.
func (g *Gateway) Logger() *slog.Logger { return g.log }

// RecordTrace hands a finished request to the feed, as the router does.
func (g *Gateway) RecordTrace(t llm.Trace) { g.feed.Record(t) }
