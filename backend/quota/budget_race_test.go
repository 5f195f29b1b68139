package quota

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
)

// TestBudgetHoldsUnderConcurrentAdmits admits 50 calls at once against a
// budget with room for 10 reservations, each settled at once at exactly
// what it reserved (so settling frees no room), while other goroutines read
// the budget's state and ask Available: exactly 10 are admitted, the spend
// never passes the limit, and nothing stays reserved.
func TestBudgetHoldsUnderConcurrentAdmits(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	m := New(clock, nil, time.UTC)
	tg := Target{ID: llm.BackendID{Provider: "p", Model: "m"}}
	req := testRequest(t)
	configure := func(limit float64) {
		m.Configure(Settings{
			Backends: []Backend{{ID: llm.BackendID{Provider: "p", Model: "m"}, Price: Price{Input: 1, Output: 2}}},
			Budgets:  []Budget{{Scope: "global", Period: PeriodMonth, Limit: limit, Action: ActionBlock}},
		})
	}
	configure(1e9)
	h, sk := m.Admit(req, "auto", tg)
	if sk != nil {
		t.Fatal(sk)
	}
	one := m.Budgets()[0].Reserved
	h.Release()
	configure(10 * one * (1 + 1e-9))

	var admitted atomic.Int32
	var holds sync.WaitGroup
	start := make(chan struct{})
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if v := m.Budgets()[0]; v.Spent+v.Reserved > v.Limit*(1+1e-9) {
					t.Errorf("spent %v + reserved %v past the limit %v", v.Spent, v.Reserved, v.Limit)
				}
				_ = m.Available("auto", tg)
			}
		})
	}
	// What a call reserves, as tokens: settling with these spends exactly
	// the reservation.
	used := &llm.Usage{PromptTokens: reservePrompt(req), CompletionTokens: req.MaxTokens}
	for range 50 {
		holds.Go(func() {
			<-start
			h, sk := m.Admit(req, "auto", tg)
			if sk != nil {
				if !sk.Budget || !sk.Blocked || sk.Word != llm.SkipQuota {
					t.Errorf("refusal %+v", sk)
				}
				return
			}
			admitted.Add(1)
			h.Done(&llm.CallUsage{Usage: used})
		})
	}
	close(start)
	holds.Wait()
	close(stop)
	readers.Wait()
	if n := admitted.Load(); n != 10 {
		t.Fatalf("%d of 50 admitted with room for 10", n)
	}
	v := m.Budgets()[0]
	if v.Reserved != 0 || v.Spent > v.Limit {
		t.Fatalf("after settling: %+v", v)
	}
}
