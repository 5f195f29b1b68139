package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"freelane/backend/llm"
)

// BenchmarkRecord measures what a request handler pays to log a trace: the
// enqueue alone, from many goroutines at once. A consumer empties the
// channel without writing, so the numbers are not the drop path and do not
// depend on disk speed.
func BenchmarkRecord(b *testing.B) {
	db := openTestDB(b)
	l := NewRequestLog(db, LogOptions{Logger: quietLogger})
	stop := make(chan struct{})
	drained := make(chan struct{})
	var consumed atomic.Int64
	go func() {
		defer close(drained)
		for {
			select {
			case <-l.ch:
				consumed.Add(1)
			case <-stop:
				return
			}
		}
	}()
	tr := sampleTrace(3)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Record(tr)
		}
	})
	b.StopTimer()
	close(stop)
	<-drained
	if d := l.Dropped(); d > 0 {
		b.ReportMetric(float64(d)/float64(b.N), "dropped/op")
	}
}

// BenchmarkRecordFull measures Record when the buffer is full: the cost of
// shedding load, which must stay as cheap as a successful enqueue.
func BenchmarkRecordFull(b *testing.B) {
	db := openTestDB(b)
	l := NewRequestLog(db, LogOptions{Buffer: 1, Logger: quietLogger})
	tr := sampleTrace(3)
	l.Record(tr)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Record(tr)
		}
	})
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
		}
		if _, err := db.writeRequests(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "rows/s")
}
