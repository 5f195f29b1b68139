package quota

import (
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/protocol/openai"
)

func testManager(t testing.TB) (*Manager, *clocktest.Clock) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	m := New(clock, nil, time.UTC)
	rule, err := ParseRule("rolling 24h")
	if err != nil {
		t.Fatal(err)
	}
	m.Configure(Settings{
		Providers: map[string]Limits{"p": {RPM: 1 << 40, TPD: 1 << 40, Concurrency: 1 << 20}},
		Backends: []Backend{{ID: llm.BackendID{Provider: "p", Model: "m"}, Price: Price{Input: 1, Output: 2},
			Limits: Limits{RPD: 1 << 40, TPM: 1 << 40, Reset: rule}}},
		Budgets: []Budget{{Scope: "global", Period: PeriodMonth, Limit: 1e9, Action: ActionBlock}},
	})
	return m, clock
}

func testRequest(t testing.TB) *llm.Request {
	req, err := openai.ParseRequest(llm.Chat, []byte(`{"model":"auto","max_tokens":100,"messages":[{"role":"user","content":"Write a function that adds two numbers."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRollingWindowAndConcurrency(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	m := New(clock, nil, time.UTC)
	rolling, _ := ParseRule("rolling 24h")
	m.Configure(Settings{Backends: []Backend{{ID: llm.BackendID{Provider: "p", Model: "m"}, Limits: Limits{RPD: 2, Concurrency: 1, Reset: rolling}}}})
	req := testRequest(t)
	tg := Target{ID: llm.BackendID{Provider: "p", Model: "m"}}
	h, err := m.Admit(req, "", tg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Admit(req, "", tg); err == nil || err.Error() != "p/m: 1 requests already in flight (concurrency limit)" {
		t.Fatalf("second at once: %v", err)
	}
	h.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}})
	clock.Advance(6 * time.Hour)
	h, _ = m.Admit(req, "", tg)
	h.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}})
	if err := m.Available("", tg); err == nil {
		t.Fatal("a third request in 24 hours was allowed")
	}
	// The first request leaves the rolling window 24 hours after it was
	// made, not at a fixed time of day.
	clock.Advance(18*time.Hour - time.Minute)
	if err := m.Available("", tg); err == nil {
		t.Fatal("allowed before the first request left the window")
	}
	clock.Advance(time.Minute)
	if err := m.Available("", tg); err != nil {
		t.Fatalf("after 24 hours: %v", err)
	}
	// A released hold gives its request and its slot back.
	h, _ = m.Admit(req, "", tg)
	h.Release()
	if err := m.Available("", tg); err != nil {
		t.Fatalf("after a release: %v", err)
	}
}

func TestEstimatedTokensWhenNoUsage(t *testing.T) {
	m, _ := testManager(t)
	req := testRequest(t)
	h, err := m.Admit(req, "auto", Target{ID: llm.BackendID{Provider: "p", Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	var a llm.Attempt
	h.Settle(llm.CallUsage{Output: []byte(`{"choices":[{"delta":{"content":"func add(a, b int) int { return a + b }"}}]}`), Attempt: &a})
	if !a.Estimated || a.PromptTokens < 15 || a.PromptTokens > 25 || a.CompletionTokens < 12 || a.CompletionTokens > 18 {
		t.Fatalf("estimate: %+v", a)
	}
	if want := (float64(a.PromptTokens)*1 + float64(a.CompletionTokens)*2) / 1e6; a.Cost != want {
		t.Fatalf("cost %v, want %v", a.Cost, want)
	}
	if s := m.Spend(); s.Today != a.Cost || s.Month != a.Cost {
		t.Fatalf("spend %+v", s)
	}
}

// BenchmarkAdmitSettle is what quotas and budgets add to every call to a
// priced backend with limits and a budget, when the upstream reports usage.
func BenchmarkAdmitSettle(b *testing.B) {
	m, _ := testManager(b)
	req := testRequest(b)
	tg := Target{ID: llm.BackendID{Provider: "p", Model: "m"}}
	usage := &llm.Usage{PromptTokens: 20, CompletionTokens: 100}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Available("auto", tg); err != nil {
			b.Fatal(err)
		}
		h, err := m.Admit(req, "auto", tg)
		if err != nil {
			b.Fatal(err)
		}
		var a llm.Attempt
		h.Settle(llm.CallUsage{Usage: usage, Attempt: &a})
	}
}
