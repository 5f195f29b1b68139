package redisstate_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/teamtest"
	"freelane/backend/llm"
	"freelane/backend/quota"
	"freelane/backend/redisstate"
)

// rates are the rate-limit headers the test's provider answers with.
var rates = llm.RateHeaders{
	Requests: llm.RateHeader{Limit: "X-Calls-Limit", Remaining: "X-Calls-Left", Reset: "X-Calls-Reset"},
	Format:   llm.ResetTime,
}

// learner is one instance: its shared state and its quota manager, both
// on clk, sharing counts and learned limits.
func learner(t *testing.T, url, name string, clk *clocktest.Clock) *quota.Manager {
	t.Helper()
	s, err := redisstate.Open(redisstate.Options{URL: url, Instance: name, Logger: quiet, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	m := quota.New(clk, nil, time.UTC)
	m.Configure(quota.Settings{Backends: []quota.Backend{{ID: backend}}, RateHeaders: map[string]llm.RateHeaders{"free": rates}})
	m.ShareWith(s, false)
	s.ShareLearned(m)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; s.Close() })
	waitFor(t, name+" to reach Redis", s.Up)
	return m
}

// answer settles one call of m's with the provider's headers or 429.
func answer(t *testing.T, m *quota.Manager, h http.Header, e *llm.Error) {
	t.Helper()
	hold, sk := m.Admit(request(t), "", quota.Target{ID: backend})
	if sk != nil {
		t.Fatalf("admit: %s", sk.Reason)
	}
	hold.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}, Header: h, Err: e})
}

// A provider's headers saying one instance's key has no requests left
// until a reset skip the backend on the other instance within a second,
// until that reset; an instance starting later finds it on Redis; and a
// limit the other instance learned since is not undone by the older one.
func TestLearnedLimitsReachTheTeam(t *testing.T) {
	r := teamtest.StartRedis(t)
	url := fmt.Sprintf("redis://%s/%d", r.Addr, r.NewDB(t))
	clk := clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	a, b := learner(t, url, "a", clk), learner(t, url, "b", clk)
	reset := clk.Now().Add(2 * time.Hour).Truncate(time.Second)
	h := http.Header{}
	h.Set("X-Calls-Limit", "50")
	h.Set("X-Calls-Left", "0")
	h.Set("X-Calls-Reset", reset.Format(time.RFC3339))
	answer(t, a, h, nil)
	if a.Available("", quota.Target{ID: backend}) == nil {
		t.Fatal("the instance that read the headers still admits")
	}
	within(t, 2*time.Second, "the other instance to learn the limit", func() bool { return b.Available("", quota.Target{ID: backend}) != nil })
	sk := b.Available("", quota.Target{ID: backend})
	if !sk.Until.Equal(reset) || !strings.Contains(sk.Reason, "none left") {
		t.Fatalf("the other instance's skip: %+v, want none left until %v", sk, reset)
	}
	late := learner(t, url, "late", clk)
	waitFor(t, "an instance starting later to learn it", func() bool { return late.Available("", quota.Target{ID: backend}) != nil })

	// b learns afterwards that the window has room again; a's older
	// word, reconciled every second, does not undo it.
	clk.Advance(time.Second)
	b.ApplyLearned(quota.Learned{Backend: backend, Kind: quota.KindRPD, Limit: 50, Remaining: 40, Reset: reset, At: clk.Now()})
	if sk := b.Available("", quota.Target{ID: backend}); sk != nil {
		t.Fatalf("b after newer word: %s", sk.Reason)
	}
	time.Sleep(1500 * time.Millisecond)
	if sk := b.Available("", quota.Target{ID: backend}); sk != nil {
		t.Fatalf("an older learned limit undid a newer one: %s", sk.Reason)
	}
	clk.Set(reset.Add(time.Second))
	if sk := late.Available("", quota.Target{ID: backend}); sk != nil {
		t.Fatalf("still skipped after the reset: %s", sk.Reason)
	}
}
