// Package router serves a request by walking its route, backend by backend,
// until one answers: the failover loop and the stream rule of design.md.
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
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"freelane/backend/llm"
)

// Gate decides whether a backend may be called and learns from outcomes;
// the breaker package provides it.
type Gate interface {
	// Available tells, without side effects, whether a backend could be
	// called now.
	Available(provider, backend string) error
	// Acquire is asked right before a call; a half-open backend admits
	// one. The ticket goes back with Report.
	Acquire(provider, backend string) (ticket uint64, err error)
	// Report gives the outcome of every call made (e nil for success), with
	// the time to the first byte of content. Calls made without Acquire
	// (every backend unavailable) report ticket 0.
	Report(provider, backend string, ticket uint64, e *llm.Error, firstByte time.Duration)
}

// Admission decides, before each call, whether quotas and budgets allow it,
// and accounts for the call afterwards; the quota package provides it.
// Unlike a Gate's refusals, its refusals are never overridden: a limit or
// a budget is the user's rule, not a guess about the backend's health.
type Admission interface {
	// Available tells, without side effects, whether b could be admitted.
	Available(chain string, b *Backend) error
	// Admit takes what a call needs (a concurrency slot, the request
	// counted, money reserved). A refusal's message is the skip reason;
	// an error with a BudgetBlocked() bool method returning true makes the
	// request fail with HTTP 402 when no other backend serves it.
	Admit(req *llm.Request, chain string, b *Backend) (Hold, error)
}

// Hold is an admitted call. Exactly one of Settle and Release is called.
type Hold interface {
	// Settle accounts for the call and fills in the attempt's tokens and
	// cost.
	Settle(c llm.CallUsage)
	// Release gives back what Admit took for a call that was not made.
	Release()
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
	log   *slog.Logger
	// admit is set once before serving (SetAdmission); nil admits all.
	admit Admission
}

// New returns a Router over the table. rec may be nil.
func New(t *Table, gate Gate, rec Recorder, log *slog.Logger) *Router {
	if log == nil {
		log = slog.Default()
	}
	r := &Router{gate: gate, rec: rec, log: log}
	r.table.Store(t)
	return r
}

// SetAdmission installs quota and budget checks. Call it before serving.
func (r *Router) SetAdmission(a Admission) { r.admit = a }

// Table returns the current routing table.
func (r *Router) Table() *Table { return r.table.Load() }

// Swap installs a new routing table for the next requests.
func (r *Router) Swap(t *Table) { r.table.Store(t) }

// Failure is a request that could not be served, ready to be shown to the
// client in the OpenAI error shape.
type Failure struct {
	Status  int
	Type    string
	Code    string
	Message string
	// Body, when set, is the upstream's own error body, returned unchanged
	// for caller errors so the client sees exactly what the model said.
	Body     []byte
	Attempts []llm.Attempt
	Class    llm.Class
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
	tr, f := r.run(ctx, req, func(ctx context.Context, b *Backend, a *attempt) error {
		resp, err := b.Up.Complete(ctx, req, b.Model)
		if err != nil {
			return err
		}
		res = &Result{Response: resp, Backend: b}
		a.header, a.output = resp.Header, resp.Body
		if resp.Usage != (llm.Usage{}) {
			a.usage = &resp.Usage
		}
		return nil
	})
	if f != nil {
		return nil, f
	}
	res.Attempts, res.ID = tr.Attempts, tr.ID
	return res, nil
}

// Stream serves a streaming request into sink. The returned Failure is set
// only when nothing was written yet, so the caller can still answer with a
// plain HTTP error.
func (r *Router) Stream(ctx context.Context, req *llm.Request, sink Sink) *Failure {
	_, f := r.run(ctx, req, func(ctx context.Context, b *Backend, a *attempt) error {
		return r.streamOne(ctx, req, b, a, sink)
	})
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
	// keepOutput asks streamOne to keep the stream's events.
	keepOutput bool
}

type attemptFunc func(ctx context.Context, b *Backend, a *attempt) error

// run is the failover loop shared by streams and plain requests.
func (r *Router) run(ctx context.Context, req *llm.Request, try attemptFunc) (*llm.Trace, *Failure) {
	start := time.Now()
	tr := &llm.Trace{ID: newID(), Start: start, Endpoint: string(req.Endpoint), Model: req.Model, Stream: req.Stream}
	route, err := r.Table().Resolve(req.Model)
	if err != nil {
		var re *ResolveError
		errors.As(err, &re)
		f := &Failure{Status: re.Status, Type: errorType(re.Status), Code: re.Code, Message: re.Message, Class: llm.Caller}
		r.finish(tr, start, f)
		return tr, f
	}
	tr.Chain = route.Chain

	// Pass by unavailable backends, unless every one of them is: then try
	// them in order anyway, since refusing outright helps nobody.
	// A backend at a quota or shut out by a budget is passed by even then.
	skip := make([]error, len(route.Backends))
	var hard []bool
	usable := 0
	for i, b := range route.Backends {
		if r.admit != nil {
			if err := r.admit.Available(route.Chain, b); err != nil {
				if hard == nil {
					hard = make([]bool, len(route.Backends))
				}
				skip[i], hard[i] = err, true
				continue
			}
		}
		skip[i] = r.gate.Available(b.Provider, b.Name)
		if skip[i] == nil {
			usable++
		}
	}
	tooLong := -1 // context size of a backend that found the prompt too long
	var final *llm.Error
	var blocked error // a block budget that refused a backend
	for i, b := range route.Backends {
		if (usable > 0 || hard != nil && hard[i]) && skip[i] != nil {
			if budgetBlocked(skip[i]) {
				blocked = skip[i]
			}
			tr.Attempts = append(tr.Attempts, llm.Attempt{Backend: b.Name, Class: skipClass(skip[i]), Skipped: true, Reason: skip[i].Error()})
			continue
		}
		if tooLong >= 0 && b.Context != 0 && b.Context <= tooLong {
			tr.Attempts = append(tr.Attempts, llm.Attempt{Backend: b.Name, Class: llm.TooLong, Skipped: true,
				Reason: fmt.Sprintf("context %d not larger than %d", b.Context, tooLong)})
			continue
		}
		if ctx.Err() != nil {
			final = &llm.Error{Class: llm.Cancelled, Message: "client went away"}
			break
		}
		var hold Hold
		if r.admit != nil {
			// Another request may have used the last of a quota or a
			// budget since the scan above.
			var err error
			if hold, err = r.admit.Admit(req, route.Chain, b); err != nil {
				if budgetBlocked(err) {
					blocked = err
				}
				tr.Attempts = append(tr.Attempts, llm.Attempt{Backend: b.Name, Class: skipClass(err), Skipped: true, Reason: err.Error()})
				continue
			}
		}
		var ticket uint64
		if usable > 0 {
			// Another request may have taken a half-open backend's single
			// trial since the scan above.
			var err error
			if ticket, err = r.gate.Acquire(b.Provider, b.Name); err != nil {
				if hold != nil {
					hold.Release()
				}
				tr.Attempts = append(tr.Attempts, llm.Attempt{Backend: b.Name, Class: skipClass(err), Skipped: true, Reason: err.Error()})
				continue
			}
		}
		a := attempt{Attempt: llm.Attempt{Backend: b.Name}, trace: tr, keepOutput: hold != nil}
		t0 := time.Now()
		err := try(ctx, b, &a)
		a.Latency = time.Since(t0)
		committed := errors.Is(err, errCommitted)
		var le *llm.Error
		if committed {
			// The attempt reached the client; a later failure of it was
			// already reported and written by streamOne.
			le = a.late
		} else if err != nil {
			le = classify(ctx, err)
		}
		if le == nil {
			a.Class = llm.OK
		} else {
			a.Class, a.Status, a.Reason = le.Class, le.Status, le.Message
		}
		firstByte := a.TTFT
		if !req.Stream {
			firstByte = a.Latency
		}
		r.gate.Report(b.Provider, b.Name, ticket, le, firstByte)
		if hold != nil {
			h := a.header
			if h == nil && le != nil {
				h = le.Header
			}
			hold.Settle(llm.CallUsage{Usage: a.usage, Output: a.output, Header: h, Err: le, Attempt: &a.Attempt})
			tr.Cost += a.Cost
		}
		tr.Attempts = append(tr.Attempts, a.Attempt)
		if le == nil || committed {
			tr.Backend, tr.TTFT, tr.Committed = b.Name, a.TTFT, committed
			switch {
			case a.usage != nil:
				tr.Usage = *a.usage
			case a.Estimated:
				tr.Usage = llm.Usage{PromptTokens: a.PromptTokens, CompletionTokens: a.CompletionTokens,
					TotalTokens: a.PromptTokens + a.CompletionTokens}
			}
			if le != nil {
				tr.Class, tr.Error = le.Class, le.Message
				tr.Status = http.StatusOK
				r.finishTrace(tr, start)
				return tr, nil
			}
			tr.Class, tr.Status = llm.OK, http.StatusOK
			r.finishTrace(tr, start)
			return tr, nil
		}
		final = le
		if !le.Class.FailsOver() || route.Pinned {
			break
		}
		if le.Class == llm.TooLong {
			tooLong = max(tooLong, b.Context)
		}
	}
	f := r.failure(route, tr, final)
	if blocked != nil && f.Class != llm.Cancelled && f.Class != llm.Caller {
		// Nothing served and a budget kept paid backends out: that is
		// what the user must hear about, not the free backends' failures.
		f = &Failure{Status: http.StatusPaymentRequired, Type: "insufficient_quota", Code: "budget_exceeded",
			Message: strings.TrimPrefix(blocked.Error(), "budget: "), Attempts: tr.Attempts, Class: llm.Quota}
	}
	r.finish(tr, start, f)
	return tr, f
}

// budgetBlocked reports whether err is a refusal by a block budget.
func budgetBlocked(err error) bool {
	var b interface{ BudgetBlocked() bool }
	return errors.As(err, &b) && b.BudgetBlocked()
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

// skipClass is the class a skipped backend counts as when the router decides
// between 429 and 502: a backend cooling down after a rate limit says so by
// implementing RateLimited.
func skipClass(err error) llm.Class {
	var rl interface{ RateLimited() bool }
	if errors.As(err, &rl) && rl.RateLimited() {
		return llm.RateLimited
	}
	var q interface{ Quota() bool }
	if errors.As(err, &q) && q.Quota() {
		return llm.Quota
	}
	return llm.Transient
}

// failure builds the client's error once the loop ended without an answer.
func (r *Router) failure(route Route, tr *llm.Trace, last *llm.Error) *Failure {
	f := &Failure{Attempts: tr.Attempts}
	switch {
	case last != nil && last.Class == llm.Cancelled:
		f.Status, f.Class, f.Code, f.Message = 499, llm.Cancelled, "client_closed_request", "the client went away"
		return f
	case last != nil && last.Class == llm.Caller:
		f.Status, f.Class, f.Body = last.Status, llm.Caller, last.Body
		f.Type, f.Code = errorType(last.Status), "upstream_rejected_request"
		f.Message = fmt.Sprintf("%s rejected the request: %s", tr.Attempts[len(tr.Attempts)-1].Backend, last.Message)
		return f
	case route.Pinned && last != nil:
		f.Class = last.Class
		f.Status = statusFor(last.Class)
		f.Type, f.Code = errorType(f.Status), "backend_failed"
		f.Message = fmt.Sprintf("%s failed (no failover for a pinned provider/model): %s", route.Backends[0].Name, last.Message)
		return f
	}
	allLimited := len(tr.Attempts) > 0
	var parts []string
	for _, a := range tr.Attempts {
		// A quota used up is a rate limit the user configured.
		if a.Class != llm.RateLimited && a.Class != llm.Quota {
			allLimited = false
		}
		parts = append(parts, a.Backend+": "+a.Reason)
	}
	f.Class = llm.Transient
	f.Status, f.Type, f.Code = http.StatusBadGateway, "upstream_error", "all_backends_failed"
	if allLimited {
		f.Class = llm.RateLimited
		f.Status, f.Type, f.Code = http.StatusTooManyRequests, "rate_limit_error", "all_backends_rate_limited"
	}
	name := route.Chain
	if name == "" {
		name = tr.Model
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

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "authentication_error"
	case status >= 400 && status < 500:
		return "invalid_request_error"
	case status == http.StatusServiceUnavailable:
		return "service_unavailable"
	}
	return "upstream_error"
}

func (r *Router) finish(tr *llm.Trace, start time.Time, f *Failure) {
	tr.Status, tr.Class, tr.Error = f.Status, f.Class, f.Message
	r.finishTrace(tr, start)
}

func (r *Router) finishTrace(tr *llm.Trace, start time.Time) {
	tr.Latency = time.Since(start)
	if r.rec != nil {
		r.rec.Record(*tr)
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
			sb.WriteString(skipWord(a))
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

func skipWord(a llm.Attempt) string {
	if a.Class == llm.TooLong || a.Class == llm.Quota {
		return string(a.Class)
	}
	word, _, _ := strings.Cut(a.Reason, " ")
	return word
}

// newID returns a request ID that starts with the time in milliseconds, so
// IDs sort by time and the request log's index grows at its end, followed by
// random bytes so IDs never collide.
func newID() string {
	var b [14]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return "req_" + hex.EncodeToString(b[:])
}
