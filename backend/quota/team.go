package quota

import (
	"fmt"
	"time"

	"freelane/backend/llm"
)

// Shared is the count that the instances of a team keep together, so that
// a limit or a budget holds for all of them at once rather than for each.
// backend/redisstate implements it on Redis.
type Shared interface {
	// Take checks every count against its limit and, when none refuses,
	// applies them all, as one step for the whole team. It fills totals
	// (as long as counts) with each count's window sum, or budget spend
	// and reservations, after the step. refused is the index of the count
	// that refused, -1 when all were applied. An error means the shared
	// count could not be reached in time; nothing is known to be applied.
	Take(counts []Count, totals []int64) (refused int, err error)
	// Add applies counts without checking them, in the background and
	// merged with others; counts the shared store cannot take now are
	// kept and applied when it is back.
	Add(counts []Count)
	// Alive is how many instances, this one included, were running when
	// last seen; at least 1.
	Alive() int
}

// CountKind says how a Count is checked and applied.
type CountKind uint8

const (
	// CountWindow adds N to one bucket of a windowed counter. Take
	// refuses it when the window's sum plus N (at least 1) would pass
	// Limit, so a request (N 1) is refused at the limit and a token check
	// (N 0) once the limit is reached.
	CountWindow CountKind = iota
	// CountReserve reserves N (nano-dollars; negative gives back) against
	// a budget for this instance. Take refuses it when the budget's spend
	// is at Limit or spend, every live reservation and N would pass it.
	CountReserve
	// CountSpend adds N nano-dollars to a budget's spend.
	CountSpend
)

// Count is one counter change. Key names the counter, the same on every
// instance: a scope and a limit kind, or a budget and its period.
type Count struct {
	Kind CountKind
	Key  string
	// Bucket is the bucket N goes to; buckets before Oldest have left the
	// window and are dropped. Both count in the window's own unit (see
	// window), so they mean the same on every instance.
	Bucket, Oldest int64
	// TTL is how long from now the counter must be kept. It is a
	// duration rather than a time so that the shared store's clock, not
	// this instance's, decides when it goes.
	TTL      time.Duration
	Limit, N int64
}

// nanos converts dollars to the integer nano-dollars Counts carry, so
// that spend adds up exactly on every instance.
func nanos(dollars float64) int64 { return int64(dollars*1e9 + 0.5) }

func dollars(n int64) float64 { return float64(n) / 1e9 }

// teamRef is what a Count of a Hold stands for: a limit kind of a scope,
// or a budget.
type teamRef struct {
	sc *scope
	k  kind
	bs *budgetState
}

// seen is a team count as this instance last saw it: the team's total and
// this instance's own count at that moment, in the window starting at
// start. With the shared store unreachable, an instance may use its share
// of what the team had left: its own count then plus the remainder split
// across the instances alive.
type seen struct {
	start       time.Time
	shared, own int64
}

// ShareWith makes the manager count its configured request and token
// limits and its budgets together with the other instances of a team.
// With failClosed, while the team's count is unreachable the budgets
// refuse paid backends instead of letting each instance spend its share.
// When s is also a Teacher, the limits the providers announce are told
// to the other instances too (their side calls ApplyLearned). Call it
// before traffic.
func (m *Manager) ShareWith(s Shared, failClosed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.team, m.failClosed = s, failClosed
	m.teach, _ = s.(Teacher)
}

// teamWindow is the window of limit kind k of a scope as the team counts
// it: minute limits in ten-second buckets, a rolling day in quarter hours
// over 24 hours, and a calendar window as one bucket named by its start.
func (s *scope) teamWindow(k kind, now time.Time) (bucket, oldest int64, ttl time.Duration) {
	switch {
	case k == rpm || k == tpm:
		// Ten-second buckets keep the script's work per call small (seven
		// fields, not sixty); seven of them cover the whole minute, so a
		// call leaves the team's count up to ten seconds late, never early.
		b := now.Unix() / 10
		return b, b - 6, 80 * time.Second
	case s.lim.Reset.Rolling():
		b := now.Unix() / 900
		return b, b - 95, 24*time.Hour + 15*time.Minute
	}
	s.day.at(s.lim.Reset, now)
	b := s.day.start.Unix()
	return b, b, s.day.end.Sub(now) + time.Minute
}

// limit is the configured limit of kind k.
func (l Limits) limit(k kind) int64 {
	switch k {
	case rpm:
		return l.RPM
	case rpd:
		return l.RPD
	case tpm:
		return l.TPM
	case tpd:
		return l.TPD
	}
	return 0
}

// teamKey names a scope's counter of kind k for the team.
func (s *scope) teamKey(k kind) string {
	if s.keys[k] == "" {
		s.keys[k] = "q:" + s.name + ":" + k.String()
	}
	return s.keys[k]
}

// teamCountsLocked lists what the team counts for an admitted hold: a
// request against each configured request limit, a check of each token
// limit and the reservation against each budget.
func (m *Manager) teamCountsLocked(h *Hold, now time.Time) {
	for _, sc := range m.scopesOf(h.b) {
		for _, k := range [...]kind{rpm, rpd, tpm, tpd} {
			l := sc.lim.limit(k)
			if l <= 0 {
				continue
			}
			var n int64
			if k == rpm || k == rpd {
				n = 1
			}
			b, old, ttl := sc.teamWindow(k, now)
			h.counts = append(h.counts, Count{Kind: CountWindow, Key: sc.teamKey(k), Bucket: b, Oldest: old, TTL: ttl, Limit: l, N: n})
			h.refs = append(h.refs, teamRef{sc: sc, k: k})
		}
	}
	for _, bs := range h.budgets {
		h.counts = append(h.counts, Count{Kind: CountReserve, Key: bs.teamKey(), TTL: bs.end.Sub(now) + time.Hour,
			Limit: nanos(bs.Limit), N: nanos(h.reserved)})
		h.refs = append(h.refs, teamRef{bs: bs})
	}
}

// teamKey names the budget's counter for its current period.
func (s *budgetState) teamKey() string {
	if s.key == "" || !s.keyStart.Equal(s.start) {
		s.key, s.keyStart = fmt.Sprintf("b:%s:%d", s.ID(), s.start.Unix()), s.start
	}
	return s.key
}

// takeTeam asks the team's count for an admitted hold. The local checks
// have passed and the hold counts locally; a refusal undoes that.
func (m *Manager) takeTeam(h *Hold) *llm.Skip {
	totals := make([]int64, len(h.counts))
	refused, err := m.team.Take(h.counts, totals)
	m.mu.Lock()
	now := m.clock.Now()
	var sk *llm.Skip
	switch {
	case err != nil:
		sk = m.splitLocked(h, now)
	case refused >= 0:
		sk = m.teamRefusedLocked(h.refs[refused], totals[refused], now)
	default:
		m.sawLocked(h, totals)
	}
	if sk != nil {
		h.done = true
		m.undoLocked(h)
	}
	m.mu.Unlock()
	if err != nil && sk == nil {
		// Admitted on this instance's share: the team's count learns of
		// it when the shared store is back.
		m.team.Add(h.counts)
	}
	return sk
}

// ownLocked is this instance's own count of what ref stands for.
func (r teamRef) ownLocked(now time.Time) (own int64, start time.Time) {
	if r.bs != nil {
		return nanos(r.bs.spent + r.bs.reserved), r.bs.start
	}
	switch r.k {
	case rpm:
		n, _ := r.sc.minute.sum(now)
		return n, time.Time{}
	case tpm:
		_, n := r.sc.minute.sum(now)
		return n, time.Time{}
	}
	req, tok := r.sc.dayUse(now)
	start = r.sc.day.start
	if r.sc.lim.Reset.Rolling() {
		start = time.Time{}
	}
	if r.k == rpd {
		return req, start
	}
	return tok, start
}

// sawLocked remembers the team's totals of an admitted hold with this
// instance's own counts beside them.
func (m *Manager) sawLocked(h *Hold, totals []int64) {
	now := h.at
	for i, r := range h.refs {
		own, start := r.ownLocked(now)
		sn := seen{start: start, shared: totals[i], own: own}
		if r.bs != nil {
			r.bs.seen = sn
			continue
		}
		r.sc.seen[r.k] = sn
	}
}

// splitLocked decides a hold on this instance's share alone, the shared
// count being unreachable: each instance may count up to its part of the
// limit split across the instances alive when last seen, and no more
// than its own count then plus its part of what the team had left, so
// that together they do not pass the limit.
func (m *Manager) splitLocked(h *Hold, now time.Time) *llm.Skip {
	n := int64(max(m.team.Alive(), 1))
	for i, r := range h.refs {
		c := h.counts[i]
		if r.bs != nil && m.failClosed {
			return &llm.Skip{Word: llm.SkipQuota, Class: llm.Quota, Budget: true, Blocked: r.bs.Action == ActionBlock,
				Reason: fmt.Sprintf("budget: %s fails closed while the team's shared count on Redis is unreachable (state.fail_closed); only free and local backends serve until it is back",
					r.bs.describe())}
		}
		own, start := r.ownLocked(h.at)
		allow := c.Limit / n
		var sn seen
		if r.bs != nil {
			sn = r.bs.seen
		} else {
			sn = r.sc.seen[r.k]
		}
		if !start.IsZero() && sn.start.Equal(start) {
			// What the others had used when last seen is not this
			// instance's to use either.
			allow = min(allow, sn.own+max(c.Limit-sn.shared, 0)/n)
		}
		// own already holds this hold's request or reservation; a token
		// check refuses once the share is reached.
		over := own > allow
		if c.N == 0 {
			over = own >= allow
		}
		if !over {
			continue
		}
		if r.bs != nil {
			return &llm.Skip{Word: llm.SkipQuota, Class: llm.Quota, Until: r.bs.end, Budget: true, Blocked: r.bs.Action == ActionBlock,
				Reason: fmt.Sprintf("budget: this instance's share of %s is used ($%.2f of $%.2f split across %d instances while the shared state is unreachable)",
					r.bs.describe(), dollars(allow), r.bs.Limit, n)}
		}
		until := r.sc.resets(r.k, now)
		return quotaSkip(fmt.Sprintf("%s: this instance's share of %s is used (%d of %d split across %d instances while the shared state is unreachable), resets %s",
			r.sc.name, r.sc.noun(r.k), allow, c.Limit, n, when(until, now, r.sc.lim.Reset.location())), until)
	}
	return nil
}

// teamRefusedLocked words the team's refusal and keeps it, so that the
// scan passes the backend by until the window frees rather than asking
// the shared count again for every request.
func (m *Manager) teamRefusedLocked(r teamRef, total int64, now time.Time) *llm.Skip {
	if r.bs != nil {
		state := "is spent"
		if dollars(total) < r.bs.Limit {
			state = "has no room for this request"
		}
		return &llm.Skip{Word: llm.SkipQuota, Class: llm.Quota, Until: r.bs.end, Budget: true, Blocked: r.bs.Action == ActionBlock,
			Reason: fmt.Sprintf("budget: %s of $%.2f %s ($%.2f spent and held across the team's instances); it resets at %s",
				r.bs.describe(), r.bs.Limit, state, dollars(total), r.bs.end.UTC().Format(time.RFC3339))}
	}
	sc := r.sc
	until := sc.resets(r.k, now)
	if r.k == rpm || r.k == tpm {
		// The team's oldest request of the minute is not known here; a
		// second's wait asks again soon without asking for every request.
		until = now.Add(time.Second)
	}
	sc.teamFull[r.k] = until
	sc.seen[r.k] = seen{}
	return quotaSkip(fmt.Sprintf("%s: %s used across the team's instances (%d of %d), resets %s",
		sc.name, sc.noun(r.k), total, sc.lim.limit(r.k), when(sc.resets(r.k, now), now, sc.lim.Reset.location())), until)
}

// teamFullSkip is the team's refusal a scope keeps until its window frees.
func (s *scope) teamFullSkip(now time.Time) *llm.Skip {
	for _, k := range [...]kind{rpm, rpd, tpm, tpd} {
		if until := s.teamFull[k]; until.After(now) && s.lim.limit(k) > 0 {
			return quotaSkip(fmt.Sprintf("%s: %s used across the team's instances, resets %s",
				s.name, s.noun(k), when(s.resets(k, now), now, s.lim.Reset.location())), until)
		}
	}
	return nil
}

// undoLocked takes back what Admit counted locally for a hold refused
// afterwards.
func (m *Manager) undoLocked(h *Hold) {
	for _, sc := range m.scopesOf(h.b) {
		sc.unadmit(h.at)
	}
	for _, bs := range h.budgets {
		bs.unreserve(h.reserved)
	}
}

// teamGiveBack tells the team a held call was not made: its requests
// leave the buckets they were counted in and its reservations are given
// back.
func (h *Hold) teamGiveBack() {
	out := make([]Count, 0, len(h.counts))
	for _, c := range h.counts {
		// A token check (N 0) counted nothing to give back.
		if c.N != 0 {
			c.N, c.Limit = -c.N, 0
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		h.m.team.Add(out)
	}
}

// teamSettleLocked lists what the team learns of a settled call: its
// tokens in the windows of now, its spend, and its reservations given
// back. The caller adds them once the manager's lock is released.
func (h *Hold) teamSettleLocked(now time.Time, tok int64, spent float64) []Count {
	out := make([]Count, 0, len(h.counts)+len(h.refs))
	for i, c := range h.counts {
		r := h.refs[i]
		switch {
		case r.bs != nil:
			ttl := r.bs.end.Sub(now) + time.Hour
			out = append(out, Count{Kind: CountReserve, Key: c.Key, TTL: ttl, N: -c.N})
			if s := nanos(spent); s > 0 {
				out = append(out, Count{Kind: CountSpend, Key: c.Key, TTL: ttl, N: s})
			}
		case c.N == 0 && tok > 0:
			b, old, ttl := r.sc.teamWindow(r.k, now)
			out = append(out, Count{Kind: CountWindow, Key: c.Key, Bucket: b, Oldest: old, TTL: ttl, N: tok})
		}
	}
	return out
}
