package metrics_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"freelane/backend/llm"
	"freelane/backend/metrics"
)

// BenchmarkObserve measures the request-path cost on one backend with the
// system clock (time.Now is part of the real cost).
func BenchmarkObserve(b *testing.B) {
	r := metrics.New(nil)
	o := metrics.Outcome{OK: true, Latency: 420 * time.Millisecond, TTFT: 80 * time.Millisecond}
	r.Observe("groq/llama", o)
	b.ReportAllocs()
	for b.Loop() {
		r.Observe("groq/llama", o)
	}
}

// BenchmarkObserveParallel hammers a single backend from every P: the
// worst case for its mutex.
func BenchmarkObserveParallel(b *testing.B) {
	r := metrics.New(nil)
	o := metrics.Outcome{OK: true, Latency: 420 * time.Millisecond, TTFT: 80 * time.Millisecond}
	r.Observe("groq/llama", o)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Observe("groq/llama", o)
		}
	})
}

// BenchmarkObserveParallelBackends spreads the load over 16 backends, as a
// router serving several chains does.
func BenchmarkObserveParallelBackends(b *testing.B) {
	r := metrics.New(nil)
	names := make([]string, 16)
	for i := range names {
		names[i] = fmt.Sprintf("provider%d/model", i)
		r.Observe(names[i], metrics.Outcome{OK: true})
	}
	var next atomic.Uint32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		name := names[next.Add(1)%uint32(len(names))]
		o := metrics.Outcome{OK: true, Latency: 420 * time.Millisecond}
		for pb.Next() {
			r.Observe(name, o)
		}
	})
}

// BenchmarkWindows is the dashboard's read path: all three windows of one
// busy backend.
func BenchmarkWindows(b *testing.B) {
	r := metrics.New(nil)
	for i := range 10000 {
		r.Observe("groq/llama", metrics.Outcome{OK: i%10 != 0, Latency: time.Duration(i%3000) * time.Millisecond, TTFT: time.Duration(i%500) * time.Millisecond})
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Windows("groq/llama")
	}
}

// BenchmarkSeriesRecord is the request-path cost of the time series for a
// request on a chain that failed over once: the total, the chain and two
// backends, each into its 10 s, minute and hour buckets.
func BenchmarkSeriesRecord(b *testing.B) {
	s := metrics.NewSeries(nil, nil, nil)
	tr := llm.Trace{Chain: "coding", Class: llm.OK, Latency: 420 * time.Millisecond, TTFT: 80 * time.Millisecond,
		Attempts: []llm.Attempt{
			{Backend: "groq/llama-3.3-70b-versatile", Class: llm.RateLimited, Latency: 30 * time.Millisecond},
			{Backend: "openrouter/meta-llama/llama-3.3-70b-instruct:free", Class: llm.OK, Latency: 390 * time.Millisecond,
				TTFT: 80 * time.Millisecond, PromptTokens: 1200, CompletionTokens: 300, Cost: 0.0004},
		}}
	s.Record(tr)
	b.ReportAllocs()
	for b.Loop() {
		s.Record(tr)
	}
}

// BenchmarkSeriesRecordParallel records from every P onto the same series.
func BenchmarkSeriesRecordParallel(b *testing.B) {
	s := metrics.NewSeries(nil, nil, nil)
	tr := llm.Trace{Chain: "coding", Class: llm.OK, Latency: 420 * time.Millisecond,
		Attempts: []llm.Attempt{{Backend: "groq/llama", Class: llm.OK, Latency: 420 * time.Millisecond, PromptTokens: 10}}}
	s.Record(tr)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Record(tr)
		}
	})
}
