package store

import (
	"context"
	"fmt"
)

// SeriesRow is one stored bucket of a time series (see package metrics,
// which encodes Data).
type SeriesRow struct {
	// Width is the bucket's length in seconds.
	Width int64
	// Series names what the row counts: "" for every request, "b:" and a
	// backend, or "c:" and a chain.
	Series string
	// Start is the bucket's start in Unix seconds.
	Start int64
	// Requests is the number of requests (or calls) in the bucket.
	Requests int64
	// Data is the rest of the bucket, encoded by package metrics.
	Data []byte
}

// WriteSeries stores rows in one transaction, replacing the stored rows of
// the same buckets: a bucket is written again, whole, as it fills.
func (d *DB) WriteSeries(ctx context.Context, rows []SeriesRow) error {
	if len(rows) == 0 {
		return nil
	}
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: write series: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO series (width, series, start, requests, data) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("store: write series: %w", err)
	}
	defer st.Close()
	for _, r := range rows {
		if _, err := st.ExecContext(ctx, r.Width, r.Series, r.Start, r.Requests, r.Data); err != nil {
			return fmt.Errorf("store: write series: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: write series: %w", err)
	}
	return nil
}

// SeriesRange returns the stored buckets of one series and width whose
// start is in [from, to] (Unix seconds), oldest first.
func (d *DB) SeriesRange(ctx context.Context, width int64, series string, from, to int64) ([]SeriesRow, error) {
	return d.seriesRows(ctx, `SELECT width, series, start, requests, data FROM series
		WHERE width = ? AND series = ? AND start >= ? AND start <= ? ORDER BY start`, width, series, from, to)
}

// SeriesAt returns the stored buckets of every series of a width that
// start at start (Unix seconds): what a restart picks up again.
func (d *DB) SeriesAt(ctx context.Context, width, start int64) ([]SeriesRow, error) {
	return d.seriesRows(ctx, `SELECT width, series, start, requests, data FROM series
		WHERE width = ? AND start = ? ORDER BY series`, width, start)
}

func (d *DB) seriesRows(ctx context.Context, q string, args ...any) ([]SeriesRow, error) {
	rows, err := d.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read series: %w", err)
	}
	defer rows.Close()
	var out []SeriesRow
	for rows.Next() {
		var r SeriesRow
		if err := rows.Scan(&r.Width, &r.Series, &r.Start, &r.Requests, &r.Data); err != nil {
			return nil, fmt.Errorf("store: read series: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read series: %w", err)
	}
	return out, nil
}

// PruneSeries deletes the buckets of a width that start before before
// (Unix seconds) and reports how many it deleted.
func (d *DB) PruneSeries(ctx context.Context, width, before int64) (int64, error) {
	res, err := d.sql.ExecContext(ctx, `DELETE FROM series WHERE width = ? AND start < ?`, width, before)
	if err != nil {
		return 0, fmt.Errorf("store: prune series: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: prune series: %w", err)
	}
	return n, nil
}
