package store

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// The tables a team shares on PostgreSQL have the same columns as this
// package's SQLite tables. Both are described once here, and each database
// gets its DDL rendered from the description: PostgreSQL's migrations run
// the rendered text, and a test checks that the SQLite migrations produce
// exactly what the description renders, so the two cannot drift apart.

// Dialect is an SQL dialect a Table is rendered in.
type Dialect int

// Dialects.
const (
	SQLite Dialect = iota
	Postgres
)

// Kind is a column's type, independent of the dialect.
type Kind int

// Column kinds.
const (
	// Integer is a 64-bit integer: INTEGER in SQLite, BIGINT in PostgreSQL.
	Integer Kind = iota
	// Real is a double: REAL, DOUBLE PRECISION.
	Real
	// Text is a string: TEXT in both.
	Text
	// Bool is a truth value: INTEGER 0 or 1 in SQLite, BOOLEAN.
	Bool
	// Document is a state document's bytes: TEXT in SQLite (where the
	// documents have always been kept as text), BYTEA.
	Document
)

// Column is one column of a Table.
type Column struct {
	Name string
	Kind Kind
	// Null allows NULL; columns are NOT NULL otherwise.
	Null bool
	// Default is the column's default value (int64, float64, string or
	// bool matching Kind), nil for none.
	Default any
	// Unique makes every row's value distinct.
	Unique bool
}

// Table describes a table both databases hold.
type Table struct {
	Name    string
	Columns []Column
	// Key is the primary key's columns, in order.
	Key []string
	// Increment makes a single integer key hand out values that are never
	// reused, even after the newest row is deleted (SQLite's
	// AUTOINCREMENT); PostgreSQL renders the key as it is.
	Increment bool
}

// StateTable holds the named documents: the configuration, the sealed
// keys and what the gateway saves between runs. updated_at is unix
// milliseconds.
var StateTable = Table{
	Name: "state",
	Columns: []Column{
		{Name: "name", Kind: Text},
		{Name: "value", Kind: Document},
		{Name: "updated_at", Kind: Integer},
	},
	Key: []string{"name"},
}

// LedgerTable is the usage ledger, one row per attempt that called a
// backend. seq numbers the rows in the order they were written and is
// never reused, so that a shipper can name the last row it copied.
var LedgerTable = Table{
	Name: "ledger",
	Columns: []Column{
		{Name: "seq", Kind: Integer},
		{Name: "time", Kind: Integer},
		{Name: "request_id", Kind: Text},
		{Name: "chain", Kind: Text, Default: ""},
		{Name: "backend", Kind: Text},
		{Name: "dialect", Kind: Text, Default: ""},
		{Name: "path", Kind: Text, Default: ""},
		{Name: "outcome", Kind: Text},
		{Name: "status", Kind: Integer, Default: int64(0)},
		{Name: "latency_ms", Kind: Real, Default: 0.0},
		{Name: "ttft_ms", Kind: Real, Null: true},
		{Name: "prompt_tokens", Kind: Integer, Default: int64(0)},
		{Name: "completion_tokens", Kind: Integer, Default: int64(0)},
		{Name: "estimated", Kind: Bool, Default: false},
		{Name: "cost", Kind: Real, Default: 0.0},
	},
	Key:       []string{"seq"},
	Increment: true,
}

// RequestsTable is the request log, one row per client request; times are
// unix milliseconds and durations float milliseconds. seq numbers the rows
// in the order they were written and is never reused, so that a shipper
// can name the last row it copied. instance names the instance of a team
// that served the request (” on a single machine).
var RequestsTable = Table{
	Name: "requests",
	Columns: []Column{
		{Name: "seq", Kind: Integer},
		{Name: "id", Kind: Text, Unique: true},
		{Name: "started_at", Kind: Integer},
		{Name: "endpoint", Kind: Text, Default: ""},
		{Name: "model", Kind: Text, Default: ""},
		{Name: "chain", Kind: Text, Default: ""},
		{Name: "backend", Kind: Text, Default: ""},
		{Name: "stream", Kind: Bool, Default: false},
		{Name: "status", Kind: Integer, Default: int64(0)},
		{Name: "class", Kind: Text, Default: ""},
		{Name: "error", Kind: Text, Default: ""},
		{Name: "latency_ms", Kind: Real, Default: 0.0},
		{Name: "ttft_ms", Kind: Real, Null: true},
		{Name: "prompt_tokens", Kind: Integer, Default: int64(0)},
		{Name: "completion_tokens", Kind: Integer, Default: int64(0)},
		{Name: "total_tokens", Kind: Integer, Default: int64(0)},
		{Name: "committed", Kind: Bool, Default: false},
		{Name: "attempts", Kind: Text, Default: "[]"},
		{Name: "dialect", Kind: Text, Default: ""},
		{Name: "alias", Kind: Text, Default: ""},
		{Name: "notes", Kind: Text, Default: ""},
		{Name: "path", Kind: Text, Default: ""},
		{Name: "decision", Kind: Text, Default: ""},
		{Name: "cache_read_tokens", Kind: Integer, Default: int64(0)},
		{Name: "cache_write_tokens", Kind: Integer, Default: int64(0)},
		{Name: "saved", Kind: Real, Default: 0.0},
		{Name: "cache", Kind: Text, Default: ""},
		{Name: "session", Kind: Text, Default: ""},
		{Name: "cost", Kind: Real, Default: 0.0},
		{Name: "instance", Kind: Text, Default: ""},
	},
	Key:       []string{"seq"},
	Increment: true,
}

// BodiesTable holds the bodies of requests and their answers while body
// logging is on, redacted and cut to the configured size; started_at is
// the request's start, by which they are pruned with the log. seq numbers
// the rows in the order they were written, as RequestsTable's does.
var BodiesTable = Table{
	Name: "request_bodies",
	Columns: []Column{
		{Name: "seq", Kind: Integer},
		{Name: "request_id", Kind: Text, Unique: true},
		{Name: "started_at", Kind: Integer},
		{Name: "request", Kind: Text, Default: ""},
		{Name: "answer", Kind: Text, Default: ""},
	},
	Key:       []string{"seq"},
	Increment: true,
}

// Keyed returns t keyed by key instead, without an incrementing key:
// PostgreSQL's request log holds every instance's rows, each numbered by
// its own instance, so it is keyed by instance and seq.
func (t Table) Keyed(key ...string) Table {
	out := t
	out.Key = key
	out.Increment = false
	return out
}

// Column returns the index of the column named name, -1 when t has none.
func (t Table) Column(name string) int {
	return slices.IndexFunc(t.Columns, func(c Column) bool { return c.Name == name })
}

// Prefixed returns t with col put first and first in its key, as
// PostgreSQL's ledger is keyed by instance and then seq; the copy does
// not increment its key.
func (t Table) Prefixed(col Column) Table {
	out := t
	out.Columns = append([]Column{col}, t.Columns...)
	out.Key = append([]string{col.Name}, t.Key...)
	out.Increment = false
	return out
}

// ColumnNames lists t's columns in order.
func (t Table) ColumnNames() []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}

// TypeName is how d spells kind.
func (d Dialect) TypeName(k Kind) string {
	switch k {
	case Integer:
		if d == Postgres {
			return "BIGINT"
		}
		return "INTEGER"
	case Real:
		if d == Postgres {
			return "DOUBLE PRECISION"
		}
		return "REAL"
	case Text:
		return "TEXT"
	case Bool:
		if d == Postgres {
			return "BOOLEAN"
		}
		return "INTEGER"
	case Document:
		if d == Postgres {
			return "BYTEA"
		}
		return "TEXT"
	}
	panic(fmt.Sprintf("store: unknown column kind %d", k))
}

// Literal is how d writes the default value v.
func (d Dialect) Literal(v any) string {
	switch v := v.(type) {
	case int64:
		return fmt.Sprint(v)
	case float64:
		return fmt.Sprint(v)
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case bool:
		switch {
		case d == Postgres:
			return fmt.Sprint(v)
		case v:
			return "1"
		default:
			return "0"
		}
	}
	panic(fmt.Sprintf("store: a default of type %T", v))
}

// DDL is the CREATE TABLE statement of t in d.
func (t Table) DDL(d Dialect) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (\n", t.Name)
	single := len(t.Key) == 1
	for i, c := range t.Columns {
		fmt.Fprintf(&b, "    %s %s", c.Name, d.TypeName(c.Kind))
		switch {
		case single && c.Name == t.Key[0] && d == SQLite && c.Kind == Integer:
			// SQLite's rowid alias: it must be spelled exactly so.
			b.WriteString(" PRIMARY KEY")
			if t.Increment {
				b.WriteString(" AUTOINCREMENT")
			}
		case !c.Null:
			b.WriteString(" NOT NULL")
		}
		if c.Unique {
			b.WriteString(" UNIQUE")
		}
		if c.Default != nil {
			b.WriteString(" DEFAULT " + d.Literal(c.Default))
		}
		if i < len(t.Columns)-1 || !t.rowidKey(d) {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	if !t.rowidKey(d) {
		fmt.Fprintf(&b, "    PRIMARY KEY (%s)\n", strings.Join(t.Key, ", "))
	}
	b.WriteString(")")
	return b.String()
}

// rowidKey reports whether t's key is written on its column (SQLite's
// INTEGER PRIMARY KEY) rather than as a table constraint.
func (t Table) rowidKey(d Dialect) bool {
	if d != SQLite || len(t.Key) != 1 {
		return false
	}
	i := t.Column(t.Key[0])
	return i >= 0 && t.Columns[i].Kind == Integer
}

// scan reads one row of t's columns, in order, each as its kind's Go
// type (int64, float64, string, bool, []byte) or nil for a NULL.
func (t Table) scan(rows *sql.Rows) ([]any, error) {
	dest := make([]any, len(t.Columns))
	for i, c := range t.Columns {
		switch c.Kind {
		case Integer:
			dest[i] = new(sql.NullInt64)
		case Real:
			dest[i] = new(sql.NullFloat64)
		case Text:
			dest[i] = new(sql.NullString)
		case Bool:
			dest[i] = new(sql.NullBool)
		case Document:
			dest[i] = new([]byte)
		}
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	vals := make([]any, len(dest))
	for i, d := range dest {
		switch d := d.(type) {
		case *sql.NullInt64:
			if d.Valid {
				vals[i] = d.Int64
			}
		case *sql.NullFloat64:
			if d.Valid {
				vals[i] = d.Float64
			}
		case *sql.NullString:
			if d.Valid {
				vals[i] = d.String
			}
		case *sql.NullBool:
			if d.Valid {
				vals[i] = d.Bool
			}
		case *[]byte:
			vals[i] = *d
		}
	}
	return vals, nil
}
