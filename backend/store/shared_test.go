package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tableInfo is what SQLite says of a table's columns, in order.
func tableInfo(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name, type, "notnull", COALESCE(dflt_value, 'NULL'), pk FROM pragma_table_info(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name, typ, dflt string
		var notNull, pk int
		if err := rows.Scan(&name, &typ, &notNull, &dflt, &pk); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s notnull=%d default=%s pk=%d", name, typ, notNull, dflt, pk))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// uniqueColumns lists the columns a UNIQUE constraint of the table
// covers, sorted.
func uniqueColumns(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT i.name FROM pragma_index_list(?) l, pragma_index_info(l.name) i WHERE l.origin = 'u'`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// TestMigrationsMatchSharedTables migrates a real database file and
// checks that its state and ledger tables are what the shared
// definitions, which PostgreSQL's tables are rendered from, render for
// SQLite: same columns in the same order, types, NOT NULL, defaults,
// keys and AUTOINCREMENT.
func TestMigrationsMatchSharedTables(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "freelane.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fresh, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "rendered.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for _, tbl := range []Table{StateTable, LedgerTable, RequestsTable, BodiesTable} {
		if _, err := fresh.Exec(tbl.DDL(SQLite)); err != nil {
			t.Fatalf("rendered DDL of %s: %v\n%s", tbl.Name, err, tbl.DDL(SQLite))
		}
		migrated, rendered := tableInfo(t, db.SQL(), tbl.Name), tableInfo(t, fresh, tbl.Name)
		if len(migrated) == 0 || !slices.Equal(migrated, rendered) {
			t.Errorf("%s: the migrations make\n  %s\nbut the shared definition renders\n  %s",
				tbl.Name, strings.Join(migrated, "\n  "), strings.Join(rendered, "\n  "))
		}
		if got := tbl.ColumnNames(); len(got) != len(migrated) {
			t.Errorf("%s: %d columns defined, %d migrated", tbl.Name, len(got), len(migrated))
		}
		var ddl string
		if err := db.SQL().QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, tbl.Name).Scan(&ddl); err != nil {
			t.Fatal(err)
		}
		if inc := strings.Contains(strings.ToUpper(ddl), "AUTOINCREMENT"); inc != tbl.Increment {
			t.Errorf("%s: AUTOINCREMENT in the migrated table is %v, the definition says %v", tbl.Name, inc, tbl.Increment)
		}
		if migrated, rendered := uniqueColumns(t, db.SQL(), tbl.Name), uniqueColumns(t, fresh, tbl.Name); !slices.Equal(migrated, rendered) {
			t.Errorf("%s: the migrations make %v unique, the shared definition %v", tbl.Name, migrated, rendered)
		}
	}
}

// TestLedgerSeqIsNeverReused deletes every ledger row, as a roll-up of an
// idle ledger does, and checks that the next row still gets a seq above
// every seq handed out before.
func TestLedgerSeqIsNeverReused(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	add := func() int64 {
		t.Helper()
		res, err := db.SQL().ExecContext(ctx, `INSERT INTO ledger (time, request_id, backend, outcome) VALUES (?, 'r', 'b/m', 'ok')`,
			time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		return id
	}
	add()
	last := add()
	if _, err := db.RollUpLedger(ctx, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if next := add(); next <= last {
		t.Fatalf("after the roll-up emptied the ledger the next seq is %d, not above %d", next, last)
	}
}

// TestRequestSeqIsNeverReused prunes every request, as an idle log's prune
// does, and checks that the next request still gets a seq above every seq
// handed out before, and that RaiseSequence moves the next one on.
func TestRequestSeqIsNeverReused(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	add := func(id string) int64 {
		t.Helper()
		res, err := db.SQL().ExecContext(ctx, `INSERT INTO requests (id, started_at) VALUES (?, ?)`, id,
			time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		seq, _ := res.LastInsertId()
		return seq
	}
	add("a")
	last := add("b")
	if n, err := db.PruneRequests(ctx, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 2 {
		t.Fatalf("PruneRequests deleted %d, %v; want 2", n, err)
	}
	if next := add("c"); next <= last {
		t.Fatalf("after the prune emptied the log the next seq is %d, not above %d", next, last)
	}
	if seq, err := db.Sequence(ctx, RequestsTable); err != nil || seq != last+1 {
		t.Fatalf("Sequence = %d, %v; want %d", seq, err, last+1)
	}
	if err := db.RaiseSequence(ctx, RequestsTable, 100); err != nil {
		t.Fatal(err)
	}
	if next := add("d"); next != 101 {
		t.Fatalf("after RaiseSequence(100) the next seq is %d, want 101", next)
	}
	rows, err := db.RowsAfter(ctx, RequestsTable, last+1, 10)
	if err != nil || len(rows) != 1 || rows[0].Seq != 101 {
		t.Fatalf("RowsAfter(%d) = %+v, %v; want the row of seq 101", last+1, rows, err)
	}
	if id := rows[0].Values[RequestsTable.Column("id")]; id != "d" {
		t.Fatalf("the row's id is %v, want d", id)
	}
}

// TestRollUpKeepsRowsNotShipped folds old rows only up to the seq a
// shipper copied: the rows after it stay until they are copied.
func TestRollUpKeepsRowsNotShipped(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	for i := 0; i < 5; i++ {
		if _, err := db.SQL().ExecContext(ctx, `INSERT INTO ledger (time, request_id, backend, outcome) VALUES (?, 'r', 'b/m', 'ok')`,
			time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC).UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.RollUpLedgerThrough(ctx, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 3)
	if err != nil || n != 3 {
		t.Fatalf("RollUpLedgerThrough folded %d rows, %v; want 3", n, err)
	}
	rows, err := db.LedgerAfter(ctx, 0, 10)
	if err != nil || len(rows) != 2 || rows[0].Seq != 4 || rows[1].Seq != 5 {
		t.Fatalf("left %+v, %v; want seqs 4 and 5", rows, err)
	}
}
