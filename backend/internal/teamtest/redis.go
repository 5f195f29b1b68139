package teamtest

import (
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Redis is a running redis-server that keeps everything in memory.
type Redis struct {
	// Addr is its host:port on loopback.
	Addr string
	// Took is how long it took to start.
	Took time.Duration
}

var redisOnce once[*Redis]

// databases is how many numbered databases the test Redis has, so that
// each test can count in one of its own.
const databases = 1024

var lastDB atomic.Int32

// NewDB returns the number of a database no other test of the binary
// uses, for a URL such as redis://ADDR/N.
func (r *Redis) NewDB(tb testing.TB) int {
	tb.Helper()
	n := int(lastDB.Add(1))
	if n >= databases {
		tb.Fatalf("teamtest: the test Redis has only %d databases", databases)
	}
	return n
}

// StartRedis returns the test binary's redis-server, starting it on first
// use; it skips tb when redis-server is not installed.
func StartRedis(tb testing.TB) *Redis {
	tb.Helper()
	r := redisOnce.get(tb, "redis-server", "redis-server", startRedis)
	return r
}

func startRedis() (*Redis, error) {
	bin, err := lookPath("redis-server")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "teamtest-redis-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// No persistence: tests start from nothing, and an RDB save would do
	// disk I/O nobody asked for.
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
		"--protected-mode", "no", "--logfile", "", "--databases", strconv.Itoa(databases))
	s, err := start("redis-server", dir, "tcp", hostPort(port), "", cmd)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	onStop(func() { s.stop(os.Interrupt) })
	return &Redis{Addr: hostPort(port)}, nil
}
