package store

import (
	"context"
	"testing"
	"time"

	"freelane/backend/llm"
)

func ledgerTrace(id string, at time.Time, chain string, attempts ...llm.Attempt) llm.Trace {
	return llm.Trace{ID: id, Start: at, Endpoint: "chat/completions", Model: chain, Chain: chain, Status: 200, Class: llm.OK, Attempts: attempts}
}

func TestLedgerRowsAreWrittenWithTheirRequest(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	day := time.Date(2026, 11, 30, 10, 0, 0, 0, time.Local)
	traces := []llm.Trace{
		ledgerTrace("r1", day, "auto",
			llm.Attempt{Backend: "a/m", Class: llm.RateLimited, Status: 429, Latency: time.Millisecond},
			llm.Attempt{Backend: "b/m", Class: llm.Quota, Skipped: true, Reason: "b/m: daily requests used"},
			llm.Attempt{Backend: "c/m", Class: llm.OK, Latency: 2 * time.Millisecond, PromptTokens: 10, CompletionTokens: 5, Cost: 0.5}),
		ledgerTrace("r2", day.Add(time.Hour), "coding",
			llm.Attempt{Backend: "c/m", Class: llm.OK, PromptTokens: 7, CompletionTokens: 3, Estimated: true, Cost: 0.25}),
		// A duplicate request id is skipped with its ledger rows.
		ledgerTrace("r2", day.Add(time.Hour), "coding", llm.Attempt{Backend: "c/m", Class: llm.OK, Cost: 100}),
	}
	if _, err := db.writeRequests(ctx, traces, true); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.sql.QueryRow("SELECT COUNT(*) FROM ledger").Scan(&n); err != nil || n != 3 {
		t.Fatalf("ledger rows %d (%v), want 3: skipped attempts and duplicates are not rows", n, err)
	}
	from, to := day.Add(-24*time.Hour), day.Add(24*time.Hour)
	rows, err := db.Usage(ctx, UsageQuery{From: from, To: to, GroupBy: ByBackend})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Key != "a/m" || rows[0].Failures != 1 || rows[1].Key != "c/m" || rows[1].Requests != 2 ||
		rows[1].PromptTokens != 17 || rows[1].Cost != 0.75 || rows[1].EstimatedTokens != 10 {
		t.Fatalf("by backend: %+v", rows)
	}
	rows, _ = db.Usage(ctx, UsageQuery{From: from, To: to, GroupBy: ByChain})
	if len(rows) != 2 || rows[0].Key != "auto" || rows[0].Requests != 2 || rows[1].Key != "coding" {
		t.Fatalf("by chain: %+v", rows)
	}

	// Roll up everything before the next day: the totals stay the same,
	// now read from the daily table.
	folded, err := db.RollUpLedger(ctx, day.Add(24*time.Hour))
	if err != nil || folded != 3 {
		t.Fatalf("rolled up %d (%v)", folded, err)
	}
	rows, _ = db.Usage(ctx, UsageQuery{From: from, To: to, GroupBy: ByDayBackend})
	if len(rows) != 2 || rows[0].Key != "2026-11-30" || rows[0].Backend != "a/m" || rows[1].Requests != 2 || rows[1].Cost != 0.75 {
		t.Fatalf("by day after roll-up: %+v", rows)
	}
	var exported []LedgerRow
	if err := db.EachLedgerRow(ctx, from, to, func(r LedgerRow) error { exported = append(exported, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(exported) != 3 || exported[0].RequestID != "rollup" {
		t.Fatalf("export: %+v", exported)
	}
	spend, err := db.LedgerSince(ctx, day.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, r := range spend {
		total += r.Cost
	}
	if total != 0.75 {
		t.Fatalf("rebuilt spend %v from %+v", total, spend)
	}
}
