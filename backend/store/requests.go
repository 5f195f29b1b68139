package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"freelane/backend/llm"
)

// RequestQuery selects traces for RecentRequests. Zero fields do not filter.
type RequestQuery struct {
	// Limit is the maximum number of traces returned: default 100, at most
	// 1000.
	Limit int
	// Chain keeps only requests routed through this chain.
	Chain string
	// Backend keeps only requests served by this backend (provider/model).
	Backend string
	// Class keeps only requests that ended with this class.
	Class llm.Class
	// Before keeps only requests started strictly before this instant, for
	// paging backwards: pass the Start of the oldest trace of the previous
	// page. Times are stored at millisecond precision.
	Before time.Time
}

// Limits on RequestQuery.Limit.
const (
	defaultQueryLimit = 100
	maxQueryLimit     = 1000
)

const insertRequestSQL = `INSERT INTO requests (
	id, started_at, endpoint, model, chain, backend, stream, status, class, error,
	latency_ms, ttft_ms, prompt_tokens, completion_tokens, total_tokens, committed
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO NOTHING`

const insertAttemptSQL = `INSERT INTO request_attempts (
	request_id, seq, backend, class, status, latency_ms, ttft_ms, reason, skipped
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// writeRequests stores traces in one transaction with prepared statements.
// A trace whose ID is already stored is skipped (the first one wins) rather
// than failing the whole batch; skipped reports how many were. On error
// nothing of the batch is stored.
func (d *DB) writeRequests(ctx context.Context, traces []llm.Trace) (skipped int, err error) {
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: write requests: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	reqStmt, err := tx.PrepareContext(ctx, insertRequestSQL)
	if err != nil {
		return 0, fmt.Errorf("store: write requests: prepare: %w", err)
	}
	defer reqStmt.Close()
	attStmt, err := tx.PrepareContext(ctx, insertAttemptSQL)
	if err != nil {
		return 0, fmt.Errorf("store: write requests: prepare: %w", err)
	}
	defer attStmt.Close()

	for i := range traces {
		t := &traces[i]
		id := t.ID
		if id == "" {
			// An empty ID would collide with every other empty ID and the
			// trace would be skipped; give it one so it is still kept.
			id = newID()
		}
		start := t.Start
		if start.IsZero() {
			start = time.Now()
		}
		res, err := reqStmt.ExecContext(ctx,
			id, start.UnixMilli(), t.Endpoint, t.Model, t.Chain, t.Backend,
			t.Stream, t.Status, string(t.Class), t.Error,
			durationMS(t.Latency), nullDurationMS(t.TTFT),
			t.Usage.PromptTokens, t.Usage.CompletionTokens, t.Usage.TotalTokens,
			t.Committed)
		if err != nil {
			return 0, fmt.Errorf("store: write request %s: %w", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("store: write request %s: %w", id, err)
		}
		if n == 0 {
			// Duplicate ID: its attempts belong to the row already stored.
			skipped++
			continue
		}
		for seq, a := range t.Attempts {
			if _, err := attStmt.ExecContext(ctx,
				id, seq, a.Backend, string(a.Class), a.Status,
				durationMS(a.Latency), nullDurationMS(a.TTFT), a.Reason, a.Skipped,
			); err != nil {
				return 0, fmt.Errorf("store: write attempt %d of request %s: %w", seq, id, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: write requests: commit: %w", err)
	}
	return skipped, nil
}

// RecentRequests returns stored traces matching q, newest first, each with
// its attempts in the order they were made.
func (d *DB) RecentRequests(ctx context.Context, q RequestQuery) ([]llm.Trace, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultQueryLimit
	}
	limit = min(limit, maxQueryLimit)

	var where []string
	var args []any
	if q.Chain != "" {
		where = append(where, "chain = ?")
		args = append(args, q.Chain)
	}
	if q.Backend != "" {
		where = append(where, "backend = ?")
		args = append(args, q.Backend)
	}
	if q.Class != "" {
		where = append(where, "class = ?")
		args = append(args, string(q.Class))
	}
	if !q.Before.IsZero() {
		where = append(where, "started_at < ?")
		args = append(args, q.Before.UnixMilli())
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, limit)

	// One statement reads requests and attempts together so both come from
	// the same snapshot: a prune or a batch landing between two queries
	// cannot leave a trace without its attempts.
	query := `WITH r AS (
	SELECT id, started_at, endpoint, model, chain, backend, stream, status, class, error,
		latency_ms, ttft_ms, prompt_tokens, completion_tokens, total_tokens, committed
	FROM requests` + cond + `
	ORDER BY started_at DESC, id DESC
	LIMIT ?
)
SELECT r.id, r.started_at, r.endpoint, r.model, r.chain, r.backend, r.stream, r.status,
	r.class, r.error, r.latency_ms, r.ttft_ms, r.prompt_tokens, r.completion_tokens,
	r.total_tokens, r.committed,
	a.seq, a.backend, a.class, a.status, a.latency_ms, a.ttft_ms, a.reason, a.skipped
FROM r LEFT JOIN request_attempts a ON a.request_id = r.id
ORDER BY r.started_at DESC, r.id DESC, a.seq`

	rows, err := d.sql.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: query requests: %w", err)
	}
	defer rows.Close()

	var out []llm.Trace
	for rows.Next() {
		var (
			t                llm.Trace
			startMS          int64
			class            string
			latency          float64
			ttft             sql.NullFloat64
			aSeq             sql.NullInt64
			aBackend, aClass sql.NullString
			aReason          sql.NullString
			aStatus          sql.NullInt64
			aLatency, aTTFT  sql.NullFloat64
			aSkipped         sql.NullBool
		)
		if err := rows.Scan(
			&t.ID, &startMS, &t.Endpoint, &t.Model, &t.Chain, &t.Backend, &t.Stream, &t.Status,
			&class, &t.Error, &latency, &ttft,
			&t.Usage.PromptTokens, &t.Usage.CompletionTokens, &t.Usage.TotalTokens, &t.Committed,
			&aSeq, &aBackend, &aClass, &aStatus, &aLatency, &aTTFT, &aReason, &aSkipped,
		); err != nil {
			return nil, fmt.Errorf("store: scan request: %w", err)
		}
		// Rows of one request are adjacent; only the first carries a new
		// trace, the rest add attempts to it.
		if len(out) == 0 || out[len(out)-1].ID != t.ID {
			t.Start = time.UnixMilli(startMS)
			t.Class = llm.Class(class)
			t.Latency = msDuration(latency)
			t.TTFT = msDuration(ttft.Float64)
			// An empty, non-nil slice encodes as [] rather than null for
			// API clients.
			t.Attempts = []llm.Attempt{}
			out = append(out, t)
		}
		if aSeq.Valid {
			cur := &out[len(out)-1]
			cur.Attempts = append(cur.Attempts, llm.Attempt{
				Backend: aBackend.String,
				Class:   llm.Class(aClass.String),
				Status:  int(aStatus.Int64),
				Latency: msDuration(aLatency.Float64),
				TTFT:    msDuration(aTTFT.Float64),
				Reason:  aReason.String,
				Skipped: aSkipped.Bool,
			})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: query requests: %w", err)
	}
	return out, nil
}

// pruneChunk bounds how many requests one DELETE removes, so a large prune
// holds the write lock in short slices and the request log keeps writing
// in between.
const pruneChunk = 1000

// PruneRequests deletes requests (and, by cascade, their attempts) that
// started before olderThan, and returns how many requests it deleted.
func (d *DB) PruneRequests(ctx context.Context, olderThan time.Time) (int64, error) {
	const q = `DELETE FROM requests WHERE rowid IN (
	SELECT rowid FROM requests WHERE started_at < ? LIMIT ?)`
	cutoff := olderThan.UnixMilli()
	var total int64
	for {
		res, err := d.sql.ExecContext(ctx, q, cutoff, pruneChunk)
		if err != nil {
			return total, fmt.Errorf("store: prune requests: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("store: prune requests: %w", err)
		}
		total += n
		if n < pruneChunk {
			return total, nil
		}
	}
}

// durationMS converts a duration to the float milliseconds stored in the
// *_ms columns.
func durationMS(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

// nullDurationMS stores an unmeasured (zero) duration as NULL, so "no first
// token" is distinguishable from a measured value in SQL.
func nullDurationMS(d time.Duration) sql.NullFloat64 {
	if d == 0 {
		return sql.NullFloat64{}
	}
	return sql.NullFloat64{Float64: durationMS(d), Valid: true}
}

// msDuration converts stored float milliseconds back to a duration, rounding
// so that whole nanoseconds survive the round trip.
func msDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// newID returns a random 128-bit hex ID for a trace that arrived without one.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms.
	return hex.EncodeToString(b[:])
}
