package gateway

import (
	"context"
	"log/slog"

	"freelane/backend/llm"
	"freelane/backend/loops"
	"freelane/backend/router"
	"freelane/backend/store"
)

// CheckCredits runs the housekeeping loop's credit check now, so tests can
// move the clock past an expiry without waiting for the loop's ticker.
func (g *Gateway) CheckCredits() { g.checkCredits() }

// RollUp runs the housekeeping loop's hourly work now: the ledger's
// roll-up and the request log's pruning.
func (g *Gateway) RollUp(ctx context.Context) { g.rollUp(ctx) }

// Logger is the logger every part of the gateway logs through.
func (g *Gateway) Logger() *slog.Logger { return g.log }

// RecordTrace hands a finished request to the feed, as the router does.
func (g *Gateway) RecordTrace(t llm.Trace) { g.feed.Record(t) }

// Loops names the goroutines the gateway started, and those of them that
// have not returned yet.
func (g *Gateway) Loops() (started, running []string) {
	for _, l := range []*loops.Group{g.serving, g.loops, g.writers} {
		started = append(started, l.Started()...)
		running = append(running, l.Running()...)
	}
	return started, running
}

// ShapeWaiting is how many requests wait in the shaper for a slot or a
// token, so tests know when every request has parked before moving time.
func (g *Gateway) ShapeWaiting() int { return g.shape.Waiting() }

// Router is the gateway's router, for tests that route a request the
// API layer would have prepared (a session already hashed, say).
func (g *Gateway) Router() *router.Router { return g.router }

// Usage answers as /api/usage does.
func (g *Gateway) Usage(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error) {
	return adminView{g}.Usage(ctx, q)
}
