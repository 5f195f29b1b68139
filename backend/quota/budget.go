package quota

import (
	"fmt"
	"strings"
	"time"

	"freelane/backend/events"
	"freelane/backend/llm"
)

// Budget periods and actions.
const (
	PeriodDay   = "day"
	PeriodMonth = "month"

	ActionFreeOnly = "free-only"
	ActionBlock    = "block"
)

// Budget caps spending in one scope ("global", "chain:NAME" or
// "provider:NAME") per local calendar day or month. At the limit, paid
// backends are skipped; with ActionBlock a request nothing free could serve
// is refused with HTTP 402 naming the budget.
type Budget struct {
	Scope  string
	Period string
	Limit  float64
	Action string
}

// ID is the budget's stable id, "scope|period".
func (b Budget) ID() string { return b.Scope + "|" + b.Period }

// budgetState is a budget with its spend in the current period.
type budgetState struct {
	Budget
	start, end time.Time
	spent      float64
	reserved   float64
	noted      map[string]time.Time // event -> period start it was raised in
	// In a team: key names the shared counter of the period starting at
	// keyStart, and seen is the team's spend as last seen.
	key      string
	keyStart time.Time
	seen     seen
}

func (m *Manager) configureBudgets(bs []Budget) []*budgetState {
	old := map[string]*budgetState{}
	for _, s := range m.budgets {
		old[s.ID()] = s
	}
	out := make([]*budgetState, 0, len(bs))
	for _, b := range bs {
		s := old[b.ID()]
		if s == nil {
			s = &budgetState{noted: map[string]time.Time{}}
			// Spend so far this period is known from the totals.
			s.Budget = b
			s.roll(m.clock.Now(), m.loc)
			s.spent = m.spend.of(b, s.start)
		}
		s.Budget = b
		out = append(out, s)
	}
	return out
}

// unreserve gives back a reservation. Sums of floating-point amounts leave
// dust behind; a budget with nothing in flight holds exactly zero.
func (s *budgetState) unreserve(amount float64) {
	s.reserved -= amount
	if s.reserved < 1e-12 {
		s.reserved = 0
	}
}

// applies reports whether the budget covers a call through chain to provider.
func (s *budgetState) applies(chain, provider string) bool {
	switch {
	case s.Scope == "global":
		return true
	case strings.HasPrefix(s.Scope, "chain:"):
		return chain != "" && s.Scope[len("chain:"):] == chain
	case strings.HasPrefix(s.Scope, "provider:"):
		return s.Scope[len("provider:"):] == provider
	}
	return false
}

// periodBounds is the local day or month containing now.
func periodBounds(period string, now time.Time, loc *time.Location) (start, end time.Time) {
	t := now.In(loc)
	if period == PeriodMonth {
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
		return start, start.AddDate(0, 1, 0)
	}
	start = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	return start, start.AddDate(0, 0, 1)
}

// roll starts a new period when now has passed the current one.
func (s *budgetState) roll(now time.Time, loc *time.Location) {
	if !s.end.IsZero() && now.Before(s.end) && !now.Before(s.start) {
		return
	}
	start, end := periodBounds(s.Period, now, loc)
	if !start.Equal(s.start) {
		s.start, s.end, s.spent = start, end, 0
	}
}

// exceededLocked returns the first budget covering the call that the extra
// amount would take past its limit.
func (m *Manager) exceededLocked(chain, provider string, extra float64, now time.Time) *budgetState {
	for _, s := range m.budgets {
		if !s.applies(chain, provider) {
			continue
		}
		s.roll(now, m.loc)
		if s.spent >= s.Limit || s.spent+s.reserved+extra > s.Limit {
			return s
		}
	}
	return nil
}

func (s *budgetState) describe() string {
	period := "daily"
	if s.Period == PeriodMonth {
		period = "monthly"
	}
	switch {
	case strings.HasPrefix(s.Scope, "chain:"):
		return fmt.Sprintf("the %s budget of chain %q", period, s.Scope[len("chain:"):])
	case strings.HasPrefix(s.Scope, "provider:"):
		return fmt.Sprintf("the %s budget of provider %q", period, s.Scope[len("provider:"):])
	}
	return "the global " + period + " budget"
}

// message explains the budget's state to a user.
func (s *budgetState) message() string {
	state := fmt.Sprintf("is spent ($%.2f", s.spent)
	if s.spent < s.Limit {
		state = fmt.Sprintf("has no room for this request ($%.2f spent", s.spent)
	}
	if s.reserved > 0 {
		state += fmt.Sprintf(", $%.2f held by requests in flight", s.reserved)
	}
	msg := fmt.Sprintf("%s of $%.2f %s); it resets at %s", s.describe(), s.Limit, state, s.end.UTC().Format(time.RFC3339))
	if s.Action == ActionBlock {
		return msg + "; raise the budget in the dashboard (Budgets & limits) or wait for the reset"
	}
	return msg + "; only free and local backends serve until then"
}

// skip is the router's record of the budget's refusal. It reads the
// budget's state, so the caller holds the manager's lock.
func (s *budgetState) skip() *llm.Skip {
	return &llm.Skip{Word: llm.SkipQuota, Class: llm.Quota, Until: s.end, Reason: "budget: " + s.message(),
		Budget: true, Blocked: s.Action == ActionBlock}
}

func (s *budgetState) exceededEvent(now time.Time) []events.Event {
	if s.noted["exceeded"].Equal(s.start) {
		return nil
	}
	s.noted["exceeded"] = s.start
	return []events.Event{{Time: now, Kind: events.BudgetExceeded, Level: events.Alert, Budget: s.ID(), Reason: s.message(), Until: s.end}}
}

// spendTotals is all spend today and this month (local), and per budget
// scope the spend of the current day and month, so a budget added later
// starts from what was already spent.
type spendTotals struct {
	dayStart, monthStart time.Time
	day, month           float64
	// byScope holds the spend in each scope and period.
	byScope map[spendKey]float64
}

// spendKey is a scope and a period of spendTotals. The scope's kind and
// name are kept apart so that recording a spend, once per request, builds
// no string.
type spendKey struct {
	kind   string // "global", "chain" or "provider"
	name   string // the chain's or provider's name; "" for global
	period string
}

// keyOf is the spendKey of a budget's scope ("global", "chain:NAME" or
// "provider:NAME") and period.
func keyOf(b Budget) spendKey {
	kind, name, _ := strings.Cut(b.Scope, ":")
	return spendKey{kind: kind, name: name, period: b.Period}
}

func (t *spendTotals) roll(now time.Time, loc *time.Location) {
	ds, _ := periodBounds(PeriodDay, now, loc)
	ms, _ := periodBounds(PeriodMonth, now, loc)
	if t.byScope == nil {
		t.byScope = map[spendKey]float64{}
	}
	if !ds.Equal(t.dayStart) {
		t.dayStart, t.day = ds, 0
		for k := range t.byScope {
			if k.period == PeriodDay {
				delete(t.byScope, k)
			}
		}
	}
	if !ms.Equal(t.monthStart) {
		t.monthStart, t.month = ms, 0
		for k := range t.byScope {
			if k.period == PeriodMonth {
				delete(t.byScope, k)
			}
		}
	}
}

func (t *spendTotals) of(b Budget, start time.Time) float64 {
	if (b.Period == PeriodDay && !start.Equal(t.dayStart)) || (b.Period == PeriodMonth && !start.Equal(t.monthStart)) {
		return 0
	}
	return t.byScope[keyOf(b)]
}

// spendLocked adds an amount spent at t through chain on provider to the
// totals and the budgets, raising budget events.
func (m *Manager) spendLocked(t time.Time, chain, provider string, amount float64, evs []events.Event) []events.Event {
	if amount <= 0 {
		return evs
	}
	now := m.clock.Now()
	m.spend.roll(now, m.loc)
	if !t.Before(m.spend.monthStart) {
		m.spend.month += amount
		for _, k := range [...]spendKey{{kind: "global"}, {kind: "chain", name: chain}, {kind: "provider", name: provider}} {
			if k.kind == "chain" && chain == "" {
				continue
			}
			k.period = PeriodMonth
			m.spend.byScope[k] += amount
			if !t.Before(m.spend.dayStart) {
				k.period = PeriodDay
				m.spend.byScope[k] += amount
			}
		}
		if !t.Before(m.spend.dayStart) {
			m.spend.day += amount
		}
	}
	for _, s := range m.budgets {
		if !s.applies(chain, provider) {
			continue
		}
		s.roll(now, m.loc)
		if t.Before(s.start) {
			continue
		}
		s.spent += amount
		switch {
		case s.spent >= s.Limit:
			evs = append(evs, s.exceededEvent(now)...)
		case s.spent >= warnAt*s.Limit && !s.noted["warning"].Equal(s.start):
			s.noted["warning"] = s.start
			evs = append(evs, events.Event{Time: now, Kind: events.BudgetWarning, Level: events.Warn, Budget: s.ID(),
				Reason: fmt.Sprintf("%s of %s of $%.2f spent", pct(s.spent/s.Limit), s.describe(), s.Limit)})
		}
	}
	return evs
}
