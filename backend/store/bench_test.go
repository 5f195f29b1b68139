package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"freelane/backend/llm"
)

// BenchmarkRecord measures what a request handler pays to log a trace.
//
// enqueue is the normal case, a successful send into the buffer. The
// buffer is emptied with the timer stopped whenever it fills, so the number
// is the enqueue alone, not disk speed and not the drop path.
//
// full is the shedding path under contention from all CPUs: the buffer is
// full, so every Record is a counted drop. It must stay as cheap as an
// enqueue, since it is what happens when the disk falls behind.
func BenchmarkRecord(b *testing.B) {
	tr := sampleTrace(3)

	b.Run("enqueue", func(b *testing.B) {
		l := NewRequestLog(openTestDB(b), LogOptions{Logger: quietLogger})
		b.ReportAllocs()
		for b.Loop() {
			if len(l.ch) == cap(l.ch) {
				b.StopTimer()
				for len(l.ch) > 0 {
					<-l.ch
				}
				b.StartTimer()
			}
			l.Record(tr)
		}
		if d := l.Dropped(); d != 0 {
			b.Fatalf("%d records dropped; the benchmark measured the wrong path", d)
		}
	})

	b.Run("full", func(b *testing.B) {
		l := NewRequestLog(openTestDB(b), LogOptions{Buffer: 1, Logger: quietLogger})
		l.Record(tr)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Record(tr)
			}
		})
	})
}

// later is the start of the i-th request of the n-th batch: time moves
// on from batch to batch as it does in a running router, so that rows are
// appended to the time indexes instead of filling in earlier pages.
func later(n, i int) time.Time {
	return baseTime.Add(time.Duration(n*defaultBatchSize+i) * time.Millisecond)
}

// BenchmarkWriteBatch measures one full default-size batch (256 traces with
// 0-3 attempts each, 1.5 on average) written in one transaction.
func BenchmarkWriteBatch(b *testing.B) {
	ctx := context.Background()
	db := openTestDB(b)
	batch := make([]llm.Trace, defaultBatchSize)
	for i := range batch {
		batch[i] = sampleTrace(i)
	}
	b.ReportAllocs()
	for n := 0; b.Loop(); n++ {
		for i := range batch {
			batch[i].ID = fmt.Sprintf("b%d-%d", n, i)
			batch[i].Start = later(n, i)
		}
		if _, err := db.writeRequests(ctx, batch, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkLedgerWrite measures the usage ledger's write throughput: a
// default-size batch of 256 requests with two called attempts each (a
// failover), so 512 ledger rows, written with their request rows in one
// transaction, against the same batch without the ledger.
func BenchmarkLedgerWrite(b *testing.B) {
	for _, withLedger := range []bool{true, false} {
		name := map[bool]string{true: "with_ledger", false: "requests_only"}[withLedger]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			db := openTestDB(b)
			batch := make([]llm.Trace, defaultBatchSize)
			for i := range batch {
				batch[i] = sampleTrace(i)
				batch[i].Attempts = []llm.Attempt{
					{Backend: "groq/llama", Class: llm.RateLimited, Status: 429, Latency: time.Millisecond},
					{Backend: "cerebras/qwen", Class: llm.OK, Latency: 300 * time.Millisecond, TTFT: 80 * time.Millisecond,
						PromptTokens: 812, CompletionTokens: 164, Cost: 0.00021},
				}
			}
			b.ReportAllocs()
			for n := 0; b.Loop(); n++ {
				for i := range batch {
					batch[i].ID = fmt.Sprintf("l%d-%d", n, i)
					batch[i].Start = later(n, i)
				}
				if _, err := db.writeRequests(ctx, batch, withLedger); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "requests/s")
			if withLedger {
				b.ReportMetric(float64(b.N*len(batch)*2)/b.Elapsed().Seconds(), "ledger_rows/s")
			}
		})
	}
}

// BenchmarkWriteSmallBatches measures what answers that wait for their
// rows cost: batches of 1, 4 and 16 traces, as few answers finish
// together, each its own transaction; us/trace shows the fixed cost of a
// commit spread over the batch.
func BenchmarkWriteSmallBatches(b *testing.B) {
	for _, size := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("batch_%d", size), func(b *testing.B) {
			ctx := context.Background()
			db := openTestDB(b)
			batch := make([]llm.Trace, size)
			for i := range batch {
				batch[i] = sampleTrace(3)
			}
			b.ReportAllocs()
			for n := 0; b.Loop(); n++ {
				for i := range batch {
					batch[i].ID = fmt.Sprintf("s%d-%d", n, i)
					batch[i].Start = later(n, i)
				}
				if _, err := db.writeRequests(ctx, batch, true); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*size), "us/trace")
		})
	}
}
