package shape_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"freelane/backend/clock"
	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/shape"
)

var (
	m1 = llm.BackendID{Provider: "p", Model: "m1"}
	m2 = llm.BackendID{Provider: "p", Model: "m2"}
)

func dur(d time.Duration) *time.Duration { return &d }

type result struct {
	release func()
	skip    *llm.Skip
	at      time.Time
}

type rig struct {
	t     *testing.T
	s     *shape.Shaper
	clock *clocktest.Clock
}

func newRig(t *testing.T, set shape.Settings) *rig {
	t.Helper()
	c := clocktest.New(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	s := shape.New(c)
	s.Configure(set)
	return &rig{t: t, s: s, clock: c}
}

// start asks for a slot in a goroutine of its own, as a request does.
func (r *rig) start(ctx context.Context, id llm.BackendID) chan result {
	ch := make(chan result, 1)
	go func() {
		rel, sk := r.s.Acquire(ctx, id)
		ch <- result{rel, sk, r.clock.Now()}
	}()
	return ch
}

// now asks for a slot that must come, or be refused, without waiting.
func (r *rig) now(id llm.BackendID) result {
	r.t.Helper()
	rel, sk := r.s.Acquire(context.Background(), id)
	return result{rel, sk, r.clock.Now()}
}

// waiting returns once n requests wait in the shaper (their timers armed),
// failing after a few seconds of real time.
func (r *rig) waiting(n int) {
	r.t.Helper()
	for i := 0; r.s.Waiting() != n; i++ {
		if i > 5000 {
			r.t.Fatalf("%d requests waiting, want %d", r.s.Waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *rig) get(ch <-chan result) result {
	r.t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(5 * time.Second):
		r.t.Fatal("Acquire did not return")
		return result{}
	}
}

func pending(ch chan result) bool {
	select {
	case res := <-ch:
		// Put it back for the caller that reads it next.
		ch <- res
		return false
	default:
		return true
	}
}

func TestQueue(t *testing.T) {
	for _, c := range []struct {
		name   string
		set    shape.Settings
		second llm.BackendID
		// after advances the clock while the second request waits; the
		// first request's slot is given back then when release is set.
		after   time.Duration
		release bool
		// want is the skip word of the second request, "" when it is
		// served, with a reason starting with reason.
		want   llm.SkipWord
		reason string
	}{
		{name: "a freed slot goes to the waiting request",
			set:    shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {Concurrency: 1}}},
			second: m1, after: 1500 * time.Millisecond, release: true},
		{name: "the queue wait runs out",
			set:    shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {Concurrency: 1}}},
			second: m1, after: shape.DefaultQueueWait, want: llm.SkipBusy,
			reason: "p/m1: 1 requests already in flight (concurrency limit 1); none finished within the 2s queue wait"},
		{name: "no queue wait passes the backend by at once",
			set:    shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {Concurrency: 1, QueueWait: dur(0)}}},
			second: m1, want: llm.SkipBusy, reason: "p/m1: 1 requests already in flight (concurrency limit 1)"},
		{name: "a provider's slots are shared by its models",
			set:    shape.Settings{Providers: map[string]shape.Limits{"p": {Concurrency: 1}}},
			second: m2, after: shape.DefaultQueueWait, want: llm.SkipBusy,
			reason: "p: 1 requests already in flight (concurrency limit 1); none finished"},
		{name: "a provider's queue wait applies to its models",
			set: shape.Settings{Providers: map[string]shape.Limits{"p": {QueueWait: dur(500 * time.Millisecond)}},
				Backends: map[llm.BackendID]shape.Limits{m1: {Concurrency: 1}}},
			second: m1, after: 500 * time.Millisecond, want: llm.SkipBusy,
			reason: "p/m1: 1 requests already in flight (concurrency limit 1); none finished within the 500ms queue wait"},
		{name: "another model of the provider does not wait",
			set:    shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {Concurrency: 1}}},
			second: m2},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.set)
			first := r.now(llm.BackendID{Provider: "p", Model: "m1"})
			if first.skip != nil {
				t.Fatalf("first: %v", first.skip)
			}
			t0 := r.clock.Now()
			ch := r.start(context.Background(), c.second)
			if c.after > 0 {
				r.waiting(1)
				r.clock.Advance(c.after - time.Millisecond)
				if !pending(ch) {
					t.Fatalf("returned before %s: %+v", c.after, r.get(ch))
				}
				if c.release {
					first.release()
				} else {
					r.clock.Advance(time.Millisecond)
				}
			}
			res := r.get(ch)
			switch {
			case c.want == "" && res.skip != nil:
				t.Fatalf("second: %v", res.skip)
			case c.want != "" && (res.skip == nil || res.skip.Word != c.want || res.skip.Class != llm.RateLimited || !strings.HasPrefix(res.skip.Reason, c.reason)):
				t.Fatalf("second: %+v, want %s %q", res.skip, c.want, c.reason)
			}
			if res.skip == nil {
				res.release()
				if c.release && !res.at.Equal(t0.Add(c.after-time.Millisecond)) {
					t.Errorf("served at %s, want when the slot freed", res.at.Sub(t0))
				}
			}
			if n := r.s.Waiting(); n != 0 {
				t.Errorf("%d still waiting", n)
			}
		})
	}
}

// TestQueueIsFirstInFirstOut frees one slot at a time under three waiting
// requests: they are served in the order they came.
func TestQueueIsFirstInFirstOut(t *testing.T) {
	r := newRig(t, shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {Concurrency: 1, QueueWait: dur(10 * time.Second)}}})
	held := r.now(m1)
	var chs []chan result
	for i := range 3 {
		chs = append(chs, r.start(context.Background(), m1))
		r.waiting(i + 1)
	}
	for i, ch := range chs {
		held.release()
		res := r.get(ch)
		if res.skip != nil {
			t.Fatalf("waiter %d: %v", i, res.skip)
		}
		for _, later := range chs[i+1:] {
			if !pending(later) {
				t.Fatalf("a later waiter was served before waiter %d", i)
			}
		}
		held = res
	}
	held.release()
	// Releasing twice gives back nothing more.
	held.release()
	if sk := r.s.Available(m1); sk != nil {
		t.Fatalf("after all released: %v", sk)
	}
	if a := r.now(m1); a.skip != nil {
		t.Fatalf("one slot: %v", a.skip)
	}
	if sk := r.s.Available(m1); sk == nil || sk.Word != llm.SkipBusy {
		t.Fatalf("one slot held twice: %v", sk)
	}
}

// TestClientGoneLeavesTheQueue cancels a waiting request: it returns at
// once, and the slot freed next goes to the request behind it.
func TestClientGoneLeavesTheQueue(t *testing.T) {
	r := newRig(t, shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {Concurrency: 1, QueueWait: dur(10 * time.Second)}}})
	held := r.now(m1)
	ctx, cancel := context.WithCancel(context.Background())
	gone := r.start(ctx, m1)
	r.waiting(1)
	next := r.start(context.Background(), m1)
	r.waiting(2)
	cancel()
	res := r.get(gone)
	if res.skip == nil || res.skip.Class != llm.Cancelled || res.skip.Word != llm.SkipBusy {
		t.Fatalf("cancelled waiter: %+v", res.skip)
	}
	r.waiting(1)
	held.release()
	if res := r.get(next); res.skip != nil {
		t.Fatalf("the request behind: %v", res.skip)
	} else {
		res.release()
	}
	if sk := r.s.Available(m1); sk != nil {
		t.Fatalf("a slot leaked: %v", sk)
	}
}

// TestConfigureKeepsState raises a concurrency limit while a request
// waits: the slot held stays counted and the waiter starts.
func TestConfigureKeepsState(t *testing.T) {
	set := func(n int64, rpm int64) shape.Settings {
		return shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {Concurrency: n, RPM: rpm}}}
	}
	r := newRig(t, set(1, 30))
	held := r.now(m1)
	ch := r.start(context.Background(), m1)
	r.waiting(1)
	r.s.Configure(set(2, 30))
	// The bucket kept its state: its one token went to the held call, so
	// the waiter, now with a slot, waits its two seconds for a token.
	r.waiting(1)
	r.clock.Advance(2 * time.Second)
	res := r.get(ch)
	if res.skip != nil {
		t.Fatalf("waiter after the limit was raised: %v", res.skip)
	}
	// Two held of two.
	if sk := r.s.Available(m1); sk == nil || sk.Word != llm.SkipBusy {
		t.Fatalf("two held under a limit of two: %v", sk)
	}
	held.release()
	res.release()
	// Limits removed: nothing is paced.
	r.s.Configure(shape.Settings{})
	for range 3 {
		if res := r.now(m1); res.skip != nil {
			t.Fatalf("without limits: %v", res.skip)
		}
	}
}

func TestBucket(t *testing.T) {
	for _, c := range []struct {
		name  string
		set   shape.Settings
		learn int64 // requests per minute learned from the first call
		// gap is the time between the first request and the second.
		gap    time.Duration
		second llm.BackendID
		// wait is how long the second request waits for its token; with
		// want set it is skipped at once, free again after wait.
		wait   time.Duration
		want   llm.SkipWord
		reason string
	}{
		{name: "the next token is two seconds away at 30 rpm",
			set:    shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 30}}},
			second: m1, wait: 2 * time.Second},
		{name: "a token that came while nobody asked is there",
			set: shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 30}}},
			gap: 5 * time.Second, second: m1},
		{name: "part of the interval passed",
			set: shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 60}}},
			gap: 400 * time.Millisecond, second: m1, wait: 600 * time.Millisecond},
		{name: "a token further away than the queue wait",
			set:    shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 30, QueueWait: dur(time.Second)}}},
			second: m1, wait: 2 * time.Second, want: llm.SkipPaced,
			reason: "p/m1: paced to 30 requests per minute; the next request may start in 2s, past the 1s queue wait"},
		{name: "a provider's rpm covers its models",
			set:    shape.Settings{Providers: map[string]shape.Limits{"p": {RPM: 40}}},
			second: m2, wait: 1500 * time.Millisecond},
		{name: "a learned rate below the configured one wins",
			set:   shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 600}}},
			learn: 40, second: m1, wait: 1500 * time.Millisecond},
		{name: "a learned rate alone paces",
			learn: 15, second: m1, wait: 4 * time.Second, set: shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {QueueWait: dur(time.Second)}}},
			want:   llm.SkipPaced,
			reason: "p/m1: paced to 15 requests per minute (the provider's rate-limit headers say so); the next request may start in 4s"},
		{name: "a learned rate above the configured one does not raise it",
			set:   shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 30}}},
			learn: 6000, second: m1, wait: 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.set)
			first := r.now(m1)
			if first.skip != nil {
				t.Fatalf("first: %v", first.skip)
			}
			first.release()
			if c.learn > 0 {
				// The first call's answer said so.
				r.s.Learn(m1, c.learn)
			}
			r.clock.Advance(c.gap)
			t0 := r.clock.Now()
			ch := r.start(context.Background(), c.second)
			if c.want != "" {
				res := r.get(ch)
				if res.skip == nil || res.skip.Word != c.want || !strings.HasPrefix(res.skip.Reason, c.reason) || !res.skip.Until.Equal(t0.Add(c.wait)) {
					t.Fatalf("second: %+v, want %s %q until +%s", res.skip, c.want, c.reason, c.wait)
				}
				// The refused request took no token: the next one at the
				// time it named goes at once.
				r.clock.Advance(c.wait)
				if res := r.now(c.second); res.skip != nil {
					t.Fatalf("at the time the skip named: %v", res.skip)
				}
				return
			}
			if c.wait > 0 {
				r.waiting(1)
				r.clock.Advance(c.wait - time.Millisecond)
				if !pending(ch) {
					t.Fatalf("served before %s: %+v", c.wait, r.get(ch))
				}
				r.clock.Advance(time.Millisecond)
			}
			res := r.get(ch)
			if res.skip != nil {
				t.Fatalf("second: %v", res.skip)
			}
			if !res.at.Equal(t0.Add(c.wait)) {
				t.Errorf("served after %s, want %s", res.at.Sub(t0), c.wait)
			}
			res.release()
		})
	}
}

// TestPacedWaiterLeavesWhenClientGoes cancels a request waiting for its
// token: its reservation is given back, so the one after it goes when the
// token it would have taken comes.
func TestPacedWaiterLeavesWhenClientGoes(t *testing.T) {
	r := newRig(t, shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 60, Concurrency: 5}}})
	r.now(m1).release()
	ctx, cancel := context.WithCancel(context.Background())
	gone := r.start(ctx, m1)
	r.waiting(1)
	cancel()
	if res := r.get(gone); res.skip == nil || res.skip.Class != llm.Cancelled || res.skip.Word != llm.SkipPaced {
		t.Fatalf("cancelled: %+v", res.skip)
	}
	r.waiting(0)
	next := r.start(context.Background(), m1)
	r.waiting(1)
	r.clock.Advance(time.Second)
	if res := r.get(next); res.skip != nil {
		t.Fatalf("next: %v", res.skip)
	}
	if sk := r.s.Available(m1); sk == nil || sk.Word != llm.SkipPaced {
		t.Fatalf("right after a call at 60 rpm: %v", sk)
	}
}

// TestAvailableTakesNothing asks Available many times: the token and the
// slot are still there for Acquire, and the check allocates nothing.
func TestAvailableTakesNothing(t *testing.T) {
	r := newRig(t, shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 1, Concurrency: 1}}})
	allocs := testing.AllocsPerRun(100, func() {
		if sk := r.s.Available(m1); sk != nil {
			t.Fatalf("free backend: %v", sk)
		}
		if sk := r.s.Available(m2); sk != nil {
			t.Fatalf("unlimited backend: %v", sk)
		}
	})
	if allocs != 0 {
		t.Errorf("Available allocates %v times", allocs)
	}
	held := r.now(m1)
	if held.skip != nil {
		t.Fatalf("after Available: %v", held.skip)
	}
	allocs = testing.AllocsPerRun(100, func() {
		if sk := r.s.Available(m1); sk == nil || sk.Word != llm.SkipBusy {
			t.Fatalf("busy backend: %v", sk)
		}
	})
	if allocs != 0 {
		t.Errorf("Available of a busy backend allocates %v times", allocs)
	}
	held.release()
	if sk := r.s.Available(m1); sk == nil || sk.Word != llm.SkipPaced || sk.Reason != "p/m1: paced to 1 requests per minute; the next request is not due yet" {
		t.Fatalf("paced backend: %+v", sk)
	}
}

func BenchmarkAvailable(b *testing.B) {
	s := shape.New(clock.Real{})
	s.Configure(shape.Settings{Providers: map[string]shape.Limits{"p": {Concurrency: 100}},
		Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 60, Concurrency: 4}}})
	b.ReportAllocs()
	for b.Loop() {
		if s.Available(m1) != nil {
			b.Fatal("not available")
		}
	}
}

func BenchmarkAvailableUnlimited(b *testing.B) {
	s := shape.New(clock.Real{})
	s.Configure(shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 60}}})
	b.ReportAllocs()
	for b.Loop() {
		if s.Available(m2) != nil {
			b.Fatal("not available")
		}
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	s := shape.New(clock.Real{})
	s.Configure(shape.Settings{Providers: map[string]shape.Limits{"p": {Concurrency: 100}},
		Backends: map[llm.BackendID]shape.Limits{m1: {Concurrency: 4}}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rel, sk := s.Acquire(ctx, m1)
		if sk != nil {
			b.Fatal(sk)
		}
		rel()
	}
}

// BenchmarkAcquirePaced takes a token each time from a bucket whose
// clock moves a second per call, so a token is always there.
func BenchmarkAcquirePaced(b *testing.B) {
	c := clocktest.New(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	s := shape.New(c)
	s.Configure(shape.Settings{Backends: map[llm.BackendID]shape.Limits{m1: {RPM: 60, Concurrency: 4}}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c.Advance(time.Second)
		rel, sk := s.Acquire(ctx, m1)
		if sk != nil {
			b.Fatal(sk)
		}
		rel()
	}
}

func BenchmarkAcquireUnlimited(b *testing.B) {
	s := shape.New(clock.Real{})
	s.Configure(shape.Settings{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rel, sk := s.Acquire(ctx, m1)
		if sk != nil {
			b.Fatal(sk)
		}
		rel()
	}
}
