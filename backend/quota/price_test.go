package quota

import (
	"math"
	"strings"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
)

// sonnet is Anthropic's published price of Claude Sonnet 4 per million
// tokens: $3 input, $15 output, $0.30 a cache read, $3.75 a 5-minute
// cache write.
var sonnet = Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestCostPricesCachedTokensApart(t *testing.T) {
	// 100,000 prompt tokens of which 80,000 were read from the cache and
	// 15,000 written to it, and 2,000 completion tokens:
	// 5,000 x $3 + 80,000 x $0.30 + 15,000 x $3.75 + 2,000 x $15, per million.
	u := llm.Usage{PromptTokens: 100000, CompletionTokens: 2000, CacheReadTokens: 80000, CacheWriteTokens: 15000}
	if got, want := cost(sonnet, u), 0.015+0.024+0.05625+0.03; !near(got, want) {
		t.Errorf("cost = %v, want %v", got, want)
	}
	// The cache read 80,000 tokens at $0.30 instead of $3.
	if got, want := saved(sonnet, u), 0.216; !near(got, want) {
		t.Errorf("saved = %v, want %v", got, want)
	}
	// Without cache prices, cached tokens cost the input price and nothing
	// is saved.
	plain := Price{Input: 3, Output: 15}
	if got, want := cost(plain, u), (100000*3.0+2000*15.0)/1e6; !near(got, want) {
		t.Errorf("cost without cache prices = %v, want %v", got, want)
	}
	if got := saved(plain, u); got != 0 {
		t.Errorf("saved without a cache price = %v, want 0", got)
	}
}

func TestSettleChargesTheCacheReadPrice(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	m := New(clock, nil, time.UTC)
	id := llm.BackendID{Provider: "anthropic", Model: "claude-sonnet-4-0"}
	m.Configure(Settings{
		Backends: []Backend{{ID: id, Price: sonnet}},
		Budgets:  []Budget{{Scope: "global", Period: PeriodDay, Limit: 10, Action: ActionBlock}},
	})
	h, sk := m.Admit(testRequest(t), "", Target{ID: id})
	if sk != nil {
		t.Fatal(sk)
	}
	a := &llm.Attempt{}
	h.Settle(llm.CallUsage{Attempt: a, Usage: &llm.Usage{PromptTokens: 100000, CompletionTokens: 2000,
		CacheReadTokens: 90000, TotalTokens: 102000}})
	// 10,000 x $3 + 90,000 x $0.30 + 2,000 x $15 = $0.03 + $0.027 + $0.03.
	if want := 0.087; !near(a.Cost, want) {
		t.Errorf("attempt cost = %v, want %v", a.Cost, want)
	}
	if want := 90000 * 2.7 / 1e6; !near(a.Saved, want) {
		t.Errorf("attempt saved = %v, want %v", a.Saved, want)
	}
	var spent float64
	for _, b := range m.Budgets() {
		spent = b.Spent
	}
	if !near(spent, 0.087) {
		t.Errorf("budget spent = %v, want 0.087", spent)
	}
}

func TestUnpricedPaidModelIsRefusedUnderABudget(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	m := New(clock, nil, time.UTC)
	id := llm.BackendID{Provider: "openai", Model: "gpt-unlisted"}
	settings := Settings{Backends: []Backend{{ID: id, Unpriced: true}}}
	m.Configure(settings)
	// Without a money budget it serves as any other model.
	if sk := m.Available("", Target{ID: id}); sk != nil {
		t.Fatalf("no budget: %v", sk)
	}
	h, sk := m.Admit(testRequest(t), "", Target{ID: id})
	if sk != nil {
		t.Fatalf("no budget: %v", sk)
	}
	h.Release()

	// A budget of another provider does not cover it.
	settings.Budgets = []Budget{{Scope: "provider:anthropic", Period: PeriodDay, Limit: 5, Action: ActionBlock}}
	m.Configure(settings)
	if sk := m.Available("", Target{ID: id}); sk != nil {
		t.Fatalf("budget of another provider: %v", sk)
	}

	settings.Budgets = append(settings.Budgets, Budget{Scope: "global", Period: PeriodDay, Limit: 5, Action: ActionBlock})
	m.Configure(settings)
	for name, sk := range map[string]*llm.Skip{
		"available": m.Available("", Target{ID: id}),
		"admit":     func() *llm.Skip { _, sk := m.Admit(testRequest(t), "", Target{ID: id}); return sk }(),
	} {
		if sk == nil {
			t.Fatalf("%s: an unpriced paid model was let through under a budget", name)
		}
		if !sk.Budget || !sk.Blocked || sk.Word != llm.SkipQuota {
			t.Errorf("%s: skip = %+v, want a blocking budget skip", name, sk)
		}
		if !strings.Contains(sk.Reason, "openai/gpt-unlisted has no price") || !strings.Contains(sk.Reason, "price: {input, output}") {
			t.Errorf("%s: reason %q does not say to set the price", name, sk.Reason)
		}
	}
}
