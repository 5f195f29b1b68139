package router_test

import (
	"strings"
	"testing"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/llm"
	"freelane/backend/quota"
	"freelane/backend/router"
)

// quotaAdmission puts a real quota manager behind the router, as the
// composition root does.
type quotaAdmission struct{ m *quota.Manager }

func (q quotaAdmission) Available(chain string, b *router.Backend) *llm.Skip {
	return q.m.Available(chain, quota.Target{ID: b.ID})
}

func (q quotaAdmission) Admit(req *llm.Request, chain string, b *router.Backend) (func(*llm.CallUsage), *llm.Skip) {
	h, sk := q.m.Admit(req, chain, quota.Target{ID: b.ID})
	if sk != nil {
		return nil, sk
	}
	return h.Done, nil
}

// panicRig is the router over a real breaker and a real quota manager in
// which a/m is paid, allows one call at a time and spends against a
// monthly budget, so every resource an attempt takes is visible.
func panicRig(t *testing.T) (*harness, *breaker.Set, *quota.Manager, func(time.Duration)) {
	t.Helper()
	h, set, clock, _ := withBreaker(t, breaker.Settings{})
	m := quota.New(clock, nil, time.UTC)
	m.Configure(quota.Settings{
		Backends: []quota.Backend{{ID: llm.BackendID{Provider: "a", Model: "m"}, Limits: quota.Limits{Concurrency: 1}, Price: quota.Price{Input: 2, Output: 2}}},
		Budgets:  []quota.Budget{{Scope: "global", Period: quota.PeriodMonth, Limit: 100, Action: quota.ActionFreeOnly}},
	})
	h.r.SetAdmission(quotaAdmission{m})
	return h, set, m, clock.Advance
}

// nothingHeld checks that a/m holds no concurrency slot, no money and no
// half-open trial.
func nothingHeld(t *testing.T, h *harness, set *breaker.Set, m *quota.Manager) {
	t.Helper()
	if b := m.Budgets(); b[0].Reserved != 0 {
		t.Errorf("money still reserved: %v", b[0].Reserved)
	}
	// The quota manager counts calls in flight (the pacing refuses on
	// them): the count must be back to zero.
	for _, q := range m.Quotas([]llm.BackendID{{Provider: "a", Model: "m"}}) {
		for _, l := range q.Limits {
			if l.Kind == "concurrency" && l.Used != 0 {
				t.Errorf("a/m's concurrency slot leaked: %d in flight", l.Used)
			}
		}
	}
	if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State == breaker.HalfOpen {
		t.Errorf("a/m left half-open: %+v", st)
	}
	if n := h.gate.dones.Load(); n != 0 {
		t.Errorf("%d breaker done functions never called", n)
	}
}

func TestPanicInAnAttemptGivesEverythingBack(t *testing.T) {
	t.Run("half-open trial that panics fails over and reopens", func(t *testing.T) {
		h, set, m, advance := panicRig(t)
		h.ups["a"].openErr = httpErr(llm.Transient, 503)
		for range 2 {
			if res, f := h.complete(t); f != nil || res.Backend.Name() != "b/m" {
				t.Fatalf("%+v %+v", res, f)
			}
		}
		if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.Open {
			t.Fatalf("a/m %s after two 503s", st.State)
		}
		advance(30 * time.Second)
		h.ups["a"].openErr = nil
		h.ups["a"].answer = func() error { panic("adapter bug") }
		res, f := h.complete(t)
		if f != nil || res.Backend.Name() != "b/m" {
			t.Fatalf("the panicking trial did not fail over: %+v %+v", res, f)
		}
		a := res.Attempts[0]
		if a.Backend != "a/m" || a.Class != llm.Transient || !strings.Contains(a.Reason, "internal error calling a/m: adapter bug") {
			t.Fatalf("the panic's attempt: %+v", a)
		}
		if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.Open {
			t.Fatalf("a/m %s after its trial panicked, want open again", st.State)
		}
		nothingHeld(t, h, set, m)
		// The trial slot is free: the next half-open period admits a trial
		// that closes the breaker.
		h.ups["a"].answer = nil
		advance(5 * time.Minute)
		if res, f := h.complete(t); f != nil || res.Backend.Name() != "a/m" {
			t.Fatalf("after the panic a/m never got its next trial: %+v %+v", res, f)
		}
		if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.Closed {
			t.Fatalf("a/m %s after a good trial", st.State)
		}
		nothingHeld(t, h, set, m)
	})

	t.Run("panic before the first token fails over", func(t *testing.T) {
		h, set, m, _ := panicRig(t)
		h.ups["a"].script = []step{held(`{"role":"assistant"}`), {panics: "converter bug"}}
		h.ups["b"].script = []step{content(`{"c":"hi"}`), done()}
		if f := h.r.Stream(h.ctx, streamReq(t, "main", false), h.sink); f != nil {
			t.Fatal(f)
		}
		if h.sink.backend != "b/m" || h.sink.failed != nil || h.sink.ops[len(h.sink.ops)-1] != "done" {
			t.Fatalf("client saw %q from %s", h.sink.ops, h.sink.backend)
		}
		if got := router.AttemptsHeader(h.rec.last(t).Attempts); got != "a/m=transient; b/m=ok" {
			t.Fatalf("attempts %q", got)
		}
		if h.ups["a"].closed != 1 {
			t.Errorf("the panicking stream was closed %d times", h.ups["a"].closed)
		}
		nothingHeld(t, h, set, m)
	})

	t.Run("panic after the commit ends the stream with an error", func(t *testing.T) {
		h, set, m, _ := panicRig(t)
		h.ups["a"].script = []step{content(`{"c":"hi"}`), {panics: "converter bug"}}
		if f := h.r.Stream(h.ctx, streamReq(t, "main", false), h.sink); f != nil {
			t.Fatal(f)
		}
		last := h.sink.ops[len(h.sink.ops)-1]
		if h.sink.backend != "a/m" || last != "fail transient" || h.sink.failed == nil {
			t.Fatalf("client saw %q, want the stream ended by an error event", h.sink.ops)
		}
		for _, op := range h.sink.ops {
			if op == "done" {
				t.Fatalf("a broken stream was presented as complete: %q", h.sink.ops)
			}
		}
		if h.calls() != "a:1 b:0 c:0" {
			t.Fatalf("failed over after the commit: %s", h.calls())
		}
		tr := h.rec.last(t)
		if !tr.Committed || tr.Backend != "a/m" || tr.Class != llm.Transient {
			t.Fatalf("trace %+v", tr)
		}
		// The call was made and produced output: it is settled, not
		// released, and its health counts the failure.
		if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.Health >= 1 {
			t.Errorf("the panic did not count against a/m: %+v", st)
		}
		if b := m.Budgets(); b[0].Spent <= 0 {
			t.Errorf("the committed call was not charged: %+v", b[0])
		}
		nothingHeld(t, h, set, m)
	})
}
