package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"freelane/backend/llm"
)

// RequestQuery selects traces for QueryRequests and RecentRequests. Zero
// fields do not filter.
type RequestQuery struct {
	// Limit is the maximum number of traces returned: default 100, at most
	// 1000.
	Limit int
	// ID keeps only the request with this id.
	ID string
	// Chain keeps only requests routed through this chain.
	Chain string
	// Backend keeps only requests served by this backend (provider/model).
	Backend string
	// Class keeps only requests that ended with this class.
	Class llm.Class
	// Dialect keeps only requests whose client spoke this dialect.
	Dialect llm.Dialect
	// Status keeps only requests whose status is in this class ("4xx").
	Status StatusClass
	// Cache keeps only requests the response cache did this with; CacheNone
	// keeps those it was not asked about.
	Cache llm.CacheOutcome
	// Stream, when set, keeps only streamed (true) or unstreamed requests.
	Stream *bool
	// Session keeps only the requests of this session.
	Session string
	// Instance keeps only the requests the instance of a team with this
	// name served.
	Instance string
	// Text keeps only requests with this text (any case) in the requested
	// name, alias, chain, backend, error or notes, or in the stored bodies.
	Text string
	// From and To keep only requests started from From (inclusive) to To
	// (exclusive).
	From, To time.Time
	// Before keeps only requests started strictly before this instant, for
	// paging backwards: pass the Start of the oldest trace of the previous
	// page. Times are stored at millisecond precision. Cursor pages
	// without the gaps and repeats that equal times make.
	Before time.Time
	// Sort orders the traces (SortTime when empty), newest or largest
	// first unless Asc.
	Sort RequestSort
	Asc  bool
	// Cursor continues a query from the page that returned it
	// (RequestPage.Next); the other fields must be those of that query.
	Cursor string
}

// Limits on RequestQuery.Limit.
const (
	defaultQueryLimit = 100
	maxQueryLimit     = 1000
)

const insertRequestSQL = `INSERT INTO requests (
	id, started_at, endpoint, path, dialect, model, alias, chain, backend, stream, status, class, error,
	latency_ms, ttft_ms, prompt_tokens, completion_tokens, total_tokens, committed, attempts, notes, decision,
	cache_read_tokens, cache_write_tokens, saved, cache, session, cost, instance
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO NOTHING`

const insertLedgerSQL = `INSERT INTO ledger (
	time, request_id, chain, backend, dialect, path, outcome, status, latency_ms, ttft_ms,
	prompt_tokens, completion_tokens, estimated, cost
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// storedAttempt is an attempt as kept in the attempts JSON column, with
// durations in milliseconds like the other columns. Attempts stored before
// they carried a dialect decode with an empty one.
type storedAttempt struct {
	Backend   string       `json:"backend"`
	Dialect   llm.Dialect  `json:"dialect,omitempty"`
	Class     llm.Class    `json:"class"`
	Status    int          `json:"status,omitempty"`
	LatencyMS float64      `json:"latency_ms"`
	TTFTMS    float64      `json:"ttft_ms,omitempty"`
	Reason    string       `json:"reason,omitempty"`
	Skipped   bool         `json:"skipped,omitempty"`
	Skip      llm.SkipWord `json:"skip,omitempty"`
	Until     *time.Time   `json:"until,omitempty"`
	Budget    bool         `json:"budget,omitempty"`
	Prompt    int          `json:"prompt_tokens,omitempty"`
	Complete  int          `json:"completion_tokens,omitempty"`
	Cost      float64      `json:"cost,omitempty"`
	Estimated bool         `json:"estimated,omitempty"`
	Saved     float64      `json:"saved,omitempty"`
}

func encodeAttempts(as []llm.Attempt) (string, error) {
	if len(as) == 0 {
		return "[]", nil
	}
	out := make([]storedAttempt, len(as))
	for i, a := range as {
		out[i] = storedAttempt{Backend: a.Backend, Dialect: a.Dialect, Class: a.Class, Status: a.Status,
			LatencyMS: durationMS(a.Latency), Reason: a.Reason, Skipped: a.Skipped, Skip: a.Skip, Until: a.Until, Budget: a.Budget,
			Prompt: a.PromptTokens, Complete: a.CompletionTokens, Cost: a.Cost, Estimated: a.Estimated, Saved: a.Saved}
		if a.TTFT > 0 {
			out[i].TTFTMS = durationMS(a.TTFT)
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// encodeNotes writes a trace's notes as a JSON array, "" for none, so a
// request without notes (nearly all) costs nothing more to store.
func encodeNotes(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	b, _ := json.Marshal(notes)
	return string(b)
}

// decodeNotes reads what encodeNotes wrote; anything else is no notes.
func decodeNotes(s string) []string {
	if s == "" {
		return nil
	}
	var notes []string
	if json.Unmarshal([]byte(s), &notes) != nil {
		return nil
	}
	return notes
}

func decodeAttempts(s string) ([]llm.Attempt, error) {
	var in []storedAttempt
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, err
	}
	out := make([]llm.Attempt, len(in))
	for i, a := range in {
		out[i] = llm.Attempt{Backend: a.Backend, Dialect: a.Dialect, Class: a.Class, Status: a.Status,
			Latency: msDuration(a.LatencyMS), TTFT: msDuration(a.TTFTMS), Reason: a.Reason, Skipped: a.Skipped,
			Skip: a.Skip, Until: a.Until, Budget: a.Budget,
			PromptTokens: a.Prompt, CompletionTokens: a.Complete, Cost: a.Cost, Estimated: a.Estimated, Saved: a.Saved}
	}
	return out, nil
}

// writeRequests stores traces in one transaction with a prepared statement.
// A trace whose ID is already stored is skipped (the first one wins) rather
// than failing the whole batch; skipped reports how many were. On error
// nothing of the batch is stored.
func (d *DB) writeRequests(ctx context.Context, traces []llm.Trace, withLedger bool) (skipped int, err error) {
	return d.writeBatch(ctx, traces, nil, withLedger)
}

// writeBatch stores traces, as writeRequests does, and bodies in one
// transaction.
func (d *DB) writeBatch(ctx context.Context, traces []llm.Trace, bodies []Bodies, withLedger bool) (skipped int, err error) {
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: write requests: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	stmt, err := d.txStmt(ctx, tx, insertRequestSQL)
	if err != nil {
		return 0, fmt.Errorf("store: write requests: prepare: %w", err)
	}
	defer stmt.Close()
	// The ledger statement is prepared on first use: most batches have
	// ledger rows, but a batch of only refused requests has none.
	var ledger *sql.Stmt
	defer func() {
		if ledger != nil {
			ledger.Close()
		}
	}()

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
			start = d.clock.Now()
		}
		attempts, err := encodeAttempts(t.Attempts)
		if err != nil {
			return 0, fmt.Errorf("store: write request %s: attempts: %w", id, err)
		}
		decision, err := encodeDecision(t.Decision)
		if err != nil {
			return 0, fmt.Errorf("store: write request %s: decision: %w", id, err)
		}
		var cost float64
		for j := range t.Attempts {
			cost += t.Attempts[j].Cost
		}
		res, err := stmt.ExecContext(ctx,
			id, start.UnixMilli(), t.Endpoint, t.Path, string(t.Dialect), d.redact(t.Model), d.redact(t.Alias), t.Chain, t.Backend,
			t.Stream, t.Status, string(t.Class), d.redact(t.Error),
			durationMS(t.Latency), nullDurationMS(t.TTFT),
			t.Usage.PromptTokens, t.Usage.CompletionTokens, t.Usage.TotalTokens,
			t.Committed, d.redact(attempts), d.redact(encodeNotes(t.Notes)), d.redact(decision),
			t.Usage.CacheReadTokens, t.Usage.CacheWriteTokens, t.Saved, string(t.Cache), sessionColumn(t.Session), cost, t.Instance)
		if err != nil {
			return 0, fmt.Errorf("store: write request %s: %w", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("store: write request %s: %w", id, err)
		}
		if n == 0 {
			skipped++ // duplicate ID
			continue
		}
		for j := range t.Attempts {
			a := &t.Attempts[j]
			if a.Skipped || !withLedger {
				continue
			}
			if ledger == nil {
				if ledger, err = d.txStmt(ctx, tx, insertLedgerSQL); err != nil {
					return 0, fmt.Errorf("store: write ledger: prepare: %w", err)
				}
			}
			if _, err := ledger.ExecContext(ctx, start.UnixMilli(), id, t.Chain, a.Backend, string(a.Dialect), t.Path, string(a.Class), a.Status,
				durationMS(a.Latency), nullDurationMS(a.TTFT), a.PromptTokens, a.CompletionTokens, a.Estimated, a.Cost); err != nil {
				return 0, fmt.Errorf("store: write ledger row of %s: %w", id, err)
			}
		}
	}
	if err := d.writeBodies(ctx, tx, bodies); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: write requests: commit: %w", err)
	}
	return skipped, nil
}

// RecentRequests returns the first page of stored traces matching q, in
// q's order (newest first by default), each with its attempts in the order
// they were made.
func (d *DB) RecentRequests(ctx context.Context, q RequestQuery) ([]llm.Trace, error) {
	page, err := d.QueryRequests(ctx, q)
	return page.Traces, err
}

// RequestByID returns the stored trace of one request; found is false
// when no row has the id.
func (d *DB) RequestByID(ctx context.Context, id string) (t llm.Trace, found bool, err error) {
	q, args := RequestByIDStatement(SQLite, id)
	rows, err := d.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return llm.Trace{}, false, fmt.Errorf("store: query requests: %w", err)
	}
	defer rows.Close()
	traces, err := ScanTraces(rows)
	if err != nil || len(traces) == 0 {
		return llm.Trace{}, false, err
	}
	return traces[0], true, nil
}

// encodeDecision is a decision as the decision column keeps it: JSON, or
// "" for none.
func encodeDecision(dec *llm.Decision) (string, error) {
	if dec == nil {
		return "", nil
	}
	b, err := json.Marshal(dec)
	return string(b), err
}

func decodeDecision(s string) (*llm.Decision, error) {
	if s == "" {
		return nil, nil
	}
	var dec llm.Decision
	if err := json.Unmarshal([]byte(s), &dec); err != nil {
		return nil, err
	}
	return &dec, nil
}

// maxSessionColumn is the most of a trace's session the session column
// keeps: the 16 hex digits Trace.Session is meant to hold. A longer value
// (a caller of the store that passed the whole key) is cut, so the log
// never holds enough of a session key to stand for it.
const maxSessionColumn = 16

// sessionColumn is the session as the session column keeps it.
func sessionColumn(s string) string {
	if len(s) > maxSessionColumn {
		return s[:maxSessionColumn]
	}
	return s
}

// pruneChunk bounds how many requests one DELETE removes, so a large prune
// holds the write lock in short slices and the request log keeps writing
// in between.
const pruneChunk = 1000

// PruneRequests deletes requests (with their attempts and their bodies)
// that started before olderThan, and returns how many requests it deleted.
func (d *DB) PruneRequests(ctx context.Context, olderThan time.Time) (int64, error) {
	if _, err := d.pruneBodies(ctx, olderThan.UnixMilli()); err != nil {
		return 0, err
	}
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

// CountRequests returns how many requests started from from (inclusive) to
// to (exclusive): what the dashboard's count of today's requests is
// rebuilt from at start.
func (d *DB) CountRequests(ctx context.Context, from, to time.Time) (int64, error) {
	var n int64
	err := d.sql.QueryRowContext(ctx, `SELECT COUNT(*) FROM requests WHERE started_at >= ? AND started_at < ?`,
		from.UnixMilli(), to.UnixMilli()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: count requests: %w", err)
	}
	return n, nil
}

// Row is one row of a table as stored, for copying it elsewhere: Values
// are its columns in the table's order, each an int64, float64, string,
// bool or []byte as the column's kind says, or nil for a NULL.
type Row struct {
	Seq    int64
	Values []any
}

// RowsAfter returns up to limit rows of t, a table keyed by an
// incrementing seq (RequestsTable, BodiesTable), whose seq is above after,
// in seq order: what a shipper copies next.
func (d *DB) RowsAfter(ctx context.Context, t Table, after int64, limit int) ([]Row, error) {
	if len(t.Key) != 1 || !t.Increment {
		return nil, fmt.Errorf("store: %s is not numbered by an incrementing key", t.Name)
	}
	q := `SELECT ` + strings.Join(t.ColumnNames(), ", ") + ` FROM ` + t.Name + ` WHERE ` + t.Key[0] + ` > ? ORDER BY ` + t.Key[0] + ` LIMIT ?`
	rows, err := d.sql.QueryContext(ctx, q, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: reading %s: %w", t.Name, err)
	}
	defer rows.Close()
	key := t.Column(t.Key[0])
	var out []Row
	for rows.Next() {
		vals, err := t.scan(rows)
		if err != nil {
			return nil, fmt.Errorf("store: reading %s: %w", t.Name, err)
		}
		seq, _ := vals[key].(int64)
		out = append(out, Row{Seq: seq, Values: vals})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading %s: %w", t.Name, err)
	}
	return out, nil
}

// Sequence is the highest seq t, a table keyed by an incrementing seq, has
// handed out, 0 when none.
func (d *DB) Sequence(ctx context.Context, t Table) (int64, error) { return d.sequence(ctx, t.Name) }

// RaiseSequence makes the next rows of t get seqs above n, as
// RaiseLedgerSeq does for the ledger.
func (d *DB) RaiseSequence(ctx context.Context, t Table, n int64) error {
	return d.raiseSequence(ctx, t.Name, n)
}
