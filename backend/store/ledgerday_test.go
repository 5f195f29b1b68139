package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"freelane/backend/llm"
)

// TestLedgerDaysAreLocalDays checks the days Usage, RollUpLedger and
// LedgerSince give against SQLite's own local time, for rows at every
// hour of the day, across both of the year's clock changes and around
// midnight. Run it with TZ set to a zone with daylight saving time (as
// `TZ=America/Los_Angeles go test ./backend/store` does) as well.
func TestLedgerDaysAreLocalDays(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.Local)
	var traces []llm.Trace
	for i, at := 0, start.Add(-90*time.Second); at.Before(start.AddDate(1, 0, 0)); i, at = i+1, at.Add(7*time.Hour+13*time.Minute+30*time.Second) {
		traces = append(traces, ledgerTrace(fmt.Sprintf("r%d", i), at, "auto",
			llm.Attempt{Backend: "a/m", Class: llm.OK, PromptTokens: 1, Cost: 1}))
	}
	// Either side of local midnights, where a wrong zone shows first.
	for i, d := 0, start; d.Before(start.AddDate(1, 0, 0)); i, d = i+1, d.AddDate(0, 0, 1) {
		traces = append(traces,
			ledgerTrace(fmt.Sprintf("m%d", i), d.Add(-time.Millisecond), "auto", llm.Attempt{Backend: "b/m", Class: llm.OK, Cost: 1}),
			ledgerTrace(fmt.Sprintf("n%d", i), d, "auto", llm.Attempt{Backend: "b/m", Class: llm.OK, Cost: 1}))
	}
	if _, err := db.writeRequests(ctx, traces, true); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	rows, err := db.sql.QueryContext(ctx, `SELECT strftime('%Y-%m-%d', time / 1000, 'unixepoch', 'localtime'), backend, COUNT(*)
		FROM ledger GROUP BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var day, backend string
		var n int64
		if err := rows.Scan(&day, &backend, &n); err != nil {
			t.Fatal(err)
		}
		want[day+" "+backend] = n
	}
	rows.Close()
	from, to := start.AddDate(0, 0, -2), start.AddDate(1, 0, 2)
	check := func(when string) {
		t.Helper()
		got, err := db.Usage(ctx, UsageQuery{From: from, To: to, GroupBy: ByDayBackend})
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, r := range got {
			k := r.Key + " " + r.Backend
			if want[k] != r.Requests {
				t.Errorf("%s: %s has %d requests, SQLite's local days give %d", when, k, r.Requests, want[k])
			}
			seen++
		}
		if seen != len(want) {
			t.Errorf("%s: %d day and backend groups, SQLite's local days give %d", when, seen, len(want))
		}
	}
	check("raw rows")

	// Fold the first half of the year into days, then read both halves.
	mid := time.Date(2026, 7, 1, 12, 0, 0, 0, time.Local)
	if _, err := db.RollUpLedger(ctx, mid); err != nil {
		t.Fatal(err)
	}
	check("half rolled up")
	folded := time.Date(2026, 7, 1, 0, 0, 0, 0, time.Local)
	spend, err := db.LedgerSince(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for i, r := range spend {
		if i > 0 && r.Minute.Before(spend[i-1].Minute) {
			t.Fatalf("LedgerSince out of order at %d: %v after %v", i, r.Minute, spend[i-1].Minute)
		}
		if r.Minute.Before(folded) && (r.Minute.Hour() != 0 || r.Minute.Minute() != 0) {
			t.Errorf("a rolled-up day starts at %v, not at local midnight", r.Minute)
		}
		total += r.Cost
	}
	if int(total) != len(traces) {
		t.Errorf("LedgerSince spend %v, want %d", total, len(traces))
	}
	if _, err := db.RollUpLedger(ctx, to); err != nil {
		t.Fatal(err)
	}
	check("all rolled up")
}

// BenchmarkUsageByDay measures the Usage screen's by-day query over a
// month of raw ledger rows: 30,000 calls spread over 30 days and 6
// backends.
func BenchmarkUsageByDay(b *testing.B) {
	ctx := context.Background()
	db := openTestDB(b)
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.Local)
	const n = 30000
	traces := make([]llm.Trace, 0, n)
	for i := range n {
		at := start.Add(time.Duration(i) * (30 * 24 * time.Hour / n))
		traces = append(traces, ledgerTrace(fmt.Sprintf("r%d", i), at, "auto",
			llm.Attempt{Backend: fmt.Sprintf("p%d/m", i%6), Class: llm.OK, PromptTokens: 800, CompletionTokens: 150, Cost: 0.0002}))
	}
	for len(traces) > 0 {
		k := min(len(traces), 1000)
		if _, err := db.writeRequests(ctx, traces[:k], true); err != nil {
			b.Fatal(err)
		}
		traces = traces[k:]
	}
	q := UsageQuery{From: start, To: start.AddDate(0, 0, 30), GroupBy: ByDayBackend}
	for b.Loop() {
		rows, err := db.Usage(ctx, q)
		if err != nil || len(rows) != 180 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
}
