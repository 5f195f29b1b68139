// Package router serves a request by walking its route, backend by backend,
// until one answers: the failover loop, and the rule that a stream never
// switches backends once it has reached the client.
package router

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/clock"
	"freelane/backend/llm"
)

// Gate decides whether a backend may be called and learns from outcomes;
// the breaker package provides it.
type Gate interface {
	// Available tells, without side effects, whether a backend could be
	// called now; nil means it could.
	Available(id llm.BackendID) *llm.Skip
	// Allow is asked right before a call; a half-open backend admits one.
	// The call's outcome goes to done (e nil for success, with the time to
	// the first byte of content), which the router defers as soon as it
	// is admitted so that the trial is given back however the call ends.
	Allow(id llm.BackendID) (done func(e *llm.Error, firstByte time.Duration), skip *llm.Skip)
	// Unchecked is the done of a call made without Allow, when every
	// backend of the route is unavailable and the router tries them anyway.
	Unchecked(id llm.BackendID) (done func(e *llm.Error, firstByte time.Duration))
}

// Admission decides, before each call, whether quotas and budgets allow it,
// and accounts for the call afterwards; the quota package provides it.
// Unlike a Gate's refusals, its refusals are never overridden: a limit or
// a budget is the user's rule, not a guess about the backend's health.
type Admission interface {
	// Available tells, without side effects, whether b could be admitted.
	Available(chain string, b *Backend) *llm.Skip
	// Admit takes what a call needs (a concurrency slot, the request
	// counted, money reserved) and returns done, which gives it back:
	// with nil for a call that was not made, otherwise with what the call
	// used, filling in the attempt's tokens and cost. A skip with Blocked
	// set makes the request fail with HTTP 402 when no other backend serves
	// it.
	Admit(req *llm.Request, chain string, b *Backend) (done func(c *llm.CallUsage), skip *llm.Skip)
}

// Shaper paces calls to each backend so that FreeLane stays under a
// provider's limits instead of collecting its 429s: a concurrency limit
// with a short queue and a requests-per-minute bucket. The shape package
// provides it.
type Shaper interface {
	// Available tells, without side effects and without waiting, whether
	// a call to id could start now; nil means it could.
	Available(id llm.BackendID) *llm.Skip
	// Acquire waits, no longer than the backend's queue time and never
	// past ctx, for a slot and a token. release gives the slot back and
	// is deferred by the router as soon as it is obtained; a skip means
	// the backend stayed busy or paced out, and no call is made.
	Acquire(ctx context.Context, id llm.BackendID) (release func(), skip *llm.Skip)
}

// Classifier gives a request its task before it is routed.
type Classifier interface {
	// Classify returns the request's task, what decided it (for the
	// decision log: "header", or the rule), and the chain the task routes
	// to, "" to keep the one the client asked for. A request whose client
	// named its task has Task set already; Classify keeps it.
	Classify(req *llm.Request) (task, rule, chain string)
}

// Recorder receives the trace of every finished request. It must not block.
type Recorder interface {
	Record(t llm.Trace)
}

// Router routes requests. It is safe for concurrent use; Swap replaces the
// routing table without disturbing requests in flight.
type Router struct {
	table atomic.Pointer[Table]
	gate  Gate
	rec   Recorder
	clock clock.Clock
	log   *slog.Logger
	// admit is set once before serving (SetAdmission); nil admits all.
	admit Admission
	// shape, classify and estimate are set once before serving; nil
	// paces nothing, leaves every request in the default task and
	// estimates prompts from their length.
	shape    Shaper
	classify Classifier
	estimate Estimator
	// cache is the response cache, set once before serving; nil is none.
	cache ResponseCache
	// sessions are where each session's prompt cache is warm; they live
	// on the router, so a new table keeps them. breaks counts, per route,
	// warm caches kept and broken (*cacheBreaks by route name), nBreaks
	// how many routes it holds.
	sessions SessionStore
	breaks   sync.Map
	nBreaks  atomic.Int64
	// storedWait is how long an answer may wait for the request log to
	// store its trace before its last bytes go out (SetStoredWait), in
	// nanoseconds; 0 does not wait. storedLate rate-limits the warning of
	// an answer that stopped waiting.
	storedWait atomic.Int64
	storedLate clock.Rare
}

// New returns a Router over the table. rec may be nil; a nil clock is the
// wall clock.
func New(t *Table, gate Gate, rec Recorder, clk clock.Clock, log *slog.Logger) *Router {
	if log == nil {
		log = slog.Default()
	}
	r := &Router{gate: gate, rec: rec, clock: clock.OrReal(clk), log: log, sessions: newSessionMap(MaxSessions)}
	r.table.Store(t)
	return r
}

// carryOver keeps what the old table learned (latency stats, rotation
// turns, weighted shares) in t wherever the backend or tier is the same.
func carryOver(t, old *Table) {
	if old == nil {
		return
	}
	for id, b := range t.backends {
		if o := old.backends[id]; o != nil {
			b.stats = o.stats
		}
	}
	for name, p := range t.plans {
		p.carryOver(old.plans[name])
	}
	for name, p := range t.modelPlans {
		p.carryOver(old.modelPlans[name])
	}
	for id, p := range t.groupPlans {
		p.carryOver(old.groupPlans[id])
	}
}

// SetStoredWait makes the router end every served answer only once the
// request log has stored its trace, waiting at most d for that: the
// answer's body, or a stream's end, is held back until then, so an answer
// its client received is never missing from the log, or the usage ledger,
// when the process is killed just after. 0 (the default) ends answers at
// once and stores their traces soon after. It may be called while serving.
func (r *Router) SetStoredWait(d time.Duration) { r.storedWait.Store(int64(max(d, 0))) }

// holdsEnd reports whether answers wait for their traces to be stored.
func (r *Router) holdsEnd() bool { return r.storedWait.Load() > 0 && r.rec != nil }

// SetAdmission installs quota and budget checks. Call it before serving.
func (r *Router) SetAdmission(a Admission) { r.admit = a }

// SetShaper installs per-backend pacing. Call it before serving.
func (r *Router) SetShaper(s Shaper) { r.shape = s }

// SetClassifier installs the task rules. Call it before serving.
func (r *Router) SetClassifier(c Classifier) { r.classify = c }

// SetEstimator installs the offline prompt estimate the context check
// uses. Call it before serving.
func (r *Router) SetEstimator(e Estimator) { r.estimate = e }

// Table returns the current routing table.
func (r *Router) Table() *Table { return r.table.Load() }

// Swap installs a new routing table for the next requests.
func (r *Router) Swap(t *Table) {
	carryOver(t, r.table.Load())
	r.table.Store(t)
	r.pruneBreaks(t)
}

// Failure is a request that could not be served, ready to be written in
// the client's dialect: the status, a machine-readable code and a message.
type Failure struct {
	Status  int
	Code    string
	Message string
	// Body, when set, is the upstream's own error body, returned unchanged
	// for caller errors to a client of the same dialect (Dialect), so the
	// client sees exactly what the model said.
	Body     []byte
	Dialect  llm.Dialect
	Attempts []llm.Attempt
	Class    llm.Class
	// RetryAt, for a request every backend rate limited, is the earliest
	// time one announced it serves again: the client's Retry-After.
	RetryAt time.Time
	// ID is the failed request's id in the request log, so its answer can
	// name it as a served one does.
	ID string
}

func (f *Failure) Error() string { return f.Message }

// Result is a served non-streaming request.
type Result struct {
	Response *llm.Response
	Backend  *Backend
	Attempts []llm.Attempt
	ID       string
}

// Sink receives a streaming answer; the API layer writes it to the client.
type Sink interface {
	// Commit fixes the route and prepares the response headers; they go out
	// with the first flushed event.
	Commit(id string, b *Backend, attempts []llm.Attempt) error
	// Send writes one event's JSON payload; with flush false the event may
	// wait in a buffer for the next one.
	Send(data []byte, flush bool) error
	// Fail ends a committed stream with an error event and no [DONE].
	Fail(e *llm.Error)
	// Done writes [DONE].
	Done() error
}

// errCommitted marks an attempt that reached the client: the loop stops
// whatever happened afterwards.
var errCommitted = errors.New("stream committed")

// Complete serves a non-streaming request.
func (r *Router) Complete(ctx context.Context, req *llm.Request) (*Result, *Failure) {
	var res *Result
	var cu *cacheUse
	if r.cache != nil {
		cu = &cacheUse{replay: func(h CachedAnswer, tr *llm.Trace) error {
			body, err := h.Body(req, tr.ID)
			if err != nil {
				return err
			}
			res = &Result{Response: &llm.Response{Status: http.StatusOK, Header: http.Header{}, Body: body, Usage: h.Origin().Usage}}
			return nil
		}}
	}
	tr, f := r.run(ctx, req, func(ctx context.Context, b *Backend, a *attempt) error {
		resp, err := b.Up.Complete(ctx, req, b.ID.Model)
		if err != nil {
			return err
		}
		res = &Result{Response: resp, Backend: b}
		a.header, a.output = resp.Header, resp.Body
		if resp.Usage != (llm.Usage{}) {
			a.usage = &resp.Usage
		}
		return nil
	}, cu)
	if f != nil {
		return nil, f
	}
	res.Attempts, res.ID = tr.Attempts, tr.ID
	if cu != nil && cu.keep != nil && tr.Class == llm.OK {
		cu.keep.Body(res.Response.Body, CacheOrigin{Backend: tr.Backend, Usage: tr.Usage, Cost: tr.Cost})
	}
	return res, nil
}

// Stream serves a streaming request into sink. The returned Failure is set
// only when nothing was written yet, so the caller can still answer with a
// plain HTTP error.
func (r *Router) Stream(ctx context.Context, req *llm.Request, sink Sink) *Failure {
	var cu *cacheUse
	var ks *keepSink
	if r.cache != nil {
		cu = &cacheUse{}
		cu.replay = func(h CachedAnswer, tr *llm.Trace) error { return cu.replayStream(req, sink, h, tr) }
		ks = &keepSink{Sink: sink, cu: cu}
		sink = ks
	}
	// ended is the attempt whose stream's end is held back until its
	// trace is stored (SetStoredWait).
	var ended *attempt
	tr, f := r.run(ctx, req, func(ctx context.Context, b *Backend, a *attempt) error {
		err := r.streamOne(ctx, req, b, a, sink)
		if a.ended {
			ended = a
		}
		return err
	}, cu)
	if ended != nil {
		endStream(sink, ended.tail)
	}
	if f == nil && cu != nil && cu.keep != nil && ks.done && tr.Class == llm.OK {
		cu.keep.Done(CacheOrigin{Backend: tr.Backend, Usage: tr.Usage, Cost: tr.Cost})
	}
	return f
}

// attempt is one try in progress: the public record plus what only the
// loop needs to see.
type attempt struct {
	llm.Attempt
	// late is a failure after the stream was committed; the client already
	// got an error event, but the breaker must still hear about it.
	late  *llm.Error
	usage *llm.Usage
	trace *llm.Trace
	// header and output are the upstream's response header and answer
	// (or stream events, when admission wants them), for Settle.
	header http.Header
	output []byte
	// keepOutput asks streamOne to keep the stream's events; kept says
	// output is a buffer from keptBuffers, given back after Settle.
	keepOutput, kept bool
	// contentEvents and contentBytes count the content events a stream
	// relayed, kept or not, and their bytes; keptBytes is how many of
	// those output holds.
	contentEvents, contentBytes, keptBytes int
	// committed is set by streamOne when the attempt starts reaching the
	// client; from then on there is no failover. sink, set with it, ends
	// the client's stream with an error event; a panic after the commit
	// goes there. It is the Sink itself, not its bound Fail method, which
	// would cost an allocation per stream.
	committed bool
	sink      Sink
	// ended is set by streamOne when the stream ended cleanly but its end
	// (tail, then the sink's Done) was held back for its trace to be
	// stored; Stream writes it once run has returned.
	ended bool
	tail  [][]byte
}

type attemptFunc func(ctx context.Context, b *Backend, a *attempt) error

// run is the failover loop shared by streams and plain requests: resolve
// the name, rank the candidates, call them in order until one answers,
// and when every one was rate limited wait once for the earliest reset
// (bounded by the chain's max_wait and the client's deadline) and walk
// again.
func (r *Router) run(ctx context.Context, req *llm.Request, try attemptFunc, cu *cacheUse) (*llm.Trace, *Failure) {
	start := r.clock.Now()
	tr := &llm.Trace{ID: r.newID(start), Start: start, Endpoint: string(req.Endpoint), Path: req.Path, Dialect: req.Dialect,
		Model: req.Model, Stream: req.Stream, Notes: req.Notes}
	tr.Session = req.Session[:min(len(req.Session), 16)]
	dec := &llm.Decision{Requested: req.Model}
	tr.Decision = dec
	route, f := r.resolve(req, dec)
	if f != nil {
		r.finish(tr, start, f)
		return tr, f
	}
	tr.Chain, tr.Alias = route.Chain, route.Alias
	if cu != nil && r.fromCache(req, route, tr, cu) {
		// A hit called no backend, but its request row is held to as
		// an answer's is.
		r.finishStored(ctx, tr, start)
		cu.finish()
		return tr, nil
	}

	sel := getSelection()
	defer putSelection(sel)
	r.rank(req, route, true, sel)
	r.decide(dec, sel)
	w := walk{tr: tr, route: route, failed: nil}
	done, f := r.walk(ctx, req, try, sel, &w)
	if !done && f == nil && w.allLimited() {
		if wait := r.waitFor(ctx, route, &w); wait > 0 {
			dec.Waited = wait
			if r.sleep(ctx, wait) {
				sel2 := getSelection()
				defer putSelection(sel2)
				r.rank(req, route, true, sel2)
				w.again = true
				done, f = r.walk(ctx, req, try, sel2, &w)
			}
		}
	}
	if done {
		r.finishStored(ctx, tr, start)
		return tr, nil
	}
	if f == nil {
		f = r.failure(route, tr, w.final)
		if w.blocked != nil && f.Class != llm.Cancelled && f.Class != llm.Caller {
			// Nothing served and a budget kept paid backends out: that is
			// what the user must hear about, not the free backends' failures.
			f = &Failure{Status: http.StatusPaymentRequired, Code: "budget_exceeded",
				Message: strings.TrimPrefix(w.blocked.Reason, "budget: "), Attempts: tr.Attempts, Class: llm.Quota}
		}
		if f.Class == llm.RateLimited && !w.resetAt.IsZero() {
			f.RetryAt = w.resetAt
		}
	}
	r.finish(tr, start, f)
	return tr, f
}

// resolve finds the request's route: its task first, since a task may
// name its own chain, then the name.
func (r *Router) resolve(req *llm.Request, dec *llm.Decision) (Route, *Failure) {
	name := req.Model
	if r.classify != nil {
		// A task the client named is asked about too, for its chain.
		var chain string
		req.Task, dec.TaskRule, chain = r.classify.Classify(req)
		if chain != "" && !r.Table().IsPin(req.Model) {
			// The task's own chain serves it, whatever name the client
			// used, unless the client pinned one backend.
			name = chain
		}
	} else if req.Task != "" {
		dec.TaskRule = "header"
	}
	dec.Task = req.Task
	route, err := r.Table().Resolve(name)
	if err != nil {
		var re *ResolveError
		errors.As(err, &re)
		return route, &Failure{Status: re.Status, Code: re.Code, Message: re.Message, Class: llm.Caller}
	}
	dec.Chain, dec.Shortcut = route.Chain, route.Shortcut.String()
	return route, nil
}

// walk is one request's progress through its candidates, across the walk
// before a wait and the one after it.
type walk struct {
	tr    *llm.Trace
	route Route
	// final is the last call's failure, blocked a block budget that
	// refused a backend.
	final   *llm.Error
	blocked *llm.Skip
	// tooLong is the largest context that found the prompt too long, -1
	// for none.
	tooLong int
	// failed are the backends that failed this request other than by a
	// rate limit; the walk after a wait never calls them again.
	failed []*Backend
	// resetAt is the earliest time a rate-limited candidate announced it
	// serves again; limited counts rate-limited candidates, others the
	// rest.
	resetAt         time.Time
	limited, others int
	again           bool
}

func (w *walk) noteLimit(until time.Time) {
	w.limited++
	if !until.IsZero() && (w.resetAt.IsZero() || until.Before(w.resetAt)) {
		w.resetAt = until
	}
}

// allLimited reports whether every candidate tried or passed by was rate
// limited, so waiting for a reset may serve the request.
func (w *walk) allLimited() bool { return w.limited > 0 && w.others == 0 }

// walk calls the candidates in order. done is true when one served (or a
// stream was committed); a Failure is returned only when the walk must
// end the request at once (the client went away, a caller error).
func (r *Router) walk(ctx context.Context, req *llm.Request, try attemptFunc, sel *selection, w *walk) (done bool, _ *Failure) {
	tr, route := w.tr, w.route
	if !w.again {
		w.tooLong = -1
	}
	passBy := func(b *Backend, sk *llm.Skip) {
		if sk.Blocked {
			w.blocked = sk
		}
		switch {
		case sk.Class == llm.RateLimited || sk.Class == llm.Quota && !sk.Budget:
			w.noteLimit(sk.Until)
		case sk.Class != llm.Caller && sk.Class != llm.TooLong:
			// A backend that cannot serve this request at all does not
			// stand in the way of waiting for the others.
			w.others++
		}
		a := llm.Attempt{Backend: b.name, Dialect: b.Dialect}
		sk.Note(&a)
		tr.Attempts = append(tr.Attempts, a)
	}
	// Pass by unavailable backends, unless every one of them is: then try
	// them in order anyway, since refusing outright helps nobody.
	// A backend at a quota or shut out by a budget is passed by even then.
	for _, i := range sel.seq {
		c := &sel.cands[i]
		b := c.b
		if w.again && slices.Contains(w.failed, b) {
			continue
		}
		if c.verdict == excluded || c.verdict == skipped && sel.usable > 0 {
			passBy(b, c.skip)
			continue
		}
		if w.tooLong >= 0 && b.Context != 0 && b.Context <= w.tooLong {
			passBy(b, &llm.Skip{Word: llm.SkipTooLong, Class: llm.TooLong,
				Reason: fmt.Sprintf("context %d not larger than %d", b.Context, w.tooLong)})
			continue
		}
		if ctx.Err() != nil {
			w.final = &llm.Error{Class: llm.Cancelled, Message: "client went away"}
			return false, nil
		}
		a, le, sk := r.attempt(ctx, req, route.Chain, b, sel.usable > 0, tr, try)
		if sk != nil {
			passBy(b, sk)
			continue
		}
		tr.Attempts = append(tr.Attempts, a.Attempt)
		if le == nil || a.committed {
			r.served(tr, b, a, le)
			r.rememberSession(req, route, sel, b, tr.Decision)
			return true, nil
		}
		w.final = le
		if le.Class == llm.RateLimited {
			until := time.Time{}
			if le.RetryAfter > 0 {
				until = r.clock.Now().Add(le.RetryAfter)
			}
			w.noteLimit(until)
		} else {
			w.others++
			w.failed = append(w.failed, b)
		}
		if !le.Class.FailsOver() || route.Pinned && !sameModel(route.Backends) {
			return false, nil
		}
		if le.Class == llm.TooLong {
			w.tooLong = max(w.tooLong, b.Context)
		}
	}
	if ctx.Err() != nil {
		// The client left while the last candidate kept it waiting (in a
		// backend's queue, say): that, not the backends, ended it.
		w.final = &llm.Error{Class: llm.Cancelled, Message: "client went away"}
	}
	return false, nil
}

// sameModel reports whether bs are the keys of one model, which a pinned
// request may fail over between.
func sameModel(bs []*Backend) bool {
	for _, b := range bs[1:] {
		if b.ID.Provider != bs[0].ID.Provider || b.ID.Model != bs[0].ID.Model {
			return false
		}
	}
	return len(bs) > 1
}

// served fills the trace from the attempt that answered.
func (r *Router) served(tr *llm.Trace, b *Backend, a *attempt, le *llm.Error) {
	tr.Backend, tr.TTFT, tr.Committed = b.name, a.TTFT, a.committed
	switch {
	case a.Estimated:
		// Settle estimated what the usage (if any) left out.
		if a.usage != nil {
			tr.Usage = *a.usage
		}
		tr.Usage.PromptTokens, tr.Usage.CompletionTokens = a.PromptTokens, a.CompletionTokens
		tr.Usage.TotalTokens = a.PromptTokens + a.CompletionTokens
	case a.usage != nil:
		tr.Usage = *a.usage
	}
	tr.Status = http.StatusOK
	if le != nil {
		// A stream that failed after it was committed.
		tr.Class, tr.Error = le.Class, le.Message
		return
	}
	tr.Class = llm.OK
}

// waitFor is how long to wait for the earliest announced reset before
// walking the chain again, or 0 not to: no reset announced, one further
// than the chain's max_wait, or past the client's deadline.
func (r *Router) waitFor(ctx context.Context, route Route, w *walk) time.Duration {
	maxWait := DefaultMaxWait
	if route.plan != nil {
		maxWait = route.plan.maxWait
	}
	if maxWait <= 0 || w.resetAt.IsZero() || w.again {
		return 0
	}
	now := r.clock.Now()
	d := w.resetAt.Sub(now)
	if d <= 0 || d > maxWait {
		// A reset already past is a stale word, not a reason to walk
		// the same backends again.
		return 0
	}
	if dl, ok := ctx.Deadline(); ok && now.Add(d).After(dl) {
		return 0
	}
	return d
}

// sleep waits d on the router's clock; false when the client went away
// first.
func (r *Router) sleep(ctx context.Context, d time.Duration) bool {
	t, c := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
		return true
	case <-ctx.Done():
		return false
	}
}

// attempt makes one call to b, admitted by the quota manager and, when
// checked, by the breaker. Both hand out done functions that are deferred
// here the moment they are obtained, so a trial ticket, a concurrency slot
// and a money reservation go back on every path out, a panic in the call
// included. A refusal comes back as a skip and no call is made.
func (r *Router) attempt(ctx context.Context, req *llm.Request, chain string, b *Backend, checked bool,
	tr *llm.Trace, try attemptFunc) (a *attempt, le *llm.Error, skip *llm.Skip) {
	a = &attempt{Attempt: llm.Attempt{Backend: b.name, Dialect: b.Dialect}, trace: tr}
	called := false
	if r.shape != nil {
		// Pacing comes first: a request waiting in a backend's queue must
		// not hold that backend's half-open trial or a quota reservation.
		release, sk := r.shape.Acquire(ctx, b.ID)
		if sk != nil {
			return nil, nil, sk
		}
		defer release()
	}
	if r.admit != nil {
		// Another request may have used the last of a quota or a budget
		// since the scan.
		settle, sk := r.admit.Admit(req, chain, b)
		if sk != nil {
			return nil, nil, sk
		}
		a.keepOutput = b.stats.keepsOutput()
		defer func() {
			if !called {
				settle(nil)
				return
			}
			h := a.header
			if h == nil && le != nil {
				h = le.Header
			}
			if req.Stream {
				b.stats.streamEnded(a.usage.CountsCompletion())
			}
			settle(&llm.CallUsage{Usage: a.usage, Output: a.output,
				ContentEvents: a.contentEvents, ContentBytes: a.contentBytes, KeptBytes: a.keptBytes, Header: h, Err: le, Attempt: &a.Attempt})
			tr.Cost += a.Cost
			tr.Saved += a.Saved
			// Settle reads the events while it runs and keeps nothing.
			a.releaseKept()
		}()
	}
	var report func(*llm.Error, time.Duration)
	if checked {
		// Another request may have taken a half-open backend's single
		// trial since the scan.
		var sk *llm.Skip
		if report, sk = r.gate.Allow(b.ID); sk != nil {
			return nil, nil, sk
		}
	} else {
		report = r.gate.Unchecked(b.ID)
	}
	defer func() {
		firstByte := a.TTFT
		if !req.Stream {
			firstByte = a.Latency
		}
		report(le, firstByte)
	}()

	called = true
	t0 := r.clock.Now()
	b.stats.inflight.Add(1)
	err := r.protect(ctx, b, a, try)
	b.stats.inflight.Add(-1)
	a.Latency = r.clock.Since(t0)
	if errors.Is(err, errCommitted) {
		a.committed = true
	}
	if a.committed {
		// The attempt reached the client; a later failure of it was
		// already written to the client by streamOne.
		le = a.late
	} else if err != nil {
		le = classify(ctx, err)
	}
	if le == nil {
		a.Class = llm.OK
	} else {
		a.Class, a.Status, a.Reason = le.Class, le.Status, le.Message
	}
	if le == nil || a.committed {
		// Only answers say how fast a backend is: a quick refusal must
		// not make it look fast.
		prompt, cached := 0, 0
		if a.usage != nil {
			prompt, cached = a.usage.PromptTokens, a.usage.CacheReadTokens
		}
		b.stats.observe(r.clock.Now(), req.Stream, a.TTFT, a.Latency, prompt, cached)
	}
	return a, le, nil
}

// protect runs try, turning a panic inside it (a bug in a provider adapter
// or a converter, never the client's doing) into a transient failure of
// the backend, so the request fails over and the process lives on. A panic
// after the stream was committed ends the client's stream with an error
// event, as any late failure does.
func (r *Router) protect(ctx context.Context, b *Backend, a *attempt, try attemptFunc) (err error) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		r.log.Error("backend call panicked", "backend", b.name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		le := &llm.Error{Class: llm.Transient, Message: fmt.Sprintf("internal error calling %s: %v", b.name, p)}
		if a.committed {
			if a.late == nil {
				a.late = le
				if a.sink != nil {
					a.sink.Fail(le)
				}
			}
			err = errCommitted
			return
		}
		err = le
	}()
	return try(ctx, b, a)
}

// classify returns an attempt's error as an *llm.Error. One the upstream
// did not classify counts as transient, unless the client went away: then
// it is not the backend's fault and must not count against it.
func classify(ctx context.Context, err error) *llm.Error {
	var le *llm.Error
	if errors.As(err, &le) {
		return le
	}
	if ctx.Err() != nil {
		return &llm.Error{Class: llm.Cancelled, Message: "client went away", Err: err}
	}
	return &llm.Error{Class: llm.Transient, Message: err.Error(), Err: err}
}

// failure builds the client's error once the loop ended without an answer.
func (r *Router) failure(route Route, tr *llm.Trace, last *llm.Error) *Failure {
	f := &Failure{Attempts: tr.Attempts}
	switch {
	case last != nil && last.Class == llm.Cancelled:
		f.Status, f.Class, f.Code, f.Message = 499, llm.Cancelled, "client_closed_request", "the client went away"
		return f
	case last != nil && last.Class == llm.Caller:
		f.Status, f.Class, f.Body, f.Dialect = last.Status, llm.Caller, last.Body, last.Dialect
		f.Code = "upstream_rejected_request"
		f.Message = fmt.Sprintf("%s rejected the request: %s", tr.Attempts[len(tr.Attempts)-1].Backend, last.Message)
		return f
	case route.Pinned && last != nil:
		f.Class = last.Class
		f.Status = statusFor(last.Class)
		f.Code = "backend_failed"
		f.Message = fmt.Sprintf("%s failed (no failover for a pinned provider/model): %s", route.Backends[0].name, last.Message)
		return f
	}
	allLimited := len(tr.Attempts) > 0
	allUnsupported := last == nil && len(tr.Attempts) > 0
	tooLong := false
	var parts []string
	for _, a := range tr.Attempts {
		switch {
		case a.Skip == llm.SkipTooLong && a.Skipped:
			tooLong = true
		case a.Skip != llm.SkipUnsupported:
			allUnsupported = false
		}
		// A quota used up is a rate limit the user configured.
		if a.Class != llm.RateLimited && a.Class != llm.Quota {
			allLimited = false
		}
		parts = append(parts, a.Backend+": "+a.Reason)
	}
	f.Class = llm.Transient
	f.Status, f.Code = http.StatusBadGateway, "all_backends_failed"
	if allLimited {
		f.Class = llm.RateLimited
		f.Status, f.Code = http.StatusTooManyRequests, "all_backends_rate_limited"
	}
	name := route.Chain
	if name == "" {
		name = tr.Model
	}
	if allUnsupported && tooLong {
		// No backend's context holds the prompt and the answer: a
		// shorter prompt or a lower max_tokens is the caller's to choose.
		f.Class, f.Status, f.Code = llm.TooLong, http.StatusBadRequest, "context_length_exceeded"
		f.Message = fmt.Sprintf("the request does not fit the context of any backend for %q: %s", name, strings.Join(parts, "; "))
		return f
	}
	if allUnsupported {
		// Not one backend could have served it: the request asks for
		// something the route cannot give, which is the caller's to fix.
		f.Class, f.Status, f.Code = llm.Caller, http.StatusBadRequest, "unsupported_request"
		f.Message = fmt.Sprintf("no backend for %q can serve this request: %s", name, strings.Join(parts, "; "))
		return f
	}
	f.Message = fmt.Sprintf("all %d backends for %q failed: %s", len(tr.Attempts), name, strings.Join(parts, "; "))
	return f
}

func statusFor(c llm.Class) int {
	switch c {
	case llm.RateLimited:
		return http.StatusTooManyRequests
	case llm.TooLong:
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

func (r *Router) finish(tr *llm.Trace, start time.Time, f *Failure) {
	tr.Status, tr.Class, tr.Error = f.Status, f.Class, f.Message
	f.ID = tr.ID
	r.finishTrace(tr, start)
}

func (r *Router) finishTrace(tr *llm.Trace, start time.Time) {
	tr.Latency = r.clock.Since(start)
	if r.rec != nil {
		r.rec.Record(*tr)
	}
}

// storedLateWarnEvery rate-limits the warning of answers that stopped
// waiting for their traces, so a stalled disk does not flood the log.
const storedLateWarnEvery = time.Minute

// finishStored records a served request's trace and, when answers wait
// for their traces (SetStoredWait), returns only once the request log has
// stored it, the wait ran out, or the client left. Until it returns the
// caller holds back the end of the answer.
func (r *Router) finishStored(ctx context.Context, tr *llm.Trace, start time.Time) {
	if !r.holdsEnd() || tr.Class != llm.OK {
		// A stream that failed after it was committed was not answered;
		// there is nothing to hold back.
		r.finishTrace(tr, start)
		return
	}
	ack := llm.NewAck()
	tr.Stored = ack
	r.finishTrace(tr, start)
	t, expired := r.clock.NewTimer(time.Duration(r.storedWait.Load()))
	defer t.Stop()
	var why string
	select {
	case err := <-ack.Wait():
		if err == nil {
			return
		}
		// The log has said why already; the answer goes out regardless,
		// since failing it would lose the answer as well as its row.
		why = "the request log could not store it"
	case <-expired:
		why = "the request log took too long"
	case <-ctx.Done():
		return
	}
	if r.storedLate.Now(r.clock.Now(), storedLateWarnEvery) {
		r.log.Warn("answered a request before its row was stored", "reason", why, "request", tr.ID)
	}
}

// AttemptsHeader renders the route for the X-FreeLane-Attempts header, e.g.
// "groq/llama=429; cerebras/qwen=skip(open); local/qwen=ok".
func AttemptsHeader(as []llm.Attempt) string {
	var sb strings.Builder
	for i, a := range as {
		if i > 0 {
			sb.WriteString("; ")
		}
		sb.WriteString(a.Backend)
		sb.WriteByte('=')
		switch {
		case a.Skipped:
			sb.WriteString("skip(")
			sb.WriteString(string(a.SkipWord()))
			sb.WriteByte(')')
		case a.Class == llm.OK:
			sb.WriteString("ok")
		case a.Status != 0 && a.Status != http.StatusOK:
			sb.WriteString(strconv.Itoa(a.Status))
		default:
			sb.WriteString(string(a.Class))
		}
	}
	return sb.String()
}

// newID returns a request ID that starts with the time in milliseconds, so
// IDs sort by time and the request log's index grows at its end, followed by
// random bytes so IDs never collide.
func (r *Router) newID(now time.Time) string {
	var b [14]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return "req_" + hex.EncodeToString(b[:])
}
