package gateway_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/config"
	"freelane/backend/events"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/llm"
)

// TestOutageOfSixtySeconds is a free tier's typical outage: the primary answers 503
// for 60 s while a request arrives every 4 s. No client sees an error, the
// primary gets at most one trial per open period, and it serves again
// within 30 s of recovering.
func TestOutageOfSixtySeconds(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: 503})
	const outage = 60 * time.Second
	var elapsed time.Duration
	recoveredAt := time.Duration(-1)
	servedAgain := time.Duration(-1)
	outageCalls := 0
	for elapsed = 0; elapsed <= outage+40*time.Second; elapsed += 4 * time.Second {
		if elapsed >= outage && recoveredAt < 0 {
			outageCalls = e.up.Calls("ma")
			e.up.Set("ma", fakeupstream.Behavior{})
			recoveredAt = elapsed
		}
		r := e.post("/v1/chat/completions", chat("main", elapsed%8 == 0))
		st := e.g.BreakerStatus(llm.BackendID{Provider: "a", Model: "ma"})
		t.Logf("t=%3.0fs status=%d served_by=%-5s attempts=%-40q breaker=%s", elapsed.Seconds(), r.status, r.header.Get("X-FreeLane-Backend"), r.attempts(), st.State)
		if r.status != 200 {
			t.Fatalf("t=%v: the client saw %d %s", elapsed, r.status, r.body)
		}
		if recoveredAt >= 0 && servedAgain < 0 && r.header.Get("X-FreeLane-Backend") == "a/ma" {
			servedAgain = elapsed
		}
		e.clock.Advance(4 * time.Second)
	}
	// While it was down the primary saw the two calls that tripped it and
	// at most one trial per 30 s open period.
	if maxCalls := 2 + int(outage/(30*time.Second)); outageCalls > maxCalls {
		t.Errorf("primary called %d times during the outage, want at most %d", outageCalls, maxCalls)
	}
	if servedAgain < 0 || servedAgain-recoveredAt > 30*time.Second {
		t.Fatalf("primary recovered at %v, served again at %v", recoveredAt, servedAgain)
	}
	calls := e.up.Calls("ma")
	t.Logf("primary: %d calls in total, recovered at t=%v, served again at t=%v", calls, recoveredAt, servedAgain)
}

func TestRateLimitCoolsDownWithoutTripping(t *testing.T) {
	e := newEnv(t, nil)
	// Times are compared exactly, so the clock moves only when told to.
	e.clock.Freeze()
	e.up.Set("ma", fakeupstream.Behavior{Status: 429, Headers: map[string]string{"Retry-After": "120"}}, fakeupstream.Behavior{})
	r := e.post("/v1/chat/completions", chat("main", false))
	if r.status != 200 || r.header.Get("X-FreeLane-Backend") != "b/mb" {
		t.Fatalf("got %d %q", r.status, r.attempts())
	}
	st := e.g.BreakerStatus(llm.BackendID{Provider: "a", Model: "ma"})
	if st.State != breaker.Closed || st.Failures != 0 {
		t.Errorf("a 429 counted as a breaker failure: %+v", st)
	}
	if want := e.clock.Now().Add(120 * time.Second); !st.CoolUntil.Equal(want) {
		t.Errorf("cool until %v, want %v", st.CoolUntil, want)
	}
	for i := 0; i < 5; i++ {
		e.clock.Advance(20 * time.Second)
		e.post("/v1/chat/completions", chat("main", false))
	}
	if e.up.Calls("ma") != 1 {
		t.Fatalf("called during its Retry-After: %d calls", e.up.Calls("ma"))
	}
	e.clock.Advance(21 * time.Second)
	if r := e.post("/v1/chat/completions", chat("main", false)); r.header.Get("X-FreeLane-Backend") != "a/ma" {
		t.Errorf("not back after 120 s: %q", r.attempts())
	}
}

func TestRejectedKeyRaisesAnAlert(t *testing.T) {
	e := newEnv(t, nil)
	// Times are compared exactly, so the clock moves only when told to.
	e.clock.Freeze()
	e.up.Set("ma", fakeupstream.Behavior{Status: 401})
	if r := e.post("/v1/chat/completions", chat("main", false)); r.status != 200 || r.header.Get("X-FreeLane-Backend") != "b/mb" {
		t.Fatalf("not served by the next backend: %d %q", r.status, r.attempts())
	}
	var alert *events.Event
	for _, ev := range e.g.Events().Recent() {
		if ev.Kind == events.KeyDisabled && ev.Level == events.Alert && ev.Provider == "a" {
			alert = &ev
		}
	}
	if alert == nil || !alert.Until.Equal(e.clock.Now().Add(time.Hour)) {
		t.Fatalf("no alert for the rejected key: %+v", e.g.Events().Recent())
	}
	e.clock.Advance(59 * time.Minute)
	e.post("/v1/chat/completions", chat("main", false))
	if e.up.Calls("ma") != 1 {
		t.Fatal("disabled key used within the hour")
	}
	e.up.Set("ma", fakeupstream.Behavior{})
	e.clock.Advance(2 * time.Minute)
	if r := e.post("/v1/chat/completions", chat("main", false)); r.header.Get("X-FreeLane-Backend") != "a/ma" {
		t.Errorf("key not retried after the hour: %q", r.attempts())
	}
}

func TestHalfOpenAdmitsExactlyOneRequest(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: 500})
	for i := 0; i < 2; i++ {
		e.post("/v1/chat/completions", chat("main", false))
	}
	e.clock.Advance(31 * time.Second) // open time over: half-open
	// The trial is slow, so the second request arrives while it is in flight.
	e.up.Set("ma", fakeupstream.Behavior{HeaderDelay: 300 * time.Millisecond})
	var wg sync.WaitGroup
	replies := make([]reply, 2)
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = e.post("/v1/chat/completions", chat("main", false))
		}()
		time.Sleep(50 * time.Millisecond) // the first takes the trial slot
	}
	wg.Wait()
	if n := e.up.Calls("ma"); n != 1 {
		t.Fatalf("half-open backend got %d concurrent requests, want 1", n)
	}
	served := map[string]int{}
	for _, r := range replies {
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		served[r.header.Get("X-FreeLane-Backend")]++
	}
	if served["a/ma"] != 1 || served["b/mb"] != 1 {
		t.Errorf("served %v", served)
	}
	if st := e.g.BreakerStatus(llm.BackendID{Provider: "a", Model: "ma"}); st.State != breaker.Closed || st.Health != 0.7 {
		t.Errorf("after a successful trial: %+v", st)
	}
}

func TestOpenBreakerSurvivesRestart(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: 503})
	e.post("/v1/chat/completions", chat("main", false))
	e.post("/v1/chat/completions", chat("main", false))
	openUntil := e.g.BreakerStatus(llm.BackendID{Provider: "a", Model: "ma"}).OpenUntil
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.up.Set("ma", fakeupstream.Behavior{})
	e.clock.Advance(10 * time.Second)
	e.start(testConfig(e.up.URL)) // same data dir, same clock
	if st := e.g.BreakerStatus(llm.BackendID{Provider: "a", Model: "ma"}); st.State != breaker.Open || !st.OpenUntil.Equal(openUntil) {
		t.Fatalf("after restart: %+v", st)
	}
	r := e.post("/v1/chat/completions", chat("main", false))
	if !strings.HasPrefix(r.attempts(), "a/ma=skip(open)") {
		t.Fatalf("open breaker forgotten across a restart: %q", r.attempts())
	}
	e.clock.Advance(21 * time.Second)
	if r := e.post("/v1/chat/completions", chat("main", false)); r.header.Get("X-FreeLane-Backend") != "a/ma" {
		t.Errorf("did not close on time: %q", r.attempts())
	}
}

func TestStallsAfterCommitCountAgainstTheBackend(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{StallAfter: 1})
	for i := 0; i < 2; i++ {
		r := e.post("/v1/chat/completions", chat("main", true))
		if s := parseSSE(t, r.body); s.done || s.errMsg == "" {
			t.Fatalf("stall %d: %+v", i, s)
		}
	}
	st := e.g.BreakerStatus(llm.BackendID{Provider: "a", Model: "ma"})
	if st.State != breaker.Open || !strings.Contains(st.OpenWhy, "idle") {
		t.Fatalf("two stalls did not open the breaker: %+v", st)
	}
	if r := e.post("/v1/chat/completions", chat("main", true)); !strings.HasPrefix(r.attempts(), "a/ma=skip(open)") {
		t.Errorf("attempts %q", r.attempts())
	}
}

func TestProbesMarkDownAndRestore(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Chains = []config.Chain{{Name: "main", Backends: []string{"b/mb", "c/mc"}}}
	})
	e.up.Set("mb", fakeupstream.Behavior{Status: 503})
	tick := func(d time.Duration) {
		for s := time.Duration(0); s < d; s += time.Second {
			e.clock.Advance(time.Second)
			e.g.Prober().Tick(context.Background())
		}
	}
	// Two probe rounds (5 min apart) must mark b down.
	var st breaker.Status
	for i := 0; i < 600; i++ {
		tick(time.Second)
		if st = e.g.BreakerStatus(llm.BackendID{Provider: "b", Model: "mb"}); st.State == breaker.Open {
			break
		}
	}
	if st.State != breaker.Open || st.LastProbeOK || !strings.Contains(st.OpenWhy, "2 probes failed") {
		t.Fatalf("two failed probes did not mark b down within 10 min: %+v", st)
	}
	// No user request was needed to find out.
	if r := e.post("/v1/chat/completions", chat("main", false)); r.attempts() != "b/mb=skip(open); c/mc=ok" {
		t.Errorf("attempts %q", r.attempts())
	}
	// Probes are small: a few tokens, on the model itself.
	var probeBody string
	for _, req := range e.up.Requests() {
		if req.Model == "mb" {
			probeBody = string(req.Body)
		}
	}
	if !strings.Contains(probeBody, `"max_tokens":5`) {
		t.Errorf("probe body %s", probeBody)
	}
	// Own keys are not probed by default.
	if e.up.Calls("ma") != 0 {
		t.Errorf("own key probed %d times", e.up.Calls("ma"))
	}
	e.up.Set("mb", fakeupstream.Behavior{})
	tick(time.Minute) // two 30 s probes
	if st := e.g.BreakerStatus(llm.BackendID{Provider: "b", Model: "mb"}); st.State != breaker.Closed {
		t.Fatalf("two passing probes did not restore b: %+v", st)
	}
}
