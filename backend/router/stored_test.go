package router_test

import (
	"strings"
	"testing"
	"time"

	"freelane/backend/llm"
	"freelane/backend/router"
)

// storedHarness is a harness whose answers wait for their traces to be
// stored; traced tells when the router has recorded a trace.
func storedHarness(t *testing.T, wait time.Duration) (*harness, chan llm.Trace) {
	h := newHarness(t)
	traced := make(chan llm.Trace, 4)
	h.r = router.New(h.r.Table(), h.gate, &chanRecorder{h.rec, traced}, nil, quiet)
	h.r.SetStoredWait(wait)
	return h, traced
}

// chanRecorder records into rec and hands each trace on.
type chanRecorder struct {
	rec *recRecorder
	out chan llm.Trace
}

func (c *chanRecorder) Record(t llm.Trace) {
	c.rec.Record(t)
	c.out <- t
}

// streamUntilTraced starts a stream through h's router and returns once
// its trace was recorded, with the channel closed when Stream returns.
func streamUntilTraced(t *testing.T, h *harness, traced <-chan llm.Trace) (<-chan struct{}, llm.Trace) {
	t.Helper()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		if f := h.r.Stream(h.ctx, streamReq(t, "main", false), h.sink); f != nil {
			t.Errorf("stream failed: %+v", f)
		}
	}()
	return ended, <-traced
}

// stillHeld fails the test when ended is closed within 50 ms: the answer
// must wait for its trace's acknowledgement, which the test has not
// given.
func stillHeld(t *testing.T, ended <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ended:
		t.Fatal(what + " before its trace was stored")
	case <-time.After(50 * time.Millisecond):
	}
}

func tail(data string) step {
	return step{ev: llm.Event{Kind: llm.Held, Data: []byte(data), Tail: true}}
}

// With answers waiting for their traces, a stream's content goes out as
// it comes, but its closing events and its end only once the trace is
// stored; a plain answer's call returns only then.
func TestAnswerEndsOnlyOnceItsTraceIsStored(t *testing.T) {
	h, traced := storedHarness(t, time.Minute)
	h.ups["a"].script = []step{content(`{"c":"hello"}`), tail(`{"finish":"stop"}`), done()}
	ended, tr := streamUntilTraced(t, h, traced)
	if tr.Stored == nil || tr.Class != llm.OK {
		t.Fatalf("trace class %s, Stored %v", tr.Class, tr.Stored)
	}
	stillHeld(t, ended, "the stream ended")
	// The goroutine is parked on the acknowledgement; what it wrote
	// before recording is visible through the recorder's lock.
	if got := strings.Join(h.sink.ops, " | "); got != `commit a/m | send {"c":"hello"}` {
		t.Errorf("before the trace was stored the client got: %s", got)
	}
	tr.Stored.Give(nil)
	<-ended
	if got := strings.Join(h.sink.ops, " | "); got != `commit a/m | send {"c":"hello"} | send {"finish":"stop"} | done` {
		t.Errorf("the client got: %s", got)
	}

	h2, traced2 := storedHarness(t, time.Minute)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		if _, f := h2.r.Complete(h2.ctx, completeReq(t, "main")); f != nil {
			t.Errorf("complete failed: %+v", f)
		}
	}()
	tr = <-traced2
	stillHeld(t, returned, "Complete returned")
	tr.Stored.Give(nil)
	<-returned
}

// The wait is bounded: a log that never answers delays the end by the
// wait, not forever, and the answer still ends whole. A stream that broke
// after it reached the client was not answered and is not held.
func TestStoredWaitIsBounded(t *testing.T) {
	h, traced := storedHarness(t, 30*time.Millisecond)
	h.ups["a"].script = []step{content(`{"c":"hello"}`), tail(`{"finish":"stop"}`), done()}
	start := time.Now()
	if f := h.r.Stream(h.ctx, streamReq(t, "main", false), h.sink); f != nil {
		t.Fatalf("stream failed: %+v", f)
	}
	if el := time.Since(start); el < 30*time.Millisecond || el > 5*time.Second {
		t.Errorf("ended after %v", el)
	}
	<-traced
	if got := strings.Join(h.sink.ops, " | "); !strings.HasSuffix(got, `send {"finish":"stop"} | done`) {
		t.Errorf("the client got: %s", got)
	}

	h2, traced2 := storedHarness(t, time.Minute)
	h2.ups["a"].script = []step{content(`{"c":"hel"}`), fails(httpErr(llm.Transient, 502))}
	h2.r.Stream(h2.ctx, streamReq(t, "main", false), h2.sink)
	if tr := <-traced2; tr.Stored != nil || tr.Class == llm.OK {
		t.Errorf("a broken stream waited on its trace: class %s", tr.Class)
	}

	// Without the setting the end goes out before the trace is recorded.
	h3 := newHarness(t)
	h3.ups["a"].script = []step{content(`{"c":"hello"}`), tail(`{"finish":"stop"}`), done()}
	h3.r.Stream(h3.ctx, streamReq(t, "main", false), h3.sink)
	if tr := h3.rec.last(t); tr.Stored != nil {
		t.Error("a trace waited on without the setting")
	}
}

// hitCache answers every lookup with one cached answer.
type hitCache struct{ answer cachedAnswer }

func (c hitCache) Lookup(*llm.Request, string, string) (llm.CacheOutcome, router.CachedAnswer, router.CacheKeeper) {
	return llm.CacheHit, c.answer, nil
}

type cachedAnswer struct{}

func (cachedAnswer) Origin() router.CacheOrigin { return router.CacheOrigin{Backend: "a/m"} }
func (cachedAnswer) Created() time.Time         { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }
func (cachedAnswer) Body(*llm.Request, string) ([]byte, error) {
	return []byte(`{"cached":true}`), nil
}
func (cachedAnswer) Events(*llm.Request, string) ([]llm.Event, error) {
	return []llm.Event{{Kind: llm.Content, Data: []byte(`{"c":"cached"}`)}, {Kind: llm.Held, Data: []byte(`{"finish":"stop"}`)}}, nil
}

// A response-cache hit calls no backend, but its end waits for its
// request row as a backend's answer does.
func TestCacheHitEndsOnlyOnceItsTraceIsStored(t *testing.T) {
	h, traced := storedHarness(t, time.Minute)
	h.r.SetCache(hitCache{})
	ended, tr := streamUntilTraced(t, h, traced)
	if tr.Stored == nil || tr.Cache != llm.CacheHit {
		t.Fatalf("trace cache %s, Stored %v", tr.Cache, tr.Stored)
	}
	stillHeld(t, ended, "the replayed stream ended")
	if got := strings.Join(h.sink.ops, " | "); !strings.HasPrefix(got, "commit") || !strings.HasSuffix(got, `send {"c":"cached"}`) {
		t.Errorf("before the trace was stored the client got: %s", got)
	}
	tr.Stored.Give(nil)
	<-ended
	if got := strings.Join(h.sink.ops, " | "); !strings.HasSuffix(got, `send {"c":"cached"} | send {"finish":"stop"} | done`) {
		t.Errorf("the client got: %s", got)
	}
	if n := h.ups["a"].calls; n != 0 {
		t.Errorf("a hit called the backend %d times", n)
	}

	h2, traced2 := storedHarness(t, time.Minute)
	h2.r.SetCache(hitCache{})
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		if res, f := h2.r.Complete(h2.ctx, completeReq(t, "main")); f != nil || string(res.Response.Body) != `{"cached":true}` {
			t.Errorf("complete = %+v, %+v", res, f)
		}
	}()
	tr = <-traced2
	stillHeld(t, returned, "Complete returned a hit")
	tr.Stored.Give(nil)
	<-returned
}
