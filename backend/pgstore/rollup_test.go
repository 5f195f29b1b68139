package pgstore

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"freelane/backend/internal/teamtest"
	"freelane/backend/store"
)

// writeRowsAt appends n ledger rows of the given time to the spool.
func writeRowsAt(t *testing.T, spool *store.DB, n int, at time.Time, outcome string) {
	t.Helper()
	for i := range n {
		if _, err := spool.SQL().Exec(`INSERT INTO ledger (time, request_id, chain, backend, outcome, status, latency_ms,
	prompt_tokens, completion_tokens, estimated, cost, path) VALUES (?, 'req', 'auto', 'groq/llama', ?, 200, 12.5, 10, 5, ?, 0.002, '/v1/chat/completions')`,
			at.Add(time.Duration(i)*time.Second).UnixMilli(), outcome, i%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
}

// The team's ledger on PostgreSQL folds rows older than the retention
// into quarter-hour totals: the usage every grouping reports is the same
// before and after, the rows are gone, and a shipper that copies the
// folded rows again (its watermark lost) counts none of them twice.
func TestRollUpKeepsUsageAndCountsNothingTwice(t *testing.T) {
	p := teamtest.StartPostgres(t)
	name := p.NewDatabase(t)
	ctx := context.Background()
	old := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	recent := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	spool1, spool2 := openSpool(t), openSpool(t)
	db1, db2 := openDB(t, p.DSN(name), "office-1"), openDB(t, p.DSN(name), "office-2")
	writeRowsAt(t, spool1, 10, old, "ok")
	writeRowsAt(t, spool1, 5, recent, "ok")
	writeRowsAt(t, spool2, 8, old.Add(20*time.Minute), "rate_limited")
	for _, s := range []*Shipper{NewShipper(spool1, db1, ShipOptions{}), NewShipper(spool2, db2, ShipOptions{})} {
		if _, err := s.Ship(ctx); err != nil {
			t.Fatal(err)
		}
	}
	usage := func() map[string][]store.UsageRow {
		out := map[string][]store.UsageRow{}
		for _, g := range []string{store.ByDay, store.ByDayBackend, store.ByBackend, store.ByChain, store.ByPath, store.ByInstance} {
			rows, err := db1.Usage(ctx, store.UsageQuery{From: old.AddDate(0, 0, -2), To: recent.AddDate(0, 0, 2), GroupBy: g})
			if err != nil {
				t.Fatal(err)
			}
			for i := range rows {
				// Sums of floats differ in their last bits with the order
				// they are added in.
				rows[i].Cost = math.Round(rows[i].Cost*1e9) / 1e9
			}
			out[g] = rows
		}
		return out
	}
	before := usage()
	if r := before[store.ByInstance]; len(r) != 2 || r[0].Requests != 15 || r[1].Requests != 8 || r[1].Failures != 8 {
		t.Fatalf("usage by instance before the roll-up: %+v", r)
	}
	n, err := db2.RollUp(ctx, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	if err != nil || n != 18 {
		t.Fatalf("RollUp = %d, %v; want the 18 old rows", n, err)
	}
	var left int
	if err := db1.pool.QueryRow(ctx, `SELECT COUNT(*) FROM ledger`).Scan(&left); err != nil || left != 5 {
		t.Fatalf("%d rows left (%v), want the 5 recent ones", left, err)
	}
	if after := usage(); !reflect.DeepEqual(after, before) {
		t.Fatalf("usage changed by the roll-up:\nbefore %+v\nafter  %+v", before, after)
	}

	// The watermark is lost: the shipper starts over and copies the
	// spool's rows again.
	if err := spool1.PutState(ctx, WatermarkState, []byte(`{"seq":0}`)); err != nil {
		t.Fatal(err)
	}
	again := NewShipper(spool1, db1, ShipOptions{})
	if _, err := again.Ship(ctx); err != nil {
		t.Fatal(err)
	}
	if again.Shipped() != 15 {
		t.Fatalf("the shipper's watermark after copying again: %d, want 15", again.Shipped())
	}
	if after := usage(); !reflect.DeepEqual(after, before) {
		t.Fatalf("copying the rows again changed usage:\nbefore %+v\nafter  %+v", before, after)
	}
	if n, err := db1.RollUp(ctx, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)); err != nil || n != 0 {
		t.Fatalf("a second roll-up folded %d rows (%v)", n, err)
	}
}
