package teamtest_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"freelane/backend/internal/teamtest"
)

func TestMain(m *testing.M) { os.Exit(teamtest.Main(m)) }

// resp sends one Redis command over a fresh connection to addr and returns
// the reply's first line, speaking RESP directly.
func resp(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "$") && line != "$-1" {
		// A bulk string: its value is on the next line.
		v, err := r.ReadString('\n')
		return strings.TrimRight(v, "\r\n"), err
	}
	return line, nil
}

func TestRedis(t *testing.T) {
	r := teamtest.StartRedis(t)
	t.Logf("redis-server started in %s", r.Took)
	if got, err := resp(r.Addr, "PING"); err != nil || got != "+PONG" {
		t.Fatalf("PING = %q, %v; want +PONG", got, err)
	}
	if got, err := resp(r.Addr, "SET", "teamtest:k", "v1"); err != nil || got != "+OK" {
		t.Fatalf("SET = %q, %v", got, err)
	}
	if got, err := resp(r.Addr, "GET", "teamtest:k"); err != nil || got != "v1" {
		t.Fatalf("GET = %q, %v; want v1", got, err)
	}
	if again := teamtest.StartRedis(t); again.Addr != r.Addr {
		t.Fatalf("a second StartRedis started another server at %s (first %s)", again.Addr, r.Addr)
	}
}

func TestPostgres(t *testing.T) {
	p := teamtest.StartPostgres(t)
	t.Logf("PostgreSQL (initdb and start) took %s", p.Took)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE teamtest_t (k text PRIMARY KEY, v bigint)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO teamtest_t VALUES ('a', 41) ON CONFLICT (k) DO UPDATE SET v = teamtest_t.v + 1`); err != nil {
		t.Fatal(err)
	}
	var v int64
	if err := conn.QueryRow(ctx, `SELECT v + 1 FROM teamtest_t WHERE k = 'a'`).Scan(&v); err != nil || v != 42 {
		t.Fatalf("v = %d, %v; want 42", v, err)
	}
	var user string
	if err := conn.QueryRow(ctx, `SELECT current_user`).Scan(&user); err != nil || user != p.User {
		t.Fatalf("current_user = %q, %v; want %q", user, err, p.User)
	}
}

func TestHAProxyCutsAndRestores(t *testing.T) {
	h := teamtest.StartHAProxy(t)
	t.Logf("HAProxy started in %s", h.Took)
	if got, err := resp(h.RedisAddr, "PING"); err != nil || got != "+PONG" {
		t.Fatalf("PING through HAProxy = %q, %v; want +PONG", got, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := teamtest.StartPostgres(t)
	dsn := strings.Replace(p.DSN("postgres"), p.Addr, h.PostgresAddr, 1)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	h.Down(t, teamtest.BackendRedis)
	h.Down(t, teamtest.BackendPostgres)
	if got, err := resp(h.RedisAddr, "PING"); err == nil {
		t.Fatalf("PING with Redis cut off answered %q", got)
	}
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("an open PostgreSQL connection still works with PostgreSQL cut off")
	}

	h.Up(t, teamtest.BackendRedis)
	h.Up(t, teamtest.BackendPostgres)
	if got, err := resp(h.RedisAddr, "PING"); err != nil || got != "+PONG" {
		t.Fatalf("PING after Up = %q, %v; want +PONG", got, err)
	}
	conn2, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("PostgreSQL after Up: %v", err)
	}
	defer conn2.Close(ctx)
	if err := conn2.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
