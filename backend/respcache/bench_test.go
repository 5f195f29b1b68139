package respcache_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"freelane/backend/dialects"
	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/protocol/openai"
	"freelane/backend/respcache"
	"freelane/backend/router"
	"freelane/backend/store"
	"freelane/backend/tier"
)

type openGate struct{}

func (openGate) Available(llm.BackendID) *llm.Skip { return nil }
func (openGate) Allow(llm.BackendID) (func(*llm.Error, time.Duration), *llm.Skip) {
	return func(*llm.Error, time.Duration) {}, nil
}
func (openGate) Unchecked(llm.BackendID) func(*llm.Error, time.Duration) {
	return func(*llm.Error, time.Duration) {}
}

type nopRecorder struct{}

func (nopRecorder) Record(llm.Trace) {}

// countingUp answers every call with one answer and counts the calls.
type countingUp struct{ calls atomic.Int64 }

func (u *countingUp) Complete(context.Context, *llm.Request, string) (*llm.Response, error) {
	u.calls.Add(1)
	return &llm.Response{Status: 200, Body: answer("Four, as two and two make four."), Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}}, nil
}

func (u *countingUp) Stream(context.Context, *llm.Request, string) (llm.EventStream, error) {
	panic("the benchmark serves streams from the cache only")
}

type discardSink struct{ n int }

func (s *discardSink) Commit(string, *router.Backend, []llm.Attempt) error { return nil }
func (s *discardSink) Send(data []byte, flush bool) error                  { s.n += len(data); return nil }
func (s *discardSink) Fail(*llm.Error)                                     {}
func (s *discardSink) Done() error                                         { return nil }

// cachedRouter is a router with the response cache on, over a real
// database, and the answer to openaiQ cached.
func cachedRouter(b *testing.B) (*router.Router, *countingUp) {
	b.Helper()
	db, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "freelane.db"))
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	clk := clocktest.New(time.Unix(1e9, 0))
	c, err := respcache.Open(context.Background(), db, respcache.Options{Codecs: dialects.Registry(), Clock: clk, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	c.Configure(respcache.Settings{Enabled: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done; _ = db.Close() })
	up := &countingUp{}
	spec := router.Spec{Providers: []router.ProviderSpec{
		{Name: "groq", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{{ID: "llama-3.3-70b", ParamsB: 70}}, Up: up},
	}, Chains: []router.ChainSpec{{Name: "main", Backends: []llm.BackendID{{Provider: "groq", Model: "llama-3.3-70b"}}}}}
	r := router.New(router.Build(spec), openGate{}, nopRecorder{}, clk, quiet)
	r.SetCache(c)
	if _, f := r.Complete(context.Background(), benchReq(b, false)); f != nil {
		b.Fatal(f)
	}
	return r, up
}

// benchReq parses openaiQ afresh, as every request is: the cache decodes
// the whole conversation for its key, and that is part of a hit's cost.
func benchReq(b *testing.B, stream bool) *llm.Request {
	body := openaiQ
	if stream {
		body = `{"stream":true,` + openaiQ[1:]
	}
	req, err := openai.ParseRequest(llm.Chat, []byte(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Cache.Caller = "uid:1000"
	return req
}

func BenchmarkCacheHitComplete(b *testing.B) {
	r, up := cachedRouter(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req := benchReq(b, false)
		res, f := r.Complete(ctx, req)
		if f != nil || req.Cache.Outcome != llm.CacheHit || len(res.Response.Body) == 0 {
			b.Fatalf("not a hit: %v %q", f, req.Cache.Outcome)
		}
	}
	if n := up.calls.Load(); n != 1 {
		b.Fatalf("upstream called %d times", n)
	}
}

func BenchmarkCacheHitStream(b *testing.B) {
	r, up := cachedRouter(b)
	ctx := context.Background()
	sink := &discardSink{}
	b.ReportAllocs()
	for b.Loop() {
		req := benchReq(b, true)
		if f := r.Stream(ctx, req, sink); f != nil || req.Cache.Outcome != llm.CacheHit {
			b.Fatalf("not a hit: %v %q", f, req.Cache.Outcome)
		}
	}
	if n := up.calls.Load(); n != 1 || sink.n == 0 {
		b.Fatalf("upstream called %d times, %d bytes sent", n, sink.n)
	}
}
