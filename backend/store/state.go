package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// PutState stores the document value under name, replacing what was there.
func (d *DB) PutState(ctx context.Context, name string, value []byte) error {
	_, err := d.sql.ExecContext(ctx,
		`INSERT INTO state (name, value, updated_at) VALUES (?, ?, ?)
		 ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		name, d.redact(string(value)), d.clock.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("store: save state %s: %w", name, err)
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
