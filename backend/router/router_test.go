package router_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"freelane/backend/breaker"
	"freelane/backend/llm"
	"freelane/backend/router"
)

// step is one scripted answer of a fake stream's Next.
type step struct {
	ev  llm.Event
	err error
	// cancel makes the client go away just before this step; with err nil
	// the step then fails the way a provider does (ClassifyTransport).
	cancel bool
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
	script []step
	// openErr is returned by Stream or Complete itself.
	openErr error
	resp    *llm.Response
	cancel  context.CancelFunc // the client's cancel, for cancel steps

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
	s.ops = append(s.ops, "commit "+b.Name)
	s.backend = b.Name
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

// recGate is a Gate that records every report; deny makes Allow refuse.
type recGate struct {
	mu      sync.Mutex
	deny    map[string]error
	reports []string
}

func (g *recGate) Allow(provider, backend string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.deny[backend]
}

func (g *recGate) Report(provider, backend string, e *llm.Error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := llm.OK
	if e != nil {
		c = e.Class
	}
	g.reports = append(g.reports, backend+"="+string(c))
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
	h := &harness{ups: map[string]*fakeUp{}, gate: &recGate{deny: map[string]error{}}, rec: &recRecorder{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	t.Cleanup(h.cancel)
	var spec router.Spec
	for i, p := range []string{"a", "b", "c"} {
		up := &fakeUp{t: t, cancel: h.cancel, resp: &llm.Response{Status: 200, Body: []byte(`{"from":"` + p + `"}`), Usage: llm.Usage{TotalTokens: 7}}}
		h.ups[p] = up
		ctxLen := 0
		if i < len(contexts) {
			ctxLen = contexts[i]
		}
		spec.Providers = append(spec.Providers, router.ProviderSpec{Name: p, Tier: router.TierFree, HasKey: true,
			Models: []router.ModelSpec{{ID: "m", Context: ctxLen}}, Up: up})
	}
	spec.Chains = []router.ChainSpec{{Name: "main", Backends: []string{"a/m", "b/m", "c/m"}}}
	h.r = router.New(router.Build(spec), h.gate, h.rec, quiet)
	h.sink = &recSink{ups: h.ups}
	return h
}

func (h *harness) calls() string {
	var parts []string
	for _, p := range []string{"a", "b", "c"} {
		parts = append(parts, fmt.Sprintf("%s:%d", p, h.ups[p].calls))
	}
	return strings.Join(parts, " ")
}

func streamReq(t *testing.T, model string, wantsUsage bool) *llm.Request {
	t.Helper()
	body := `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	if wantsUsage {
		body = `{"model":"` + model + `","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	}
	r, err := llm.ParseRequest(llm.Chat, []byte(body))
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
			deny: map[string]error{"a/m": &breaker.Unavailable{Reason: breaker.Open, Detail: "2 failures in a row"}},
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
			reports: nil,
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
			name:    "client goes away before content: no report, no failover",
			scripts: map[string][]step{"a": {held(`a-role`), {cancel: true}}},
			reports: nil,
			calls:   "a:1 b:0 c:0",
			status:  499,
			class:   llm.Cancelled,
		},
		{
			name:    "client goes away before content, upstream error unclassified",
			scripts: map[string][]step{"a": {held(`a-role`), {cancel: true, err: context.Canceled}}},
			reports: nil,
			calls:   "a:1 b:0 c:0",
			status:  499,
			class:   llm.Cancelled,
		},
		{
			name:      "client goes away after content: no error event, no done, no report",
			scripts:   map[string][]step{"a": {content(`a-hi`), {cancel: true}}},
			ops:       []string{"commit a/m", "send a-hi"},
			reports:   nil,
			committed: "a/m=ok",
			calls:     "a:1 b:0 c:0",
			class:     llm.Cancelled,
		},
		{
			name:      "client goes away after content, upstream error unclassified",
			scripts:   map[string][]step{"a": {content(`a-hi`), {cancel: true, err: errors.New("read tcp: use of closed network connection")}}},
			ops:       []string{"commit a/m", "send a-hi"},
			reports:   nil,
			committed: "a/m=ok",
			calls:     "a:1 b:0 c:0",
			class:     llm.Cancelled,
		},
		{
			name:      "writing to the client fails: no report against the backend",
			failSend:  2,
			scripts:   map[string][]step{"a": {content(`a-hi`), content(`a-more`), content(`a-never`), done()}},
			ops:       []string{"commit a/m", "send a-hi"},
			reports:   nil,
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
	r, err := llm.ParseRequest(llm.Chat, []byte(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestComplete(t *testing.T) {
	limited := &breaker.Unavailable{Reason: breaker.CoolingOff, Detail: "HTTP 429"}
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
			reports: []string{"c/m=ok"},
		},
		{
			name:     "too long with no larger context left",
			contexts: []int{32768, 8192, 32768},
			openErr:  map[string]error{"a": httpErr(llm.TooLong, 400)},
			header:   "a/m=400; b/m=skip(too_long); c/m=skip(too_long)",
			status:   502, code: "all_backends_failed", msg: `all 3 backends for "main" failed`,
		},
		{
			name:    "caller error stops at once with the upstream body",
			openErr: map[string]error{"a": &llm.Error{Class: llm.Caller, Status: 422, Message: "HTTP 422: bad", Body: []byte(`{"detail":"bad"}`)}},
			header:  "a/m=422",
			status:  422, code: "upstream_rejected_request", msg: "a/m rejected the request: HTTP 422: bad",
		},
		{
			name:    "skips unavailable backends",
			deny:    map[string]error{"a/m": limited, "b/m": &breaker.Unavailable{Reason: breaker.Retired}},
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
			tr := h.rec.last(t)
			if got := router.AttemptsHeader(tr.Attempts); got != tc.header {
				t.Errorf("attempts = %q, want %q", got, tc.header)
			}
			if tc.backend != "" {
				if f != nil {
					t.Fatalf("Failure %d: %s", f.Status, f.Message)
				}
				if res.Backend.Name != tc.backend || string(res.Response.Body) != `{"from":"`+strings.TrimSuffix(tc.backend, "/m")+`"}` {
					t.Errorf("served by %s with %s, want %s", res.Backend.Name, res.Response.Body, tc.backend)
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
				t.Fatalf("served by %s, want a failure", res.Backend.Name)
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
	h.r.Swap(router.Build(router.Spec{Providers: []router.ProviderSpec{{Name: "z", Tier: router.TierLocal, HasKey: true, Models: []router.ModelSpec{{ID: "m"}}, Up: up}}}))
	if h.r.Table() == old {
		t.Fatal("Swap did not install the table")
	}
	res, f := h.r.Complete(h.ctx, completeReq(t, "auto"))
	if f != nil || res.Backend.Name != "z/m" {
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
			{Backend: "cerebras/qwen", Class: llm.Transient, Skipped: true, Reason: (&breaker.Unavailable{Reason: breaker.Open}).Error()},
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
