// Package teamtest starts the real servers that tests of shared state run
// against: redis-server, a PostgreSQL cluster and HAProxy in front of both,
// from Debian's packages (`.ci/deps test` installs them). Each server starts
// at most once per test binary, on loopback ports of its own with its files
// in a temporary directory, and a test that asks for one whose program is
// missing is skipped with a message saying what to install. A package that
// uses it calls Main from its TestMain so that the servers stop when its
// tests end.
package teamtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to accept connections.
const startTimeout = 30 * time.Second

// Main runs the tests of m and then stops every server they started; a
// TestMain calls os.Exit(teamtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	stopAll()
	return code
}

var (
	stopMu sync.Mutex
	stops  []func()
)

// onStop registers f to run when the test binary ends, in reverse order of
// registration, so that HAProxy goes before what it fronts.
func onStop(f func()) {
	stopMu.Lock()
	defer stopMu.Unlock()
	stops = append(stops, f)
}

func stopAll() {
	stopMu.Lock()
	defer stopMu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	stops = nil
}

// server is one started program.
type server struct {
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
	err  error // how it ended, once done is closed
	log  *os.File
}

// start runs cmd, its output in dir/name.log, and waits until addr accepts
// connections and, when ready is not empty, the log holds ready (a server
// may accept connections before it can serve them).
func start(name, dir, network, addr, ready string, cmd *exec.Cmd) (*server, error) {
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("teamtest: %s log: %w", name, err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("teamtest: starting %s: %w", name, err)
	}
	s := &server{cmd: cmd, dir: dir, done: make(chan struct{}), log: logf}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout(network, addr, time.Second)
		if err == nil {
			c.Close()
			if ready == "" {
				return s, nil
			}
			if out, _ := os.ReadFile(logf.Name()); strings.Contains(string(out), ready) {
				return s, nil
			}
		}
		select {
		case <-s.done:
			out, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("teamtest: %s exited at start (%v): %s", name, s.err, strings.TrimSpace(string(out)))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop(os.Kill)
			return nil, fmt.Errorf("teamtest: %s did not accept connections on %s within %s", name, addr, startTimeout)
		}
	}
}

// stop sends sig and waits for the program to end, killing it after ten
// seconds, then removes its directory.
func (s *server) stop(sig os.Signal) {
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.log.Close()
	_ = os.RemoveAll(s.dir)
}

// freePort returns a loopback TCP port that nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("teamtest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// errMissing marks a program that is not installed.
var errMissing = errors.New("not installed")

// lookPath finds a program on PATH or in the given directories (globs).
func lookPath(name string, globs ...string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, g := range globs {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			return m[len(m)-1], nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, errMissing)
}

// once starts a server at most once per test binary and remembers the
// outcome, so a failed start fails (or skips) every test that asks.
type once[T any] struct {
	once sync.Once
	v    T
	took time.Duration
	err  error
}

func (o *once[T]) get(tb testing.TB, what, pkg string, f func() (T, error)) T {
	tb.Helper()
	o.once.Do(func() {
		t0 := time.Now()
		o.v, o.err = f()
		o.took = time.Since(t0)
		// Took is set here, once, so that tests asking at once from
		// parallel goroutines only read the shared server.
		if s, ok := any(o.v).(interface{ setTook(time.Duration) }); ok && o.err == nil {
			s.setTook(o.took)
		}
	})
	if errors.Is(o.err, errMissing) {
		tb.Skipf("%s is not installed (%v); `bash .ci/deps test` installs Debian's %s", what, o.err, pkg)
	}
	if o.err != nil {
		tb.Fatal(o.err)
	}
	return o.v
}

func (r *Redis) setTook(d time.Duration)    { r.Took = d }
func (p *Postgres) setTook(d time.Duration) { p.Took = d }
func (h *HAProxy) setTook(d time.Duration)  { h.Took = d }
