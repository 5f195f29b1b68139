package probe_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/events"
	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/probe"
)

// scripted is an upstream whose answer the test sets per model.
type scripted struct {
	mu    sync.Mutex
	errs  map[string]*llm.Error
	calls map[string]int
}

func newScripted() *scripted {
	return &scripted{errs: map[string]*llm.Error{}, calls: map[string]int{}}
}

func (s *scripted) set(model string, e *llm.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs[model] = e
}

func (s *scripted) n(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[model]
}

func (s *scripted) Complete(ctx context.Context, req *llm.Request, model string) (*llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[model]++
	if e := s.errs[model]; e != nil {
		return nil, e
	}
	return &llm.Response{Status: 200}, nil
}

// breakers adapts a real breaker.Set, as the gateway does.
type breakers struct{ *breaker.Set }

func (b breakers) Standing(id llm.BackendID) probe.Standing {
	st := b.Status(id)
	return probe.Standing{Down: st.State != breaker.Closed, Retired: st.Retired}
}

type fixture struct {
	clock   *clocktest.Clock
	up      *scripted
	set     *breaker.Set
	bus     *events.Bus
	p       *probe.Prober
	targets []probe.Target
}

func newFixture(t *testing.T, remote bool, models ...string) *fixture {
	f := &fixture{clock: clocktest.New(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)), up: newScripted(), bus: events.NewBus(nil)}
	f.set = breaker.New(breaker.Settings{}, f.clock, f.bus)
	for i, m := range models {
		f.targets = append(f.targets, probe.Target{ID: llm.BackendID{Provider: "p" + string(rune('a'+i)), Model: m}, Remote: remote, Up: f.up})
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.p = probe.New(probe.Settings{}, func() []probe.Target { return f.targets }, breakers{f.set}, f.clock, f.bus, log)
	return f
}

// advance moves the clock in one-second steps, ticking like the real loop.
func (f *fixture) advance(d time.Duration) {
	for step := time.Duration(0); step < d; step += time.Second {
		f.clock.Advance(time.Second)
		f.p.Tick(context.Background())
	}
}

func TestHealthyBackendsAreProbedEveryInterval(t *testing.T) {
	f := newFixture(t, true, "m")
	f.advance(5 * time.Minute) // first round, spread inside the first interval
	if got := f.up.n("m"); got != 1 {
		t.Fatalf("first interval: %d probes", got)
	}
	f.advance(15 * time.Minute)
	if got := f.up.n("m"); got != 4 {
		t.Errorf("after 20 min: %d probes, want 4 (one per 5 min)", got)
	}
}

func TestTwoFailuresMarkDownAndTwoPassesBringBack(t *testing.T) {
	f := newFixture(t, true, "m")
	id := f.targets[0].ID
	f.up.set("m", &llm.Error{Class: llm.Transient, Message: "HTTP 503"})
	f.advance(5 * time.Minute) // one failed probe
	if st := f.set.Status(id); st.State != breaker.Closed || st.ProbeFails != 1 {
		t.Fatalf("after one failure: %+v", st)
	}
	f.advance(5 * time.Minute) // second failure: down
	// Down: open, or half-open between two probes of a down backend.
	st := f.set.Status(id)
	if st.State == breaker.Closed || !strings.Contains(st.OpenWhy, "2 probes failed") {
		t.Fatalf("after two failures: %+v", st)
	}
	// Down backends are probed every 30 s.
	before := f.up.n("m")
	f.up.set("m", nil)
	f.advance(30 * time.Second)
	if f.up.n("m") != before+1 {
		t.Fatalf("down backend not probed within 30 s: %d -> %d", before, f.up.n("m"))
	}
	f.advance(30 * time.Second)
	if st := f.set.Status(id); st.State != breaker.Closed || !st.LastProbeOK {
		t.Errorf("after two passes: %+v", st)
	}
	// Probes never touched the health score: that is traffic's.
	if st := f.set.Status(id); st.Health != 0.7 {
		t.Errorf("health %v", st.Health)
	}
}

func TestRateLimitedProbeProvesNothing(t *testing.T) {
	f := newFixture(t, true, "m")
	f.up.set("m", &llm.Error{Class: llm.RateLimited, Message: "HTTP 429"})
	f.advance(20 * time.Minute)
	if st := f.set.Status(f.targets[0].ID); st.State != breaker.Closed || st.ProbeFails != 0 {
		t.Errorf("429 probes moved the backend: %+v", st)
	}
}

func TestDailyRoundRetiresAndRestores(t *testing.T) {
	f := newFixture(t, true, "gone", "fine")
	f.up.set("gone", &llm.Error{Class: llm.Gone, Status: 404, Message: "HTTP 404: model not found"})
	f.clock.Advance(24 * time.Hour)
	f.p.Tick(context.Background())
	if st := f.set.Status(llm.BackendID{Provider: "pa", Model: "gone"}); !st.Retired || st.LastProbe.IsZero() {
		t.Fatalf("withdrawn model not retired: %+v", st)
	}
	if st := f.set.Status(llm.BackendID{Provider: "pb", Model: "fine"}); st.Retired || !st.LastProbeOK {
		t.Fatalf("working model: %+v", st)
	}
	if err := f.set.Available(llm.BackendID{Provider: "pa", Model: "gone"}); err == nil {
		t.Fatal("retired backend still available")
	}
	// The model comes back; the next daily round restores it.
	f.up.set("gone", nil)
	f.clock.Advance(24 * time.Hour)
	f.p.Tick(context.Background())
	if st := f.set.Status(llm.BackendID{Provider: "pa", Model: "gone"}); st.Retired {
		t.Errorf("not restored: %+v", st)
	}
	var kinds []events.Kind
	for _, e := range f.bus.Recent() {
		if e.Backend == "pa/gone" {
			kinds = append(kinds, e.Kind)
		}
	}
	if len(kinds) < 2 || kinds[0] != events.Retired || kinds[len(kinds)-1] != events.Restored {
		t.Errorf("events %v", kinds)
	}
}

func TestProbesPauseWhileOffline(t *testing.T) {
	f := newFixture(t, true, "m1", "m2", "m3")
	for _, m := range []string{"m1", "m2", "m3"} {
		f.up.set(m, &llm.Error{Class: llm.Transient, Sub: llm.SubConnect, Message: "cannot resolve api.example"})
	}
	f.clock.Advance(24 * time.Hour) // the daily round probes all three at once
	f.p.Tick(context.Background())
	if !f.p.Offline() {
		t.Fatal("not offline after every remote backend failed to connect")
	}
	for _, tg := range f.targets {
		if st := f.set.Status(tg.ID); st.ProbeFails != 0 || st.Retired {
			t.Fatalf("offline results were held against %s: %+v", tg.ID, st)
		}
	}
	// While offline: one canary every 30 s, not every backend.
	before := f.up.n("m1") + f.up.n("m2") + f.up.n("m3")
	f.advance(5 * time.Minute)
	after := f.up.n("m1") + f.up.n("m2") + f.up.n("m3")
	if got := after - before; got < 8 || got > 11 {
		t.Errorf("%d probes in 5 min offline, want one canary per 30 s", got)
	}
	// The network returns.
	for _, m := range []string{"m1", "m2", "m3"} {
		f.up.set(m, nil)
	}
	f.advance(31 * time.Second)
	if f.p.Offline() {
		t.Fatal("still offline after a canary answered")
	}
	var sawOffline, sawOnline bool
	for _, e := range f.bus.Recent() {
		sawOffline = sawOffline || e.Kind == events.Offline
		sawOnline = sawOnline || e.Kind == events.Online
	}
	if !sawOffline || !sawOnline {
		t.Errorf("offline/online events missing: %v", f.bus.Recent())
	}
}

func TestLocalServersDoNotMeanOffline(t *testing.T) {
	f := newFixture(t, false, "m1", "m2")
	for _, m := range []string{"m1", "m2"} {
		f.up.set(m, &llm.Error{Class: llm.Transient, Sub: llm.SubConnect, Message: "connection refused"})
	}
	f.advance(10 * time.Minute)
	if f.p.Offline() {
		t.Fatal("a stopped local server was taken for the machine being offline")
	}
	if st := f.set.Status(f.targets[0].ID); st.State == breaker.Closed || !strings.Contains(st.OpenWhy, "probes failed") {
		t.Errorf("stopped local server not marked down: %+v", st)
	}
}

func TestTickStopsWithContext(t *testing.T) {
	f := newFixture(t, true, "m")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		f.p.Run(ctx)
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
