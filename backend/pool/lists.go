package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/dialects"
	"freelane/backend/events"
	"freelane/backend/llm"
	"freelane/backend/modellist"
	"freelane/backend/tier"
)

// MaxJoin bounds how many models one model list adds at once, so a
// vendor listing hundreds does not flood the chains.
const MaxJoin = 64

// listWait bounds one model list read of the daily round.
const listWait = 30 * time.Second

// ReadList reads the model list of the provider p, with its key and
// headers, as the dialect of its kind reads lists.
func (p *Pool) ReadList(ctx context.Context, c config.Provider) ([]modellist.Listed, error) {
	d, ok := dialects.Registry().ByKind(c.Kind)
	if !ok {
		return nil, fmt.Errorf("pool: no dialect speaks the provider kind %q", c.Kind)
	}
	return modellist.Fetch(ctx, p.lists, d.Outbound.Models, c.BaseURL, listKey(c), c.Headers)
}

// listKey is the key a provider's model list is read with: its first key,
// which for a pool whose keys are all in api_keys is not api_key.
func listKey(c config.Provider) string {
	if pool := c.Pool(); len(pool) > 0 {
		return pool[0].Key
	}
	return ""
}

// Joinable are the listed models that may serve from a provider the
// catalog offers so: chat models, and of a list with prices only the free
// ones for a free tier.
func Joinable(offer tier.Offer, listed []modellist.Listed) []modellist.Listed {
	var out []modellist.Listed
	for _, l := range listed {
		if !l.Chat {
			continue
		}
		if offer == tier.OfferFree && l.Priced && !l.Free {
			continue
		}
		out = append(out, l)
	}
	return out
}

// NewModels are the listed models neither the catalog entry nor have
// name, as models to add.
func NewModels(e *catalog.Provider, listed []modellist.Listed, have []string) []config.Model {
	var out []config.Model
	for _, l := range listed {
		if slices.ContainsFunc(e.Models, func(m catalog.Model) bool { return m.ID == l.ID }) || slices.Contains(have, l.ID) {
			continue
		}
		m := config.Model{ID: config.Escape(l.ID), Context: l.Context, MaxOutput: l.MaxOutput, Capabilities: l.Capabilities}
		if l.Priced && !l.Free && (l.Price.Input > 0 || l.Price.Output > 0) {
			m.Price = &config.Price{Input: l.Price.Input, Output: l.Price.Output}
		}
		out = append(out, m)
	}
	return out
}

// RetireUnlisted retires the provider's models its list no longer names
// (withdrawn, or no longer free), and restores those it names again.
func (p *Pool) RetireUnlisted(provider string, models []string, listed []modellist.Listed, offer tier.Offer) {
	ids := modellist.IDs(Joinable(offer, listed))
	for _, model := range models {
		id := llm.BackendID{Provider: provider, Model: model}
		p.retiredMu.Lock()
		was := p.retired[id]
		named := slices.Contains(ids, model)
		if named {
			delete(p.retired, id)
		} else {
			p.retired[id] = true
		}
		p.retiredMu.Unlock()
		if p.o.Breakers == nil {
			continue
		}
		switch {
		case named && was:
			p.o.Breakers.Unretire(id, "the provider's model list names it again")
		case !named && !was:
			p.o.Breakers.Retire(id, "the provider's model list no longer names it")
		}
	}
}

// Models is what the daily round of model lists needs from the control
// plane: the catalog, to know whose lists name what a key may use, and
// a way to add the models a list names for the first time.
type Models interface {
	Catalog() *catalog.Catalog
	AddModels(ctx context.Context, provider string, models []config.Model) error
}

// RefreshModels reads the model list of every provider from the catalog
// that has one: models it names for the first time join the provider
// (free ones only, on a free tier), models it no longer names are
// retired and those it names again restored. It is the daily round's
// second half; tests call it directly.
func (p *Pool) RefreshModels(ctx context.Context, ctl Models) {
	cfg := p.View().Config
	if cfg == nil {
		return
	}
	cat := ctl.Catalog()
	for _, c := range cfg.Providers {
		e, ok := cat.Provider(c.Catalog)
		if !ok || !e.ListModels || c.Disabled || (!c.Keyless && listKey(c) == "") {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, listWait)
		listed, err := p.ReadList(lctx, c)
		cancel()
		if err != nil {
			if !errors.Is(err, modellist.ErrNoList) {
				p.log.Warn("reading a provider's model list", "provider", c.Name, "err", err)
			}
			continue
		}
		var have []string
		for _, m := range c.Models {
			have = append(have, m.ID)
		}
		// Paid vendors list everything they sell; new ones are not added
		// to a paid key behind the user's back.
		if e.Tier != tier.OfferPaid {
			if add := NewModels(e, Joinable(e.Tier, listed), have); len(add) > 0 {
				add = add[:min(len(add), MaxJoin)]
				if err := ctl.AddModels(ctx, c.Name, add); err != nil {
					p.log.Warn("adding the models a provider's list names", "provider", c.Name, "err", err)
				} else {
					var ids []string
					for _, m := range add {
						ids = append(ids, config.Unescape(m.ID))
					}
					p.publish(events.Event{Time: p.o.Clock.Now(), Kind: events.ModelsJoined, Level: events.Info, Provider: c.Name,
						Reason: fmt.Sprintf("%s's model list names new models, which now serve: %s", c.Name, strings.Join(ids, ", "))})
				}
			}
		}
		p.RetireUnlisted(c.Name, have, listed, e.Tier)
	}
}

// RunModelLists reads the model lists a minute after it starts, then
// every period, until ctx ends.
func (p *Pool) RunModelLists(ctx context.Context, ctl Models, period time.Duration) {
	t, tick := p.o.Clock.NewTimer(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			p.RefreshModels(ctx, ctl)
			t.Reset(period)
		}
	}
}
