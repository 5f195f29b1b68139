package quota

import "freelane/backend/llm"

// LearnedRPM is the requests per minute a backend's provider announced in
// its rate-limit headers (or named in a 429), 0 when nothing it said holds
// now. The shaper paces the backend by it.
func (m *Manager) LearnedRPM(id llm.BackendID) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	sc := m.scopes[backendScope(id)]
	if sc == nil {
		return 0
	}
	l := sc.learned[rpm]
	if l == nil || l.limit <= 0 || !l.resetAt.After(m.clock.Now()) {
		return 0
	}
	return l.limit
}
