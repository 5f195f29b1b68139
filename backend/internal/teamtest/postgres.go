package teamtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Postgres is a running PostgreSQL cluster made for the test binary, with
// a superuser named User who needs no password from loopback.
type Postgres struct {
	// Addr is its host:port on loopback.
	Addr string
	// User is the cluster's superuser; the database postgres exists.
	User string
	// Took is how long initdb and the start took together.
	Took time.Duration
}

// DSN is a connection URL for database db.
func (p *Postgres) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", p.User, p.Addr, db)
}

var pgOnce once[*Postgres]

// pgBinGlobs are where Debian's postgresql package puts its programs,
// which it does not put on PATH.
var pgBinGlobs = []string{"/usr/lib/postgresql/*/bin/"}

// StartPostgres returns the test binary's PostgreSQL cluster, creating and
// starting it on first use; it skips tb when PostgreSQL is not installed.
func StartPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	p := pgOnce.get(tb, "PostgreSQL", "postgresql", startPostgres)
	return p
}

func pgProgram(name string) (string, error) {
	globs := make([]string, len(pgBinGlobs))
	for i, g := range pgBinGlobs {
		globs[i] = g + name
	}
	return lookPath(name, globs...)
}

func startPostgres() (*Postgres, error) {
	initdb, err := pgProgram("initdb")
	if err != nil {
		return nil, err
	}
	postgres, err := pgProgram("postgres")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "teamtest-postgres-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Postgres, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	attr, err := unprivileged(dir)
	if err != nil {
		return fail(err)
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	const user = "freelane"
	data := filepath.Join(dir, "data")
	init := exec.Command(initdb, "-D", data, "-U", user, "--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	init.SysProcAttr = attr
	if out, err := init.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("teamtest: initdb: %w: %s", err, out))
	}
	// Durability is of no use to a test cluster and fsync would make every
	// commit slow; the socket goes in the cluster's own directory because
	// the default one needs a system install.
	cmd := exec.Command(postgres, "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB", "-c", "max_connections=40")
	cmd.SysProcAttr = attr
	s, err := start("postgres", dir, "tcp", hostPort(port), "ready to accept connections", cmd)
	if err != nil {
		return fail(err)
	}
	// SIGINT is PostgreSQL's fast shutdown: it ends sessions and stops.
	onStop(func() { s.stop(os.Interrupt) })
	return &Postgres{Addr: hostPort(port), User: user}, nil
}
