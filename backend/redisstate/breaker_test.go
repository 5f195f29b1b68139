package redisstate_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/teamtest"
	"freelane/backend/llm"
	"freelane/backend/redisstate"
)

// breakers gives each instance a breaker set sharing its marks through
// the instance, all on one clock so that open times mean the same.
func breakers(t *testing.T, insts []*redisstate.State, failures int) ([]*breaker.Set, *clocktest.Clock) {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var out []*breaker.Set
	for _, in := range insts {
		b := breaker.New(breaker.Settings{Failures: failures, HealthThreshold: 0.01}, clk, nil)
		b.ShareWith(in)
		in.ShareBreakers(b)
		out = append(out, b)
	}
	return out, clk
}

func states(sets []*breaker.Set, id llm.BackendID) []breaker.State {
	var out []breaker.State
	for _, b := range sets {
		out = append(out, b.Status(id).State)
	}
	return out
}

func all(sets []*breaker.Set, id llm.BackendID, want breaker.State) func() bool {
	return func() bool {
		for _, s := range states(sets, id) {
			if s != want {
				return false
			}
		}
		return true
	}
}

var failing = llm.BackendID{Provider: "flaky", Model: "m"}

// A backend failing on three instances, once on each, opens on all of
// them after three failures in total; when its open time is over exactly
// one trial request is sent across the team, and its success closes the
// breaker everywhere.
func TestBreakersOpenOnTeamFailuresWithOneTrial(t *testing.T) {
	r := teamtest.StartRedis(t)
	sets, clk := breakers(t, team(t, r.Addr, r.NewDB(t), 3), 3)
	fail := &llm.Error{Class: llm.Transient, Status: 503, Message: "upstream 503"}
	for i, b := range sets {
		done, sk := b.Allow(failing)
		if sk != nil {
			t.Fatalf("instance %d: %s", i+1, sk.Reason)
		}
		done(fail, 0)
		if i < 2 {
			// Let the count reach Redis in order; no instance has failed
			// three times itself.
			time.Sleep(150 * time.Millisecond)
			if got := states(sets, failing); got[0] != breaker.Closed || got[1] != breaker.Closed || got[2] != breaker.Closed {
				t.Fatalf("after %d failures in total: %v, want all closed", i+1, got)
			}
		}
	}
	waitFor(t, "every instance to open the breaker", all(sets, failing, breaker.Open))
	if why := sets[0].Status(failing).OpenWhy; why == "" {
		t.Fatal("no reason for the opening")
	}
	clk.Advance(31 * time.Second)
	waitFor(t, "every instance to be half-open", all(sets, failing, breaker.HalfOpen))
	var trials atomic.Int64
	var dones sync.Map
	var wg sync.WaitGroup
	for g := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, sk := sets[g%3].Allow(failing)
			if sk == nil {
				trials.Add(1)
				dones.Store(g, done)
			}
		}()
	}
	wg.Wait()
	if n := trials.Load(); n != 1 {
		t.Fatalf("%d trial requests across three instances, want exactly 1", n)
	}
	dones.Range(func(_, v any) bool {
		v.(func(*llm.Error, time.Duration))(nil, 100*time.Millisecond)
		return true
	})
	waitFor(t, "every instance to close the breaker after the trial passed", all(sets, failing, breaker.Closed))
}

// A trial that fails reopens the breaker on every instance, and the next
// trial comes after the new open time.
func TestFailedTrialReopensEverywhere(t *testing.T) {
	r := teamtest.StartRedis(t)
	sets, clk := breakers(t, team(t, r.Addr, r.NewDB(t), 2), 2)
	fail := &llm.Error{Class: llm.Transient, Status: 500, Message: "upstream 500"}
	for range 2 {
		done, _ := sets[0].Allow(failing)
		done(fail, 0)
	}
	waitFor(t, "both to open", all(sets, failing, breaker.Open))
	clk.Advance(31 * time.Second)
	waitFor(t, "both half-open", all(sets, failing, breaker.HalfOpen))
	done, sk := sets[1].Allow(failing)
	if sk != nil {
		t.Fatal(sk.Reason)
	}
	if _, sk := sets[0].Allow(failing); sk == nil {
		t.Fatal("a second trial was allowed on the other instance")
	}
	done(fail, 0)
	waitFor(t, "both to reopen", all(sets, failing, breaker.Open))
	until := sets[0].Status(failing).OpenUntil
	if !until.After(clk.Now()) {
		t.Fatalf("reopened until %v, not after now %v", until, clk.Now())
	}
	clk.Advance(until.Sub(clk.Now()) + time.Second)
	waitFor(t, "both half-open again", all(sets, failing, breaker.HalfOpen))
	if _, sk := sets[0].Allow(failing); sk != nil {
		t.Fatalf("no trial after the new open time: %s", sk.Reason)
	}
}

// A key the provider refused on one instance is off on the others, and a
// model gone on one is retired on all.
func TestKeyAndRetirementMarksReachTheTeam(t *testing.T) {
	r := teamtest.StartRedis(t)
	sets, _ := breakers(t, team(t, r.Addr, r.NewDB(t), 2), 2)
	done, _ := sets[0].Allow(failing)
	done(&llm.Error{Class: llm.Credential, Status: 401, Message: "invalid api key"}, 0)
	waitFor(t, "the key to be off on the other instance", func() bool { return !sets[1].Status(failing).KeyOffUntil.IsZero() })
	if sk := sets[1].Available(llm.BackendID{Provider: "flaky", Model: "other"}); sk == nil {
		t.Fatal("another model of the refused key is still available on the other instance")
	}
	gone := llm.BackendID{Provider: "fine", Model: "old"}
	done, _ = sets[1].Allow(gone)
	done(&llm.Error{Class: llm.Gone, Status: 404, Message: "model not found"}, 0)
	waitFor(t, "the model to be retired on the first instance", func() bool { return sets[0].Status(gone).Retired })
}
