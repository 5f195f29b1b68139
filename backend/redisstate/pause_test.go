package redisstate_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"freelane/backend/internal/teamtest"
	"freelane/backend/redisstate"
)

// switchboard is one instance's routing pause, as the gateway keeps it: a
// change made here is told to the team, one the team applies is not.
type switchboard struct {
	s      *redisstate.State
	mu     sync.Mutex
	paused bool
	from   string
}

func (p *switchboard) ApplyPause(paused bool, from string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused, p.from = paused, from
}

func (p *switchboard) set(paused bool) {
	p.mu.Lock()
	changed := p.paused != paused
	p.paused, p.from = paused, ""
	p.mu.Unlock()
	if changed {
		p.s.TellPause(paused)
	}
}

func (p *switchboard) get() (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused, p.from
}

func pausers(insts []*redisstate.State) []*switchboard {
	var out []*switchboard
	for _, s := range insts {
		p := &switchboard{s: s}
		s.SharePause(p)
		out = append(out, p)
	}
	return out
}

func allPaused(ps []*switchboard, want bool) func() bool {
	return func() bool {
		for _, p := range ps {
			if got, _ := p.get(); got != want {
				return false
			}
		}
		return true
	}
}

// within waits at most d of real time for ok.
// A change is pushed at once and read again every second, so it arrives
// within about a second; the tests allow two, for a loaded machine.
func within(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// run opens one instance and runs it until the test ends.
func run(t *testing.T, addr string, db int, name string) *redisstate.State {
	t.Helper()
	s, err := redisstate.Open(redisstate.Options{URL: fmt.Sprintf("redis://%s/%d", addr, db), Instance: name, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; s.Close() })
	return s
}

// A pause on one instance pauses the other two within a second, saying
// where it came from, and a resume on another resumes all; an instance
// starting while the team is paused is paused before it runs.
func TestPauseIsTheTeams(t *testing.T) {
	r := teamtest.StartRedis(t)
	db := r.NewDB(t)
	ps := pausers(team(t, r.Addr, db, 3))
	ps[1].set(true)
	within(t, 2*time.Second, "every instance pausing", allPaused(ps, true))
	if _, from := ps[0].get(); from != "i2" {
		t.Fatalf("the pause on i1 came from %q, want i2", from)
	}
	ps[2].set(false)
	within(t, 2*time.Second, "every instance resuming", allPaused(ps, false))
	// A change the channel did not bring still arrives: a paused team is
	// found by an instance joining later, before it runs.
	ps[0].set(true)
	within(t, 2*time.Second, "every instance pausing again", allPaused(ps, true))
	late, err := redisstate.Open(redisstate.Options{URL: fmt.Sprintf("redis://%s/%d", r.Addr, db), Instance: "late", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	lp := pausers([]*redisstate.State{late})[0]
	late.JoinPause(context.Background())
	if paused, from := lp.get(); !paused || from != "i1" {
		t.Fatalf("an instance joining a paused team: paused %v from %q, want paused by i1", paused, from)
	}
}

// With Redis cut off from one instance, a pause there stays its own and
// the team's resumes and pauses do not reach it; once Redis is back it
// takes the team's pause, whichever side changed meanwhile.
func TestPauseWhileRedisIsAwayTakesTheTeamsWhenBack(t *testing.T) {
	h := teamtest.StartHAProxy(t)
	r := teamtest.StartRedis(t)
	db := r.NewDB(t)
	cut := run(t, h.RedisAddr, db, "cut")
	ps := pausers([]*redisstate.State{cut, run(t, r.Addr, db, "i2"), run(t, r.Addr, db, "i3")})
	waitFor(t, "three instances", func() bool { return cut.Up() && cut.Alive() == 3 })

	h.Down(t, teamtest.BackendRedis)
	defer h.Up(t, teamtest.BackendRedis)
	waitFor(t, "the cut instance to notice", func() bool { return !cut.Up() })
	ps[0].set(true)
	time.Sleep(1500 * time.Millisecond)
	if !allPaused(ps[1:], false)() {
		t.Fatal("a pause made while Redis was unreachable reached the team")
	}
	if paused, _ := ps[0].get(); !paused {
		t.Fatal("the cut instance did not keep its own pause")
	}
	h.Up(t, teamtest.BackendRedis)
	waitFor(t, "the cut instance to take the team's resume", allPaused(ps, false))

	h.Down(t, teamtest.BackendRedis)
	waitFor(t, "the cut instance to notice again", func() bool { return !cut.Up() })
	ps[1].set(true)
	within(t, 2*time.Second, "the connected instances pausing", allPaused(ps[1:], true))
	time.Sleep(1500 * time.Millisecond)
	if paused, _ := ps[0].get(); paused {
		t.Fatal("the cut instance was paused while Redis was unreachable")
	}
	h.Up(t, teamtest.BackendRedis)
	waitFor(t, "the cut instance to take the team's pause", allPaused(ps, true))
}
