package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"freelane/backend/store"
)

// ledgerColumns are the columns InsertLedger writes, in its order.
var ledgerColumns = store.LedgerTable.Prefixed(store.Column{Name: "instance", Kind: store.Text}).ColumnNames()

// InsertLedger copies rows, written by this instance and numbered by its
// seq, in one transaction. A row already there (same instance and seq)
// is left as it is, so copying a batch again after a failure that hid
// whether it committed counts nothing twice.
func (d *DB) InsertLedger(ctx context.Context, rows []store.LedgerRow) error {
	if len(rows) == 0 {
		return nil
	}
	return d.insertLedger(ctx, rows, nil)
}

// insertLedger is InsertLedger; beforeCommit, when set, runs inside the
// transaction after the insert (tests stop a shipper there).
func (d *DB) insertLedger(ctx context.Context, rows []store.LedgerRow, beforeCommit func()) error {
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		// Rows through the highest seq rolled up were copied before (a
		// shipper copies in seq order) and are in the totals now, or
		// still here: copying them again would count them twice.
		var rolled int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM ledger_rolled WHERE instance = $1`, d.instance).Scan(&rolled); err != nil {
			return err
		}
		first, _ := slices.BinarySearchFunc(rows, rolled+1, func(r store.LedgerRow, seq int64) int { return cmp.Compare(r.Seq, seq) })
		if first < len(rows) {
			q, args := d.ledgerInsert(rows[first:])
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return err
			}
		}
		if beforeCommit != nil {
			beforeCommit()
		}
		return nil
	})
	if err != nil {
		return d.errorf("copying ledger rows", err)
	}
	return nil
}

// ledgerInsert is the statement that copies rows, with its arguments.
func (d *DB) ledgerInsert(rows []store.LedgerRow) (string, []any) {
	var q strings.Builder
	q.WriteString("INSERT INTO ledger (" + strings.Join(ledgerColumns, ", ") + ") VALUES ")
	writePlaceholders(&q, len(rows), len(ledgerColumns))
	args := make([]any, 0, len(rows)*len(ledgerColumns))
	for _, r := range rows {
		var ttft *float64
		if r.TTFTMS.Valid {
			ttft = &r.TTFTMS.Float64
		}
		args = append(args, d.instance, r.Seq, r.Time.UnixMilli(), r.RequestID, r.Chain, r.Backend, r.Dialect, r.Path,
			r.Outcome, r.Status, r.LatencyMS, ttft, r.PromptTokens, r.CompletionTokens, r.Estimated, r.Cost)
	}
	q.WriteString(" ON CONFLICT (instance, seq) DO NOTHING")
	return q.String(), args
}

// writePlaceholders writes the placeholders of a multi-row VALUES list
// of rows rows of cols columns: ($1, $2), ($3, $4).
func writePlaceholders(q *strings.Builder, rows, cols int) {
	for i := range rows {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(")
		for j := range cols {
			if j > 0 {
				q.WriteString(", ")
			}
			q.WriteString("$" + strconv.Itoa(i*cols+j+1))
		}
		q.WriteString(")")
	}
}

// ShippedSeq is the highest seq of this instance's rows in the database,
// rolled up or not, 0 when it holds none.
func (d *DB) ShippedSeq(ctx context.Context) (int64, error) {
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	var n int64
	if err := d.pool.QueryRow(ctx, `SELECT GREATEST(
	(SELECT COALESCE(MAX(seq), 0) FROM ledger WHERE instance = $1),
	(SELECT COALESCE(MAX(seq), 0) FROM ledger_rolled WHERE instance = $1))`, d.instance).Scan(&n); err != nil {
		return 0, d.errorf("reading the ledger", err)
	}
	return n, nil
}

// rollUpLock is the key of the transaction lock one roll-up holds, so
// that instances rolling up at once take turns rather than wait.
const rollUpLock = advisoryLock + 1

// inTurn runs fn in a transaction that holds the transaction lock key,
// unless another instance holds it: then it does nothing, since that
// instance is doing the same work.
func (d *DB) inTurn(ctx context.Context, key int64, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		var mine bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, key).Scan(&mine); err != nil || !mine {
			return err
		}
		return fn(tx)
	})
}

// RollUp folds every row of the team's ledger from before before into
// quarter-hour totals by instance, backend, chain and path, and deletes
// the rows, in one statement: a row is either still there or in the
// totals. While another instance is rolling up it does nothing. It
// returns how many rows it folded.
func (d *DB) RollUp(ctx context.Context, before time.Time) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, rollUpTimeout)
	defer cancel()
	var n int64
	err := d.inTurn(ctx, rollUpLock, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `WITH gone AS (DELETE FROM ledger WHERE time < $1 RETURNING *),
folded AS (
	INSERT INTO ledger_quarters AS t (quarter, instance, backend, chain, path, requests, failures,
		prompt_tokens, completion_tokens, cost, estimated_tokens)
	SELECT quarter, instance, backend, chain, path, SUM(requests), SUM(failures), SUM(prompt_tokens),
		SUM(completion_tokens), SUM(cost), SUM(estimated_tokens)
	FROM (SELECT `+rowFigures+` FROM gone) f GROUP BY 1, 2, 3, 4, 5
	ON CONFLICT (quarter, instance, backend, chain, path) DO UPDATE SET
		requests = t.requests + excluded.requests, failures = t.failures + excluded.failures,
		prompt_tokens = t.prompt_tokens + excluded.prompt_tokens,
		completion_tokens = t.completion_tokens + excluded.completion_tokens,
		estimated_tokens = t.estimated_tokens + excluded.estimated_tokens, cost = t.cost + excluded.cost),
marked AS (
	INSERT INTO ledger_rolled AS r (instance, seq) SELECT instance, MAX(seq) FROM gone GROUP BY instance
	ON CONFLICT (instance) DO UPDATE SET seq = GREATEST(r.seq, excluded.seq))
SELECT COUNT(*) FROM gone`, before.UnixMilli()).Scan(&n)
	})
	if err != nil {
		return 0, d.errorf("rolling up the ledger", err)
	}
	return n, nil
}

// usageSums are the totals of a group of ledger rows, in the order
// scanUsage reads them; sums of integers are numeric in PostgreSQL and
// are cast back.
const usageSums = `SUM(requests)::bigint, SUM(failures)::bigint, SUM(prompt_tokens)::bigint,
	SUM(completion_tokens)::bigint, SUM(cost), SUM(estimated_tokens)::bigint`

// quarter is a quarter hour in milliseconds, as SQL.
var quarter = strconv.Itoa(store.QuarterHourMillis)

// rowFigures are a ledger row's figures in the columns of ledger_quarters,
// so that rows and the totals of rows rolled up add up alike.
var rowFigures = `time / ` + quarter + ` AS quarter, instance, backend, chain, path, 1 AS requests,
	CASE WHEN outcome <> 'ok' THEN 1 ELSE 0 END AS failures, prompt_tokens, completion_tokens, cost,
	CASE WHEN estimated THEN prompt_tokens + completion_tokens ELSE 0 END AS estimated_tokens`

// Usage answers the same queries as store's Usage, over every
// instance's rows and the quarter-hour totals of those rolled up (see
// RollUp); days are the local days of this process, as they are for
// SQLite.
// ByInstance groups by the instance that wrote the rows.
func (d *DB) Usage(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error) {
	var key, extra string
	byDay := false
	switch q.GroupBy {
	case store.ByDay:
		key, extra, byDay = "quarter", "''", true
	case store.ByDayBackend:
		key, extra, byDay = "quarter", "backend", true
	case store.ByBackend:
		key, extra = "backend", "''"
	case store.ByChain:
		key, extra = "chain", "''"
	case store.ByPath:
		key, extra = "path", "''"
	case store.ByInstance:
		key, extra = "instance", "''"
	default:
		return nil, fmt.Errorf("pgstore: unknown usage grouping %q", q.GroupBy)
	}
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	rows, err := d.pool.Query(ctx, `SELECT (`+key+`)::text, `+extra+`, `+usageSums+`
	FROM (
		SELECT `+rowFigures+` FROM ledger WHERE time >= $1 AND time < $2
		UNION ALL
		SELECT quarter, instance, backend, chain, path, requests, failures, prompt_tokens, completion_tokens, cost, estimated_tokens
		FROM ledger_quarters WHERE quarter * `+quarter+` >= $1 AND quarter * `+quarter+` < $2
	) u GROUP BY 1, 2 ORDER BY 1, 2`, q.From.UnixMilli(), q.To.UnixMilli())
	if err != nil {
		return nil, d.errorf("usage", err)
	}
	defer rows.Close()
	type group struct{ key, backend string }
	sums := map[group]*store.UsageRow{}
	var order []group
	for rows.Next() {
		var r store.UsageRow
		var k group
		if err := rows.Scan(&k.key, &k.backend, &r.Requests, &r.Failures, &r.PromptTokens, &r.CompletionTokens, &r.Cost, &r.EstimatedTokens); err != nil {
			return nil, d.errorf("usage", err)
		}
		if byDay {
			bucket, _ := strconv.ParseInt(k.key, 10, 64)
			k.key = store.BucketDay(bucket)
		}
		if s, ok := sums[k]; ok {
			s.Requests += r.Requests
			s.Failures += r.Failures
			s.PromptTokens += r.PromptTokens
			s.CompletionTokens += r.CompletionTokens
			s.Cost += r.Cost
			s.EstimatedTokens += r.EstimatedTokens
			continue
		}
		r.Key, r.Backend = k.key, k.backend
		sums[k] = &r
		order = append(order, k)
	}
	if err := rows.Err(); err != nil {
		return nil, d.errorf("usage", err)
	}
	out := make([]store.UsageRow, 0, len(order))
	for _, k := range order {
		out = append(out, *sums[k])
	}
	slices.SortFunc(out, func(a, b store.UsageRow) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Backend, b.Backend))
	})
	return out, nil
}
