package store

import (
	"context"
	"errors"
	"freelane/backend/llm"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// openTestDB opens a fresh database file under t.TempDir and closes it when
// the test ends.
func openTestDB(t testing.TB) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "freelane.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func latestVersion(t *testing.T) int {
	t.Helper()
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatalf("loadMigrations: %v", err)
	}
	if len(migs) == 0 {
		t.Fatal("no embedded migrations")
	}
	return migs[len(migs)-1].Version
}

func tableNames(t *testing.T, db *DB) map[string]bool {
	t.Helper()
	rows, err := db.SQL().Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names[n] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

func TestOpenCreatesPrivateFileAndMigrates(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data", "nested")
	path := filepath.Join(dir, "freelane.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()

	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("database file not created: %v", err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("database file mode = %o, want 600", got)
	}
	dst, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := dst.Mode().Perm(); got != 0o700 {
		t.Errorf("data directory mode = %o, want 700", got)
	}

	// Force a write so the WAL exists, then check SQLite gave it the
	// database file's mode rather than the umask default.
	if _, err := db.writeRequests(ctx, sampleTraces(1), true); err != nil {
		t.Fatal(err)
	}
	if wst, err := os.Stat(path + "-wal"); err != nil {
		t.Errorf("no WAL file (journal_mode=WAL not applied?): %v", err)
	} else if got := wst.Mode().Perm(); got != 0o600 {
		t.Errorf("WAL file mode = %o, want 600", got)
	}

	v, err := db.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := latestVersion(t); v != want {
		t.Errorf("schema version = %d, want %d", v, want)
	}
	tables := tableNames(t, db)
	for _, name := range []string{"requests"} {
		if !tables[name] {
			t.Errorf("table %s missing after migration; have %v", name, tables)
		}
	}

	// The DSN pragmas must be in effect on pooled connections.
	var mode string
	if err := db.SQL().QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
	var fk int
	if err := db.SQL().QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil {
		t.Fatal(err)
	}
	if fk != 1 {
		t.Errorf("foreign_keys = %d, want 1", fk)
	}
}

func TestOpenTightensExistingFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "freelane.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("database file mode = %o, want 600", got)
	}
}

func TestOpenPathNeedingEscape(t *testing.T) {
	// '?' and '#' would end the file name in a SQLite URI if not escaped,
	// and SQLite would silently open a different file.
	path := filepath.Join(t.TempDir(), "odd?dir#x%20", "free lane.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := db.writeRequests(context.Background(), sampleTraces(1), true); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("database not at the requested path: %v", err)
	}
	if st.Size() == 0 {
		entries, _ := os.ReadDir(filepath.Dir(path))
		t.Errorf("database at %s is empty; SQLite wrote elsewhere? dir has %v", path, entries)
	}
}

func TestReopenIsIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "freelane.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.writeRequests(ctx, sampleTraces(3), true); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for i := 0; i < 2; i++ {
		db, err = Open(ctx, path)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		v, err := db.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := latestVersion(t); v != want {
			t.Errorf("reopen %d: schema version = %d, want %d", i, v, want)
		}
		if n := countRequests(t, db); n != 3 {
			t.Errorf("reopen %d: %d requests, want 3 (data lost or duplicated)", i, n)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "freelane.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	newer := latestVersion(t) + 1
	if _, err := db.SQL().Exec("PRAGMA user_version = " + strconv.Itoa(newer)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(ctx, path)
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded on a database with a newer schema version")
	}
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("error %v does not wrap ErrSchemaTooNew", err)
	}
	if msg := err.Error(); !strings.Contains(msg, strconv.Itoa(newer)) || !strings.Contains(msg, "newer") {
		t.Errorf("error %q should name the version %d and say the schema is newer", msg, newer)
	}
}

// TestConcurrentOpenMigratesOnce opens one fresh file from several
// goroutines at once, as several processes starting together would. Each
// migration reads user_version and then writes, and a deferred transaction
// cannot upgrade its read lock once another connection has written, so
// without _txlock=immediate some Opens fail with "database is locked".
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "freelane.db")
	const n = 8
	dbs := make([]*DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			dbs[i], errs[i] = Open(ctx, path)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open %d: %v", i, errs[i])
			continue
		}
		v, err := dbs[i].SchemaVersion(ctx)
		if err != nil {
			t.Error(err)
		} else if want := latestVersion(t); v != want {
			t.Errorf("Open %d: schema version %d, want %d", i, v, want)
		}
		dbs[i].Close()
	}
}

func TestLoadMigrationsValidatesNames(t *testing.T) {
	ok := fstest.MapFS{
		"migrations/0002_b.sql": {Data: []byte("SELECT 2;")},
		"migrations/0001_a.sql": {Data: []byte("SELECT 1;")},
		"migrations/README":     {Data: []byte("not a migration")},
	}
	migs, err := loadMigrations(ok)
	if err != nil {
		t.Fatalf("loadMigrations: %v", err)
	}
	if len(migs) != 2 || migs[0].Version != 1 || migs[1].Version != 2 {
		t.Errorf("migrations = %+v, want versions 1, 2 in order", migs)
	}

	bad := map[string]fstest.MapFS{
		"gap": {
			"migrations/0001_a.sql": {Data: []byte("SELECT 1;")},
			"migrations/0003_c.sql": {Data: []byte("SELECT 3;")},
		},
		"duplicate": {
			"migrations/0001_a.sql": {Data: []byte("SELECT 1;")},
			"migrations/0001_b.sql": {Data: []byte("SELECT 1;")},
		},
		"no number": {
			"migrations/init_a.sql": {Data: []byte("SELECT 1;")},
		},
	}
	for name, fsys := range bad {
		if _, err := loadMigrations(fsys); err == nil {
			t.Errorf("%s: loadMigrations accepted invalid migration names", name)
		}
	}
}

func TestRequestByIDKeepsTheDecision(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	traces := sampleTraces(2)
	traces[0].Decision = &llm.Decision{Requested: "work:fast", Chain: "work", Gear: "auto", Strategy: "least_latency",
		Candidates: []llm.Candidate{{Backend: "groq/llama", Rank: 1, Verdict: llm.VerdictOrdered, Reason: "fastest"}}}
	if _, err := db.writeRequests(ctx, traces, true); err != nil {
		t.Fatal(err)
	}
	got, found, err := db.RequestByID(ctx, traces[0].ID)
	if err != nil || !found {
		t.Fatalf("found %v, %v", found, err)
	}
	if d := got.Decision; d == nil || d.Chain != "work" || d.Strategy != "least_latency" || len(d.Candidates) != 1 || d.Candidates[0].Reason != "fastest" {
		t.Errorf("decision %+v", got.Decision)
	}
	if other, _, _ := db.RequestByID(ctx, traces[1].ID); other.Decision != nil {
		t.Errorf("a trace without a decision read back with %+v", other.Decision)
	}
	if _, found, err := db.RequestByID(ctx, "req_nope"); found || err != nil {
		t.Errorf("unknown id: found %v, %v", found, err)
	}
}
