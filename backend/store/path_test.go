package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"freelane/backend/clock"
	"freelane/backend/llm"
)

// failedOver is a request to /v1/messages that failed over from one
// backend to another, past a skipped one.
func failedOver(id string, at time.Time) llm.Trace {
	return llm.Trace{ID: id, Start: at, Endpoint: string(llm.Chat), Path: "/v1/messages", Dialect: llm.DialectAnthropic,
		Model: "auto", Chain: "auto", Backend: "b/m", Status: 200, Class: llm.OK, Latency: 30 * time.Millisecond,
		Attempts: []llm.Attempt{
			{Backend: "a/m", Class: llm.Transient, Status: 503, Latency: 10 * time.Millisecond},
			{Backend: "s/m", Class: llm.Soft, Skipped: true, Skip: llm.SkipOpen},
			{Backend: "b/m", Class: llm.OK, Status: 200, Latency: 15 * time.Millisecond, TTFT: 5 * time.Millisecond},
		}}
}

// TestPathRoundTrip stores a request's API path and reads it back from the
// request log, the ledger, the usage by path and the daily totals once the
// rows are rolled up.
func TestPathRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.Local)
	plain := llm.Trace{ID: "plain", Start: at.Add(time.Second), Endpoint: string(llm.Chat), Path: "/v1/chat/completions",
		Dialect: llm.DialectOpenAI, Model: "a/m", Backend: "a/m", Status: 200, Class: llm.OK,
		Attempts: []llm.Attempt{{Backend: "a/m", Class: llm.OK, Status: 200}}}
	traces := []llm.Trace{failedOver("messages", at), plain}
	if _, err := db.writeRequests(ctx, traces, true); err != nil {
		t.Fatal(err)
	}
	got, err := db.RecentRequests(ctx, RequestQuery{})
	if err != nil {
		t.Fatal(err)
	}
	assertTracesEqual(t, got, []llm.Trace{plain, traces[0]})

	byPath := func() map[string]int64 {
		rows, err := db.Usage(ctx, UsageQuery{From: at.AddDate(0, 0, -1), To: at.AddDate(0, 0, 1), GroupBy: ByPath})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, r := range rows {
			out[r.Key] = r.Requests
		}
		return out
	}
	if got := byPath(); len(got) != 2 || got["/v1/messages"] != 2 || got["/v1/chat/completions"] != 1 {
		t.Fatalf("usage by path %v", got)
	}
	if n, err := db.RollUpLedger(ctx, at.AddDate(0, 0, 1)); err != nil || n != 3 {
		t.Fatalf("rolled up %d rows (%v), want 3", n, err)
	}
	if got := byPath(); len(got) != 2 || got["/v1/messages"] != 2 || got["/v1/chat/completions"] != 1 {
		t.Fatalf("usage by path of the rolled-up day %v", got)
	}
	var paths []string
	if err := db.EachLedgerRow(ctx, at.AddDate(0, 0, -1), at.AddDate(0, 0, 1), func(r LedgerRow) error {
		paths = append(paths, r.Path)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 || paths[0] != "/v1/chat/completions" || paths[2] != "/v1/messages" {
		t.Fatalf("rolled-up ledger paths %v", paths)
	}
}

// TestEachCallAndCountRequests reads back what the dashboard's counters
// are rebuilt from: the requests of a day, and each call with whether it
// failed over and when its request ended, in that order.
func TestEachCallAndCountRequests(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.Local)
	// A request whose last call failed did not fail over from it, even
	// with a skipped backend after it.
	lastFailed := llm.Trace{ID: "last-failed", Start: at.Add(-time.Hour), Status: 503, Class: llm.Transient,
		Attempts: []llm.Attempt{
			{Backend: "a/m", Class: llm.Transient, Status: 503, Latency: time.Millisecond},
			{Backend: "s/m", Class: llm.Soft, Skipped: true, Skip: llm.SkipOpen},
		}}
	// The first request ends after the second: it is listed second.
	slow := failedOver("slow", at)
	slow.Latency = 10 * time.Second
	quick := llm.Trace{ID: "quick", Start: at.Add(time.Second), Class: llm.OK, Latency: 2 * time.Millisecond,
		Attempts: []llm.Attempt{{Backend: "c/m", Class: llm.OK, Latency: 2 * time.Millisecond}}}
	yesterday := llm.Trace{ID: "yesterday", Start: at.AddDate(0, 0, -1), Class: llm.OK,
		Attempts: []llm.Attempt{{Backend: "c/m", Class: llm.OK}}}
	if _, err := db.writeRequests(ctx, []llm.Trace{yesterday, lastFailed, slow, quick}, true); err != nil {
		t.Fatal(err)
	}

	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.Local)
	if n, err := db.CountRequests(ctx, day, day.AddDate(0, 0, 1)); err != nil || n != 3 {
		t.Fatalf("requests of the day: %d (%v), want 3", n, err)
	}

	var calls []Call
	if err := db.EachCall(ctx, at.Add(-2*time.Hour), func(c Call) error {
		calls = append(calls, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []Call{
		{End: at.Add(-time.Hour), Backend: "a/m", Latency: time.Millisecond},
		{End: at.Add(time.Second + 2*time.Millisecond), Backend: "c/m", OK: true, Latency: 2 * time.Millisecond},
		{End: at.Add(10 * time.Second), Backend: "a/m", Failover: true, Latency: 10 * time.Millisecond},
		{End: at.Add(10 * time.Second), Backend: "b/m", OK: true, Latency: 15 * time.Millisecond, TTFT: 5 * time.Millisecond},
	}
	if len(calls) != len(want) {
		t.Fatalf("calls %+v, want %+v", calls, want)
	}
	for i := range want {
		if !calls[i].End.Equal(want[i].End) {
			t.Errorf("call %d ends %v, want %v", i, calls[i].End, want[i].End)
		}
		calls[i].End, want[i].End = time.Time{}, time.Time{}
		if calls[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i, calls[i], want[i])
		}
	}
}

// TestMigrateSchema7KeepsRows opens a database of the schema before the
// path columns, with a request, a ledger row and a rolled-up day in it:
// every row is kept, with an empty path, and new rows take theirs.
func TestMigrateSchema7KeepsRows(t *testing.T) {
	ctx := context.Background()
	const previous = 7
	path := filepath.Join(t.TempDir(), "freelane.db")
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	old := &DB{sql: raw, path: path, clock: clock.Real{}}
	for _, m := range migs {
		if m.Version > previous {
			break
		}
		if err := old.apply(ctx, m, previous); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.Local)
	for _, q := range []string{
		`INSERT INTO requests (id, started_at, endpoint, dialect, model, backend, status, class, attempts)
		 VALUES ('old', ?, 'chat/completions', 'anthropic', 'auto', 'a/m', 200, 'ok', '[{"backend":"a/m","class":"ok"}]')`,
		`INSERT INTO ledger (time, request_id, chain, backend, dialect, outcome) VALUES (?, 'old', 'auto', 'a/m', 'openai', 'ok')`,
		`INSERT INTO ledger_daily (day, backend, chain, requests, failures, prompt_tokens, cost)
		 VALUES ('2026-10-01', 'a/m', 'auto', 7, 1, 100, 0.5)`,
	} {
		if _, err := raw.Exec(q, at.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open of a schema %d database: %v", previous, err)
	}
	defer db.Close()
	if v, err := db.SchemaVersion(ctx); err != nil || v != latestVersion(t) {
		t.Fatalf("schema version %d (%v), want %d", v, err, latestVersion(t))
	}
	if _, err := db.writeRequests(ctx, []llm.Trace{failedOver("new", at.Add(time.Minute))}, true); err != nil {
		t.Fatal(err)
	}
	got, err := db.RecentRequests(ctx, RequestQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Path != "/v1/messages" || got[1].ID != "old" || got[1].Path != "" || got[1].Dialect != llm.DialectAnthropic {
		t.Fatalf("requests after migrating: %+v", got)
	}
	rows, err := db.Usage(ctx, UsageQuery{From: at.AddDate(0, -2, 0), To: at.AddDate(0, 0, 1), GroupBy: ByPath})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Key != "" || rows[0].Requests != 8 || rows[0].Failures != 1 || rows[0].PromptTokens != 100 ||
		rows[0].Cost != 0.5 || rows[1].Key != "/v1/messages" || rows[1].Requests != 2 {
		t.Fatalf("usage by path after migrating: %+v", rows)
	}
	// The rebuilt daily table still folds more rows into a day it holds.
	if _, err := db.SQL().Exec(`INSERT INTO ledger (time, request_id, chain, backend, outcome) VALUES (?, 'older', 'auto', 'a/m', 'ok')`,
		time.Date(2026, 10, 1, 12, 0, 0, 0, time.Local).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if n, err := db.RollUpLedger(ctx, at.AddDate(0, 0, -1)); err != nil || n != 1 {
		t.Fatalf("roll-up after migrating: %d (%v)", n, err)
	}
	var requests int64
	if err := db.SQL().QueryRow(`SELECT requests FROM ledger_daily WHERE day = '2026-10-01' AND path = ''`).Scan(&requests); err != nil || requests != 8 {
		t.Fatalf("the rolled-up day holds %d requests (%v), want 8", requests, err)
	}
}
