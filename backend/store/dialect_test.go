package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/clock"
	"freelane/backend/llm"
)

// TestDialectsRoundTrip writes a request whose attempts spoke two dialects
// to a database file and reads the dialects back from the request log, the
// attempts JSON and the ledger.
func TestDialectsRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.Local)
	tr := llm.Trace{ID: "mixed", Start: at, Endpoint: "chat", Dialect: llm.DialectAnthropic, Model: "auto", Chain: "auto",
		Backend: "claude/haiku", Status: 200, Class: llm.OK, Attempts: []llm.Attempt{
			{Backend: "groq/llama", Dialect: llm.DialectOpenAI, Class: llm.RateLimited, Status: 429, Latency: time.Millisecond},
			{Backend: "google/flash", Dialect: llm.DialectGemini, Class: llm.Soft, Skipped: true,
				Skip: llm.SkipUnsupported, Reason: "google/flash cannot serve this request"},
			{Backend: "claude/haiku", Dialect: llm.DialectAnthropic, Class: llm.OK, Status: 200, Latency: 2 * time.Millisecond,
				PromptTokens: 3, CompletionTokens: 4},
		}}
	if _, err := db.writeRequests(ctx, []llm.Trace{tr}, true); err != nil {
		t.Fatal(err)
	}

	got, err := db.RecentRequests(ctx, RequestQuery{})
	if err != nil {
		t.Fatal(err)
	}
	assertTracesEqual(t, got, []llm.Trace{tr})
	if len(got) == 1 && got[0].Dialect != llm.DialectAnthropic {
		t.Errorf("client dialect %q, want anthropic", got[0].Dialect)
	}

	// The dialect is in the stored JSON itself, so SQL that reaches into
	// the attempts sees it too.
	var dialects string
	if err := db.SQL().QueryRow(`SELECT group_concat(json_extract(value, '$.dialect'), ',')
		FROM requests, json_each(requests.attempts) WHERE requests.id = 'mixed'`).Scan(&dialects); err != nil {
		t.Fatal(err)
	}
	if dialects != "openai,gemini,anthropic" {
		t.Errorf("stored attempt dialects %q", dialects)
	}

	// The skipped attempt is not in the ledger; the two calls are, each
	// with the dialect its backend was spoken to in.
	var rows []LedgerRow
	if err := db.EachLedgerRow(ctx, at.Add(-time.Hour), at.Add(time.Hour), func(r LedgerRow) error {
		rows = append(rows, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Backend != "groq/llama" || rows[0].Dialect != "openai" ||
		rows[1].Backend != "claude/haiku" || rows[1].Dialect != "anthropic" {
		t.Fatalf("ledger rows %+v", rows)
	}
}

// TestAttemptsWithoutDialectDecode reads attempts JSON as it was stored
// before attempts carried a dialect.
func TestAttemptsWithoutDialectDecode(t *testing.T) {
	as, err := decodeAttempts(`[{"backend":"a/m","class":"ok","status":200,"latency_ms":1.5}]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Backend != "a/m" || as[0].Dialect != "" || as[0].Latency != 1500*time.Microsecond {
		t.Fatalf("decoded %+v", as)
	}
	// An attempt with no dialect is written without the key, as before.
	s, err := encodeAttempts(as)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s, "dialect") {
		t.Errorf("encoded %s", s)
	}
}

// TestMigrateSchema3KeepsRows builds a database file with the migrations
// before the dialect columns, writes a request and a ledger row the way the
// previous build did, and opens it with this build: it must migrate, keep
// the rows with empty dialects and take new rows with theirs.
func TestMigrateSchema3KeepsRows(t *testing.T) {
	ctx := context.Background()
	const previous = 3
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
	if _, err := raw.Exec(`INSERT INTO requests (id, started_at, endpoint, model, chain, backend, status, class,
		latency_ms, prompt_tokens, completion_tokens, total_tokens, attempts)
		VALUES ('old', ?, 'chat', 'auto', 'auto', 'groq/llama', 200, 'ok', 12.5, 1, 2, 3,
		'[{"backend":"groq/llama","class":"ok","status":200,"latency_ms":12.5,"prompt_tokens":1,"completion_tokens":2}]')`,
		at.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO ledger (time, request_id, chain, backend, outcome, status, latency_ms,
		prompt_tokens, completion_tokens) VALUES (?, 'old', 'auto', 'groq/llama', 'ok', 200, 12.5, 1, 2)`,
		at.UnixMilli()); err != nil {
		t.Fatal(err)
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

	tr := llm.Trace{ID: "new", Start: at.Add(time.Minute), Endpoint: "chat", Dialect: llm.DialectGemini, Model: "auto",
		Chain: "auto", Backend: "google/flash", Status: 200, Class: llm.OK, Attempts: []llm.Attempt{
			{Backend: "google/flash", Dialect: llm.DialectGemini, Class: llm.OK, Status: 200, Latency: time.Millisecond},
		}}
	if _, err := db.writeRequests(ctx, []llm.Trace{tr}, true); err != nil {
		t.Fatal(err)
	}
	got, err := db.RecentRequests(ctx, RequestQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d requests after migrating, want 2", len(got))
	}
	if n, o := got[0], got[1]; n.ID != "new" || n.Dialect != llm.DialectGemini || n.Attempts[0].Dialect != llm.DialectGemini ||
		o.ID != "old" || o.Dialect != "" || len(o.Attempts) != 1 || o.Attempts[0].Dialect != "" ||
		o.Attempts[0].Backend != "groq/llama" || o.Usage.TotalTokens != 3 || o.Latency != 12500*time.Microsecond {
		t.Fatalf("requests after migrating: %+v", got)
	}

	var rows []LedgerRow
	if err := db.EachLedgerRow(ctx, at.Add(-time.Hour), at.Add(time.Hour), func(r LedgerRow) error {
		rows = append(rows, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].RequestID != "old" || rows[0].Dialect != "" || rows[0].PromptTokens != 1 ||
		rows[1].RequestID != "new" || rows[1].Dialect != "gemini" {
		t.Fatalf("ledger after migrating: %+v", rows)
	}
	usage, err := db.Usage(ctx, UsageQuery{From: at.Add(-time.Hour), To: at.Add(time.Hour), GroupBy: ByBackend})
	if err != nil || len(usage) != 2 {
		t.Fatalf("usage after migrating: %+v (%v)", usage, err)
	}
}
