package breaker

import "freelane/backend/llm"

// Health is id's health score, from 0 to 1 (1 for a backend never seen):
// the moving average of its outcomes that also trips the breaker. The
// router's auto strategy weighs it.
func (b *Set) Health(id llm.BackendID) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.backends[id]; st != nil {
		return st.health
	}
	return 1
}
