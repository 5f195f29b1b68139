package teamtest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var dbSeq atomic.Int64

// NewDatabase creates an empty database of its own for tb on the cluster
// and returns its name, so that tests sharing the cluster can run in
// parallel without seeing each other's tables; it is dropped when tb ends.
func (p *Postgres) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("t_%d", dbSeq.Add(1)) // the cluster is the test binary's own
	p.admin(tb, `CREATE DATABASE `+name)
	tb.Cleanup(func() { p.admin(tb, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`) })
	return name
}

// Via is the DSN of database db reached through HAProxy's address addr
// instead of directly.
func (p *Postgres) Via(addr, db string) string {
	return strings.Replace(p.DSN(db), p.Addr, addr, 1)
}

func (p *Postgres) admin(tb testing.TB, stmt string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		tb.Fatalf("teamtest: %s: %v", stmt, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, stmt); err != nil {
		tb.Fatalf("teamtest: %s: %v", stmt, err)
	}
}
