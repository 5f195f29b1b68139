package router_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/llm"
	"freelane/backend/protocol/openai"
	"freelane/backend/quota"
	"freelane/backend/router"
	"freelane/backend/tier"
)

// The benchmarks measure the router's own work per request: resolving the
// model, asking the gate, running the failover loop and the stream rule, and
// building the trace. The upstream and the sink do as little as possible.

type nopGate struct{}

func nopDone(*llm.Error, time.Duration) {}

func (nopGate) Available(llm.BackendID) *llm.Skip { return nil }
func (nopGate) Allow(llm.BackendID) (func(*llm.Error, time.Duration), *llm.Skip) {
	return nopDone, nil
}
func (nopGate) Unchecked(llm.BackendID) func(*llm.Error, time.Duration) { return nopDone }

type nopRecorder struct{}

func (nopRecorder) Record(llm.Trace) {}

type discardSink struct{ n int }

func (s *discardSink) Commit(string, *router.Backend, []llm.Attempt) error { return nil }
func (s *discardSink) Send(data []byte, flush bool) error                  { s.n += len(data); return nil }
func (s *discardSink) Fail(*llm.Error)                                     {}
func (s *discardSink) Done() error                                         { return nil }

// benchUp answers every request at once: a fixed response, or a stream of a
// role chunk, ten content chunks, a finish chunk, a usage chunk and [DONE].
type benchUp struct {
	resp   *llm.Response
	events []llm.Event
}

func (u *benchUp) Complete(context.Context, *llm.Request, string) (*llm.Response, error) {
	return u.resp, nil
}

func (u *benchUp) Stream(context.Context, *llm.Request, string) (llm.EventStream, error) {
	return &benchStream{events: u.events}, nil
}

type benchStream struct {
	events []llm.Event
	i      int
}

func (s *benchStream) Header() http.Header { return nil }
func (s *benchStream) Close() error        { return nil }
func (s *benchStream) Next() (llm.Event, error) {
	ev := s.events[s.i]
	s.i++
	return ev, nil
}

func benchRouter(b *testing.B) *router.Router {
	b.Helper()
	events := []llm.Event{{Kind: llm.Held, Data: []byte(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)}}
	for range 10 {
		events = append(events, llm.Event{Kind: llm.Content, Data: []byte(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" token"}}]}`)})
	}
	events = append(events,
		llm.Event{Kind: llm.Held, Data: []byte(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)},
		llm.Event{Kind: llm.UsageOnly, Data: []byte(`{"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":10,"total_tokens":19}}`), Usage: &llm.Usage{PromptTokens: 9, CompletionTokens: 10, TotalTokens: 19}},
		llm.Event{Kind: llm.Done},
	)
	up := &benchUp{
		resp:   &llm.Response{Status: 200, Body: []byte(`{"choices":[{"message":{"role":"assistant","content":"hi"}}]}`), Usage: llm.Usage{TotalTokens: 12}},
		events: events,
	}
	spec := router.Spec{Providers: []router.ProviderSpec{
		{Name: "groq", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{{ID: "llama-3.3-70b", ParamsB: 70}}, Up: up},
		{Name: "cerebras", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{{ID: "qwen-3-32b", ParamsB: 32}}, Up: up},
		{Name: "ollama", Tier: tier.Local, HasKey: true, Models: []router.ModelSpec{{ID: "qwen2.5:7b", ParamsB: 7}}, Up: up},
	}}
	return router.New(router.Build(spec), nopGate{}, nopRecorder{}, nil, quiet)
}

func benchReq(b *testing.B, stream bool) *llm.Request {
	b.Helper()
	body := `{"model":"auto","messages":[{"role":"user","content":"hi"}]}`
	if stream {
		body = `{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	}
	req, err := openai.ParseRequest(llm.Chat, []byte(body))
	if err != nil {
		b.Fatal(err)
	}
	return req
}

func BenchmarkRouterComplete(b *testing.B) {
	r := benchRouter(b)
	req := benchReq(b, false)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, f := r.Complete(ctx, req); f != nil {
			b.Fatal(f)
		}
	}
}

func BenchmarkRouterStream(b *testing.B) {
	r := benchRouter(b)
	req := benchReq(b, true)
	ctx := context.Background()
	sink := &discardSink{}
	b.ReportAllocs()
	for b.Loop() {
		if f := r.Stream(ctx, req, sink); f != nil {
			b.Fatal(f)
		}
	}
	if sink.n == 0 {
		b.Fatal("nothing sent")
	}
}

// A pinned "provider/model" name resolved to its backend and that backend's
// breaker state and quota scope looked up, as every pinned request does: the
// backend is a comparable BackendID, so none of the lookups builds a string
// or allocates.
func BenchmarkBackendIDLookups(b *testing.B) {
	tab := router.Build(catalogSpec())
	set := breaker.New(breaker.Settings{}, nil, nil)
	m := quota.New(nil, nil, time.UTC)
	name := tab.Backends()[len(tab.Backends())-1].Name()
	route, err := tab.Resolve(name)
	if err != nil {
		b.Fatal(err)
	}
	set.Unchecked(route.Backends[0].ID)(nil, time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		r, err := tab.Resolve(name)
		if err != nil || len(r.Backends) != 1 {
			b.Fatal(err)
		}
		id := r.Backends[0].ID
		if sk := set.Available(id); sk != nil {
			b.Fatal(sk)
		}
		if sk := m.Available("", quota.Target{ID: id}); sk != nil {
			b.Fatal(sk)
		}
	}
	if testing.AllocsPerRun(100, func() {
		r, _ := tab.Resolve(name)
		set.Available(r.Backends[0].ID)
		m.Available("", quota.Target{ID: r.Backends[0].ID})
	}) != 0 {
		b.Fatal("a BackendID lookup allocated")
	}
}
