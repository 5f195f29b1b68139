package quota

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
)

// toyRates are the rate-limit headers of a dialect the quota manager has
// never heard of: its own names, and resets written as times.
var toyRates = llm.RateHeaders{
	Requests: llm.RateHeader{Limit: "Toy-Calls-Cap", Remaining: "Toy-Calls-Left", Reset: "Toy-Calls-Fresh-At"},
	Tokens:   llm.RateHeader{Remaining: "toy-words-left", Reset: "toy-words-fresh-at"},
	Format:   llm.ResetTime,
}

// The learned limits come from the table of rate-limit headers that the
// provider's dialect declares, handed in with the settings, and from
// nothing else: a dialect only a test registers is learned from in its
// own names and reset format, and headers of another dialect's on the same
// answer mean nothing to a provider that does not speak it.
func TestLearnsLimitsFromTheDialectsHeaders(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := clocktest.New(start)
	m := New(clock, nil, time.UTC)
	toy := llm.BackendID{Provider: "toy", Model: "m"}
	plain := llm.BackendID{Provider: "plain", Model: "m"}
	m.Configure(Settings{
		Backends:    []Backend{{ID: toy}, {ID: plain}},
		RateHeaders: map[string]llm.RateHeaders{"toy": toyRates},
	})
	fresh := start.Add(2 * time.Hour)
	h := http.Header{}
	h.Set("Toy-Calls-Cap", "50")
	h.Set("Toy-Calls-Left", "0")
	h.Set("Toy-Calls-Fresh-At", fresh.Format(time.RFC3339))
	// The names OpenAI-style servers use, which neither provider speaks.
	h.Set("X-Ratelimit-Remaining-Tokens", "0")
	h.Set("X-Ratelimit-Reset-Tokens", "3h")
	for _, id := range []llm.BackendID{toy, plain} {
		hold, sk := m.Admit(testRequest(t), "", Target{ID: id})
		if sk != nil {
			t.Fatal(sk)
		}
		hold.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}, Header: h})
	}
	sk := m.Available("", Target{ID: toy})
	if sk == nil || !sk.Until.Equal(fresh) || !strings.Contains(sk.Reason, "the provider says none left") {
		t.Fatalf("toy after its headers said no requests are left until %v: %+v", fresh, sk)
	}
	if sk := m.Available("", Target{ID: plain}); sk != nil {
		t.Fatalf("a provider of another dialect learned from headers it does not speak: %+v", sk)
	}
	clock.Set(fresh)
	if sk := m.Available("", Target{ID: toy}); sk != nil {
		t.Fatalf("toy still out at the reset its header named: %+v", sk)
	}

	// A table may write names in any case. A reset in another format than
	// the dialect's is not read, so the limit counts as one of a minute.
	h = http.Header{}
	h.Set("Toy-Words-Left", "0")
	h.Set("Toy-Words-Fresh-At", "2h")
	hold, _ := m.Admit(testRequest(t), "", Target{ID: toy})
	hold.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}, Header: h})
	sk = m.Available("", Target{ID: toy})
	if sk == nil || !sk.Until.Equal(fresh.Add(time.Minute)) || !strings.Contains(sk.Reason, "tokens per minute") {
		t.Fatalf("toy after no tokens left with an unreadable reset: %+v, want tokens per minute until %v", sk, fresh.Add(time.Minute))
	}
}
