package teamtest

import (
	"os"
	"os/exec"
	"strconv"
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

// StartRedis returns the test binary's redis-server, starting it on first
// use; it skips tb when redis-server is not installed.
func StartRedis(tb testing.TB) *Redis {
	tb.Helper()
	r := redisOnce.get(tb, "redis-server", "redis-server", startRedis)
	r.Took = redisOnce.took
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
		"--protected-mode", "no", "--logfile", "")
	s, err := start("redis-server", dir, "tcp", hostPort(port), "", cmd)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	onStop(func() { s.stop(os.Interrupt) })
	return &Redis{Addr: hostPort(port)}, nil
}
