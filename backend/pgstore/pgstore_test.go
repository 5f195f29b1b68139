package pgstore

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"freelane/backend/internal/teamtest"
	"freelane/backend/store"
)

func TestMain(m *testing.M) { os.Exit(teamtest.Main(m)) }

// newDSN gives the test a database of its own on the shared cluster.
func newDSN(t *testing.T) string {
	t.Helper()
	p := teamtest.StartPostgres(t)
	return p.DSN(p.NewDatabase(t))
}

func openDB(t *testing.T, dsn, instance string) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := Open(ctx, dsn, Options{Instance: instance, QueryTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// TestOpenTogetherMigratesOnce opens one new database from three
// instances at once: each must find the schema ready, and it must have
// been made once.
func TestOpenTogetherMigratesOnce(t *testing.T) {
	t.Parallel()
	dsn := newDSN(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			db, err := Open(context.Background(), dsn, Options{Instance: fmt.Sprint("i", i)})
			if err == nil {
				db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
	}
	db := openDB(t, dsn, "check")
	var n, v int
	if err := db.pool.QueryRow(context.Background(), `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if want := migrations()[len(migrations())-1].version; n != want || v != want {
		t.Fatalf("schema_migrations holds %d rows up to version %d, want %d", n, v, want)
	}
}

// TestTablesMatchSharedDefinitions reads the columns PostgreSQL made
// back and checks them against the definitions the SQLite file is
// checked against too.
func TestTablesMatchSharedDefinitions(t *testing.T) {
	t.Parallel()
	db := openDB(t, newDSN(t), "a")
	ledger := store.LedgerTable.Prefixed(store.Column{Name: "instance", Kind: store.Text})
	for _, tbl := range []store.Table{store.StateTable, ledger} {
		rows, err := db.pool.Query(context.Background(), `SELECT column_name, upper(data_type), is_nullable FROM information_schema.columns
	WHERE table_name = $1 ORDER BY ordinal_position`, tbl.Name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var name, typ, null string
			err := r.Scan(&name, &typ, &null)
			return name + " " + typ + " " + null, err
		})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, c := range tbl.Columns {
			null := "NO"
			if c.Null {
				null = "YES"
			}
			want = append(want, c.Name+" "+store.Postgres.TypeName(c.Kind)+" "+null)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: PostgreSQL holds\n  %s\nthe definition says\n  %s", tbl.Name, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		var key []string
		rows, err = db.pool.Query(context.Background(), `SELECT a.attname FROM pg_index i
	JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
	WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`, tbl.Name)
		if err != nil {
			t.Fatal(err)
		}
		if key, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(key, tbl.Key) {
			t.Errorf("%s: primary key %v, want %v", tbl.Name, key, tbl.Key)
		}
	}
}

// TestErrorsDoNotEchoTheURL opens URLs with a password that cannot be
// used, and checks that the password and the URL are in no error.
func TestErrorsDoNotEchoTheURL(t *testing.T) {
	t.Parallel()
	const pw = "s3cret-pw-Zq"
	p := teamtest.StartPostgres(t)
	for _, u := range []string{
		// Nothing listens on port 1.
		"postgres://freelane:" + pw + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=2",
		// The cluster trusts loopback, so a wrong database is what fails.
		"postgres://freelane:" + pw + "@" + p.Addr + "/no_such_db?sslmode=disable",
		"postgres://freelane:" + pw + "@[::1/x",
		"host=127.0.0.1 port=1 user=freelane password=" + pw + " dbname=x connect_timeout=2 sslmode=disable",
		"host=127.0.0.1 port=notaport password=" + pw,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		db, err := Open(ctx, u, Options{Instance: "a", QueryTimeout: 2 * time.Second})
		cancel()
		if err == nil {
			db.Close()
			t.Fatalf("Open(%q) worked", u)
		}
		t.Logf("%v", err)
		if msg := err.Error(); strings.Contains(msg, pw) || strings.Contains(msg, u) {
			t.Errorf("the error quotes the connection string: %s", msg)
		}
	}
}
