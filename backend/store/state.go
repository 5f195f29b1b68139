package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// putState is the statement that stores a state document, replacing what
// was there.
const putState = `INSERT INTO state (name, value, updated_at) VALUES (?, ?, ?)
	ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`

// execer is what putState runs on: the database or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (d *DB) putState(ctx context.Context, on execer, name string, value []byte) error {
	if _, err := on.ExecContext(ctx, putState, name, d.redact(string(value)), d.clock.Now().UnixMilli()); err != nil {
		return fmt.Errorf("store: save state %s: %w", name, err)
	}
	return nil
}

// PutState stores the document value under name, replacing what was there.
func (d *DB) PutState(ctx context.Context, name string, value []byte) error {
	return d.putState(ctx, d.sql, name, value)
}

// UpdateState stores several documents together: fn puts each through put,
// and they are all stored when fn returns nil and the commit succeeds, and
// none of them otherwise, so a reader never finds some documents of a
// change without the others.
func (d *DB) UpdateState(ctx context.Context, fn func(put func(name string, value []byte) error) error) (err error) {
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: save state: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := fn(func(name string, value []byte) error { return d.putState(ctx, tx, name, value) }); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: save state: %w", err)
	}
	return nil
}

// GetState returns the document stored under name; ok is false when there
// is none.
func (d *DB) GetState(ctx context.Context, name string) (value []byte, ok bool, err error) {
	var s string
	err = d.sql.QueryRowContext(ctx, `SELECT value FROM state WHERE name = ?`, name).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: load state %s: %w", name, err)
	}
	return []byte(s), true, nil
}
