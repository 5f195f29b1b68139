package quota

import (
	"time"

	"freelane/backend/llm"
)

// Headroom is the share left of id's tightest request or token limit
// (configured or learned, the key's and the backend's) and when that
// limit starts over; 1 and zero when no limit applies. The auto strategy
// weighs it, so a backend close to its limit is asked less before it
// answers 429.
func (m *Manager) Headroom(id llm.BackendID) (left float64, reset time.Time) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	left = 1
	for _, k := range [2]scopeKey{m.keyScope(id), m.backendScope(id)} {
		s := m.scopes[k]
		if s == nil {
			continue
		}
		uses := s.uses(now, false)
		for _, u := range uses.all() {
			if u.limit <= 0 || u.kind == concurrency {
				continue
			}
			if l := 1 - float64(u.used)/float64(u.limit); l < left {
				left, reset = max(l, 0), s.resets(u.kind, now)
			}
		}
	}
	return left, reset
}
