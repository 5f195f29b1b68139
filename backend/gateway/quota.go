package gateway

import (
	"context"
	"math"
	"time"

	"freelane/backend/config"
	"freelane/backend/defaults"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/quota"
	"freelane/backend/router"
	"freelane/backend/shape"
	"freelane/backend/store"
	"freelane/backend/task"
	"freelane/backend/tier"
)

// housekeepEvery is how often the ledger roll-up and credit expiry are
// checked.
const (
	housekeepEvery = time.Minute
	rollUpEvery    = time.Hour
)

// admission adapts the quota manager to the router's Admission. After
// each call it tells the shaper what the provider's rate-limit headers
// said about its requests per minute.
type admission struct {
	m     admitter
	shape *shape.Shaper
}

// admitter is what the router's admission needs of the quota manager.
type admitter interface {
	Available(chain string, b quota.Target) *llm.Skip
	Admit(req *llm.Request, chain string, b quota.Target) (*quota.Hold, *llm.Skip)
	Headroom(id llm.BackendID) (left float64, reset time.Time)
	LearnedRPM(id llm.BackendID) int64
}

func target(b *router.Backend) quota.Target { return quota.Target{ID: b.ID} }

func (a admission) Available(chain string, b *router.Backend) *llm.Skip {
	return a.m.Available(chain, target(b))
}

// Headroom is the quota manager's view of a backend's tightest limit, for
// the router's auto strategy.
func (a admission) Headroom(id llm.BackendID) (float64, time.Time) { return a.m.Headroom(id) }

// promptEstimator is the offline prompt estimate the router's context
// check uses: the task rules' quick count (a sample of a long prompt's
// text), made once per request whichever asks first. A full count of a
// long agent prompt takes tens of milliseconds; the quick one stays within
// a few percent, and a wrong guess still fails over as too_long.
type promptEstimator struct{}

func (promptEstimator) PromptTokens(req *llm.Request) int {
	return req.EstimatedPrompt(task.QuickPrompt)
}

func (a admission) Admit(req *llm.Request, chain string, b *router.Backend) (func(*llm.CallUsage), *llm.Skip) {
	h, sk := a.m.Admit(req, chain, target(b))
	if sk != nil {
		return nil, sk
	}
	if a.shape == nil {
		return h.Done, nil
	}
	return func(c *llm.CallUsage) {
		h.Done(c)
		if c != nil {
			a.shape.Learn(b.ID, a.m.LearnedRPM(b.ID))
		}
	}, nil
}

// quotaSettings derives the quota manager's settings from a configuration,
// with the rate-limit headers of each provider's dialect from reg. Rules
// that do not parse were already refused by validation.
func quotaSettings(cfg *config.Config, reg *protocol.Registry) quota.Settings {
	s := quota.Settings{Providers: map[string]quota.Limits{}, RateHeaders: map[string]llm.RateHeaders{}}
	for _, p := range cfg.Providers {
		if d, ok := reg.ByKind(p.Kind); ok {
			s.RateHeaders[p.Name] = d.Outbound.RateLimits
		}
		if p.Limits != nil {
			s.Providers[p.Name] = toQuotaLimits(p.Limits)
		}
		for _, m := range p.Models {
			b := quota.Backend{ID: llm.BackendID{Provider: p.Name, Model: m.ID}, CreditExpires: m.CreditDate()}
			if m.Limits != nil {
				b.Limits = toQuotaLimits(m.Limits)
			} else if p.Limits != nil {
				// Day-scale counters of a model follow its provider's reset
				// rule unless it has its own.
				b.Limits.Reset = s.Providers[p.Name].Reset
			}
			if m.Price != nil {
				b.Price = quota.Price{Input: m.Price.Input, Output: m.Price.Output,
					CacheRead: m.Price.CacheRead, CacheWrite: m.Price.CacheWrite}
			} else {
				b.Unpriced = p.Tier == tier.Own
			}
			s.Backends = append(s.Backends, b)
		}
	}
	for _, b := range cfg.Budgets {
		s.Budgets = append(s.Budgets, quota.Budget{Scope: b.Scope, Period: b.Period, Limit: b.Limit, Action: b.Action})
	}
	return s
}

func toQuotaLimits(l *config.Limits) quota.Limits {
	rule, _ := quota.ParseRule(l.Reset)
	return quota.Limits{RPM: int64(l.RPM), RPD: int64(l.RPD), TPM: int64(l.TPM), TPD: int64(l.TPD),
		Concurrency: int64(l.Concurrency), Reset: rule}
}

// restoreQuotas rebuilds the quota counters and budget spend from the
// ledger over the last 32 days: that covers the current month (it began at
// most 31 days ago) and whole weekly and monthly limit windows.
func (g *Gateway) restoreQuotas(ctx context.Context) {
	since := g.clock.Now().AddDate(0, 0, -32)
	rows, err := g.db.LedgerSince(ctx, since)
	if err != nil {
		g.log.Warn("could not rebuild quotas and spend from the ledger", "err", err)
		return
	}
	use := make([]quota.Usage, 0, len(rows))
	for _, r := range rows {
		// A row of a request that no backend served names none.
		id, _ := llm.CutBackendID(r.Backend)
		use = append(use, quota.Usage{Time: r.Minute, Backend: id, Chain: r.Chain, Requests: r.Requests, Tokens: r.Tokens, Cost: r.Cost})
	}
	g.quota.Restore(use)
}

// housekeep rolls old ledger rows up into daily totals once at start and
// then hourly, and rebuilds the routing table when a credit that moved a
// backend up the default chain has expired. It returns when ctx ends.
func (g *Gateway) housekeep(ctx context.Context) {
	g.rollUp(ctx)
	lastRollUp := g.clock.Now()
	t, tick := g.clock.NewTicker(housekeepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick:
			g.checkCredits()
			if now.Sub(lastRollUp) >= rollUpEvery {
				g.rollUp(ctx)
				lastRollUp = now
			}
		}
	}
}

func (g *Gateway) rollUp(ctx context.Context) {
	g.mu.Lock()
	days := defaults.LedgerRetentionDays
	if g.cfg != nil && g.cfg.Ledger.RetentionDays > 0 {
		days = g.cfg.Ledger.RetentionDays
	}
	keep := defaults.RequestLogKeepDays
	if g.cfg != nil && g.cfg.RequestLog.KeepDays > 0 {
		keep = g.cfg.RequestLog.KeepDays
	}
	g.mu.Unlock()
	// The request log would otherwise grow for as long as FreeLane runs;
	// what it spent stays in the ledger's totals.
	switch n, err := g.db.PruneRequests(ctx, g.clock.Now().AddDate(0, 0, -keep)); {
	case err != nil:
		g.log.Warn("request log prune failed", "err", err)
	case n > 0:
		g.log.Info("deleted old requests from the request log", "requests", n, "keep_days", keep)
	}
	// In a team, rows not copied to PostgreSQL yet stay as they are.
	through := int64(math.MaxInt64)
	if g.team != nil {
		through = g.team.shipped()
	}
	n, err := g.db.RollUpLedgerThrough(ctx, g.clock.Now().AddDate(0, 0, -days), through)
	switch {
	case err != nil:
		g.log.Warn("ledger roll-up failed", "err", err)
	case n > 0:
		g.log.Info("rolled up old ledger rows into daily totals", "rows", n, "retention_days", days)
	}
	// The team's ledger on PostgreSQL is folded the same way, by
	// whichever instance gets to it first.
	if g.team == nil {
		return
	}
	if db := g.team.current(); db != nil {
		switch n, err := db.PruneRequests(ctx, g.clock.Now().AddDate(0, 0, -keep)); {
		case err != nil:
			g.log.Warn("the team's request log prune on PostgreSQL failed; it is tried again in an hour", "err", err)
		case n > 0:
			g.log.Info("deleted old requests from the team's request log on PostgreSQL", "requests", n, "keep_days", keep)
		}
		switch n, err := db.RollUp(ctx, g.clock.Now().AddDate(0, 0, -days)); {
		case err != nil:
			g.log.Warn("the team's ledger roll-up on PostgreSQL failed; it is tried again in an hour", "err", err)
		case n > 0:
			g.log.Info("rolled up old rows of the team's ledger on PostgreSQL", "rows", n, "retention_days", days)
		}
	}
}

// checkCredits re-applies the configuration once a running credit ended,
// so its backend drops back to its normal place in the default chain.
func (g *Gateway) checkCredits() {
	g.mu.Lock()
	defer g.mu.Unlock()
	at := g.router.Table().RebuildAt()
	if at.IsZero() || g.clock.Now().Before(at) || g.cfg == nil {
		return
	}
	// Built from the pool, not from the configuration in use, which
	// already holds the local servers the pool adds.
	if err := g.applyLocked(g.pool.View()); err != nil {
		g.log.Warn("could not rebuild routing after a credit expired", "err", err)
	}
}

// Usage answers /api/usage.
func (a adminView) Usage(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error) {
	if a.g.team != nil {
		return a.g.team.usage(ctx, q)
	}
	return a.g.db.Usage(ctx, q)
}

// EachLedgerRow streams the ledger for /api/usage.csv.
func (a adminView) EachLedgerRow(ctx context.Context, from, to time.Time, fn func(store.LedgerRow) error) error {
	return a.g.db.EachLedgerRow(ctx, from, to, fn)
}

// Budgets answers GET /api/budgets.
func (a adminView) Budgets() []quota.BudgetView { return a.g.quota.Budgets() }

// Now is the gateway's clock, for the admin API's default time ranges.
func (a adminView) Now() time.Time { return a.g.clock.Now() }

// quotaViews lists the quota of every backend in names' order.
func (g *Gateway) quotaViews(backends []BackendView) []quota.QuotaView {
	ids := make([]llm.BackendID, len(backends))
	for i, b := range backends {
		ids[i] = b.ID
	}
	return g.quota.Quotas(ids)
}
