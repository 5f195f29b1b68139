package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/events"
	"freelane/backend/llm"
	"freelane/backend/probe"
)

// Names of the state documents kept in the database.
const (
	breakerState = "breakers"
	probeState   = "probes"
	// eventState holds the recent events, so the dashboard's alerts
	// survive a restart.
	eventState = "events"
)

// saveEvery is how often breaker and health state is written; a crash loses
// at most this much of it.
const saveEvery = 30 * time.Second

type savedProbes struct {
	LastDaily time.Time `json:"last_daily"`
}

// restoreState loads what the last run saved. A damaged document is logged
// and ignored: starting with fresh breakers beats not starting.
func (g *Gateway) restoreState(ctx context.Context) {
	if raw, ok, err := g.db.GetState(ctx, breakerState); err != nil {
		g.log.Warn("could not load breaker state", "err", err)
	} else if ok {
		var saved []breaker.Status
		if err := json.Unmarshal(raw, &saved); err != nil {
			g.log.Warn("ignoring damaged breaker state", "err", err)
		} else if err := g.gate.Restore(saved); err != nil {
			g.log.Warn("ignoring damaged breaker state", "err", err)
		} else {
			g.log.Info("restored breaker state", "backends", len(saved))
		}
	}
	if raw, ok, err := g.db.GetState(ctx, eventState); err != nil {
		g.log.Warn("could not load the recent events", "err", err)
	} else if ok {
		var evs []events.Event
		if err := json.Unmarshal(raw, &evs); err != nil {
			g.log.Warn("ignoring damaged recent events", "err", err)
		} else {
			g.bus.Restore(evs)
		}
	}
	if raw, ok, err := g.db.GetState(ctx, probeState); err == nil && ok {
		var sp savedProbes
		if json.Unmarshal(raw, &sp) == nil && !sp.LastDaily.IsZero() {
			g.prober.SetLastDaily(sp.LastDaily)
		}
	}
}

// saveState writes breaker, health, cooldown, retirement and probe state,
// and the recent events.
func (g *Gateway) saveState(ctx context.Context) error {
	raw, err := json.Marshal(g.gate.Snapshot())
	if err != nil {
		return fmt.Errorf("saving breaker state: %w", err)
	}
	if err := g.db.PutState(ctx, breakerState, raw); err != nil {
		return err
	}
	raw, err = json.Marshal(g.bus.Recent())
	if err != nil {
		return fmt.Errorf("saving the recent events: %w", err)
	}
	if err := g.db.PutState(ctx, eventState, raw); err != nil {
		return err
	}
	raw, err = json.Marshal(savedProbes{LastDaily: g.prober.LastDaily()})
	if err != nil {
		return fmt.Errorf("saving probe state: %w", err)
	}
	return g.db.PutState(ctx, probeState, raw)
}

// saveLoop saves state every saveEvery until ctx ends; the final save is
// Shutdown's.
func (g *Gateway) saveLoop(ctx context.Context) {
	t, tick := g.clock.NewTicker(saveEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if err := g.saveState(ctx); err != nil {
				g.log.Warn("could not save state", "err", err)
			}
		}
	}
}

// breakerSnapshots is the breakers' state that the gateway saves at stop and
// restores at start.
type breakerSnapshots interface {
	Snapshot() []breaker.Status
	Restore(saved []breaker.Status) error
}

// probeResults is what the prober needs of the breakers, through
// standings.
type probeResults interface {
	Status(id llm.BackendID) breaker.Status
	ProbeResult(id llm.BackendID, e *llm.Error)
	RetireByProbe(id llm.BackendID, e *llm.Error)
}

// standings adapts the breakers to what the prober asks.
type standings struct{ set probeResults }

func (s standings) Standing(id llm.BackendID) probe.Standing {
	st := s.set.Status(id)
	return probe.Standing{Down: st.State != breaker.Closed, Retired: st.Retired}
}

func (s standings) ProbeResult(id llm.BackendID, e *llm.Error) {
	s.set.ProbeResult(id, e)
}

func (s standings) RetireByProbe(id llm.BackendID, e *llm.Error) {
	s.set.RetireByProbe(id, e)
}
