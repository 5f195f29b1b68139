package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"freelane/backend/llm"
)

// RequestSort is the column a page of the request log is ordered by.
type RequestSort string

// The sorts of the request log. Every sort breaks ties by the order the
// requests were stored in, so pages never repeat or skip a row.
const (
	SortTime    RequestSort = "time"
	SortLatency RequestSort = "latency"
	// SortTTFT orders by the time to the first token; requests that
	// measured none (not streamed, or failed) are left out of this sort.
	SortTTFT   RequestSort = "ttft"
	SortTokens RequestSort = "tokens"
	SortCost   RequestSort = "cost"
)

// RequestSorts are the sorts in the order the API lists them.
var RequestSorts = []RequestSort{SortTime, SortLatency, SortTTFT, SortTokens, SortCost}

// sortColumn is the column behind each sort.
var sortColumn = map[RequestSort]string{
	SortTime:    "started_at",
	SortLatency: "latency_ms",
	SortTTFT:    "ttft_ms",
	SortTokens:  "total_tokens",
	SortCost:    "cost",
}

// Bounds of the search inputs, so a query can never be made arbitrarily
// expensive to build or to match.
const (
	// MaxSearchText bounds RequestQuery.Text.
	MaxSearchText = 200
	// MaxFilterValue bounds the names a filter compares (chain, backend,
	// session, id).
	MaxFilterValue = 256
	// maxCursor bounds an encoded cursor.
	maxCursor = 200
)

// ErrBadCursor is returned (wrapped) for a cursor that this build did not
// write, or that was written for another sort.
var ErrBadCursor = errors.New("store: bad request log cursor")

// cursor is where a page ends: the sort key, instance and sequence number
// of its last row. The next page starts strictly after it. The instance
// tells apart the rows of a team's log, which every instance numbers on
// its own; one file's rows are all of one instance.
type cursor struct {
	Sort     RequestSort `json:"s"`
	Asc      bool        `json:"a,omitempty"`
	Key      float64     `json:"k"`
	Instance string      `json:"i,omitempty"`
	Seq      int64       `json:"q"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor written by encode for the same sort and
// direction.
func decodeCursor(s string, sort RequestSort, asc bool) (cursor, error) {
	if len(s) > maxCursor {
		return cursor{}, fmt.Errorf("%w: longer than %d characters", ErrBadCursor, maxCursor)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, fmt.Errorf("%w: not a cursor this server wrote", ErrBadCursor)
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return cursor{}, fmt.Errorf("%w: not a cursor this server wrote", ErrBadCursor)
	}
	if c.Sort != sort || c.Asc != asc {
		return cursor{}, fmt.Errorf("%w: it continues another sort", ErrBadCursor)
	}
	return c, nil
}

// RequestPage is one page of the request log.
type RequestPage struct {
	Traces []llm.Trace
	// Next continues the query after the last trace; "" when this page is
	// the last.
	Next string
}

// StatusClass filters by the hundreds of the HTTP status the client got:
// "2xx", "4xx", "5xx".
type StatusClass string

// validStatusClasses are the status classes a filter takes.
var validStatusClasses = map[StatusClass][2]int{"2xx": {200, 300}, "3xx": {300, 400}, "4xx": {400, 500}, "5xx": {500, 600}}

// Valid reports whether c is one of the status classes (or empty).
func (c StatusClass) Valid() bool {
	_, ok := validStatusClasses[c]
	return ok || c == ""
}

// QueryRequests returns one page of the stored traces matching q in q's
// order, and the cursor of the next page. A bad q.Cursor is an error
// wrapping ErrBadCursor.
func (d *DB) QueryRequests(ctx context.Context, q RequestQuery) (RequestPage, error) {
	st, err := q.Statement(SQLite)
	if err != nil {
		return RequestPage{}, err
	}
	rows, err := d.sql.QueryContext(ctx, st.SQL, st.Args...)
	if err != nil {
		return RequestPage{}, fmt.Errorf("store: query requests: %w", err)
	}
	defer rows.Close()
	return st.Page(rows)
}

// RequestStatement is a query of the request log rendered for one SQL
// dialect, and what reading its rows into a page needs.
type RequestStatement struct {
	SQL   string
	Args  []any
	sort  RequestSort
	asc   bool
	limit int
}

// Rows is what a page is read from: database/sql's and pgx's rows both
// are.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Statement renders q for d: the SQL selects one row more than the page,
// which tells whether there is a next page. A bad q.Cursor is an error
// wrapping ErrBadCursor.
func (q RequestQuery) Statement(d Dialect) (RequestStatement, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultQueryLimit
	}
	limit = min(limit, maxQueryLimit)
	sort := q.Sort
	if sort == "" {
		sort = SortTime
	}
	col, ok := sortColumn[sort]
	if !ok {
		return RequestStatement{}, fmt.Errorf("store: unknown request sort %q", sort)
	}
	where, args := q.conditions(d)
	if sort == SortTTFT {
		where = append(where, "ttft_ms IS NOT NULL")
	}
	// The keyset condition: strictly after the cursor's row in the order
	// of (sort key, seq), or in a team's log (sort key, instance, seq),
	// all in the query's direction.
	cmpOp, dir := "<", "DESC"
	if q.Asc {
		cmpOp, dir = ">", "ASC"
	}
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor, sort, q.Asc)
		if err != nil {
			return RequestStatement{}, err
		}
		if d == Postgres {
			where = append(where, fmt.Sprintf("(%[1]s %[2]s ? OR (%[1]s = ? AND (instance, seq) %[2]s (?, ?)))", col, cmpOp))
			args = append(args, c.Key, c.Key, c.Instance, c.Seq)
		} else {
			where = append(where, fmt.Sprintf("(%[1]s %[2]s ? OR (%[1]s = ? AND seq %[2]s ?))", col, cmpOp))
			args = append(args, c.Key, c.Key, c.Seq)
		}
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	order := fmt.Sprintf(" ORDER BY %s %s, seq %s", col, dir, dir)
	if d == Postgres {
		order = fmt.Sprintf(" ORDER BY %s %s, instance %s, seq %s", col, dir, dir, dir)
	}
	args = append(args, limit+1)
	var query string
	if d == Postgres {
		query = selectRequests + cond + order + " LIMIT ?"
	} else {
		// The page is chosen first, by seq alone: every column a
		// condition or the order reads is in the listing index, so the
		// choice reads index entries only, and only the page's own rows
		// are read in full.
		query = selectRequests + " WHERE seq IN (SELECT seq FROM requests" + cond + order + " LIMIT ?)" + order
	}
	return RequestStatement{SQL: d.Rebind(query), Args: args, sort: sort, asc: q.Asc, limit: limit}, nil
}

// Page reads the statement's rows into a page.
func (s RequestStatement) Page(rows Rows) (RequestPage, error) {
	stored, err := scanRequests(rows)
	if err != nil {
		return RequestPage{}, err
	}
	page := RequestPage{Traces: make([]llm.Trace, 0, min(len(stored), s.limit))}
	for i := range stored[:min(len(stored), s.limit)] {
		page.Traces = append(page.Traces, stored[i].trace)
	}
	if len(stored) > s.limit {
		last := stored[s.limit-1]
		page.Next = cursor{Sort: s.sort, Asc: s.asc, Key: last.key(s.sort), Instance: last.trace.Instance, Seq: last.seq}.encode()
	}
	return page, nil
}

// RequestByIDStatement is the statement that reads the request with id,
// rendered for d; ScanTraces reads its rows.
func RequestByIDStatement(d Dialect, id string) (string, []any) {
	return d.Rebind(selectRequests + " WHERE id = ? LIMIT 1"), []any{id}
}

// ScanTraces reads the traces of rows a request log statement selected.
func ScanTraces(rows Rows) ([]llm.Trace, error) {
	stored, err := scanRequests(rows)
	if err != nil {
		return nil, err
	}
	out := make([]llm.Trace, len(stored))
	for i := range stored {
		out[i] = stored[i].trace
	}
	return out, nil
}

// Rebind writes the statement's ? placeholders as d numbers them ($1, $2,
// ... in PostgreSQL). The statements this package writes hold no ? in a
// literal.
func (d Dialect) Rebind(query string) string {
	if d != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// conditions are the WHERE terms and arguments of q's filters and search.
func (q RequestQuery) conditions(d Dialect) (where []string, args []any) {
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	if q.ID != "" {
		add("id = ?", q.ID)
	}
	if q.Chain != "" {
		add("chain = ?", q.Chain)
	}
	if q.Backend != "" {
		add("backend = ?", q.Backend)
	}
	if q.Class != "" {
		add("class = ?", string(q.Class))
	}
	if q.Dialect != "" {
		add("dialect = ?", string(q.Dialect))
	}
	if r, ok := validStatusClasses[q.Status]; ok {
		add("status >= ? AND status < ?", r[0], r[1])
	}
	if q.Cache != "" {
		if q.Cache == CacheNone {
			add("cache = ''")
		} else {
			add("cache = ?", string(q.Cache))
		}
	}
	if q.Stream != nil {
		add("stream = ?", *q.Stream)
	}
	if q.Session != "" {
		add("session = ?", q.Session)
	}
	if q.Instance != "" {
		add("instance = ?", q.Instance)
	}
	if !q.From.IsZero() {
		add("started_at >= ?", q.From.UnixMilli())
	}
	if !q.To.IsZero() {
		add("started_at < ?", q.To.UnixMilli())
	}
	if !q.Before.IsZero() {
		add("started_at < ?", q.Before.UnixMilli())
	}
	if q.Text != "" {
		// A substring of the names (what the client asked for, the alias,
		// chain and backend), of the error and notes, and of the stored
		// bodies. SQLite's LIKE ignores ASCII case, as PostgreSQL's ILIKE
		// does; the pattern's own wildcards are escaped so the text
		// matches as typed.
		p := "%" + likeEscaper.Replace(q.Text) + "%"
		like := "LIKE"
		if d == Postgres {
			like = "ILIKE"
		}
		cols := []string{"model", "alias", "chain", "backend", "error", "notes"}
		var terms []string
		for _, c := range cols {
			terms = append(terms, c+" "+like+` ? ESCAPE '\'`)
			args = append(args, p)
		}
		if d == Postgres {
			terms = append(terms, `id IN (SELECT request_id FROM request_bodies WHERE request ILIKE ? ESCAPE '\' OR answer ILIKE ? ESCAPE '\')`)
		} else {
			terms = append(terms, `seq IN (SELECT r.seq FROM request_bodies b CROSS JOIN requests r ON r.id = b.request_id
	WHERE b.request LIKE ? ESCAPE '\' OR b.answer LIKE ? ESCAPE '\')`)
		}
		args = append(args, p, p)
		where = append(where, "("+strings.Join(terms, " OR ")+")")
	}
	return where, args
}

// CacheNone filters for requests the response cache was not asked about.
const CacheNone llm.CacheOutcome = "none"

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// storedRow is a trace with the raw column values a cursor is made of.
type storedRow struct {
	trace   llm.Trace
	seq     int64
	startMS int64
	latency float64
	ttft    float64
	tokens  int
	cost    float64
}

// key is the row's value of the sort column, exactly as stored.
func (r *storedRow) key(s RequestSort) float64 {
	switch s {
	case SortLatency:
		return r.latency
	case SortTTFT:
		return r.ttft
	case SortTokens:
		return float64(r.tokens)
	case SortCost:
		return r.cost
	}
	return float64(r.startMS)
}

// selectRequests selects the columns scanRequests reads.
const selectRequests = `SELECT seq, id, started_at, endpoint, path, dialect, model, alias, chain, backend, stream, status, class, error,
	latency_ms, ttft_ms, prompt_tokens, completion_tokens, total_tokens, committed, attempts, notes, decision,
	cache_read_tokens, cache_write_tokens, saved, cache, session, cost, instance
FROM requests`

// scanRequests reads the rows a statement of selectRequests selected.
func scanRequests(rows Rows) ([]storedRow, error) {
	var out []storedRow
	for rows.Next() {
		var (
			r        storedRow
			t        = &r.trace
			class    string
			dialect  string
			ttft     sql.NullFloat64
			attempts string
			notes    string
			decision string
			cache    string
		)
		if err := rows.Scan(
			&r.seq, &t.ID, &r.startMS, &t.Endpoint, &t.Path, &dialect, &t.Model, &t.Alias, &t.Chain, &t.Backend, &t.Stream, &t.Status,
			&class, &t.Error, &r.latency, &ttft,
			&t.Usage.PromptTokens, &t.Usage.CompletionTokens, &r.tokens, &t.Committed, &attempts, &notes, &decision,
			&t.Usage.CacheReadTokens, &t.Usage.CacheWriteTokens, &t.Saved, &cache, &t.Session, &r.cost, &t.Instance,
		); err != nil {
			return nil, fmt.Errorf("store: scan request: %w", err)
		}
		t.Start = time.UnixMilli(r.startMS)
		t.Class = llm.Class(class)
		t.Dialect = llm.Dialect(dialect)
		t.Cache = llm.CacheOutcome(cache)
		t.Latency = msDuration(r.latency)
		r.ttft = ttft.Float64
		t.TTFT = msDuration(ttft.Float64)
		t.Usage.TotalTokens = r.tokens
		var err error
		if t.Attempts, err = decodeAttempts(attempts); err != nil {
			return nil, fmt.Errorf("store: request %s: attempts: %w", t.ID, err)
		}
		t.Notes = decodeNotes(notes)
		if t.Decision, err = decodeDecision(decision); err != nil {
			return nil, fmt.Errorf("store: request %s: decision: %w", t.ID, err)
		}
		// The cost is the attempts' sum, as it always was; the column
		// holds the same sum for sorting.
		for _, a := range t.Attempts {
			t.Cost += a.Cost
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: query requests: %w", err)
	}
	return out, nil
}
