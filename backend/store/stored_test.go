package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
)

// A trace someone waits on is written at once, without waiting for the
// flush interval (the test clock never moves, so no tick ever comes), and
// its Ack arrives only once its request row and ledger row are in the
// database.
func TestStoredTraceIsAcknowledgedOnceWritten(t *testing.T) {
	db := openTestDB(t)
	clk := clocktest.New(baseTime)
	l := NewRequestLog(db, LogOptions{Logger: quietLogger, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	wait := startRun(t, ctx, l)
	defer func() {
		cancel()
		if err := wait(); err != nil {
			t.Error(err)
		}
	}()

	// A trace nobody waits on stays in the batch until the tick.
	l.Record(sampleTrace(1))
	tr := sampleTrace(3)
	tr.Stored = llm.NewAck()
	l.Record(tr)
	select {
	case err := <-tr.Stored.Wait():
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no acknowledgement without a tick")
	}
	var ledger int
	if err := db.SQL().QueryRow(`SELECT count(*) FROM ledger WHERE request_id = ?`, tr.ID).Scan(&ledger); err != nil {
		t.Fatal(err)
	}
	if n := countRequests(t, db); n != 2 || ledger == 0 {
		t.Errorf("acknowledged with %d request rows and %d ledger rows for it", n, ledger)
	}
}

// Under concurrent load every waiter is acknowledged, and only after its
// row was written, with the clock standing still: no waiter depends on
// the flush interval, whichever batch its trace landed in.
func TestStoredTracesShareCommits(t *testing.T) {
	db := openTestDB(t)
	l := NewRequestLog(db, LogOptions{Logger: quietLogger, Clock: clocktest.New(baseTime)})
	ctx, cancel := context.WithCancel(context.Background())
	wait := startRun(t, ctx, l)
	const writers, each = 32, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tr := sampleTrace(w*each + i)
				tr.Stored = llm.NewAck()
				l.Record(tr)
				select {
				case err := <-tr.Stored.Wait():
					if err != nil {
						errs <- err
						continue
					}
				case <-time.After(10 * time.Second):
					errs <- errors.New("no acknowledgement")
					continue
				}
				var n int
				if err := db.SQL().QueryRow(`SELECT count(*) FROM requests WHERE id = ?`, tr.ID).Scan(&n); err != nil || n != 1 {
					errs <- errors.New("acknowledged before its row was written")
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cancel()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if n := countRequests(t, db); n != writers*each {
		t.Errorf("%d rows, want %d", n, writers*each)
	}
}

// A trace the log cannot take is given up at once, so the answer waiting
// on it is not held for nothing.
func TestStoredTraceGivenUpWhenNotTaken(t *testing.T) {
	db := openTestDB(t)
	l := NewRequestLog(db, LogOptions{Buffer: 1, Logger: quietLogger})
	l.Record(sampleTrace(0))
	full := sampleTrace(1)
	full.Stored = llm.NewAck()
	l.Record(full)
	if err := <-full.Stored.Wait(); !errors.Is(err, errLogFull) {
		t.Errorf("full buffer: %v", err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	closed := sampleTrace(2)
	closed.Stored = llm.NewAck()
	l.Record(closed)
	if err := <-closed.Stored.Wait(); !errors.Is(err, errLogClosed) {
		t.Errorf("closed log: %v", err)
	}
}
