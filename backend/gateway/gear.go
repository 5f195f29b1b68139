package gateway

import (
	"context"
	"fmt"

	"freelane/backend/control"
	"freelane/backend/events"
	"freelane/backend/llm"
	"freelane/backend/store"
)

// SwitchGear sets a chain's gear, stored like any other edit of the
// configuration, and announces it on the event bus, which the dashboard
// and the tray follow. Switching to the gear a chain is already in stores
// nothing and announces nothing.
func (g *Gateway) SwitchGear(ctx context.Context, chain, gear string) error {
	before := control.ChainGear(g.control.Config(), chain)
	if err := g.control.SetChainGear(ctx, chain, gear); err != nil {
		return err
	}
	if before == gear {
		return nil
	}
	g.bus.Publish(events.Event{Time: g.clock.Now(), Kind: events.GearSwitched, Level: events.Info, From: before, To: gear,
		Reason: fmt.Sprintf("chain %s: gear %s -> %s", chain, before, gear)})
	return nil
}

// ChainGear is the gear a chain is in now.
func (g *Gateway) ChainGear(chain string) string {
	return control.ChainGear(g.control.Config(), chain)
}

// DefaultChain names the chain the model name "auto" routes to.
func (g *Gateway) DefaultChain() string {
	if d := g.router.Table().DefaultOf(); d != "" {
		return d
	}
	return "auto"
}

func (a adminView) SwitchGear(ctx context.Context, chain, gear string) error {
	return a.g.SwitchGear(ctx, chain, gear)
}

// PreviewRoute asks the router where req would go now; nothing is called.
func (a adminView) PreviewRoute(req *llm.Request) *llm.Decision {
	dec := a.g.router.Preview(req)
	if dec != nil {
		r := a.g.redact
		dec.Requested, dec.Error, dec.Fallback = r.String(dec.Requested), r.String(dec.Error), r.String(dec.Fallback)
	}
	return dec
}

// Request finds one request: first in the live tail, which holds requests
// the request log has not written yet, then in the log.
func (a adminView) Request(ctx context.Context, id string) (llm.Trace, bool, error) {
	if t, ok := a.g.feed.Find(id); ok {
		return t, true, nil
	}
	if a.g.team != nil {
		return a.g.team.request(ctx, id)
	}
	return a.g.db.RequestByID(ctx, id)
}

// RequestBodies finds the bodies of one request, in a team of any
// instance's.
func (a adminView) RequestBodies(ctx context.Context, id string) (store.StoredBodies, bool, error) {
	if a.g.team != nil {
		return a.g.team.bodies(ctx, id)
	}
	return a.g.db.RequestBodies(ctx, id)
}
