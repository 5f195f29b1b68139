package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"freelane/backend/llm"
)

// benchLogRows is the size of the request log the query benchmarks read.
const benchLogRows = 100_000

// realisticTrace is request i of a busy log: a routing decision with a
// few candidates (what makes real rows wide), latencies spread over two
// orders of magnitude, one request in a hundred failed with a connection
// error, and the rest served by one of a few backends.
func realisticTrace(i int) llm.Trace {
	t := sampleTrace(i)
	t.ID = fmt.Sprintf("req_%012x%016x", int64(i), uint64(i)*2654435761)
	t.Start = baseTime.Add(time.Duration(i) * 50 * time.Millisecond)
	t.Latency = time.Duration(20+(i*7919)%4000) * time.Millisecond
	t.Usage.TotalTokens = 100 + (i*104729)%9000
	t.Class, t.Status, t.Error = llm.OK, 200, ""
	if i%100 == 42 {
		t.Class, t.Status, t.Error = llm.Transient, 502, "ollama/llama3.2:3b failed: the connection was refused"
	}
	if n := len(t.Attempts); n > 0 {
		t.Attempts[n-1].Cost = float64((i*31)%997) / 1e5
	}
	t.Decision = &llm.Decision{Requested: "auto", Chain: t.Chain, Gear: "auto", Strategy: "latency"}
	for c := range 4 {
		t.Decision.Candidates = append(t.Decision.Candidates, llm.Candidate{
			Backend: fmt.Sprintf("provider-%d/model-%d", c, i%13), Verdict: "eligible",
			Reason: "healthy, p50 412 ms over 20 samples, 1,200 of 14,400 requests left today"})
	}
	return t
}

// openBenchLog opens a request log of benchLogRows rows in a real SQLite
// file, written once per benchmark run through the writer's own batches.
func openBenchLog(b *testing.B) *DB {
	b.Helper()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "freelane.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	batch := make([]llm.Trace, 0, 1000)
	for i := range benchLogRows {
		batch = append(batch, realisticTrace(i))
		if len(batch) == cap(batch) {
			if _, err := db.writeRequests(ctx, batch, false); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := db.sql.ExecContext(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkQueryRequests measures the first page (100 rows) of the
// request log's common queries over benchLogRows stored requests: each
// must stay well under 50 ms.
func BenchmarkQueryRequests(b *testing.B) {
	db := openBenchLog(b)
	ctx := context.Background()
	streamed := true
	mid := baseTime.Add(benchLogRows / 2 * 50 * time.Millisecond)
	cases := []struct {
		name string
		q    RequestQuery
		// want is the fewest rows the page must hold, so a query that
		// silently matches nothing does not pass for a fast one.
		want int
	}{
		{"default", RequestQuery{}, 100},
		{"latency", RequestQuery{Sort: SortLatency}, 100},
		{"latency_asc", RequestQuery{Sort: SortLatency, Asc: true}, 100},
		{"tokens", RequestQuery{Sort: SortTokens}, 100},
		{"cost", RequestQuery{Sort: SortCost}, 100},
		{"ttft", RequestQuery{Sort: SortTTFT}, 100},
		{"text_1pct", RequestQuery{Text: "connection was refused"}, 100},
		{"text_none", RequestQuery{Text: "no such words anywhere"}, 0},
		{"id", RequestQuery{ID: realisticTrace(31337).ID}, 1},
		{"filters", RequestQuery{Status: "5xx", Chain: "chat-fast", Stream: &streamed}, 100},
		{"range_latency", RequestQuery{From: mid, To: mid.Add(time.Hour), Sort: SortLatency}, 100},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				page, err := db.QueryRequests(ctx, tc.q)
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Traces) < tc.want {
					b.Fatalf("%d rows, want at least %d", len(page.Traces), tc.want)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/page")
		})
	}
}

// BenchmarkWriteBatchInOrder is BenchmarkWriteBatch with each batch later
// than the one before, as the log is written: its time-led indexes grow at
// their end instead of taking every batch's rows between earlier ones.
func BenchmarkWriteBatchInOrder(b *testing.B) {
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
			batch[i].Start = baseTime.Add(time.Duration(n*defaultBatchSize+i) * time.Millisecond)
		}
		if _, err := db.writeRequests(ctx, batch, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "rows/s")
}
