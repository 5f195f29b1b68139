package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakeupstream"
)

// quantized is an upstream that allows 30 requests a minute and, as
// providers document, enforces that over shorter periods too: at most 5
// in any 10 seconds. Above either it answers 429. Its time is the
// gateway's injected clock.
type quantized struct {
	clock    atomic.Pointer[clocktest.Clock]
	headers  bool // send x-ratelimit-limit-requests and friends
	mu       sync.Mutex
	arrivals []time.Time
	served   int
	limited  int
}

func (q *quantized) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := q.clock.Load().Now()
	q.mu.Lock()
	in := func(d time.Duration) int {
		n := 0
		for _, a := range q.arrivals {
			if a.After(now.Add(-d)) {
				n++
			}
		}
		return n
	}
	over := in(time.Minute) >= 30 || in(10*time.Second) >= 5
	if over {
		q.limited++
	} else {
		q.arrivals = append(q.arrivals, now)
		q.served++
	}
	remaining := 30 - in(time.Minute)
	q.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if q.headers {
		w.Header().Set("X-Ratelimit-Limit-Requests", "30")
		w.Header().Set("X-Ratelimit-Remaining-Requests", fmt.Sprint(max(remaining, 1)))
		w.Header().Set("X-Ratelimit-Reset-Requests", "30s")
	}
	if over {
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"message":"rate limit exceeded","type":"rate_limit"}}`))
		return
	}
	_, _ = w.Write([]byte(`{"id":"q","object":"chat.completion","model":"mb","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
}

// quiet waits until every request in flight waits in the shaper, so the
// clock can move without overtaking a request on its way to the upstream.
func quiet(t *testing.T, e *env, inflight *atomic.Int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for int64(e.g.ShapeWaiting()) != inflight.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, %d waiting in the shaper", inflight.Load(), e.g.ShapeWaiting())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestShapingBucketKeepsUnderTheUpstreamRPM sends a request a second for
// two minutes to a chain whose first backend allows 30 a minute: its
// bucket spaces the calls two seconds apart, so the upstream never answers
// 429, and what would have to wait too long goes to the next backend. With
// headers, the limit is learned from the upstream's rate-limit headers
// instead of configured.
func TestShapingBucketKeepsUnderTheUpstreamRPM(t *testing.T) {
	for _, learned := range []bool{false, true} {
		t.Run(map[bool]string{false: "configured", true: "learned"}[learned], func(t *testing.T) {
			q := &quantized{headers: learned}
			srv := httptest.NewServer(q)
			t.Cleanup(srv.Close)
			e := newEnv(t, func(c *config.Config) {
				c.Providers[1].BaseURL = srv.URL
				if !learned {
					c.Providers[1].Models[0].Limits = &config.Limits{RPM: 30}
				}
				c.Chains = append(c.Chains, config.Chain{Name: "free", Backends: []string{"b/mb", "c/mc"}})
			})
			e.clock.Freeze()
			q.clock.Store(e.clock)
			var inflight atomic.Int64
			var wg sync.WaitGroup
			var mu sync.Mutex
			byB, byC, failed, paced := 0, 0, 0, 0
			for range 120 {
				inflight.Add(1)
				wg.Go(func() {
					defer inflight.Add(-1)
					r := e.post("/v1/chat/completions", chat("free", false))
					mu.Lock()
					defer mu.Unlock()
					switch {
					case r.status != 200:
						failed++
					case r.header.Get("X-FreeLane-Backend") == "b/mb":
						byB++
					default:
						byC++
						if strings.Contains(r.attempts(), "b/mb=skip(paced)") {
							paced++
						}
					}
				})
				quiet(t, e, &inflight)
				e.clock.Advance(time.Second)
				quiet(t, e, &inflight)
			}
			for inflight.Load() > 0 {
				e.clock.Advance(time.Second)
				quiet(t, e, &inflight)
			}
			wg.Wait()
			t.Logf("b/mb served %d, c/mc %d (%d of them with b/mb paced), failed %d; upstream 429s %d", byB, byC, paced, failed, q.limited)
			if q.limited != 0 {
				t.Errorf("the upstream answered 429 %d times", q.limited)
			}
			if failed != 0 || byB+byC != 120 {
				t.Errorf("%d requests failed", failed)
			}
			if byB < 50 || byB > 62 || paced == 0 {
				t.Errorf("b/mb served %d of 120 at 30 a minute over two minutes, %d paced to c/mc", byB, paced)
			}
		})
	}
}

// TestShapingConcurrencyQueue holds b/mb's one slot: the next request
// waits in its queue and is served when the slot frees; one whose wait
// runs out goes to the next backend of the chain; one whose client goes
// away leaves the queue.
func TestShapingConcurrencyQueue(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Providers[1].Models[0].Limits = &config.Limits{Concurrency: 1}
		// Calls are held at the upstream while the clock moves.
		c.Providers[2].Models[0].Limits = &config.Limits{Concurrency: 1}
		for _, i := range []int{1, 2} {
			c.Providers[i].Timeouts = config.Timeouts{Connect: time.Hour, Header: time.Hour, FirstToken: time.Hour, Idle: time.Hour}
		}
		c.Chains = append(c.Chains, config.Chain{Name: "free", Backends: []string{"b/mb", "c/mc"}})
	})
	e.clock.Freeze()
	// Calls still held when the test fails are let go, so the gateway can
	// shut down.
	var holds []chan struct{}
	open := func() chan struct{} {
		ch := make(chan struct{})
		holds = append(holds, ch)
		return ch
	}
	let := func(ch chan struct{}) {
		for i, h := range holds {
			if h == ch {
				close(ch)
				holds = append(holds[:i], holds[i+1:]...)
				return
			}
		}
	}
	t.Cleanup(func() {
		for len(holds) > 0 {
			let(holds[0])
		}
	})
	hold := open()
	e.up.SetDefault(fakeupstream.Behavior{Hold: hold})
	var inflight atomic.Int64
	send := func(model string) <-chan reply {
		ch := make(chan reply, 1)
		inflight.Add(1)
		go func() {
			defer inflight.Add(-1)
			ch <- e.post("/v1/chat/completions", chat(model, false))
		}()
		return ch
	}
	// The first call holds the slot at the upstream.
	first := send("b/mb")
	deadline := time.Now().Add(10 * time.Second)
	for e.up.Calls("mb") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the first call never reached the upstream")
		}
		time.Sleep(time.Millisecond)
	}
	// The second waits for it, and is served once it ends.
	second := send("b/mb")
	waitFor(t, func() bool { return e.g.ShapeWaiting() == 1 })
	let(hold)
	for _, ch := range []<-chan reply{first, second} {
		if r := <-ch; r.status != 200 || r.attempts() != "b/mb=ok" {
			t.Fatalf("queued request: %d %q %s", r.status, r.attempts(), r.body)
		}
	}
	if n := e.up.Calls("mb"); n != 2 {
		t.Fatalf("b/mb called %d times", n)
	}

	// A request whose wait runs out goes to the next backend. While both
	// backends are busy, the chain's first one is waited for; c/mc's slot
	// frees meanwhile, and takes the request once b/mb's wait ran out.
	e.up.SetDefault(fakeupstream.Behavior{})
	hold2, holdC := open(), open()
	e.up.Set("mb", fakeupstream.Behavior{Hold: hold2}, fakeupstream.Behavior{})
	e.up.Set("mc", fakeupstream.Behavior{Hold: holdC}, fakeupstream.Behavior{})
	held := send("b/mb")
	heldC := send("c/mc")
	waitFor(t, func() bool { return e.up.Calls("mb") == 1 && e.up.Calls("mc") == 1 })
	over := send("free")
	waitFor(t, func() bool {
		if e.g.ShapeWaiting() == 1 {
			return true
		}
		select {
		case r := <-over:
			t.Fatalf("did not wait: %d %q %s", r.status, r.attempts(), r.body)
		default:
		}
		return false
	})
	let(holdC)
	if r := <-heldC; r.status != 200 {
		t.Fatalf("held c/mc call: %d %s", r.status, r.body)
	}
	e.clock.Advance(2 * time.Second)
	r := <-over
	if r.status != 200 || r.header.Get("X-FreeLane-Backend") != "c/mc" || !strings.HasSuffix(r.attempts(), "b/mb=skip(busy); c/mc=ok") {
		t.Fatalf("after the queue wait: %d %q %s", r.status, r.attempts(), r.body)
	}
	let(hold2)
	if r := <-held; r.status != 200 {
		t.Fatalf("held call: %d %s", r.status, r.body)
	}

	// A client that goes away while queued leaves the queue: the slot
	// freed next goes to the request behind it.
	hold3 := open()
	e.up.Set("mb", fakeupstream.Behavior{Hold: hold3}, fakeupstream.Behavior{})
	held = send("b/mb")
	waitFor(t, func() bool { return e.up.Calls("mb") == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/v1/chat/completions", strings.NewReader(chat("b/mb", false)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		gone <- err
	}()
	waitFor(t, func() bool { return e.g.ShapeWaiting() == 1 })
	cancel()
	<-gone
	waitFor(t, func() bool { return e.g.ShapeWaiting() == 0 })
	behind := send("b/mb")
	waitFor(t, func() bool { return e.g.ShapeWaiting() == 1 })
	let(hold3)
	if r := <-held; r.status != 200 {
		t.Fatalf("held call: %d %s", r.status, r.body)
	}
	if r := <-behind; r.status != 200 || r.attempts() != "b/mb=ok" {
		t.Fatalf("request behind the one that left: %d %q %s", r.status, r.attempts(), r.body)
	}
	if n := e.up.Calls("mb"); n != 2 {
		t.Fatalf("b/mb called %d times, want 2: the request that left must not be sent", n)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
