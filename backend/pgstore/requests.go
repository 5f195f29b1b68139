package pgstore

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"freelane/backend/llm"
	"freelane/backend/store"
)

// insertRows copies rows of t, written by this instance and numbered by
// its seq, in one statement, under this instance's name whatever name the
// rows hold (rows written before the instance joined a team hold none). A
// row already there is left as it is, so copying a batch again counts
// nothing twice.
func (d *DB) insertRows(ctx context.Context, t store.Table, rows []store.Row) error {
	if len(rows) == 0 {
		return nil
	}
	shared := sharedTable(t)
	cols := shared.ColumnNames()
	inst := shared.Column("instance")
	// A table without its own instance column gets one put first.
	prefixed := t.Column("instance") < 0
	var q strings.Builder
	q.WriteString("INSERT INTO " + shared.Name + " (" + strings.Join(cols, ", ") + ") VALUES ")
	writePlaceholders(&q, len(rows), len(cols))
	args := make([]any, 0, len(rows)*len(cols))
	for _, r := range rows {
		row := len(args)
		if prefixed {
			args = append(args, nil)
		}
		args = append(args, r.Values...)
		args[row+inst] = d.instance
		for j := row; j < len(args); j++ {
			if s, ok := args[j].(string); ok {
				args[j] = pgText(s)
			}
		}
	}
	// Without a conflict target, a row whose request id another
	// instance's row already holds is skipped too, rather than failing
	// the batch and every batch after it.
	q.WriteString(" ON CONFLICT DO NOTHING")
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	if _, err := d.pool.Exec(ctx, q.String(), args...); err != nil {
		return d.errorf("copying "+t.Name+" rows", err)
	}
	return nil
}

// pgText is s as PostgreSQL's text takes it: SQLite keeps any bytes in a
// text column (an upstream's error, a name a client sent), but
// PostgreSQL refuses a NUL and bytes that are not UTF-8, and one such row
// would stop every batch after it.
func pgText(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// shippedSeqOf is the highest seq of this instance's rows of t in the
// database, 0 when it holds none.
func (d *DB) shippedSeqOf(ctx context.Context, t store.Table) (int64, error) {
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	var n int64
	if err := d.pool.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM `+t.Name+` WHERE instance = $1`, d.instance).Scan(&n); err != nil {
		return 0, d.errorf("reading "+t.Name, err)
	}
	return n, nil
}

// QueryRequests returns one page of the whole team's request log, with
// the filters, sorts and cursors of store's QueryRequests. A bad
// q.Cursor is an error wrapping store.ErrBadCursor.
func (d *DB) QueryRequests(ctx context.Context, q store.RequestQuery) (store.RequestPage, error) {
	st, err := q.Statement(store.Postgres)
	if err != nil {
		return store.RequestPage{}, err
	}
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	rows, err := d.pool.Query(ctx, st.SQL, st.Args...)
	if err != nil {
		return store.RequestPage{}, d.errorf("reading the request log", err)
	}
	defer rows.Close()
	page, err := st.Page(rows)
	if err != nil {
		return store.RequestPage{}, d.errorf("reading the request log", err)
	}
	return page, nil
}

// RequestByID returns the stored trace of one request of any instance;
// found is false when no row has the id.
func (d *DB) RequestByID(ctx context.Context, id string) (t llm.Trace, found bool, err error) {
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	q, args := store.RequestByIDStatement(store.Postgres, id)
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return llm.Trace{}, false, d.errorf("reading the request log", err)
	}
	defer rows.Close()
	traces, err := store.ScanTraces(rows)
	if err != nil {
		return llm.Trace{}, false, d.errorf("reading the request log", err)
	}
	if len(traces) == 0 {
		return llm.Trace{}, false, nil
	}
	return traces[0], true, nil
}

// RequestBodies returns the stored bodies of one request of any instance;
// found is false when none are stored.
func (d *DB) RequestBodies(ctx context.Context, id string) (b store.StoredBodies, found bool, err error) {
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	err = d.pool.QueryRow(ctx, `SELECT request, answer FROM request_bodies WHERE request_id = $1`, id).Scan(&b.Request, &b.Answer)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.StoredBodies{}, false, nil
	case err != nil:
		return store.StoredBodies{}, false, d.errorf("reading request bodies", err)
	}
	return b, true, nil
}

// pruneLock is the key of the transaction lock one prune of the team's
// request log holds, so that instances pruning at once take turns.
const pruneLock = advisoryLock + 2

// PruneRequests deletes the team's requests and bodies that started
// before before, and returns how many requests it deleted. While another
// instance is pruning it does nothing.
func (d *DB) PruneRequests(ctx context.Context, before time.Time) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, rollUpTimeout)
	defer cancel()
	var n int64
	err := d.inTurn(ctx, pruneLock, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM request_bodies WHERE started_at < $1`, before.UnixMilli()); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM requests WHERE started_at < $1`, before.UnixMilli())
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, d.errorf("pruning the request log", err)
	}
	return n, nil
}
