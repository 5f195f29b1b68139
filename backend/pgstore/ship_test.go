package pgstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"freelane/backend/internal/teamtest"
	"freelane/backend/store"
)

func openSpool(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "freelane.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// writeRows appends n ledger rows to the spool, as the request log does.
func writeRows(t *testing.T, spool *store.DB, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := spool.SQL().Exec(`INSERT INTO ledger (time, request_id, chain, backend, outcome, status, latency_ms, ttft_ms,
	prompt_tokens, completion_tokens, estimated, cost, path) VALUES (?, ?, 'auto', 'groq/llama', 'ok', 200, 12.5, 3.25, 10, 5, 1, 0.002, '/v1/chat/completions')`,
			time.Date(2026, 12, 1, 9, 0, i, 0, time.UTC).UnixMilli(), "req"); err != nil {
			t.Fatal(err)
		}
	}
}

// shipped counts this instance's rows in PostgreSQL, and its distinct
// seqs, which are equal when no row is there twice.
func shipped(t *testing.T, db *DB) (rows, distinct int) {
	t.Helper()
	if err := db.pool.QueryRow(context.Background(), `SELECT COUNT(*), COUNT(DISTINCT seq) FROM ledger WHERE instance = $1`, db.instance).
		Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	return rows, distinct
}

func wantShipped(t *testing.T, db *DB, n int) {
	t.Helper()
	if rows, distinct := shipped(t, db); rows != n || distinct != n {
		t.Fatalf("PostgreSQL holds %d rows (%d distinct seqs), want %d once each", rows, distinct, n)
	}
}

// TestShipThroughAnOutage ships rows, cuts PostgreSQL off, writes more
// (the spool takes them), brings PostgreSQL back and checks that it holds
// every row exactly once, with the columns the spool had.
func TestShipThroughAnOutage(t *testing.T) {
	h := teamtest.StartHAProxy(t)
	p := teamtest.StartPostgres(t)
	name := p.NewDatabase(t)
	spool, db := openSpool(t), openDB(t, p.Via(h.PostgresAddr, name), "office-1")
	s := NewShipper(spool, db, ShipOptions{Batch: 4})
	ctx := context.Background()
	writeRows(t, spool, 6)
	if n, err := s.Ship(ctx); err != nil || n != 6 {
		t.Fatalf("Ship = %d, %v; want 6", n, err)
	}
	h.Down(t, teamtest.BackendPostgres)
	t.Cleanup(func() { h.Up(t, teamtest.BackendPostgres) })
	writeRows(t, spool, 7)
	if n, err := s.Ship(ctx); err == nil {
		t.Fatalf("Ship with PostgreSQL cut off copied %d rows and no error", n)
	}
	if s.Shipped() != 6 {
		t.Fatalf("the watermark moved to %d during the outage", s.Shipped())
	}
	h.Up(t, teamtest.BackendPostgres)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := s.Ship(ctx)
		if err == nil {
			if n != 7 {
				t.Fatalf("after the outage Ship copied %d rows, want 7", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ship still fails after PostgreSQL came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantShipped(t, db, 13)
	var cost float64
	var est bool
	var ttft *float64
	if err := db.pool.QueryRow(ctx, `SELECT cost, estimated, ttft_ms FROM ledger WHERE instance = 'office-1' AND seq = 13`).Scan(&cost, &est, &ttft); err != nil ||
		cost != 0.002 || !est || ttft == nil || *ttft != 3.25 {
		t.Errorf("row 13: cost %v estimated %v ttft %v, %v", cost, est, ttft, err)
	}
}

// TestShipperKilledMidBatch stops the shipper inside a batch's
// transaction, and again after the commit but before the watermark is
// saved, restarting it each time: PostgreSQL ends with every row once.
func TestShipperKilledMidBatch(t *testing.T) {
	t.Parallel()
	spool, db := openSpool(t), openDB(t, newDSN(t), "office-2")
	writeRows(t, spool, 10)

	// Killed before the commit: nothing of the batch is kept.
	ctx, cancel := context.WithCancel(context.Background())
	s := NewShipper(spool, db, ShipOptions{Batch: 4})
	s.beforeCommit = cancel
	if _, err := s.Ship(ctx); err == nil {
		t.Fatal("Ship stopped before its commit reported no error")
	}
	wantShipped(t, db, 0)

	// Restarted and killed after the second batch's commit, before its
	// watermark is saved: the first batch is marked, the second is in
	// PostgreSQL but not marked.
	ctx, cancel = context.WithCancel(context.Background())
	s = NewShipper(spool, db, ShipOptions{Batch: 4})
	batches := 0
	s.afterCommit = func() {
		if batches++; batches == 2 {
			cancel()
		}
	}
	if n, err := s.Ship(ctx); err == nil || n != 4 {
		t.Fatalf("Ship killed after the second commit = %d, %v; want 4 and an error", n, err)
	}
	wantShipped(t, db, 8)

	// Restarted: it reads the watermark (4), copies the second batch
	// again, which PostgreSQL ignores, and the rest.
	s = NewShipper(spool, db, ShipOptions{Batch: 4})
	if n, err := s.Ship(context.Background()); err != nil || n != 6 {
		t.Fatalf("Ship after the restart = %d, %v; want 6 (4 again and 2 new)", n, err)
	}
	wantShipped(t, db, 10)
	if s.Shipped() != 10 {
		t.Errorf("watermark %d, want 10", s.Shipped())
	}
}

// TestRunStopsWithItsContext runs the loop until the rows are in and
// checks that it returns when its context ends.
func TestRunStopsWithItsContext(t *testing.T) {
	t.Parallel()
	spool, db := openSpool(t), openDB(t, newDSN(t), "office-3")
	writeRows(t, spool, 3)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s := NewShipper(spool, db, ShipOptions{Every: 10 * time.Millisecond})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for s.Shipped() != 3 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not copy the rows")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return when its context ended")
	}
	wantShipped(t, db, 3)
}

// TestNewDataDirectoryDoesNotReuseShippedSeqs ships rows under an
// instance name, then ships from a new, empty spool under the same name:
// its rows must be numbered after the first spool's, not dropped as
// copies of them.
func TestNewDataDirectoryDoesNotReuseShippedSeqs(t *testing.T) {
	t.Parallel()
	dsn := newDSN(t)
	db := openDB(t, dsn, "office-4")
	first := openSpool(t)
	writeRows(t, first, 5)
	if _, err := NewShipper(first, db, ShipOptions{}).Ship(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := openSpool(t)
	s := NewShipper(second, db, ShipOptions{})
	if _, err := s.Ship(context.Background()); err != nil { // meets PostgreSQL before it has rows
		t.Fatal(err)
	}
	writeRows(t, second, 2)
	if n, err := s.Ship(context.Background()); err != nil || n != 2 {
		t.Fatalf("Ship from the new spool = %d, %v; want 2", n, err)
	}
	wantShipped(t, db, 7)
}
