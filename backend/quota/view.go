package quota

import (
	"cmp"
	"slices"
	"time"

	"freelane/backend/llm"
)

// LimitUse is one limit of one backend, as the dashboard shows it.
type LimitUse struct {
	Kind     string     `json:"kind"`
	Used     int64      `json:"used"`
	Limit    int64      `json:"limit"`
	Fraction float64    `json:"fraction"`
	ResetsAt *time.Time `json:"resets_at"`
	Learned  bool       `json:"learned"`
	// Shared names the provider (or the provider's key, "groq@work") when
	// the limit is theirs and so shared by every model reached through
	// them; empty for a limit of the model itself.
	Shared string `json:"shared,omitempty"`
}

// QuotaView is a backend's limits and price.
type QuotaView struct {
	Backend       string     `json:"backend"`
	Limits        []LimitUse `json:"limits"`
	Exhausted     bool       `json:"exhausted"`
	Reason        string     `json:"reason"`
	Price         Price      `json:"price"`
	CreditExpires *string    `json:"credit_expires"`
}

// BudgetView is a budget with its spend in the current period.
type BudgetView struct {
	ID       string    `json:"id"`
	Scope    string    `json:"scope"`
	Period   string    `json:"period"`
	Limit    float64   `json:"limit"`
	Action   string    `json:"action"`
	Spent    float64   `json:"spent"`
	Reserved float64   `json:"reserved"`
	Fraction float64   `json:"fraction"`
	ResetsAt time.Time `json:"resets_at"`
	Exceeded bool      `json:"exceeded"`
}

// Spend is everything spent today and this month.
type Spend struct {
	Today float64 `json:"today"`
	Month float64 `json:"month"`
}

// Quotas returns a view of every configured backend, in the order given
// (backends not configured are left out).
func (m *Manager) Quotas(order []llm.BackendID) []QuotaView {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	out := make([]QuotaView, 0, len(order))
	for _, id := range order {
		b := m.backendOf(id)
		if b == nil {
			continue
		}
		v := QuotaView{Backend: id.String(), Limits: []LimitUse{}, Price: b.Price}
		if !b.CreditExpires.IsZero() {
			d := b.CreditExpires.Format(time.DateOnly)
			v.CreditExpires = &d
		}
		// Provider limits are shown on each of its backends: they are
		// what stops it too.
		for i, sc := range []*scope{m.scope(m.keyScope(id)), m.scope(m.backendScope(id))} {
			shared := ""
			if i == 0 {
				shared = m.quotaKey(id).String()
			}
			l := sc.uses(now, true)
			for _, u := range l.all() {
				lu := LimitUse{Kind: u.kind.String(), Used: u.used, Limit: u.limit, Learned: u.learned, Shared: shared}
				if u.limit > 0 {
					lu.Fraction = float64(u.used) / float64(u.limit)
				}
				if !u.resets.IsZero() {
					r := u.resets
					lu.ResetsAt = &r
				}
				v.Limits = append(v.Limits, lu)
			}
			if msg := sc.fullReason(now); msg != "" && v.Reason == "" {
				v.Exhausted, v.Reason = true, msg
			}
		}
		out = append(out, v)
	}
	return out
}

// Exhausted tells whether a limit of the backend or of its key is used up
// now, why, and when it starts over (zero when unknown, as for a
// concurrency limit).
func (m *Manager) Exhausted(id llm.BackendID) (reason string, until time.Time, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	sk := m.limitsLocked(Target{ID: id}, now)
	if sk == nil {
		return "", time.Time{}, false
	}
	return sk.Reason, sk.Until, true
}

// Budgets returns every budget with its spend.
func (m *Manager) Budgets() []BudgetView {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	out := make([]BudgetView, 0, len(m.budgets))
	for _, s := range m.budgets {
		s.roll(now, m.loc)
		v := BudgetView{ID: s.ID(), Scope: s.Scope, Period: s.Period, Limit: s.Limit, Action: s.Action,
			Spent: s.spent, Reserved: max(s.reserved, 0), ResetsAt: s.end, Exceeded: s.spent >= s.Limit}
		if s.Limit > 0 {
			v.Fraction = (v.Spent + v.Reserved) / s.Limit
		}
		out = append(out, v)
	}
	return out
}

// Spend returns what was spent today and this month.
func (m *Manager) Spend() Spend {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spend.roll(m.clock.Now(), m.loc)
	return Spend{Today: m.spend.day, Month: m.spend.month}
}

// CreditOrder returns the backends whose credit has not expired by now,
// soonest expiry first, and the earliest expiry among them (zero if none):
// the routing table puts them ahead of the free pool until then.
func (m *Manager) CreditOrder(now time.Time) (ids []llm.BackendID, next time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	type credit struct {
		id  llm.BackendID
		end time.Time
	}
	var cs []credit
	for id, b := range m.backends {
		if end := CreditEnd(b.CreditExpires); !end.IsZero() && now.Before(end) {
			cs = append(cs, credit{id, end})
		}
	}
	slices.SortFunc(cs, func(a, b credit) int {
		if c := a.end.Compare(b.end); c != 0 {
			return c
		}
		return cmp.Compare(a.id.String(), b.id.String())
	})
	for _, c := range cs {
		ids = append(ids, c.id)
		if next.IsZero() || c.end.Before(next) {
			next = c.end
		}
	}
	return ids, next
}

// CreditEnd is when a credit that expires on a date stops: the end of that
// day, local time. Zero for no date.
func CreditEnd(day time.Time) time.Time {
	if day.IsZero() {
		return time.Time{}
	}
	return time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.Local).AddDate(0, 0, 1)
}
