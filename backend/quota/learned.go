package quota

import "freelane/backend/llm"

// LearnedRPM is the requests per minute a backend's provider announced in
// the rate-limit headers of an answered call, 0 when nothing it said holds
// now. The shaper paces the backend by it. What a 429 taught is left out:
// the breaker already cools the backend down for that.
func (m *Manager) LearnedRPM(id llm.BackendID) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	sc := m.scopes[m.backendScope(id)]
	if sc == nil {
		return 0
	}
	l := sc.learned[rpm]
	if l == nil || l.soft || l.limit <= 0 || !l.resetAt.After(m.clock.Now()) {
		return 0
	}
	return l.limit
}
