package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/logtest"
)

// A response is found only by the owner it was stored for, while it waits
// for the writer and once it is written; for anyone else it does not exist.
func TestResponseStoreFindsOnlyTheOwners(t *testing.T) {
	db := openTestDB(t)
	s := NewResponseStore(db, ResponseOptions{Logger: quietLogger})
	ctx := context.Background()
	if err := s.Put(StoredResponse{ID: "resp_a", Owner: "token", Response: []byte(`{}`), Items: []byte(`[]`)}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if _, ok, err := s.Get(ctx, "resp_a", "token"); !ok || err != nil {
			t.Fatalf("%s: the owner does not find it: %v %v", when, ok, err)
		}
		for _, other := range []string{"", "anonymous", "uid:65534"} {
			if r, ok, err := s.Get(ctx, "resp_a", other); ok || err != nil || r.Response != nil {
				t.Fatalf("%s: %q finds it: %v %v %+v", when, other, ok, err, r)
			}
		}
	}
	check("pending")
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	check("written")
	var owner string
	if err := db.SQL().QueryRow(`SELECT owner FROM responses WHERE id = 'resp_a'`).Scan(&owner); err != nil || owner != "token" {
		t.Fatalf("owner column %q: %v", owner, err)
	}
}

func storedIDs(t *testing.T, db *DB) []string {
	t.Helper()
	rows, err := db.SQL().Query(`SELECT id FROM responses ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// Past the bound on their total size the oldest responses go first, down
// to nine tenths of the bound, and the log says so once per pruning.
func TestResponseStoreSizeBoundPrunesTheOldest(t *testing.T) {
	db := openTestDB(t)
	clk := clocktest.New(baseTime)
	var logs logtest.Buffer
	s := NewResponseStore(db, ResponseOptions{Clock: clk, MaxTotal: 10_000, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	for i := range 12 {
		// 1000 bytes each: a 2-byte object and 998 bytes of items.
		items := []byte(`["` + strings.Repeat("x", 994) + `"]`)
		r := StoredResponse{ID: fmt.Sprintf("resp_%02d", i), Owner: "token", Created: clk.Now(), Response: []byte(`{}`), Items: items}
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The 11th passed 10,000 bytes: the two oldest went, leaving 9,000,
	// and the 12th fits.
	ids := storedIDs(t, db)
	if len(ids) != 10 || ids[0] != "resp_02" || ids[9] != "resp_11" {
		t.Fatalf("kept %v", ids)
	}
	var total int64
	if err := db.SQL().QueryRow(`SELECT SUM(size) FROM responses`).Scan(&total); err != nil || total != 10_000 {
		t.Fatalf("total %d: %v", total, err)
	}
	if n := logs.Count("the oldest were deleted"); n != 1 {
		t.Fatalf("%d log lines for one pruning:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "deleted=2") || !strings.Contains(logs.String(), "requests.response_store_mb") {
		t.Errorf("log: %s", logs.String())
	}
	// A response that could never fit is refused rather than emptying
	// the store.
	if err := NewResponseStore(db, ResponseOptions{MaxTotal: 100, Logger: quietLogger}).Put(StoredResponse{ID: "resp_big", Items: make([]byte, 200)}); err == nil {
		t.Fatal("a response over the whole bound was accepted")
	}
}

// A lower bound set while running applies at the hourly prune, which also
// counts the stored bytes afresh.
func TestResponseStoreLowerBoundAppliesAtThePrune(t *testing.T) {
	db := openTestDB(t)
	clk := clocktest.New(baseTime)
	var logs logtest.Buffer
	s := NewResponseStore(db, ResponseOptions{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for i := range 4 {
		if err := s.Put(StoredResponse{ID: fmt.Sprintf("resp_%d", i), Owner: "o", Created: clk.Now().Add(time.Duration(i) * time.Second),
			Response: []byte(`{}`), Items: make([]byte, 998)}); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the writer stored 4 responses", func() bool { return len(storedIDs(t, db)) == 4 })
	s.SetMaxTotal(2500)
	clk.Advance(time.Hour)
	waitUntil(t, "the prune kept the two newest", func() bool {
		ids := storedIDs(t, db)
		return len(ids) == 2 && ids[0] == "resp_2"
	})
}

// waitUntil waits for the writer goroutine to get somewhere; it moves no
// time, only lets the goroutine run.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// The writer loop deletes responses past their retention when the clock
// moves past it, and not before; a retention set while running applies to
// responses stored from then on.
func TestResponseStoreRetentionPrunesWhenTimeMoves(t *testing.T) {
	db := openTestDB(t)
	clk := clocktest.New(baseTime)
	s := NewResponseStore(db, ResponseOptions{Clock: clk, Logger: quietLogger})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	put := func(id string) {
		t.Helper()
		if err := s.Put(StoredResponse{ID: id, Owner: "o", Response: []byte(`{}`), Items: []byte(`[]`)}); err != nil {
			t.Fatal(err)
		}
	}
	put("resp_30d")
	waitUntil(t, "resp_30d is written", func() bool { return len(storedIDs(t, db)) == 1 })
	s.SetRetention(7 * 24 * time.Hour)
	put("resp_7d")
	waitUntil(t, "resp_7d is written", func() bool { return len(storedIDs(t, db)) == 2 })

	clk.Advance(7*24*time.Hour + time.Hour)
	waitUntil(t, "the 7-day response is pruned", func() bool {
		ids := storedIDs(t, db)
		return len(ids) == 1 && ids[0] == "resp_30d"
	})
	clk.Advance(22 * 24 * time.Hour)
	if ids := storedIDs(t, db); len(ids) != 1 {
		t.Fatalf("pruned before its 30 days: %v", ids)
	}
	if _, ok, _ := s.Get(context.Background(), "resp_30d", "o"); !ok {
		t.Fatal("not found before its 30 days")
	}
	clk.Advance(24 * time.Hour)
	waitUntil(t, "the 30-day response is pruned", func() bool { return len(storedIDs(t, db)) == 0 })
}

// Responses stored before owners existed are deleted by the migration, and
// their text is overwritten in the file rather than left in free pages.
func TestMigrationDeletesResponsesWithoutOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "freelane.db")
	raw, err := sql.Open("sqlite3", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	old := &DB{sql: raw, path: path}
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, m := range migs[:6] {
		if err := old.apply(ctx, m, 6); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "sk-old-plaintext-key-0123456789"
	big := strings.Repeat(secret+" ", 2000)
	if _, err := raw.Exec(`INSERT INTO responses (id, created_at, expires_at, response, items) VALUES ('resp_fixed', 1, 9e15, ?, ?)`, `{"id":"resp_fixed"}`, `["`+big+`"]`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte(secret)) {
		t.Fatal("the old row is not in the file to begin with")
	}

	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if ids := storedIDs(t, db); len(ids) != 0 {
		t.Fatalf("kept %v", ids)
	}
	if _, err := db.SQL().Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal"} {
		if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s still holds the old response's text", filepath.Base(f))
		}
	}
}
