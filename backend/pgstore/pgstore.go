// Package pgstore keeps what the instances of a team share in one
// PostgreSQL database: the control plane's documents (the configuration,
// the sealed keys and header values), with a notification to the other
// instances on every change, and the usage ledger every instance ships
// its rows to. Its tables are rendered from the definitions package store
// shares with the SQLite file, so both hold the same columns.
//
// Every query runs under a short deadline, so that a PostgreSQL that
// stopped answering fails a call quickly instead of hanging it, and no
// error carries the connection string, which may hold a password.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"freelane/backend/clock"
	"freelane/backend/store"
)

// DefaultQueryTimeout bounds one query when Options.QueryTimeout is 0.
const DefaultQueryTimeout = 5 * time.Second

// migrateTimeout bounds the migrations at start, waiting for another
// instance's migrations included.
const migrateTimeout = 30 * time.Second

// rollUpTimeout bounds one roll-up of the ledger: the first one of a
// team's old ledger may fold many rows, and it runs off the request path.
const rollUpTimeout = 2 * time.Minute

// Channel is the channel state changes are announced on.
const Channel = "freelane_state"

// Options for Open.
type Options struct {
	// Instance names this instance: its ledger rows are kept under it,
	// and its own change notifications are told apart by it. Required.
	Instance string
	// QueryTimeout bounds every query; 0 means DefaultQueryTimeout.
	QueryTimeout time.Duration
	// Clock times the reconnection backoff of Watch and stamps the
	// documents; nil means the wall clock.
	Clock  clock.Clock
	Logger *slog.Logger
	// MaxConns bounds the pool; 0 means 4, enough for the shipper, the
	// dashboard and the control plane.
	MaxConns int32
}

// DB is an opened PostgreSQL store. It is safe for concurrent use.
type DB struct {
	pool     *pgxpool.Pool
	instance string
	timeout  time.Duration
	clock    clock.Clock
	log      *slog.Logger
	secrets  []string // what scrub takes out of error messages
}

// Open connects to the database at connString and brings its schema up to
// date. Several instances may open the same database at once: the
// migrations run under an advisory lock, once.
func Open(ctx context.Context, connString string, o Options) (*DB, error) {
	if o.Instance == "" {
		return nil, errors.New("pgstore: an instance name is required")
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// The parser's message quotes the connection string.
		return nil, errors.New("pgstore: store.postgres is not a PostgreSQL URL or key=value connection string that can be read")
	}
	cfg.MaxConns = 4
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = DefaultQueryTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > o.QueryTimeout {
		cfg.ConnConfig.ConnectTimeout = o.QueryTimeout
	}
	d := &DB{instance: o.Instance, timeout: o.QueryTimeout, clock: clock.OrReal(o.Clock), log: o.Logger,
		secrets: secretsOf(connString, cfg.ConnConfig.Password)}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, d.errorf("connecting", err)
	}
	d.pool = pool
	if err := d.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return d, nil
}

// secretsOf lists what must never appear in an error: the connection
// string itself, its password, and the password as a URL holds it.
func secretsOf(connString, password string) []string {
	out := []string{connString}
	if password != "" {
		out = append(out, password, url.QueryEscape(password), url.PathEscape(password))
	}
	if u, err := url.Parse(connString); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Close closes every connection.
func (d *DB) Close() { d.pool.Close() }

// Instance is the instance name the DB was opened with.
func (d *DB) Instance() string { return d.instance }

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error {
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	if err := d.pool.Ping(ctx); err != nil {
		return d.errorf("ping", err)
	}
	return nil
}

// deadline bounds one query.
func (d *DB) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.timeout)
}

// scrubbed is an error whose message had the connection's secrets taken
// out; it still unwraps to the original, for errors.Is.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// errorf wraps err as "pgstore: what: err", with the connection string
// and password taken out of the message.
func (d *DB) errorf(what string, err error) error {
	msg := err.Error()
	for _, s := range d.secrets {
		if len(s) >= 3 {
			msg = strings.ReplaceAll(msg, s, "[REDACTED]")
		}
	}
	return &scrubbed{msg: "pgstore: " + what + ": " + msg, err: err}
}

// migration is one schema step.
type migration struct {
	version int
	name    string
	sql     []string
}

// advisoryLock is the key of the advisory lock the migrations run under
// ("freelane" in ASCII).
const advisoryLock = 0x667265656c616e65

// migrations are the schema's steps, in order. They are never edited once
// released: a change is a new step.
func migrations() []migration {
	ledger := store.LedgerTable.Prefixed(store.Column{Name: "instance", Kind: store.Text})
	return []migration{{
		version: 1, name: "state and ledger",
		sql: []string{
			store.StateTable.DDL(store.Postgres),
			ledger.DDL(store.Postgres),
			`CREATE INDEX ledger_time ON ledger (time)`,
		},
	}, {
		version: 2, name: "ledger roll-up",
		sql: []string{
			// Old rows are folded into quarter-hour totals, which every
			// instance turns into its own local days as it does rows.
			`CREATE TABLE ledger_quarters (
	quarter BIGINT NOT NULL, instance TEXT NOT NULL, backend TEXT NOT NULL, chain TEXT NOT NULL, path TEXT NOT NULL,
	requests BIGINT NOT NULL, failures BIGINT NOT NULL, prompt_tokens BIGINT NOT NULL, completion_tokens BIGINT NOT NULL,
	estimated_tokens BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL,
	PRIMARY KEY (quarter, instance, backend, chain, path))`,
			// The highest seq folded per instance: a shipper must not
			// copy those rows again, nor take their absence for a loss.
			`CREATE TABLE ledger_rolled (instance TEXT PRIMARY KEY, seq BIGINT NOT NULL)`,
		},
	}, {
		version: 3, name: "request log",
		sql: []string{
			sharedTable(store.RequestsTable).DDL(store.Postgres),
			// Pages of the log are read newest first, ties by instance
			// and seq, as the keyset of their cursors goes.
			`CREATE INDEX requests_time ON requests (started_at, instance, seq)`,
			sharedTable(store.BodiesTable).DDL(store.Postgres),
			`CREATE INDEX request_bodies_time ON request_bodies (started_at)`,
		},
	}}
}

// sharedTable is t as PostgreSQL holds it for the whole team: keyed by
// the instance that wrote a row and the row's seq there, with an instance
// column first when t has none of its own.
func sharedTable(t store.Table) store.Table {
	if t.Column("instance") >= 0 {
		return t.Keyed(append([]string{"instance"}, t.Key...)...)
	}
	return t.Prefixed(store.Column{Name: "instance", Kind: store.Text})
}

// migrate applies the steps not applied yet, each in its own transaction
// with its row in schema_migrations, while holding the advisory lock so
// that instances starting together take turns.
func (d *DB) migrate(ctx context.Context) (err error) {
	ctx, cancel := context.WithTimeout(ctx, migrateTimeout)
	defer cancel()
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return d.errorf("connecting", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(advisoryLock)); err != nil {
		return d.errorf("waiting for the migration lock", err)
	}
	defer func() {
		// A connection whose unlock failed must not go back to the pool
		// still holding the lock.
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(advisoryLock)); uerr != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
			err = errors.Join(err, d.errorf("releasing the migration lock", uerr))
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return d.errorf("creating schema_migrations", err)
	}
	var cur int
	if err := conn.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&cur); err != nil {
		return d.errorf("reading the schema version", err)
	}
	migs := migrations()
	if latest := migs[len(migs)-1].version; cur > latest {
		return fmt.Errorf("pgstore: the database is at schema version %d but this build knows only up to %d; upgrade FreeLane on this instance", cur, latest)
	}
	for _, m := range migs {
		if m.version <= cur {
			continue
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, s := range m.sql {
				if _, err := tx.Exec(ctx, s); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		}); err != nil {
			return d.errorf(fmt.Sprintf("migration %d (%s)", m.version, m.name), err)
		}
	}
	return nil
}
