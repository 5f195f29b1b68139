// Package store owns FreeLane's SQLite database in the data directory: opening
// it with the pragmas the rest of the program relies on, migrating its schema
// from migrations embedded in the binary, and the request log, which writes
// llm.Trace records in batches off the request path.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	// The "sqlite3" database/sql driver, registered by the import, and its
	// error codes.
	"github.com/mattn/go-sqlite3"

	"freelane/backend/clock"
)

// ErrSchemaTooNew is returned (wrapped) by Open when the database was last
// migrated by a newer FreeLane than this one. Opening it anyway could corrupt
// data the newer schema depends on, so the caller should upgrade instead.
var ErrSchemaTooNew = errors.New("store: database schema is newer than this build")

// dsnParams are the connection parameters every connection is opened with.
// WAL lets the request log write while the API reads; busy_timeout makes a
// writer wait for the lock instead of failing at once; _txlock=immediate
// takes the write lock at BEGIN, because a deferred transaction that upgrades
// from reader to writer fails with "database is locked" regardless of the
// busy timeout when another writer got there first.
const dsnParams = "_journal_mode=WAL&_busy_timeout=5000&_synchronous=NORMAL&_foreign_keys=on&_txlock=immediate"

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema step. Version is the numeric prefix of
// its file name and is what PRAGMA user_version holds once it is applied.
type migration struct {
	Version int
	Name    string
	SQL     string
}

// DB is the opened SQLite database. It is safe for concurrent use.
type DB struct {
	sql   *sql.DB
	path  string
	clock clock.Clock
	red   Redactor
	// writes are the request log's statements, prepared once and used in
	// each batch's transaction (see txStmt).
	writesMu sync.Mutex
	writes   map[string]*sql.Stmt
}

// Redactor removes secrets from text (see package redact).
type Redactor interface{ String(s string) string }

// WithRedactor passes the free text of every request row (the model, the
// error, the attempts and notes) and every state document through r
// before it is written: the database file outlives the answers it
// records, and is read by whoever can read the data directory.
func WithRedactor(r Redactor) Option { return func(d *DB) { d.red = r } }

// redact returns s without the secrets the DB was told of.
func (d *DB) redact(s string) string {
	if d.red == nil {
		return s
	}
	return d.red.String(s)
}

// txStmt returns the statement of query in tx, prepared once per DB and
// then once per connection: a batch of a few rows (answers that wait for
// their rows are written in batches of a few) would otherwise spend a
// fair part of its time parsing the same SQL again.
func (d *DB) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	d.writesMu.Lock()
	st := d.writes[query]
	if st == nil {
		var err error
		if st, err = d.sql.PrepareContext(ctx, query); err != nil {
			d.writesMu.Unlock()
			return nil, err
		}
		if d.writes == nil {
			d.writes = map[string]*sql.Stmt{}
		}
		d.writes[query] = st
	}
	d.writesMu.Unlock()
	return tx.StmtContext(ctx, st), nil
}

// Option changes how Open sets up a DB.
type Option func(*DB)

// WithClock dates what the database stamps itself (state documents,
// traces that carry no start time) from c instead of the wall clock.
func WithClock(c clock.Clock) Option { return func(d *DB) { d.clock = clock.OrReal(c) } }

// Open opens (creating if necessary) the SQLite database at path and brings
// its schema up to date. The parent directory is created with mode 0700 and
// the database file is kept at mode 0600, since the data directory is
// private to the user. A database already migrated past the newest schema
// this build knows is refused with an error wrapping ErrSchemaTooNew.
func Open(ctx context.Context, path string, opts ...Option) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: resolve %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: create data directory: %w", err)
	}
	// Create the file ourselves so SQLite never creates it with the umask's
	// default mode; SQLite gives the -wal and -shm files the same mode as the
	// database file, so this covers them too.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("store: create database file: %w", err)
	}
	// An existing file may have been created looser by hand or by an older
	// tool; the database will hold request metadata, so tighten it.
	if err := os.Chmod(abs, 0o600); err != nil {
		return nil, fmt.Errorf("store: restrict database file mode: %w", err)
	}

	sqlDB, err := sql.Open("sqlite3", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}
	// Without WithClock (tools and tests that only read) the database
	// stamps on the wall clock.
	d := &DB{sql: sqlDB, path: abs, clock: clock.Real{}}
	for _, o := range opts {
		o(d)
	}
	if err := d.ping(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}
	if err := d.migrate(ctx); err != nil {
		sqlDB.Close()
		return nil, err
	}
	return d, nil
}

// ping opens the first connection, which switches a new file to WAL. When
// several processes open a new file at once, SQLite refuses a switch that
// could deadlock with another one's with SQLITE_BUSY at once, without
// waiting for busy_timeout; the file is in WAL mode once one switch has
// won, so a short retry lets the others open it.
func (d *DB) ping(ctx context.Context) error {
	const attempts = 20
	for i := 1; ; i++ {
		err := d.sql.PingContext(ctx)
		var se sqlite3.Error
		if err == nil || i == attempts || !errors.As(err, &se) || (se.Code != sqlite3.ErrBusy && se.Code != sqlite3.ErrLocked) {
			return err
		}
		if !clock.Sleep(d.clock, time.Duration(i)*10*time.Millisecond, ctx.Done()) {
			return ctx.Err()
		}
	}
}

// dsn builds the go-sqlite3 URI for an absolute path. The path is escaped
// because SQLite decodes %XX in URI file names and would otherwise cut the
// name at a '?' or '#'.
func dsn(abs string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(abs))
	return "file:" + esc + "?" + dsnParams
}

// Close closes the database. Close the RequestLog first so its final batch
// is written.
func (d *DB) Close() error {
	// PRAGMA optimize is SQLite's recommended last step on a connection: it
	// refreshes planner statistics only where they look stale, so it is cheap.
	// It is best effort; failing it must not keep the database open.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, _ = d.sql.ExecContext(ctx, "PRAGMA optimize")
	cancel()
	d.writesMu.Lock()
	for _, st := range d.writes {
		st.Close()
	}
	d.writes = nil
	d.writesMu.Unlock()
	if err := d.sql.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", d.path, err)
	}
	return nil
}

// SQL returns the underlying connection pool, for packages that keep their
// own tables in the same file. PRAGMA user_version belongs to this package's
// migrations, so such packages must track their schema versions elsewhere
// (for example in a table of their own). Transactions begun on it take the
// write lock immediately (_txlock=immediate); read-only work should use plain
// queries rather than a transaction.
func (d *DB) SQL() *sql.DB { return d.sql }

// Path returns the absolute path of the database file.
func (d *DB) Path() string { return d.path }

// SchemaVersion reports the schema version the database is at.
func (d *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := d.sql.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("store: read schema version: %w", err)
	}
	return v, nil
}

// migrate applies every embedded migration newer than the database's
// user_version, each in its own transaction together with the version bump,
// so a crash leaves the database at a well-defined version.
func (d *DB) migrate(ctx context.Context) error {
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		return err
	}
	latest := 0
	if len(migs) > 0 {
		latest = migs[len(migs)-1].Version
	}
	cur, err := d.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if cur > latest {
		return fmt.Errorf("%w: %s is at schema version %d but this build knows only up to %d; upgrade FreeLane or use another data directory",
			ErrSchemaTooNew, d.path, cur, latest)
	}
	for _, m := range migs {
		if m.Version <= cur {
			continue
		}
		if err := d.apply(ctx, m, latest); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one migration. The version is re-read inside the transaction,
// which holds the write lock from BEGIN, so two processes opening the same
// file at once cannot both apply the same step.
func (d *DB) apply(ctx context.Context, m migration, latest int) (err error) {
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migration %s: begin: %w", m.Name, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var cur int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
		return fmt.Errorf("store: migration %s: read schema version: %w", m.Name, err)
	}
	if cur > latest {
		return fmt.Errorf("%w: %s is at schema version %d but this build knows only up to %d",
			ErrSchemaTooNew, d.path, cur, latest)
	}
	if cur >= m.Version {
		// Another process applied it between our check and our lock.
		return tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("store: migration %s: %w", m.Name, err)
	}
	// PRAGMA does not take bound parameters; Version is an int we parsed.
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(m.Version)); err != nil {
		return fmt.Errorf("store: migration %s: set schema version: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migration %s: commit: %w", m.Name, err)
	}
	return nil
}

// loadMigrations reads migrations/NNNN_name.sql from fsys, sorted by
// version. Versions must run 1, 2, 3, ... without gaps so that a missing or
// misnamed file is caught here rather than silently skipped.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, fmt.Errorf("store: read embedded migrations: %w", err)
	}
	var migs []migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("store: migration %s: name must be NNNN_description.sql", name)
		}
		v, err := strconv.Atoi(prefix)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration %s: name must start with a positive version number", name)
		}
		body, err := fs.ReadFile(fsys, path.Join("migrations", name))
		if err != nil {
			return nil, fmt.Errorf("store: read migration %s: %w", name, err)
		}
		migs = append(migs, migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(migs, func(i, j int) bool { return migs[i].Version < migs[j].Version })
	for i, m := range migs {
		if m.Version != i+1 {
			return nil, fmt.Errorf("store: migration %s: expected version %d (versions must be 1, 2, 3, ... without gaps or duplicates)", m.Name, i+1)
		}
	}
	return migs, nil
}
