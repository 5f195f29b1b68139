package breaker

import (
	"time"

	"freelane/backend/llm"
)

// Acquire and Report expose the two halves of Allow's done, so tests can
// check the ticket bookkeeping step by step.
func (b *Set) Acquire(provider, name string) (uint64, error) { return b.acquire(provider, name) }

func (b *Set) Report(provider, name string, ticket uint64, e *llm.Error, firstByte time.Duration) {
	b.report(provider, name, ticket, e, firstByte)
}
