package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// Usage groupings for UsageQuery.GroupBy.
const (
	ByDay        = "day"
	ByBackend    = "backend"
	ByChain      = "chain"
	ByDayBackend = "day,backend"
	// ByPath adds up by the API path the client called;
	// rows stored before the path was recorded add up under "".
	ByPath = "path"
	// ByInstance adds up by the instance of a team that wrote the rows.
	// This database holds one instance's rows, which add up under "".
	ByInstance = "instance"
)

// UsageQuery selects ledger totals: rows from From (inclusive) to To
// (exclusive), grouped by GroupBy.
type UsageQuery struct {
	From, To time.Time
	GroupBy  string
}

// UsageRow is one group of ledger totals.
type UsageRow struct {
	Key              string  `json:"key"`
	Backend          string  `json:"backend,omitempty"`
	Requests         int64   `json:"requests"`
	Failures         int64   `json:"failures"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	Cost             float64 `json:"cost"`
	EstimatedTokens  int64   `json:"estimated_tokens"`
}

// quarterHour is the width, in milliseconds, of the buckets the ledger's
// rows are added up in before Go gives each bucket its local calendar day
// (in the process's zone, from TZ). Every zone's offset from UTC is a
// whole number of quarter hours, so no bucket holds two local days, and
// the SQL stays plain integer arithmetic that any database runs.
const quarterHour = 15 * 60 * 1000

// QuarterHourMillis is the width of the buckets Usage adds rows up in
// before giving each its local day, for other databases that hold the
// ledger and answer the same queries.
const QuarterHourMillis = quarterHour

// BucketDay is the local calendar day of a quarter-hour bucket (a time in
// unix milliseconds divided by QuarterHourMillis).
func BucketDay(bucket int64) string { return bucketDay(bucket) }

// bucketDay is the local calendar day of a quarter-hour bucket.
func bucketDay(bucket int64) string {
	return time.UnixMilli(bucket * quarterHour).Local().Format(time.DateOnly)
}

// ledgerSums are the SQL totals of a group of ledger rows, in the order
// usageTotals scans them.
const ledgerSums = `COUNT(*), SUM(CASE WHEN outcome <> 'ok' THEN 1 ELSE 0 END), SUM(prompt_tokens), SUM(completion_tokens),
	SUM(cost), SUM(CASE WHEN estimated THEN prompt_tokens + completion_tokens ELSE 0 END)`

// usageTotals scans totals in the order of ledgerSums after dest.
func usageTotals(rows *sql.Rows, r *UsageRow, dest ...any) error {
	return rows.Scan(append(dest, &r.Requests, &r.Failures, &r.PromptTokens, &r.CompletionTokens, &r.Cost, &r.EstimatedTokens)...)
}

func (r *UsageRow) add(o UsageRow) {
	r.Requests += o.Requests
	r.Failures += o.Failures
	r.PromptTokens += o.PromptTokens
	r.CompletionTokens += o.CompletionTokens
	r.Cost += o.Cost
	r.EstimatedTokens += o.EstimatedTokens
}

// Usage returns ledger totals, raw rows and rolled-up days together. Days
// are local calendar days; rolled-up days count when they fall in the range.
func (d *DB) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	var rawKey, dailyKey, extra, dailyExtra string
	switch q.GroupBy {
	case ByDay:
		return d.usageByDay(ctx, q, false)
	case ByBackend:
		rawKey, dailyKey = "backend", "backend"
	case ByChain:
		rawKey, dailyKey = "chain", "chain"
	case ByPath:
		rawKey, dailyKey = "path", "path"
	case ByInstance:
		rawKey, dailyKey = "''", "''"
	case ByDayBackend:
		return d.usageByDay(ctx, q, true)
	default:
		return nil, fmt.Errorf("store: unknown usage grouping %q", q.GroupBy)
	}
	if extra == "" {
		extra, dailyExtra = "''", "''"
	}
	from, to := q.From.UnixMilli(), q.To.UnixMilli()
	fromDay, toDay := q.From.Local().Format(time.DateOnly), q.To.Local().Format(time.DateOnly)
	query := `SELECT k, b, SUM(requests), SUM(failures), SUM(pt), SUM(ct), SUM(cost), SUM(est) FROM (
	SELECT ` + rawKey + ` AS k, ` + extra + ` AS b, COUNT(*) AS requests,
		SUM(CASE WHEN outcome <> 'ok' THEN 1 ELSE 0 END) AS failures, SUM(prompt_tokens) AS pt, SUM(completion_tokens) AS ct,
		SUM(cost) AS cost, SUM(CASE WHEN estimated THEN prompt_tokens + completion_tokens ELSE 0 END) AS est
	FROM ledger WHERE time >= ? AND time < ? GROUP BY 1, 2
	UNION ALL
	SELECT ` + dailyKey + `, ` + dailyExtra + `, requests, failures, prompt_tokens, completion_tokens, cost, estimated_tokens
	FROM ledger_daily WHERE day >= ? AND day < ?
) GROUP BY k, b ORDER BY k, b`
	rows, err := d.sql.QueryContext(ctx, query, from, to, fromDay, toDay)
	if err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	defer rows.Close()
	out := []UsageRow{}
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(&r.Key, &r.Backend, &r.Requests, &r.Failures, &r.PromptTokens, &r.CompletionTokens, &r.Cost, &r.EstimatedTokens); err != nil {
			return nil, fmt.Errorf("store: usage: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	return out, nil
}

// usageByDay is Usage by local day, and by backend too when byBackend:
// the raw rows are added up by quarter hour in SQL and by day here.
func (d *DB) usageByDay(ctx context.Context, q UsageQuery, byBackend bool) ([]UsageRow, error) {
	extra, dailyExtra := "''", "''"
	if byBackend {
		extra, dailyExtra = "backend", "backend"
	}
	type key struct{ day, backend string }
	sums := map[key]*UsageRow{}
	add := func(k key, r UsageRow) {
		if s, ok := sums[k]; ok {
			s.add(r)
			return
		}
		r.Key, r.Backend = k.day, k.backend
		sums[k] = &r
	}
	rows, err := d.sql.QueryContext(ctx, `SELECT time / `+strconv.Itoa(quarterHour)+`, `+extra+`, `+ledgerSums+`
	FROM ledger WHERE time >= ? AND time < ? GROUP BY 1, 2`, q.From.UnixMilli(), q.To.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r UsageRow
		var bucket int64
		var backend string
		if err := usageTotals(rows, &r, &bucket, &backend); err != nil {
			return nil, fmt.Errorf("store: usage: %w", err)
		}
		add(key{bucketDay(bucket), backend}, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	daily, err := d.sql.QueryContext(ctx, `SELECT day, `+dailyExtra+`, requests, failures, prompt_tokens, completion_tokens, cost, estimated_tokens
	FROM ledger_daily WHERE day >= ? AND day < ?`, q.From.Local().Format(time.DateOnly), q.To.Local().Format(time.DateOnly))
	if err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	defer daily.Close()
	for daily.Next() {
		var r UsageRow
		var k key
		if err := daily.Scan(&k.day, &k.backend, &r.Requests, &r.Failures, &r.PromptTokens, &r.CompletionTokens, &r.Cost, &r.EstimatedTokens); err != nil {
			return nil, fmt.Errorf("store: usage: %w", err)
		}
		add(k, r)
	}
	if err := daily.Err(); err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	out := make([]UsageRow, 0, len(sums))
	for _, r := range sums {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b UsageRow) int { return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Backend, b.Backend)) })
	return out, nil
}

// LedgerRow is one ledger row, or one rolled-up day (RequestID "rollup",
// Time the day's start, Requests the number of attempts it folds). Dialect
// is the wire format the backend was spoken to in; it is empty for rolled-up
// days, which are kept per backend, chain and path only, and for rows
// written before the ledger recorded it. Path is the API path the client
// called, empty for rows written before it was recorded.
type LedgerRow struct {
	// Seq numbers the rows of this database in the order they were
	// written; it is 0 for rolled-up days.
	Seq              int64
	Time             time.Time
	RequestID        string
	Chain            string
	Backend          string
	Dialect          string
	Path             string
	Outcome          string
	Status           int
	LatencyMS        float64
	TTFTMS           sql.NullFloat64
	PromptTokens     int64
	CompletionTokens int64
	Estimated        bool
	Cost             float64
	Requests         int64
}

// EachLedgerRow calls fn for every rolled-up day and then every ledger row
// from from to to, oldest first, reading from the database as it goes so
// an export never holds the whole ledger in memory. It stops at fn's first
// error and returns it.
func (d *DB) EachLedgerRow(ctx context.Context, from, to time.Time, fn func(LedgerRow) error) error {
	daily, err := d.sql.QueryContext(ctx, `SELECT day, chain, backend, path, requests, failures, prompt_tokens, completion_tokens,
	estimated_tokens, cost FROM ledger_daily WHERE day >= ? AND day < ? ORDER BY day, backend, chain, path`,
		from.Local().Format(time.DateOnly), to.Local().Format(time.DateOnly))
	if err != nil {
		return fmt.Errorf("store: ledger export: %w", err)
	}
	for daily.Next() {
		var r LedgerRow
		var day string
		var failures, est int64
		if err := daily.Scan(&day, &r.Chain, &r.Backend, &r.Path, &r.Requests, &failures, &r.PromptTokens, &r.CompletionTokens, &est, &r.Cost); err != nil {
			daily.Close()
			return fmt.Errorf("store: ledger export: %w", err)
		}
		r.Time, _ = time.ParseInLocation(time.DateOnly, day, time.Local)
		r.RequestID, r.Outcome, r.Estimated = "rollup", "rollup", est > 0
		if err := fn(r); err != nil {
			daily.Close()
			return err
		}
	}
	if err := daily.Close(); err != nil {
		return fmt.Errorf("store: ledger export: %w", err)
	}
	rows, err := d.sql.QueryContext(ctx, `SELECT `+ledgerColumns+` FROM ledger WHERE time >= ? AND time < ? ORDER BY time, seq`,
		from.UnixMilli(), to.UnixMilli())
	if err != nil {
		return fmt.Errorf("store: ledger export: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanLedgerRow(rows)
		if err != nil {
			return fmt.Errorf("store: ledger export: %w", err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: ledger export: %w", err)
	}
	return nil
}

// ledgerColumns are the columns scanLedgerRow reads, in its order.
const ledgerColumns = `seq, time, request_id, chain, backend, dialect, path, outcome, status, latency_ms, ttft_ms,
	prompt_tokens, completion_tokens, estimated, cost`

// scanLedgerRow reads one row of ledgerColumns.
func scanLedgerRow(rows *sql.Rows) (LedgerRow, error) {
	var r LedgerRow
	var ms int64
	err := rows.Scan(&r.Seq, &ms, &r.RequestID, &r.Chain, &r.Backend, &r.Dialect, &r.Path, &r.Outcome, &r.Status, &r.LatencyMS, &r.TTFTMS,
		&r.PromptTokens, &r.CompletionTokens, &r.Estimated, &r.Cost)
	r.Time, r.Requests = time.UnixMilli(ms), 1
	return r, err
}

// LedgerAfter returns up to limit ledger rows whose seq is above after,
// in seq order: what a shipper copies next.
func (d *DB) LedgerAfter(ctx context.Context, after int64, limit int) ([]LedgerRow, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT `+ledgerColumns+` FROM ledger WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: reading the ledger: %w", err)
	}
	defer rows.Close()
	var out []LedgerRow
	for rows.Next() {
		r, err := scanLedgerRow(rows)
		if err != nil {
			return nil, fmt.Errorf("store: reading the ledger: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading the ledger: %w", err)
	}
	return out, nil
}

// LedgerSeq is the highest seq the ledger has handed out, 0 when none.
func (d *DB) LedgerSeq(ctx context.Context) (int64, error) { return d.sequence(ctx, LedgerTable.Name) }

// RaiseLedgerSeq makes the next ledger rows get seqs above n: when this
// database is newer than the copy of its rows elsewhere (a data directory
// started afresh under an instance name that shipped rows before), the
// new rows must not reuse the numbers the copy already holds.
func (d *DB) RaiseLedgerSeq(ctx context.Context, n int64) error {
	return d.raiseSequence(ctx, LedgerTable.Name, n)
}

// sequence is the highest key an AUTOINCREMENT table has handed out, 0
// when none.
func (d *DB) sequence(ctx context.Context, table string) (int64, error) {
	var n int64
	if err := d.sql.QueryRowContext(ctx, `SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?), 0)`, table).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: reading the %s seq: %w", table, err)
	}
	return n, nil
}

// raiseSequence makes an AUTOINCREMENT table's next keys above n.
func (d *DB) raiseSequence(ctx context.Context, table string, n int64) error {
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: raising the %s seq: %w", table, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE sqlite_sequence SET seq = ? WHERE name = ? AND seq < ?`, n, table, n); err != nil {
		return fmt.Errorf("store: raising the %s seq: %w", table, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) SELECT ?, ?
	WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)`, table, n, table); err != nil {
		return fmt.Errorf("store: raising the %s seq: %w", table, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: raising the %s seq: %w", table, err)
	}
	return nil
}

// SpendRow is ledger totals of one backend and chain in one minute, what
// the quota counters and budgets are rebuilt from at start.
type SpendRow struct {
	Minute   time.Time
	Backend  string
	Chain    string
	Requests int64
	Tokens   int64
	Cost     float64
}

// LedgerSince returns per-minute totals of every ledger row since since,
// and each rolled-up day on or after since's day as one row at the day's
// start, oldest first.
func (d *DB) LedgerSince(ctx context.Context, since time.Time) ([]SpendRow, error) {
	var out []SpendRow
	daily, err := d.sql.QueryContext(ctx, `SELECT day, backend, chain, requests, prompt_tokens + completion_tokens, cost
	FROM ledger_daily WHERE day >= ?`, since.Local().Format(time.DateOnly))
	if err != nil {
		return nil, fmt.Errorf("store: reading the ledger: %w", err)
	}
	defer daily.Close()
	for daily.Next() {
		var r SpendRow
		var day string
		if err := daily.Scan(&day, &r.Backend, &r.Chain, &r.Requests, &r.Tokens, &r.Cost); err != nil {
			return nil, fmt.Errorf("store: reading the ledger: %w", err)
		}
		// The day's start in the local zone, where the roll-up drew it.
		if r.Minute, err = time.ParseInLocation(time.DateOnly, day, time.Local); err != nil {
			return nil, fmt.Errorf("store: reading the ledger: a rolled-up day %q: %w", day, err)
		}
		out = append(out, r)
	}
	if err := daily.Err(); err != nil {
		return nil, fmt.Errorf("store: reading the ledger: %w", err)
	}
	rows, err := d.sql.QueryContext(ctx, `SELECT (time / 60000) * 60000, backend, chain, COUNT(*),
		SUM(prompt_tokens + completion_tokens), SUM(cost)
	FROM ledger WHERE time >= ? GROUP BY 1, 2, 3`, since.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("store: reading the ledger: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r SpendRow
		var ms int64
		if err := rows.Scan(&ms, &r.Backend, &r.Chain, &r.Requests, &r.Tokens, &r.Cost); err != nil {
			return nil, fmt.Errorf("store: reading the ledger: %w", err)
		}
		r.Minute = time.UnixMilli(ms)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading the ledger: %w", err)
	}
	slices.SortStableFunc(out, func(a, b SpendRow) int { return a.Minute.Compare(b.Minute) })
	return out, nil
}

// RollUpLedger folds every ledger row from before the local day that
// contains before into daily totals and deletes those rows, in one
// transaction, so a crash leaves either the rows or their totals. It
// returns how many rows it folded.
func (d *DB) RollUpLedger(ctx context.Context, before time.Time) (int64, error) {
	return d.RollUpLedgerThrough(ctx, before, math.MaxInt64)
}

// RollUpLedgerThrough is RollUpLedger that only folds rows whose seq is at
// most through: rows a shipper has not copied yet stay until it has.
func (d *DB) RollUpLedgerThrough(ctx context.Context, before time.Time, through int64) (int64, error) {
	b := before.Local()
	cut := time.Date(b.Year(), b.Month(), b.Day(), 0, 0, 0, 0, time.Local).UnixMilli()
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: ledger roll-up: %w", err)
	}
	defer tx.Rollback()
	// The rows are added up by quarter hour in SQL and by local day here
	// (see quarterHour), then each day's totals are added to what the
	// daily table already holds.
	type key struct{ day, backend, chain, path string }
	sums := map[key]*UsageRow{}
	rows, err := tx.QueryContext(ctx, `SELECT time / `+strconv.Itoa(quarterHour)+`, backend, chain, path, `+ledgerSums+`
	FROM ledger WHERE time < ? AND seq <= ? GROUP BY 1, 2, 3, 4`, cut, through)
	if err != nil {
		return 0, fmt.Errorf("store: ledger roll-up: %w", err)
	}
	for rows.Next() {
		var r UsageRow
		var bucket int64
		var k key
		if err := usageTotals(rows, &r, &bucket, &k.backend, &k.chain, &k.path); err != nil {
			rows.Close()
			return 0, fmt.Errorf("store: ledger roll-up: %w", err)
		}
		k.day = bucketDay(bucket)
		if s, ok := sums[k]; ok {
			s.add(r)
		} else {
			sums[k] = &r
		}
	}
	if err := rows.Close(); err != nil {
		return 0, fmt.Errorf("store: ledger roll-up: %w", err)
	}
	keys := slices.SortedFunc(maps.Keys(sums), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.day, b.day), cmp.Compare(a.backend, b.backend), cmp.Compare(a.chain, b.chain), cmp.Compare(a.path, b.path))
	})
	for _, k := range keys {
		s := sums[k]
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger_daily AS t
	(day, backend, chain, path, requests, failures, prompt_tokens, completion_tokens, estimated_tokens, cost)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (day, backend, chain, path) DO UPDATE SET
	requests = t.requests + excluded.requests, failures = t.failures + excluded.failures,
	prompt_tokens = t.prompt_tokens + excluded.prompt_tokens,
	completion_tokens = t.completion_tokens + excluded.completion_tokens,
	estimated_tokens = t.estimated_tokens + excluded.estimated_tokens, cost = t.cost + excluded.cost`,
			k.day, k.backend, k.chain, k.path, s.Requests, s.Failures, s.PromptTokens, s.CompletionTokens, s.EstimatedTokens, s.Cost); err != nil {
			return 0, fmt.Errorf("store: ledger roll-up: %w", err)
		}
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM ledger WHERE time < ? AND seq <= ?`, cut, through)
	if err != nil {
		return 0, fmt.Errorf("store: ledger roll-up: %w", err)
	}
	n, _ := res.RowsAffected()
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: ledger roll-up: %w", err)
	}
	return n, nil
}

// Call is one call to a backend as the ledger and the request log hold it,
// for rebuilding rolling metrics at start.
type Call struct {
	// End is when the request the call belongs to finished: its start plus
	// its latency, when its request row is still there, else the call's
	// own end.
	End     time.Time
	Backend string
	OK      bool
	// Failover is true when the call failed and the request went on to
	// call another backend.
	Failover bool
	Latency  time.Duration
	TTFT     time.Duration
}

// EachCall calls fn for every call of the requests that started at or
// after since, in the order their requests ended, and stops at fn's first
// error. It reads from the database as it goes, so an hour of heavy
// traffic is never held in memory at once.
func (d *DB) EachCall(ctx context.Context, since time.Time, fn func(Call) error) error {
	// The calls of one request are written together, one after the other,
	// so a call failed over when the next row belongs to its request.
	rows, err := d.sql.QueryContext(ctx, `SELECT time, backend, outcome, failover, latency_ms, ttft_ms, done_ms FROM (
	SELECT l.time, l.backend, l.outcome,
		l.outcome <> 'ok' AND (LEAD(l.request_id) OVER (ORDER BY l.seq)) IS l.request_id AS failover,
		l.latency_ms, COALESCE(l.ttft_ms, 0) AS ttft_ms, COALESCE(r.latency_ms, l.latency_ms) AS done_ms
	FROM ledger l LEFT JOIN requests r ON r.id = l.request_id
	WHERE l.time >= ?
) ORDER BY time + done_ms`, since.UnixMilli())
	if err != nil {
		return fmt.Errorf("store: reading calls: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			ms              int64
			c               Call
			outcome         string
			lat, ttft, done float64
		)
		if err := rows.Scan(&ms, &c.Backend, &outcome, &c.Failover, &lat, &ttft, &done); err != nil {
			return fmt.Errorf("store: reading calls: %w", err)
		}
		c.OK, c.Latency, c.TTFT = outcome == "ok", msDuration(lat), msDuration(ttft)
		c.End = time.UnixMilli(ms).Add(msDuration(done))
		if err := fn(c); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: reading calls: %w", err)
	}
	return nil
}
