package router_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/events"
	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/protocol/openai"
	"freelane/backend/router"
	"freelane/backend/tier"
)

// step is one scripted answer of a fake stream's Next.
type step struct {
	ev  llm.Event
	err error
	// cancel makes the client go away just before this step; with err nil
	// the step then fails the way a provider does (ClassifyTransport).
	cancel bool
	// pause delays the step, so a stream's TTFT and total latency differ.
	pause time.Duration
	// panics, when set, makes Next panic with it: a bug in an adapter.
	panics any
}

func held(data string) step    { return step{ev: llm.Event{Kind: llm.Held, Data: []byte(data)}} }
func content(data string) step { return step{ev: llm.Event{Kind: llm.Content, Data: []byte(data)}} }
func done() step               { return step{ev: llm.Event{Kind: llm.Done}} }
func fails(e *llm.Error) step  { return step{err: e} }
func failsRaw(err error) step  { return step{err: err} }
func usage(data string, n int) step {
	return step{ev: llm.Event{Kind: llm.UsageOnly, Data: []byte(data), Usage: &llm.Usage{PromptTokens: n, CompletionTokens: n, TotalTokens: 2 * n}}}
}

func httpErr(c llm.Class, status int) *llm.Error {
	return &llm.Error{Class: c, Status: status, Message: fmt.Sprintf("HTTP %d: %s", status, c)}
}

// fakeUp is an in-memory Upstream answering from a script.
type fakeUp struct {
	t      *testing.T
	name   string
	script []step
	// openErr is returned by Stream or Complete itself.
	openErr error
	// answer, when set, decides what Complete returns instead of openErr
	// (nil: the response).
	answer func() error
	// note, when set, hears "call <name>" as each call starts.
	note   func(string)
	resp   *llm.Response
	cancel context.CancelFunc // the client's cancel, for cancel steps

	mu     sync.Mutex
	calls  int
	models []string
	closed int
	// contentOut is set once a stream of this upstream handed out a
	// content event.
	contentOut bool
}

func (u *fakeUp) Complete(ctx context.Context, req *llm.Request, model string) (*llm.Response, error) {
	u.mu.Lock()
	u.calls++
	u.models = append(u.models, model)
	u.mu.Unlock()
	if u.note != nil {
		u.note("call " + u.name)
	}
	if u.answer != nil {
		if err := u.answer(); err != nil {
			return nil, err
		}
		return u.resp, nil
	}
	if u.openErr != nil {
		return nil, u.openErr
	}
	return u.resp, nil
}

func (u *fakeUp) Stream(ctx context.Context, req *llm.Request, model string) (llm.EventStream, error) {
	u.mu.Lock()
	u.calls++
	u.models = append(u.models, model)
	u.mu.Unlock()
	if u.note != nil {
		u.note("call " + u.name)
	}
	if u.openErr != nil {
		return nil, u.openErr
	}
	return &fakeStream{up: u, ctx: ctx, steps: u.script, buf: make([]byte, 0, 4096)}, nil
}

type fakeStream struct {
	up    *fakeUp
	ctx   context.Context
	steps []step
	i     int
	buf   []byte
}

func (s *fakeStream) Header() http.Header { return http.Header{} }

func (s *fakeStream) Next() (llm.Event, error) {
	if s.i >= len(s.steps) {
		s.up.t.Errorf("Next called after the end of the script")
		return llm.Event{}, io.ErrUnexpectedEOF
	}
	st := s.steps[s.i]
	s.i++
	if st.pause > 0 {
		time.Sleep(st.pause)
	}
	if st.panics != nil {
		panic(st.panics)
	}
	if st.cancel {
		s.up.cancel()
		if st.err == nil {
			return llm.Event{}, llm.ClassifyTransport(s.ctx, context.Canceled)
		}
	}
	if st.err != nil {
		return llm.Event{}, st.err
	}
	ev := st.ev
	if ev.Kind == llm.Content {
		s.up.mu.Lock()
		s.up.contentOut = true
		s.up.mu.Unlock()
	}
	// Data is only valid until the next call, as with a real stream: the
	// buffer is reused, so a router that keeps it without copying sends
	// garbage.
	s.buf = append(s.buf[:0], ev.Data...)
	if ev.Data != nil {
		ev.Data = s.buf
	}
	return ev, nil
}

func (s *fakeStream) Close() error {
	s.up.mu.Lock()
	s.up.closed++
	s.up.mu.Unlock()
	return nil
}

// recSink records what the client would have seen.
type recSink struct {
	ups       map[string]*fakeUp
	ops       []string
	early     []string // sends before the committed upstream produced content
	flushes   []bool
	committed []llm.Attempt
	backend   string
	failed    *llm.Error
	failSend  int // the nth Send (1-based) fails: the client went away
	sends     int
}

func (s *recSink) Commit(id string, b *router.Backend, attempts []llm.Attempt) error {
	if !strings.HasPrefix(id, "req_") {
		return fmt.Errorf("bad id %q", id)
	}
	if b == nil {
		// A response-cache hit commits without a backend.
		s.ops = append(s.ops, "commit cache")
		return nil
	}
	s.ops = append(s.ops, "commit "+b.Name())
	s.backend = b.Name()
	s.committed = slices.Clone(attempts)
	return nil
}

func (s *recSink) Send(data []byte, flush bool) error {
	s.sends++
	if s.sends == s.failSend {
		return errors.New("write: broken pipe")
	}
	s.ops = append(s.ops, "send "+string(data))
	if up := s.ups[strings.TrimSuffix(s.backend, "/m")]; up == nil || !up.contentOut {
		s.early = append(s.early, string(data))
	}
	s.flushes = append(s.flushes, flush)
	return nil
}

func (s *recSink) Fail(e *llm.Error) {
	s.ops = append(s.ops, "fail "+string(e.Class))
	s.failed = e
}

func (s *recSink) Done() error {
	s.ops = append(s.ops, "done")
	return nil
}

// recGate is a Gate that records every question and report in order; deny
// makes Available refuse, refuse makes Allow refuse. Granted calls get
// tickets 101, 102, ..., which their done reports; a call made without
// Allow reports ticket 0. With inner set it passes everything on to that
// Gate (a real breaker) and still records.
type recGate struct {
	inner router.Gate
	// dones counts done functions handed out and not yet called.
	dones atomic.Int64

	mu        sync.Mutex
	deny      map[string]error
	refuse    map[string]error
	log       []string // "available a/m", "acquire a/m", "call a", "report a/m=ok"
	logTicket []uint64 // per log line: the ticket granted or reported (0 otherwise)
	reports   []string // "a/m=ok"
	tickets   []uint64 // the ticket of each report
	firstByte []time.Duration
	issued    uint64
}

var _ router.Gate = (*recGate)(nil)

// The real breaker is what the router is built for.
var _ router.Gate = (*breaker.Set)(nil)

func (g *recGate) note(s string) { g.noteTicket(s, 0) }

func (g *recGate) noteTicket(s string, ticket uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.log = append(g.log, s)
	g.logTicket = append(g.logTicket, ticket)
}

// skipOf is how a test's refusal reaches the router: as the breaker's own
// skip when it is a breaker refusal.
func skipOf(err error) *llm.Skip {
	if err == nil {
		return nil
	}
	var u *breaker.Unavailable
	if errors.As(err, &u) {
		return u.Skip()
	}
	return &llm.Skip{Class: llm.Transient, Reason: err.Error(), Err: err}
}

func (g *recGate) Available(id llm.BackendID) *llm.Skip {
	backend := id.String()
	g.note("available " + backend)
	if g.inner != nil {
		return g.inner.Available(id)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return skipOf(g.deny[backend])
}

func (g *recGate) Allow(id llm.BackendID) (func(*llm.Error, time.Duration), *llm.Skip) {
	ticket, inner, sk := g.acquire(id)
	g.noteTicket("acquire "+id.String(), ticket)
	if sk != nil {
		return nil, sk
	}
	return g.done(id, ticket, inner), nil
}

func (g *recGate) Unchecked(id llm.BackendID) func(*llm.Error, time.Duration) {
	var inner func(*llm.Error, time.Duration)
	if g.inner != nil {
		inner = g.inner.Unchecked(id)
	}
	return g.done(id, 0, inner)
}

func (g *recGate) done(id llm.BackendID, ticket uint64, inner func(*llm.Error, time.Duration)) func(*llm.Error, time.Duration) {
	g.dones.Add(1)
	return func(e *llm.Error, firstByte time.Duration) {
		g.dones.Add(-1)
		g.Report(id, ticket, e, firstByte)
		if inner != nil {
			inner(e, firstByte)
		}
	}
}

func (g *recGate) acquire(id llm.BackendID) (uint64, func(*llm.Error, time.Duration), *llm.Skip) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inner != nil {
		done, sk := g.inner.Allow(id)
		if sk != nil {
			return 0, nil, sk
		}
		g.issued++
		return 100 + g.issued, done, nil
	}
	backend := id.String()
	if err := g.refuse[backend]; err != nil {
		return 0, nil, skipOf(err)
	}
	if err := g.deny[backend]; err != nil {
		return 0, nil, skipOf(err)
	}
	g.issued++
	return 100 + g.issued, nil, nil
}

func (g *recGate) Report(id llm.BackendID, ticket uint64, e *llm.Error, firstByte time.Duration) {
	backend := id.String()
	c := llm.OK
	if e != nil {
		c = e.Class
	}
	g.noteTicket("report "+backend+"="+string(c), ticket)
	g.mu.Lock()
	g.reports = append(g.reports, backend+"="+string(c))
	g.tickets = append(g.tickets, ticket)
	g.firstByte = append(g.firstByte, firstByte)
	g.mu.Unlock()
}

// checkAcquired checks the gate's log: every call is made right after the
// backend was acquired, every granted Acquire is followed by its call, and
// each report carries the ticket its Acquire got. With everything
// unavailable the router calls without acquiring and reports ticket 0.
func (g *recGate) checkAcquired(t *testing.T, allUnavailable bool) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	granted := map[string]uint64{} // backend -> ticket of its last granted Acquire
	for i, l := range g.log {
		if name, ok := strings.CutPrefix(l, "acquire "); ok && g.logTicket[i] != 0 {
			granted[name] = g.logTicket[i]
		}
		if rep, ok := strings.CutPrefix(l, "report "); ok {
			name, _, _ := strings.Cut(rep, "=")
			want := granted[name]
			if allUnavailable {
				want = 0
			}
			if g.logTicket[i] != want || (!allUnavailable && want == 0) {
				t.Errorf("log %q: %q reported ticket %d, want %d, the ticket of its Acquire", g.log, l, g.logTicket[i], want)
			}
			delete(granted, name)
		}
		if name, ok := strings.CutPrefix(l, "call "); ok {
			prev := ""
			if i > 0 {
				prev = g.log[i-1]
			}
			if allUnavailable {
				if strings.HasPrefix(prev, "acquire ") {
					t.Errorf("log %q: acquired although every backend was unavailable", g.log)
				}
				continue
			}
			if prev != "acquire "+name+"/m" {
				t.Errorf("log %q: %q not right after acquiring it", g.log, l)
			}
		}
		if name, ok := strings.CutPrefix(l, "acquire "); ok && g.refuse[name] == nil && g.deny[name] == nil {
			if i+1 >= len(g.log) || g.log[i+1] != "call "+strings.TrimSuffix(name, "/m") {
				t.Errorf("log %q: %q granted but not called", g.log, l)
			}
		}
	}
}

type recRecorder struct {
	mu     sync.Mutex
	traces []llm.Trace
}

func (r *recRecorder) Record(t llm.Trace) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.traces = append(r.traces, t)
}

func (r *recRecorder) last(t *testing.T) llm.Trace {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.traces) != 1 {
		t.Fatalf("%d traces recorded, want 1", len(r.traces))
	}
	return r.traces[0]
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// harness is a router over providers a, b and c, one model "m" each, in a
// chain "main" a -> b -> c.
type harness struct {
	ups    map[string]*fakeUp
	gate   *recGate
	rec    *recRecorder
	r      *router.Router
	sink   *recSink
	ctx    context.Context
	cancel context.CancelFunc
}

func newHarness(t *testing.T, contexts ...int) *harness {
	return newHarnessGate(t, nil, contexts...)
}

// newHarnessGate is newHarness with a real Gate behind the recording one.
func newHarnessGate(t *testing.T, inner router.Gate, contexts ...int) *harness {
	h := &harness{ups: map[string]*fakeUp{}, gate: &recGate{inner: inner, deny: map[string]error{}, refuse: map[string]error{}}, rec: &recRecorder{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	t.Cleanup(h.cancel)
	var spec router.Spec
	for i, p := range []string{"a", "b", "c"} {
		up := &fakeUp{t: t, name: p, note: h.gate.note, cancel: h.cancel, resp: &llm.Response{Status: 200, Body: []byte(`{"from":"` + p + `"}`), Usage: llm.Usage{TotalTokens: 7}}}
		h.ups[p] = up
		ctxLen := 0
		if i < len(contexts) {
			ctxLen = contexts[i]
		}
		spec.Providers = append(spec.Providers, router.ProviderSpec{Name: p, Tier: tier.Free, HasKey: true,
			Models: []router.ModelSpec{{ID: "m", Context: ctxLen}}, Up: up})
	}
	spec.Chains = []router.ChainSpec{{Name: "main", Backends: ids("a/m", "b/m", "c/m")}}
	h.r = router.New(router.Build(spec), h.gate, h.rec, nil, quiet)
	h.sink = &recSink{ups: h.ups}
	return h
}

func (h *harness) calls() string {
	var parts []string
	for _, p := range []string{"a", "b", "c"} {
		h.ups[p].mu.Lock()
		parts = append(parts, fmt.Sprintf("%s:%d", p, h.ups[p].calls))
		h.ups[p].mu.Unlock()
	}
	return strings.Join(parts, " ")
}

func streamReq(t *testing.T, model string, wantsUsage bool) *llm.Request {
	t.Helper()
	body := `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	if wantsUsage {
		body = `{"model":"` + model + `","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	}
	r, err := openai.ParseRequest(llm.Chat, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func attemptsSummary(as []llm.Attempt) string {
	var parts []string
	for _, a := range as {
		s := a.Backend + "=" + string(a.Class)
		if a.Skipped {
			s += "(skipped)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestStreamCommitRule(t *testing.T) {
	cut := &llm.Error{Class: llm.Transient, Message: "stream went idle"}
	tests := []struct {
		name       string
		scripts    map[string][]step
		openErr    map[string]error
		deny       map[string]error
		model      string
		wantsUsage bool
		failSend   int

		ops       []string // what the client saw, in order
		reports   []string // what the gate heard
		committed string   // attempts passed to Commit
		calls     string
		status    int // of the returned Failure, 0 for none
		class     llm.Class
	}{
		{
			name: "held events wait for the first content",
			scripts: map[string][]step{"a": {
				held(`a-role`), held(`a-empty`), content(`a-hi`), held(`a-finish`), content(`a-there`), done()}},
			ops:       []string{"commit a/m", "send a-role", "send a-empty", "send a-hi", "send a-finish", "send a-there", "done"},
			reports:   []string{"a/m=ok"},
			committed: "a/m=ok",
			calls:     "a:1 b:0 c:0",
			class:     llm.OK,
		},
		{
			name: "error before content fails over and nothing of the first backend is sent",
			scripts: map[string][]step{
				"a": {held(`a-role`), held(`a-empty`), fails(httpErr(llm.Transient, 503))},
				"b": {held(`b-role`), content(`b-hi`), done()},
			},
			ops:       []string{"commit b/m", "send b-role", "send b-hi", "done"},
			reports:   []string{"a/m=transient", "b/m=ok"},
			committed: "a/m=transient b/m=ok",
			calls:     "a:1 b:1 c:0",
			class:     llm.OK,
		},
		{
			name:      "stream that cannot open fails over",
			openErr:   map[string]error{"a": httpErr(llm.RateLimited, 429), "b": httpErr(llm.Credential, 401)},
			scripts:   map[string][]step{"c": {content(`c-hi`), done()}},
			ops:       []string{"commit c/m", "send c-hi", "done"},
			reports:   []string{"a/m=rate_limited", "b/m=credential", "c/m=ok"},
			committed: "a/m=rate_limited b/m=credential c/m=ok",
			calls:     "a:1 b:1 c:1",
			class:     llm.OK,
		},
		{
			name: "done before any content is a soft failure",
			scripts: map[string][]step{
				"a": {held(`a-role`), held(`a-finish`), done()},
				"b": {content(`b-hi`), done()},
			},
			ops:       []string{"commit b/m", "send b-hi", "done"},
			reports:   []string{"a/m=soft", "b/m=ok"},
			committed: "a/m=soft b/m=ok",
			calls:     "a:1 b:1 c:0",
			class:     llm.OK,
		},
		{
			name: "error after content ends the stream without done and without failover",
			scripts: map[string][]step{
				"a": {held(`a-role`), content(`a-hi`), content(`a-more`), fails(cut)},
				"b": {content(`b-hi`), done()},
			},
			ops:       []string{"commit a/m", "send a-role", "send a-hi", "send a-more", "fail transient"},
			reports:   []string{"a/m=transient"},
			committed: "a/m=ok",
			calls:     "a:1 b:0 c:0",
			class:     llm.Transient,
		},
		{
			name: "unclassified error after content is still reported",
			scripts: map[string][]step{
				"a": {content(`a-hi`), failsRaw(io.ErrUnexpectedEOF)},
			},
			ops:       []string{"commit a/m", "send a-hi", "fail transient"},
			reports:   []string{"a/m=transient"},
			committed: "a/m=ok",
			calls:     "a:1 b:0 c:0",
			class:     llm.Transient,
		},
		{
			name:      "usage chunk dropped when the client did not ask",
			scripts:   map[string][]step{"a": {content(`a-hi`), held(`a-finish`), usage(`a-usage`, 3), done()}},
			ops:       []string{"commit a/m", "send a-hi", "send a-finish", "done"},
			reports:   []string{"a/m=ok"},
			committed: "a/m=ok",
			calls:     "a:1 b:0 c:0",
			class:     llm.OK,
		},
		{
			name:       "usage chunk forwarded when the client asked",
			wantsUsage: true,
			scripts:    map[string][]step{"a": {content(`a-hi`), usage(`a-usage`, 3), done()}},
			ops:        []string{"commit a/m", "send a-hi", "send a-usage", "done"},
			reports:    []string{"a/m=ok"},
			committed:  "a/m=ok",
			calls:      "a:1 b:0 c:0",
			class:      llm.OK,
		},
		{
			name:      "usage before content held only when asked: not asked",
			scripts:   map[string][]step{"a": {held(`a-role`), usage(`a-usage`, 3), content(`a-hi`), done()}},
			ops:       []string{"commit a/m", "send a-role", "send a-hi", "done"},
			reports:   []string{"a/m=ok"},
			committed: "a/m=ok",
			calls:     "a:1 b:0 c:0",
			class:     llm.OK,
		},
		{
			name:       "usage before content held only when asked: asked",
			wantsUsage: true,
			scripts:    map[string][]step{"a": {held(`a-role`), usage(`a-usage`, 3), content(`a-hi`), done()}},
			ops:        []string{"commit a/m", "send a-role", "send a-usage", "send a-hi", "done"},
			reports:    []string{"a/m=ok"},
			committed:  "a/m=ok",
			calls:      "a:1 b:0 c:0",
			class:      llm.OK,
		},
		{
			name: "commit lists skipped and failed attempts before the serving one",
			deny: map[string]error{"a/m": &breaker.Unavailable{Reason: breaker.ReasonOpen, Detail: "2 failures in a row"}},
			scripts: map[string][]step{
				"b": {held(`b-role`), fails(httpErr(llm.RateLimited, 429))},
				"c": {held(`c-role`), content(`c-hi`), done()},
			},
			ops:       []string{"commit c/m", "send c-role", "send c-hi", "done"},
			reports:   []string{"b/m=rate_limited", "c/m=ok"},
			committed: "a/m=transient(skipped) b/m=rate_limited c/m=ok",
			calls:     "a:0 b:1 c:1",
			class:     llm.OK,
		},
		{
			name:    "caller error is returned at once",
			openErr: map[string]error{"a": &llm.Error{Class: llm.Caller, Status: 400, Message: "HTTP 400: bad tools", Body: []byte(`{"error":{"message":"bad tools"}}`)}},
			ops:     nil,
			// Reported so a half-open trial slot is given back; the
			// breaker does not count it (see TestBreakerIgnoresCallerAndCancel).
			reports: []string{"a/m=caller"},
			calls:   "a:1 b:0 c:0",
			status:  400,
			class:   llm.Caller,
		},
		{
			name: "every backend fails before content",
			scripts: map[string][]step{
				"a": {held(`a-role`), fails(httpErr(llm.Transient, 503))},
				"b": {done()},
				"c": {fails(httpErr(llm.Gone, 404))},
			},
			reports: []string{"a/m=transient", "b/m=soft", "c/m=gone"},
			calls:   "a:1 b:1 c:1",
			status:  502,
			class:   llm.Transient,
		},
		{
			name:    "pinned backend does not fail over",
			model:   "a/m",
			scripts: map[string][]step{"a": {held(`a-role`), fails(httpErr(llm.Transient, 503))}},
			reports: []string{"a/m=transient"},
			calls:   "a:1 b:0 c:0",
			status:  502,
			class:   llm.Transient,
		},
		{
			name:    "client goes away before content: reported as cancelled, no failover",
			scripts: map[string][]step{"a": {held(`a-role`), {cancel: true}}},
			reports: []string{"a/m=cancelled"},
			calls:   "a:1 b:0 c:0",
			status:  499,
			class:   llm.Cancelled,
		},
		{
			name:    "client goes away before content, upstream error unclassified",
			scripts: map[string][]step{"a": {held(`a-role`), {cancel: true, err: context.Canceled}}},
			reports: []string{"a/m=cancelled"},
			calls:   "a:1 b:0 c:0",
			status:  499,
			class:   llm.Cancelled,
		},
		{
			name:      "client goes away after content: no error event, no done, reported as cancelled",
			scripts:   map[string][]step{"a": {content(`a-hi`), {cancel: true}}},
			ops:       []string{"commit a/m", "send a-hi"},
			reports:   []string{"a/m=cancelled"},
			committed: "a/m=ok",
			calls:     "a:1 b:0 c:0",
			class:     llm.Cancelled,
		},
		{
			name:      "client goes away after content, upstream error unclassified",
			scripts:   map[string][]step{"a": {content(`a-hi`), {cancel: true, err: errors.New("read tcp: use of closed network connection")}}},
			ops:       []string{"commit a/m", "send a-hi"},
			reports:   []string{"a/m=cancelled"},
			committed: "a/m=ok",
			calls:     "a:1 b:0 c:0",
			class:     llm.Cancelled,
		},
		{
			name:      "writing to the client fails: reported as cancelled, not against the backend",
			failSend:  2,
			scripts:   map[string][]step{"a": {content(`a-hi`), content(`a-more`), content(`a-never`), done()}},
			ops:       []string{"commit a/m", "send a-hi"},
			reports:   []string{"a/m=cancelled"},
			committed: "a/m=ok",
			calls:     "a:1 b:0 c:0",
			class:     llm.Cancelled,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for p, s := range tc.scripts {
				h.ups[p].script = s
			}
			for p, e := range tc.openErr {
				h.ups[p].openErr = e
			}
			for b, e := range tc.deny {
				h.gate.deny[b] = e
			}
			h.sink.failSend = tc.failSend
			model := tc.model
			if model == "" {
				model = "main"
			}
			f := h.r.Stream(h.ctx, streamReq(t, model, tc.wantsUsage), h.sink)

			if !slices.Equal(h.sink.ops, tc.ops) {
				t.Errorf("client saw:\n got %q\nwant %q", h.sink.ops, tc.ops)
			}
			if !slices.Equal(h.gate.reports, tc.reports) {
				t.Errorf("gate reports = %q, want %q", h.gate.reports, tc.reports)
			}
			h.gate.checkAcquired(t, false)
			if got := h.calls(); got != tc.calls {
				t.Errorf("upstream calls = %s, want %s", got, tc.calls)
			}
			if got := attemptsSummary(h.sink.committed); got != tc.committed {
				t.Errorf("Commit attempts = %q, want %q", got, tc.committed)
			}
			if tc.status == 0 && f != nil {
				t.Fatalf("Failure %d %s, want none: once committed the client already has the answer", f.Status, f.Message)
			}
			if tc.status != 0 {
				if f == nil {
					t.Fatalf("no Failure, want %d", tc.status)
				}
				if f.Status != tc.status || f.Class != tc.class {
					t.Errorf("Failure %d %s, want %d %s (%s)", f.Status, f.Class, tc.status, tc.class, f.Message)
				}
			}
			// Every opened stream is closed.
			for p, up := range h.ups {
				if opened := up.calls; up.openErr == nil && up.closed != opened {
					t.Errorf("%s: %d streams opened, %d closed", p, opened, up.closed)
				}
			}
			if len(h.sink.early) > 0 {
				t.Errorf("sent before the upstream produced its first content: %q", h.sink.early)
			}

			tr := h.rec.last(t)
			if tr.Class != tc.class {
				t.Errorf("trace class = %s, want %s", tr.Class, tc.class)
			}
			if tr.Committed != (h.sink.backend != "") {
				t.Errorf("trace committed = %v, sink committed to %q", tr.Committed, h.sink.backend)
			}
			if h.sink.backend != "" && tr.Backend != h.sink.backend {
				t.Errorf("trace backend = %q, sink committed to %q", tr.Backend, h.sink.backend)
			}
			if strings.Contains(tc.name, "usage") && tr.Usage.TotalTokens != 6 {
				t.Errorf("trace usage = %+v, want the upstream's usage whether forwarded or not", tr.Usage)
			}
		})
	}
}

func TestStreamFlushes(t *testing.T) {
	h := newHarness(t)
	more := func(s step) step { s.ev.More = true; return s }
	h.ups["a"].script = []step{held(`role`), more(content(`c1`)), content(`c2`), more(content(`c3`)), more(held(`fin`)), content(`c4`), done()}
	if f := h.r.Stream(h.ctx, streamReq(t, "main", false), h.sink); f != nil {
		t.Fatal(f)
	}
	// An event is flushed unless the upstream already has the next one
	// ready; held events go out with the content that commits.
	want := []bool{false, false, true, false, false, true}
	if !slices.Equal(h.sink.flushes, want) {
		t.Fatalf("flushes = %v, want %v (ops %q)", h.sink.flushes, want, h.sink.ops)
	}
}

func TestStreamAlreadyCancelled(t *testing.T) {
	h := newHarness(t)
	h.cancel()
	f := h.r.Stream(h.ctx, streamReq(t, "main", false), h.sink)
	if f == nil || f.Status != 499 || f.Class != llm.Cancelled {
		t.Fatalf("Failure = %+v, want 499 cancelled", f)
	}
	if h.calls() != "a:0 b:0 c:0" || len(h.gate.reports) != 0 || len(h.sink.ops) != 0 {
		t.Fatalf("calls %s reports %q ops %q, want nothing", h.calls(), h.gate.reports, h.sink.ops)
	}
}

func TestStreamModelPerBackend(t *testing.T) {
	h := newHarness(t)
	h.ups["a"].openErr = httpErr(llm.Transient, 502)
	h.ups["b"].script = []step{content(`x`), done()}
	if f := h.r.Stream(h.ctx, streamReq(t, "main", false), h.sink); f != nil {
		t.Fatal(f)
	}
	if !slices.Equal(h.ups["b"].models, []string{"m"}) {
		t.Fatalf("upstream asked for %q, want the backend's model id", h.ups["b"].models)
	}
}

func completeReq(t *testing.T, model string) *llm.Request {
	t.Helper()
	r, err := openai.ParseRequest(llm.Chat, []byte(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestComplete(t *testing.T) {
	limited := &breaker.Unavailable{Reason: breaker.ReasonCooling, Until: time.Date(2025, 3, 14, 12, 1, 0, 0, time.UTC), Detail: "HTTP 429"}
	tests := []struct {
		name     string
		contexts []int
		openErr  map[string]error
		deny     map[string]error
		model    string

		backend string // served by, empty for a failure
		header  string // AttemptsHeader of the attempts
		reports []string
		status  int
		code    string
		msg     string // substring of the failure message
	}{
		{name: "first backend answers", backend: "a/m", header: "a/m=ok", reports: []string{"a/m=ok"}},
		{
			name:    "fails over on transient, rate limit and gone",
			openErr: map[string]error{"a": httpErr(llm.Transient, 503), "b": httpErr(llm.Gone, 404)},
			backend: "c/m", header: "a/m=503; b/m=404; c/m=ok",
			reports: []string{"a/m=transient", "b/m=gone", "c/m=ok"},
		},
		{
			name:    "unclassified error counts as transient",
			openErr: map[string]error{"a": errors.New("boom")},
			backend: "b/m", header: "a/m=transient; b/m=ok",
			reports: []string{"a/m=transient", "b/m=ok"},
		},
		{
			name:     "too long skips backends whose context is not larger",
			contexts: []int{8192, 8192, 32768},
			openErr:  map[string]error{"a": httpErr(llm.TooLong, 400)},
			backend:  "c/m", header: "a/m=400; b/m=skip(too_long); c/m=ok",
			reports: []string{"a/m=too_long", "c/m=ok"},
		},
		{
			name:     "too long with no larger context left",
			contexts: []int{32768, 8192, 32768},
			openErr:  map[string]error{"a": httpErr(llm.TooLong, 400)},
			header:   "a/m=400; b/m=skip(too_long); c/m=skip(too_long)",
			reports:  []string{"a/m=too_long"},
			status:   502, code: "all_backends_failed", msg: `all 3 backends for "main" failed`,
		},
		{
			name:    "caller error stops at once with the upstream body",
			openErr: map[string]error{"a": &llm.Error{Class: llm.Caller, Status: 422, Message: "HTTP 422: bad", Body: []byte(`{"detail":"bad"}`)}},
			header:  "a/m=422",
			reports: []string{"a/m=caller"},
			status:  422, code: "upstream_rejected_request", msg: "a/m rejected the request: HTTP 422: bad",
		},
		{
			name:    "skips unavailable backends",
			deny:    map[string]error{"a/m": limited, "b/m": &breaker.Unavailable{Reason: breaker.ReasonRetired}},
			backend: "c/m", header: "a/m=skip(cooling); b/m=skip(retired); c/m=ok",
			reports: []string{"c/m=ok"},
		},
		{
			name:    "every backend unavailable: tried in order anyway",
			deny:    map[string]error{"a/m": limited, "b/m": limited, "c/m": limited},
			openErr: map[string]error{"a": httpErr(llm.RateLimited, 429)},
			backend: "b/m", header: "a/m=429; b/m=ok",
			reports: []string{"a/m=rate_limited", "b/m=ok"},
		},
		{
			name:    "all rate limited is a 429",
			deny:    map[string]error{"a/m": limited},
			openErr: map[string]error{"b": httpErr(llm.RateLimited, 429), "c": httpErr(llm.RateLimited, 429)},
			header:  "a/m=skip(cooling); b/m=429; c/m=429",
			reports: []string{"b/m=rate_limited", "c/m=rate_limited"},
			status:  429, code: "all_backends_rate_limited",
			msg: `all 3 backends for "main" failed: a/m: cooling until`,
		},
		{
			name:    "mixed failures are a 502 listing each attempt",
			openErr: map[string]error{"a": httpErr(llm.RateLimited, 429), "b": httpErr(llm.Transient, 503), "c": httpErr(llm.Credential, 401)},
			header:  "a/m=429; b/m=503; c/m=401",
			reports: []string{"a/m=rate_limited", "b/m=transient", "c/m=credential"},
			status:  502, code: "all_backends_failed",
			msg: "a/m: HTTP 429: rate_limited; b/m: HTTP 503: transient; c/m: HTTP 401: credential",
		},
		{
			name:    "pinned rate limit is a 429 without failover",
			model:   "b/m",
			openErr: map[string]error{"b": httpErr(llm.RateLimited, 429)},
			header:  "b/m=429",
			reports: []string{"b/m=rate_limited"},
			status:  429, code: "backend_failed", msg: "no failover for a pinned provider/model",
		},
		{
			name:   "unknown model",
			model:  "nope",
			status: 404, code: "model_not_found", msg: "use one of: auto, main, a/m, b/m, c/m",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.contexts...)
			for p, e := range tc.openErr {
				h.ups[p].openErr = e
			}
			for b, e := range tc.deny {
				h.gate.deny[b] = e
			}
			model := cmpOr(tc.model, "main")
			res, f := h.r.Complete(h.ctx, completeReq(t, model))
			if !slices.Equal(h.gate.reports, tc.reports) {
				t.Errorf("reports = %q, want %q", h.gate.reports, tc.reports)
			}
			h.gate.checkAcquired(t, len(tc.deny) == 3)
			tr := h.rec.last(t)
			if got := router.AttemptsHeader(tr.Attempts); got != tc.header {
				t.Errorf("attempts = %q, want %q", got, tc.header)
			}
			if tc.backend != "" {
				if f != nil {
					t.Fatalf("Failure %d: %s", f.Status, f.Message)
				}
				if res.Backend.Name() != tc.backend || string(res.Response.Body) != `{"from":"`+strings.TrimSuffix(tc.backend, "/m")+`"}` {
					t.Errorf("served by %s with %s, want %s", res.Backend.Name(), res.Response.Body, tc.backend)
				}
				if got := router.AttemptsHeader(res.Attempts); got != tc.header {
					t.Errorf("result attempts = %q, want %q", got, tc.header)
				}
				if res.ID != tr.ID || tr.Backend != tc.backend || tr.Status != 200 || tr.Class != llm.OK || tr.Usage.TotalTokens != 7 {
					t.Errorf("trace = %+v", tr)
				}
				return
			}
			if f == nil {
				t.Fatalf("served by %s, want a failure", res.Backend.Name())
			}
			if f.Status != tc.status || f.Code != tc.code || !strings.Contains(f.Message, tc.msg) {
				t.Errorf("Failure %d %s %q, want %d %s containing %q", f.Status, f.Code, f.Message, tc.status, tc.code, tc.msg)
			}
			if f.Error() != f.Message || tr.Status != f.Status || tr.Error != f.Message {
				t.Errorf("trace %d %q does not match the failure", tr.Status, tr.Error)
			}
			if tc.code == "upstream_rejected_request" && string(f.Body) != `{"detail":"bad"}` {
				t.Errorf("Body = %q, want the upstream's", f.Body)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestSwapTable(t *testing.T) {
	h := newHarness(t)
	old := h.r.Table()
	up := &fakeUp{t: t, resp: &llm.Response{Status: 200, Body: []byte(`{"from":"z"}`)}}
	h.r.Swap(router.Build(router.Spec{Providers: []router.ProviderSpec{{Name: "z", Tier: tier.Local, HasKey: true, Models: []router.ModelSpec{{ID: "m"}}, Up: up}}}))
	if h.r.Table() == old {
		t.Fatal("Swap did not install the table")
	}
	res, f := h.r.Complete(h.ctx, completeReq(t, "auto"))
	if f != nil || res.Backend.Name() != "z/m" {
		t.Fatalf("after Swap: %+v %+v", res, f)
	}
}

func TestAttemptsHeader(t *testing.T) {
	tests := []struct {
		name string
		in   []llm.Attempt
		want string
	}{
		{"none", nil, ""},
		{"ok", []llm.Attempt{{Backend: "local/qwen", Class: llm.OK, Status: 200}}, "local/qwen=ok"},
		{"status", []llm.Attempt{{Backend: "groq/llama", Class: llm.RateLimited, Status: 429}}, "groq/llama=429"},
		{"class without status", []llm.Attempt{{Backend: "a/m", Class: llm.Transient, Reason: "connection refused"}}, "a/m=transient"},
		{"soft on a 200", []llm.Attempt{{Backend: "a/m", Class: llm.Soft, Status: 200}}, "a/m=soft"},
		{"cancelled", []llm.Attempt{{Backend: "a/m", Class: llm.Cancelled}}, "a/m=cancelled"},
		{"skips", []llm.Attempt{
			{Backend: "a/m", Class: llm.Transient, Skipped: true, Reason: "open until 12:00:30 (2 failures in a row)"},
			{Backend: "b/m", Class: llm.RateLimited, Skipped: true, Reason: "cooling until 12:01:00 (HTTP 429)"},
			{Backend: "c/m", Class: llm.Transient, Skipped: true, Reason: "key_disabled until 13:00:00 (HTTP 401)"},
			{Backend: "d/m", Class: llm.Transient, Skipped: true, Reason: "retired until 13:00:00 (HTTP 404)"},
			{Backend: "e/m", Class: llm.TooLong, Skipped: true, Reason: "context 8192 not larger than 8192"},
		}, "a/m=skip(open); b/m=skip(cooling); c/m=skip(key_disabled); d/m=skip(retired); e/m=skip(too_long)"},
		{"the example of the doc comment", []llm.Attempt{
			{Backend: "groq/llama", Class: llm.RateLimited, Status: 429},
			{Backend: "cerebras/qwen", Class: llm.Transient, Skipped: true, Reason: (&breaker.Unavailable{Reason: breaker.ReasonOpen}).Error()},
			{Backend: "local/qwen", Class: llm.OK},
		}, "groq/llama=429; cerebras/qwen=skip(open); local/qwen=ok"},
		{"model ids with slashes", []llm.Attempt{{Backend: "openrouter/meta-llama/llama-3.3-70b:free", Class: llm.Gone, Status: 404}}, "openrouter/meta-llama/llama-3.3-70b:free=404"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := router.AttemptsHeader(tc.in); got != tc.want {
				t.Errorf("AttemptsHeader = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAcquireRightBeforeCall(t *testing.T) {
	t.Run("served by the first backend: the others are never acquired", func(t *testing.T) {
		h := newHarness(t)
		if _, f := h.r.Complete(h.ctx, completeReq(t, "main")); f != nil {
			t.Fatal(f)
		}
		want := []string{"available a/m", "available b/m", "available c/m", "acquire a/m", "call a", "report a/m=ok"}
		if !slices.Equal(h.gate.log, want) {
			t.Fatalf("gate log:\n got %q\nwant %q", h.gate.log, want)
		}
		if !slices.Equal(h.gate.tickets, []uint64{101}) {
			t.Fatalf("report tickets = %v, want [101], the ticket Acquire gave", h.gate.tickets)
		}
	})

	t.Run("acquire refused at call time: skipped, the next one is tried", func(t *testing.T) {
		h := newHarness(t)
		h.ups["a"].openErr = httpErr(llm.Transient, 503)
		// b looked available in the scan, but by the time the router gets to
		// it another request took its half-open trial.
		taken := &breaker.Unavailable{Reason: breaker.ReasonHalfOpen, Detail: "its trial request is in flight"}
		h.gate.refuse["b/m"] = taken
		res, f := h.r.Complete(h.ctx, completeReq(t, "main"))
		if f != nil {
			t.Fatal(f)
		}
		want := []string{
			"available a/m", "available b/m", "available c/m",
			"acquire a/m", "call a", "report a/m=transient",
			"acquire b/m",
			"acquire c/m", "call c", "report c/m=ok",
		}
		if !slices.Equal(h.gate.log, want) {
			t.Fatalf("gate log:\n got %q\nwant %q", h.gate.log, want)
		}
		if h.calls() != "a:1 b:0 c:1" || res.Backend.Name() != "c/m" {
			t.Fatalf("calls %s, served by %s", h.calls(), res.Backend.Name())
		}
		tr := h.rec.last(t)
		if got := router.AttemptsHeader(tr.Attempts); got != "a/m=503; b/m=skip(half_open); c/m=ok" {
			t.Fatalf("attempts = %q", got)
		}
		if b := tr.Attempts[1]; !b.Skipped || b.Class != llm.Transient || b.Reason != taken.Error() {
			t.Fatalf("skipped attempt = %+v", b)
		}
		// Each report carries its own call's ticket; b's refusal got none.
		if !slices.Equal(h.gate.tickets, []uint64{101, 102}) {
			t.Fatalf("report tickets = %v, want [101 102] (a's, then c's)", h.gate.tickets)
		}
		h.gate.checkAcquired(t, false)
		// Non-stream: Report gets the whole latency of each call.
		if len(h.gate.firstByte) != 2 {
			t.Fatalf("firstByte = %v", h.gate.firstByte)
		}
		for i, ai := range []int{0, 2} {
			if got, want := h.gate.firstByte[i], tr.Attempts[ai].Latency; got != want || got <= 0 {
				t.Errorf("report %d firstByte = %v, want the attempt's latency %v", i, got, want)
			}
		}
	})

	t.Run("stream: Report gets the time to first content", func(t *testing.T) {
		h := newHarness(t)
		h.ups["a"].script = []step{held(`a-role`), fails(httpErr(llm.Transient, 503))}
		h.ups["b"].script = []step{
			{ev: llm.Event{Kind: llm.Content, Data: []byte(`b-hi`)}, pause: 2 * time.Millisecond},
			{ev: llm.Event{Kind: llm.Done}, pause: 5 * time.Millisecond},
		}
		if f := h.r.Stream(h.ctx, streamReq(t, "main", false), h.sink); f != nil {
			t.Fatal(f)
		}
		tr := h.rec.last(t)
		if len(h.gate.firstByte) != 2 || len(tr.Attempts) != 2 {
			t.Fatalf("firstByte %v attempts %+v", h.gate.firstByte, tr.Attempts)
		}
		// No content from a: nothing to time.
		if h.gate.firstByte[0] != 0 {
			t.Errorf("failed attempt firstByte = %v, want 0", h.gate.firstByte[0])
		}
		b := tr.Attempts[1]
		if got := h.gate.firstByte[1]; got != b.TTFT || got < 2*time.Millisecond || got >= b.Latency {
			t.Errorf("stream firstByte = %v, want the TTFT %v (not the latency %v)", got, b.TTFT, b.Latency)
		}
		h.gate.checkAcquired(t, false)
	})
}

// evRec records breaker events.
type evRec struct {
	mu  sync.Mutex
	evs []events.Event
}

func (p *evRec) Publish(e events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = append(p.evs, e)
}

func (p *evRec) of(k events.Kind, backend string) []events.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []events.Event
	for _, e := range p.evs {
		if e.Kind == k && (backend == "" || e.Backend == backend) {
			out = append(out, e)
		}
	}
	return out
}

var t0 = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

// withBreaker is a harness whose gate is a real breaker on a manual clock.
func withBreaker(t *testing.T, s breaker.Settings) (*harness, *breaker.Set, *clocktest.Clock, *evRec) {
	clock := clocktest.New(t0)
	pub := &evRec{}
	set := breaker.New(s, clock, pub)
	return newHarnessGate(t, set), set, clock, pub
}

func (h *harness) complete(t *testing.T) (*router.Result, *router.Failure) {
	t.Helper()
	return h.r.Complete(h.ctx, completeReq(t, "main"))
}

func (h *harness) upCalls(p string) int {
	h.ups[p].mu.Lock()
	defer h.ups[p].mu.Unlock()
	return h.ups[p].calls
}

// A free tier's typical outage: the primary answers 503 for 60 s while a request
// arrives every 4 s.
func TestOutageThroughTheRouter(t *testing.T) {
	h, set, clock, pub := withBreaker(t, breaker.Settings{})
	end := t0.Add(60 * time.Second)
	trials, outageCalls := 0, 0
	h.ups["a"].answer = func() error {
		if clock.Now().Before(end) {
			outageCalls++
			if set.Status(llm.BackendID{Provider: "a", Model: "m"}).State == breaker.HalfOpen {
				trials++
			}
			return httpErr(llm.Transient, 503)
		}
		return nil
	}
	var back time.Time
	for clock.Now().Before(end.Add(60 * time.Second)) {
		res, f := h.complete(t)
		if f != nil {
			t.Fatalf("at +%v the client got %d: %s", clock.Now().Sub(t0), f.Status, f.Message)
		}
		switch {
		case res.Backend.Name() == "a/m" && back.IsZero():
			back = clock.Now()
		case back.IsZero() && res.Backend.Name() != "b/m":
			t.Fatalf("at +%v served by %s, want the next backend b/m", clock.Now().Sub(t0), res.Backend.Name())
		case !back.IsZero() && res.Backend.Name() != "a/m":
			t.Fatalf("at +%v served by %s after the primary came back", clock.Now().Sub(t0), res.Backend.Name())
		}
		clock.Advance(4 * time.Second)
	}
	periods := 0
	for _, e := range pub.of(events.StateChange, "a/m") {
		if e.To == string(breaker.Open) {
			periods++
		}
	}
	// Two failures trip it; after that the primary only sees trials, at
	// most one per open period.
	if periods == 0 || trials > periods || outageCalls != 2+trials {
		t.Errorf("primary got %d calls during the outage, %d of them trials, in %d open periods", outageCalls, trials, periods)
	}
	if back.IsZero() || back.Sub(end) > 30*time.Second {
		t.Errorf("primary served again at +%v, want within 30s of the end of the outage at +60s", back.Sub(t0))
	}
	if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.Closed {
		t.Errorf("primary %s at the end", st.State)
	}
}

func TestRetryAfterThroughTheRouter(t *testing.T) {
	h, set, clock, pub := withBreaker(t, breaker.Settings{})
	first := true
	h.ups["a"].answer = func() error {
		if first {
			first = false
			return &llm.Error{Class: llm.RateLimited, Status: 429, Message: "HTTP 429: slow down", RetryAfter: 120 * time.Second}
		}
		return nil
	}
	for clock.Now().Before(t0.Add(120 * time.Second)) {
		res, f := h.complete(t)
		if f != nil || res.Backend.Name() != "b/m" {
			t.Fatalf("at +%v: %+v %+v, want served by b/m", clock.Now().Sub(t0), res, f)
		}
		if n := h.upCalls("a"); n != 1 {
			t.Fatalf("at +%v the rate-limited backend was called %d times", clock.Now().Sub(t0), n)
		}
		clock.Advance(10 * time.Second)
	}
	if res, f := h.complete(t); f != nil || res.Backend.Name() != "a/m" {
		t.Fatalf("after 120s: %+v %+v, want a/m again", res, f)
	}
	if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.Closed || st.Failures != 0 {
		t.Fatalf("a 429 counted as a breaker failure: %+v", st)
	}
	if ev := pub.of(events.StateChange, ""); len(ev) != 0 {
		t.Fatalf("state changes: %+v", ev)
	}
}

func TestCredentialThroughTheRouter(t *testing.T) {
	h, _, clock, pub := withBreaker(t, breaker.Settings{})
	first := true
	h.ups["a"].answer = func() error {
		if first {
			first = false
			return httpErr(llm.Credential, 401)
		}
		return nil
	}
	res, f := h.complete(t)
	if f != nil || res.Backend.Name() != "b/m" {
		t.Fatalf("%+v %+v, want served by b/m", res, f)
	}
	ev := pub.of(events.KeyDisabled, "")
	if len(ev) != 1 || ev[0].Level != events.Alert || ev[0].Provider != "a" {
		t.Fatalf("key events = %+v, want one alert", ev)
	}
	clock.Advance(time.Hour - time.Second)
	res, _ = h.complete(t)
	if res.Backend.Name() != "b/m" || h.upCalls("a") != 1 || !strings.Contains(router.AttemptsHeader(res.Attempts), "a/m=skip(key_disabled)") {
		t.Fatalf("within the hour: %s, %d calls to a", router.AttemptsHeader(res.Attempts), h.upCalls("a"))
	}
	clock.Advance(time.Second)
	if res, f := h.complete(t); f != nil || res.Backend.Name() != "a/m" {
		t.Fatalf("after the hour: %+v %+v, want a/m", res, f)
	}
}

func TestHalfOpenConcurrentThroughTheRouter(t *testing.T) {
	h, set, clock, _ := withBreaker(t, breaker.Settings{})
	entered, release := make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	h.ups["a"].answer = func() error {
		switch n.Add(1) {
		case 1, 2:
			return httpErr(llm.Transient, 503)
		case 3:
			close(entered)
			<-release
		}
		return nil
	}
	for range 2 {
		if _, f := h.complete(t); f != nil {
			t.Fatal(f)
		}
	}
	if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.Open {
		t.Fatalf("a/m %s after two 503s", st.State)
	}
	clock.Advance(30 * time.Second)

	var first *router.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		first, _ = h.r.Complete(h.ctx, completeReq(t, "main"))
	}()
	<-entered // the trial is in flight
	res, f := h.complete(t)
	if f != nil || res.Backend.Name() != "b/m" || router.AttemptsHeader(res.Attempts) != "a/m=skip(half_open); b/m=ok" {
		t.Fatalf("second request: %s %+v", router.AttemptsHeader(res.Attempts), f)
	}
	close(release)
	<-done
	if first == nil || first.Backend.Name() != "a/m" {
		t.Fatalf("the trial request was not served by a/m: %+v", first)
	}
	if calls := h.upCalls("a"); calls != 3 {
		t.Fatalf("a/m got %d calls, want 2 failures and exactly one trial", calls)
	}
	if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.Closed {
		t.Fatalf("a/m %s after a successful trial", st.State)
	}
}

// When every backend is unavailable the router calls them anyway, without
// Acquire, and reports ticket 0. A half-open backend whose trial is in flight
// answering such a call must not close: only the trial decides, and the
// trial's slot stays taken until it ends.
func TestUnacquiredCallDoesNotDecideTheTrial(t *testing.T) {
	h, set, clock, pub := withBreaker(t, breaker.Settings{})
	entered, release := make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	h.ups["a"].answer = func() error {
		switch n.Add(1) {
		case 1, 2:
			return httpErr(llm.Transient, 503)
		case 3:
			close(entered)
			<-release
		}
		return nil
	}
	// b and c lose their keys: from now on only a can serve.
	h.ups["b"].openErr = httpErr(llm.Credential, 401)
	h.ups["c"].openErr = httpErr(llm.Credential, 401)
	for range 2 {
		if _, f := h.complete(t); f == nil {
			t.Fatal("served, want every backend to fail")
		}
	}
	if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.Open {
		t.Fatalf("a/m %s after two 503s", st.State)
	}
	clock.Advance(30 * time.Second)

	var first *router.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		first, _ = h.r.Complete(h.ctx, completeReq(t, "main"))
	}()
	<-entered // the trial is in flight
	res, f := h.complete(t)
	if f != nil || res.Backend.Name() != "a/m" || router.AttemptsHeader(res.Attempts) != "a/m=ok" {
		t.Fatalf("with every backend unavailable: %+v %+v, want a/m tried anyway", res, f)
	}
	h.gate.mu.Lock()
	last := h.gate.tickets[len(h.gate.tickets)-1]
	h.gate.mu.Unlock()
	if last != 0 {
		t.Fatalf("the call made without Acquire reported ticket %d, want 0", last)
	}
	if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.HalfOpen {
		t.Fatalf("a/m %s after a success outside its trial, want still half_open", st.State)
	}
	if err := set.Available(llm.BackendID{Provider: "a", Model: "m"}); err == nil {
		t.Fatal("a/m available again while its trial is still in flight")
	}
	if ev := pub.of(events.StateChange, "a/m"); ev[len(ev)-1].To != string(breaker.HalfOpen) {
		t.Fatalf("state events = %+v, want the last to be half_open", ev)
	}

	close(release)
	<-done
	if first == nil || first.Backend.Name() != "a/m" {
		t.Fatalf("the trial request was not served by a/m: %+v", first)
	}
	if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.Closed {
		t.Fatalf("a/m %s after its trial succeeded, want closed", st.State)
	}
}

// Cancelled requests and the caller's own errors reach the breaker only to
// free a trial slot: they never count against the backend.
func TestBreakerIgnoresCallerAndCancel(t *testing.T) {
	h, set, clock, _ := withBreaker(t, breaker.Settings{})
	h.ups["a"].openErr = httpErr(llm.Transient, 503)
	if _, f := h.complete(t); f != nil {
		t.Fatal(f)
	}
	before := set.Status(llm.BackendID{Provider: "a", Model: "m"})
	if before.Failures != 1 {
		t.Fatalf("Status = %+v", before)
	}
	h.ups["a"].openErr = &llm.Error{Class: llm.Caller, Status: 400, Message: "HTTP 400: bad tools"}
	if _, f := h.complete(t); f == nil || f.Class != llm.Caller {
		t.Fatalf("Failure = %+v, want the caller error", f)
	}
	h2 := newHarnessGate(t, set)
	h2.ups["a"].script = []step{held(`a-role`), {cancel: true}}
	if f := h2.r.Stream(h2.ctx, streamReq(t, "main", false), h2.sink); f == nil || f.Class != llm.Cancelled {
		t.Fatalf("Failure = %+v, want cancelled", f)
	}
	if after := set.Status(llm.BackendID{Provider: "a", Model: "m"}); after != before {
		t.Fatalf("breaker state moved:\n%+v\n%+v", before, after)
	}

	// Half-open: a caller error in the trial frees the slot for the next request.
	h.ups["a"].openErr = httpErr(llm.Transient, 503)
	if _, f := h.complete(t); f != nil {
		t.Fatal(f)
	}
	clock.Advance(30 * time.Second)
	h.ups["a"].openErr = &llm.Error{Class: llm.Caller, Status: 400, Message: "HTTP 400: bad tools"}
	h.complete(t)
	if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.HalfOpen {
		t.Fatalf("a/m %s after a caller error in its trial, want still half_open", st.State)
	}
	h.ups["a"].openErr = nil
	calls := h.upCalls("a")
	if res, f := h.complete(t); f != nil || res.Backend.Name() != "a/m" || h.upCalls("a") != calls+1 {
		t.Fatalf("after the freed trial: %+v %+v", res, f)
	}
	if st := set.Status(llm.BackendID{Provider: "a", Model: "m"}); st.State != breaker.Closed {
		t.Fatalf("a/m %s, want closed", st.State)
	}
}

// ids reads backends' text forms, as a config file gives them.
func ids(names ...string) []llm.BackendID {
	out := make([]llm.BackendID, len(names))
	for i, n := range names {
		id, err := llm.ParseBackendID(n)
		if err != nil {
			panic(err)
		}
		out[i] = id
	}
	return out
}

// recAdmission admits every call and records what each settles with.
type recAdmission struct {
	mu      sync.Mutex
	settled []llm.CallUsage
}

func (a *recAdmission) Available(string, *router.Backend) *llm.Skip { return nil }

func (a *recAdmission) Admit(*llm.Request, string, *router.Backend) (func(*llm.CallUsage), *llm.Skip) {
	return func(c *llm.CallUsage) {
		if c == nil {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		// Output is only valid while the call is settled.
		kept := *c
		kept.Output = bytes.Clone(c.Output)
		a.settled = append(a.settled, kept)
	}, nil
}

func TestLongStreamsKeepOnlyTheirFirstEvents(t *testing.T) {
	h := newHarness(t)
	adm := &recAdmission{}
	h.r.SetAdmission(adm)
	ev := `{"choices":[{"delta":{"content":"` + strings.Repeat("w", 180) + `"}}]}`
	script := []step{held(`role`)}
	for range 100 {
		script = append(script, content(ev))
	}
	h.ups["a"].script = append(script, done())
	if f := h.r.Stream(h.ctx, streamReq(t, "main", false), h.sink); f != nil {
		t.Fatal(f)
	}
	c := adm.settled[0]
	if c.ContentEvents != 100 || c.ContentBytes != 100*len(ev) {
		t.Fatalf("settled with %d content events of %d bytes, want 100 of %d", c.ContentEvents, c.ContentBytes, 100*len(ev))
	}
	if c.KeptBytes == 0 || c.KeptBytes > 4<<10 || len(c.Output) > 4<<10 || c.KeptBytes%len(ev) != 0 {
		t.Fatalf("kept %d bytes of events in %d bytes, want whole events up to 4 KiB", c.KeptBytes, len(c.Output))
	}
}

func TestStreamsStopKeepingEventsOnceUsageIsReported(t *testing.T) {
	h := newHarness(t)
	adm := &recAdmission{}
	h.r.SetAdmission(adm)
	reporting := []step{held(`role`), content(`c1`), content(`c2`), usage(`u`, 5), done()}
	silent := []step{held(`role`), content(`c1`), content(`c2`), content(`c3`), done()}
	stream := func(script []step) llm.CallUsage {
		t.Helper()
		h.ups["a"].script = script
		if f := h.r.Stream(h.ctx, streamReq(t, "main", false), h.sink); f != nil {
			t.Fatal(f)
		}
		return adm.settled[len(adm.settled)-1]
	}
	// Until the backend has reported usage three times in a row, every
	// stream keeps its content events for an estimate.
	for i := range 3 {
		if c := stream(reporting); len(c.Output) == 0 || c.ContentEvents != 2 {
			t.Fatalf("stream %d settled with %d bytes kept and %d content events, want the events kept", i+1, len(c.Output), c.ContentEvents)
		}
	}
	if c := stream(reporting); len(c.Output) != 0 || c.ContentEvents != 2 {
		t.Fatalf("fourth stream kept %d bytes (%d content events), want nothing kept", len(c.Output), c.ContentEvents)
	}
	// A stream that reports nothing has only its count of events to be
	// estimated from, and the next stream keeps its events again.
	if c := stream(silent); len(c.Output) != 0 || c.ContentEvents != 3 {
		t.Fatalf("unreported stream settled with %d bytes and %d content events, want 0 and 3", len(c.Output), c.ContentEvents)
	}
	if c := stream(silent); len(c.Output) == 0 || c.ContentEvents != 3 {
		t.Fatalf("the stream after an unreported one kept %d bytes, want its events", len(c.Output))
	}
}
