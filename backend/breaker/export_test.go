package breaker

import (
	"time"

	"freelane/backend/llm"
)

// Acquire and Report expose the two halves of Allow's done, so tests can
// check the ticket bookkeeping step by step.
func (b *Set) Acquire(id llm.BackendID) (uint64, error) {
	ticket, _, err := b.acquire(id)
	return ticket, err
}

func (b *Set) Report(id llm.BackendID, ticket uint64, e *llm.Error, firstByte time.Duration) {
	b.report(id, ticket, e, firstByte)
}
