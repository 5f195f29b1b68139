package quota

import (
	"time"

	"freelane/backend/llm"
)

// Learned is a limit a provider announced for a backend, in its
// rate-limit headers or a 429, as one instance of a team tells it to the
// others.
type Learned struct {
	Backend llm.BackendID
	// Kind is KindRPM, KindRPD, KindTPM or KindTPD.
	Kind             string
	Limit, Remaining int64
	// Reset is when the limit starts over; At when it was learned, which
	// orders what two instances learned of one limit.
	Reset, At time.Time
	// Soft marks what a 429 taught (see learned).
	Soft bool
}

// Teacher is the part of a Shared that passes what the manager learns of
// its providers' limits to the other instances; backend/redisstate
// implements it. Teach is called outside the manager's lock and must not
// block.
type Teacher interface {
	Teach(l Learned)
}

// learnedOf lists what the scope learned since prev that is news for the
// team, at now: a limit first heard of (or again after its reset), one
// whose size or softness changed, one used up and one with room again.
// The remaining count going down call by call is not: every instance
// reads it in the headers of its own calls, and telling it would be a
// message per request.
func learnedOf(id llm.BackendID, sc *scope, prev [nKinds]*learned, now time.Time, out []Learned) []Learned {
	for k, l := range sc.learned {
		if l == nil || l == prev[k] {
			continue
		}
		if p := prev[k]; p != nil && p.resetAt.After(now) && p.limit == l.limit && p.soft == l.soft && (l.remaining > 0) == (p.remaining > 0) {
			continue
		}
		out = append(out, Learned{Backend: id, Kind: kind(k).String(), Limit: l.limit, Remaining: l.remaining,
			Reset: l.resetAt, At: l.at, Soft: l.soft})
	}
	return out
}

// ApplyLearned records a limit another instance learned, as if this one
// had: unless what this instance knows of that limit is as new, or the
// limit has already reset.
func (m *Manager) ApplyLearned(l Learned) {
	k := kindOf(l.Kind)
	if k.String() != l.Kind || k == concurrency {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !l.Reset.After(m.clock.Now()) {
		return
	}
	sc := m.scope(m.backendScope(l.Backend))
	if cur := sc.learned[k]; cur != nil && !l.At.After(cur.at) {
		return
	}
	sc.learned[k] = &learned{limit: l.Limit, remaining: l.Remaining, resetAt: l.Reset, at: l.At, soft: l.Soft}
}
