package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

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
	var q strings.Builder
	q.WriteString("INSERT INTO ledger (" + strings.Join(ledgerColumns, ", ") + ") VALUES ")
	args := make([]any, 0, len(rows)*len(ledgerColumns))
	for i, r := range rows {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(")
		for j := range ledgerColumns {
			if j > 0 {
				q.WriteString(", ")
			}
			q.WriteString("$" + strconv.Itoa(len(args)+j+1))
		}
		q.WriteString(")")
		var ttft *float64
		if r.TTFTMS.Valid {
			ttft = &r.TTFTMS.Float64
		}
		args = append(args, d.instance, r.Seq, r.Time.UnixMilli(), r.RequestID, r.Chain, r.Backend, r.Dialect, r.Path,
			r.Outcome, r.Status, r.LatencyMS, ttft, r.PromptTokens, r.CompletionTokens, r.Estimated, r.Cost)
	}
	q.WriteString(" ON CONFLICT (instance, seq) DO NOTHING")
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
			return err
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

// ShippedSeq is the highest seq of this instance's rows in the database,
// 0 when it holds none.
func (d *DB) ShippedSeq(ctx context.Context) (int64, error) {
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	var n int64
	if err := d.pool.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM ledger WHERE instance = $1`, d.instance).Scan(&n); err != nil {
		return 0, d.errorf("reading the ledger", err)
	}
	return n, nil
}

// usageSums are the totals of a group of ledger rows, in the order
// scanUsage reads them; sums of integers are numeric in PostgreSQL and
// are cast back.
const usageSums = `COUNT(*), SUM(CASE WHEN outcome <> 'ok' THEN 1 ELSE 0 END)::bigint, SUM(prompt_tokens)::bigint,
	SUM(completion_tokens)::bigint, SUM(cost), SUM(CASE WHEN estimated THEN prompt_tokens + completion_tokens ELSE 0 END)::bigint`

// Usage answers the same queries as store's Usage, over every
// instance's rows: PostgreSQL keeps each row (it rolls nothing up), and
// days are the local days of this process, as they are for SQLite.
// ByInstance groups by the instance that wrote the rows.
func (d *DB) Usage(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error) {
	var key, extra string
	byDay := false
	switch q.GroupBy {
	case store.ByDay:
		key, extra, byDay = "time / "+strconv.Itoa(store.QuarterHourMillis), "''", true
	case store.ByDayBackend:
		key, extra, byDay = "time / "+strconv.Itoa(store.QuarterHourMillis), "backend", true
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
	FROM ledger WHERE time >= $1 AND time < $2 GROUP BY 1, 2 ORDER BY 1, 2`, q.From.UnixMilli(), q.To.UnixMilli())
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
