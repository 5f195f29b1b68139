package gateway

import (
	"testing"
	"time"

	"freelane/backend/clock"
	"freelane/backend/llm"
	"freelane/backend/metrics"
	"freelane/backend/redact"
)

// discard is a request log that keeps nothing, so the benchmark measures
// the feed alone: the real log only puts the trace on a channel.
type discard struct{}

func (discard) Record(llm.Trace) {}

// BenchmarkFeedRecord is what the request path pays once a request has
// finished: the live tail, the metrics and today's counts, all in memory.
// The feed holds no database handle at all; the figures it counts on from
// were read once at start.
func BenchmarkFeedRecord(b *testing.B) {
	f := newFeed(discard{}, metrics.New(nil), clock.Real{}, redact.New())
	t := llm.Trace{ID: "req", Start: time.Now(), Endpoint: string(llm.Chat), Path: "/v1/messages", Dialect: llm.DialectAnthropic,
		Model: "auto", Chain: "auto", Backend: "b/m", Status: 200, Class: llm.OK, Attempts: []llm.Attempt{
			{Backend: "a/m", Class: llm.RateLimited, Status: 429, Latency: time.Millisecond},
			{Backend: "b/m", Class: llm.OK, Status: 200, Latency: 2 * time.Millisecond},
		}}
	f.Record(t)
	b.ReportAllocs()
	for b.Loop() {
		f.Record(t)
		if len(f.pending) > 400 {
			f.Take()
		}
	}
}
