package quota

import (
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
)

// Keys of a pool count apart, unless their provider's keys share one
// quota: then a request on one key uses up the allowance of all.
func TestPoolKeysCountApartUnlessShared(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shared bool
		second bool // whether the other key still admits a request
	}{
		{"keys of their own", false, true},
		{"keys of one project", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			m := New(clock, nil, time.UTC)
			daily, _ := ParseRule("daily 00:00 UTC")
			m.Configure(Settings{
				Providers:  map[string]Limits{"g": {RPD: 1, Reset: daily}},
				SharedKeys: map[string]bool{"g": tc.shared},
			})
			k1 := Target{ID: llm.BackendID{Provider: "g", Key: "k1", Model: "m"}}
			k2 := Target{ID: llm.BackendID{Provider: "g", Key: "k2", Model: "m"}}
			h, err := m.Admit(testRequest(t), "", k1)
			if err != nil {
				t.Fatal(err)
			}
			h.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}})
			if err := m.Available("", k1); err == nil {
				t.Fatal("the used key still admits a request")
			}
			if err := m.Available("", k2); (err == nil) != tc.second {
				t.Fatalf("the other key: %v, want admitted %v", err, tc.second)
			}
			// Both are back at the provider's reset.
			clock.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
			if err := m.Available("", k1); err != nil {
				t.Fatalf("after the reset: %v", err)
			}
		})
	}
}

// A model's configured limits hold for each key of a pool, though they
// are configured once, without a key.
func TestModelLimitsHoldForEveryPoolKey(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	m := New(clock, nil, time.UTC)
	daily, _ := ParseRule("daily 00:00 UTC")
	m.Configure(Settings{Backends: []Backend{{ID: llm.BackendID{Provider: "g", Model: "m"}, Limits: Limits{RPD: 1, Reset: daily}}}})
	for _, key := range []string{"k1", "k2"} {
		tg := Target{ID: llm.BackendID{Provider: "g", Key: key, Model: "m"}}
		h, err := m.Admit(testRequest(t), "", tg)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		h.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}})
		if err := m.Available("", tg); err == nil {
			t.Fatalf("%s: a second request within the model's daily limit of 1 was admitted", key)
		}
	}
}
