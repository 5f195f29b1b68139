package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// shortDir is a temporary directory with a short path: Unix socket paths
// are limited to about 100 bytes, and t.TempDir's can be longer.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "fl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestSingleInstanceHandshake(t *testing.T) {
	dir := shortDir(t)
	first, err := acquireInstance(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	// Before the window exists the first instance answers "headless".
	_, err = acquireInstance(dir, quiet)
	var running *RunningError
	if !errors.As(err, &running) || running.Reply != replyHeadless || !errors.Is(err, errAlreadyRunning) {
		t.Fatalf("second launch before the window: %v", err)
	}

	var shown atomic.Int32
	first.setShow(func() bool { shown.Add(1); return true }, "http://127.0.0.1:7788/v1")
	_, err = acquireInstance(dir, quiet)
	if !errors.As(err, &running) || running.Reply != replyShown || running.Endpoint != "http://127.0.0.1:7788/v1" {
		t.Fatalf("second launch: %v", err)
	}
	if shown.Load() != 1 {
		t.Errorf("the window was shown %d times", shown.Load())
	}

	// Rubbish on the socket is ignored and does not stop the next launch.
	c, err := net.Dial("unix", filepath.Join(dir, instanceSocket))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("hello there\n"))
	_, _ = io.ReadAll(c)
	c.Close()
	if _, err := acquireInstance(dir, quiet); !errors.As(err, &running) {
		t.Errorf("after a bad client: %v", err)
	}

	// Once the first one stops, a new launch takes over.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := acquireInstance(dir, quiet)
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	again.Close()
}

func TestSingleInstanceStaleSocket(t *testing.T) {
	dir := shortDir(t)
	// A FreeLane killed with SIGKILL leaves its socket file behind.
	ln, err := net.Listen("unix", filepath.Join(dir, instanceSocket))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(filepath.Join(dir, instanceSocket)); err != nil {
		t.Fatalf("no leftover socket to test with: %v", err)
	}
	in, err := acquireInstance(dir, quiet)
	if err != nil {
		t.Fatalf("a stale socket blocked the launch: %v", err)
	}
	in.Close()
}

func TestSingleInstanceRace(t *testing.T) {
	dir := shortDir(t)
	const n = 8
	var wg sync.WaitGroup
	var owners atomic.Int32
	var mu sync.Mutex
	var insts []*instance
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, err := acquireInstance(dir, quiet)
			var running *RunningError
			switch {
			case err == nil:
				owners.Add(1)
				mu.Lock()
				insts = append(insts, in)
				mu.Unlock()
			case errors.As(err, &running):
			default:
				t.Errorf("launch failed: %v", err)
			}
		}()
	}
	wg.Wait()
	for _, in := range insts {
		in.Close()
	}
	if owners.Load() != 1 {
		t.Errorf("%d launches own the data directory, want exactly 1", owners.Load())
	}
}

// TestSingleInstanceDeepDataDir: a data directory too deep for a socket
// path inside it still gets one instance.
func TestSingleInstanceDeepDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("deep-folder-name/", 8))
	if len(filepath.Join(dir, instanceSocket)) <= maxSocketPath {
		t.Fatal("the test directory is not deep enough")
	}
	first, err := acquireInstance(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	var running *RunningError
	if _, err := acquireInstance(dir, quiet); !errors.As(err, &running) {
		t.Fatalf("second launch on a deep data directory: %v", err)
	}
	// Another deep data directory is another instance.
	other, err := acquireInstance(dir+"x", quiet)
	if err != nil {
		t.Fatalf("another data directory: %v", err)
	}
	other.Close()
}

// TestDashboardURLAsksTheRunningInstance is freelane dashboard-url: the
// running FreeLane mints the link, and without one the command says to
// start it.
func TestDashboardURLAsksTheRunningInstance(t *testing.T) {
	dir := shortDir(t)
	if _, err := askLoginURL(dir); err == nil || !strings.Contains(err.Error(), "freelane serve") {
		t.Fatalf("nothing running: %v", err)
	}
	in, err := acquireInstance(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if _, err := askLoginURL(dir); err == nil || !strings.Contains(err.Error(), "not serving yet") {
		t.Errorf("before serving: %v", err)
	}
	n := 0
	in.setLoginURL(func() string { n++; return "http://127.0.0.1:7788/#login=code" + strconv.Itoa(n) })
	for _, want := range []string{"http://127.0.0.1:7788/#login=code1", "http://127.0.0.1:7788/#login=code2"} {
		if got, err := askLoginURL(dir); err != nil || got != want {
			t.Errorf("dashboard-url: %q %v, want %q", got, err, want)
		}
	}
	var out, errOut strings.Builder
	if code := run([]string{"dashboard-url", "--data-dir", dir}, &out, &errOut); code != 0 || out.String() != "http://127.0.0.1:7788/#login=code3\n" {
		t.Errorf("freelane dashboard-url: exit %d, %q %q", code, out.String(), errOut.String())
	}
}

// TestInstanceSocketIsPrivate: a deep data directory's socket lives in
// $XDG_RUNTIME_DIR, or in a 0700 directory of the user's own, never at a
// predictable path in the shared temporary directory; an unsafe runtime
// directory is not used.
func TestInstanceSocketIsPrivate(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("deep-folder-name/", 8))
	rt := shortDir(t)
	t.Setenv("XDG_RUNTIME_DIR", rt)
	path, err := socketPath(deep)
	if err != nil || filepath.Dir(path) != rt {
		t.Fatalf("with XDG_RUNTIME_DIR %s the socket is %s (%v)", rt, path, err)
	}
	for _, mode := range []os.FileMode{0o777, 0o770} {
		if err := os.Chmod(rt, mode); err != nil {
			t.Fatal(err)
		}
		path, err := socketPath(deep)
		if err != nil || filepath.Dir(path) == rt {
			t.Fatalf("a runtime directory of mode %o was used: %s (%v)", mode, path, err)
		}
		if err := privateDir(filepath.Dir(path)); err != nil || filepath.Dir(path) == os.TempDir() {
			t.Fatalf("the fallback %s is not private: %v", path, err)
		}
	}
	// A data directory others may write to does not hold the socket.
	open := shortDir(t)
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if path, err := socketPath(open); err != nil || filepath.Dir(path) == open {
		t.Fatalf("a world-writable data directory holds the socket: %s (%v)", path, err)
	}
}

// TestInstanceSocketSquatting: another user who gets to the socket first
// is not believed. The test runs as one user, so it plays the other one
// with the checks' own inputs: a fallback directory others may write to, a
// socket file of another owner, and a process whose peer credentials name
// another user.
func TestInstanceSocketSquatting(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", shortDir(t))
	deep := filepath.Join(t.TempDir(), strings.Repeat("deep-folder-name/", 8))

	// A squatter made the fallback directory, open to everyone.
	squat := filepath.Join(os.TempDir(), fmt.Sprintf("freelane-%d", os.Getuid()))
	if err := os.Mkdir(squat, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(squat, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := acquireInstance(deep, quiet); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("a world-writable socket directory was used: %v", err)
	}
	if err := os.Chmod(squat, 0o700); err != nil {
		t.Fatal(err)
	}

	// A squatter bound the socket and answers as a running FreeLane.
	path, err := socketPath(deep)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "shown http://evil.example/v1\n")
			c.Close()
		}
	}()
	if runtime.GOOS == "linux" {
		real := peerUID
		peerUID = func(net.Conn) (int, error) { return os.Getuid() + 1, nil }
		_, err := acquireInstance(deep, quiet)
		peerUID = real
		var running *RunningError
		if errors.As(err, &running) || err == nil || !strings.Contains(err.Error(), "another user") || !strings.Contains(err.Error(), "not trusted") {
			t.Fatalf("a squatter of another user was believed: %v", err)
		}
	}
	// The socket file belongs to someone else (root can make it so).
	if os.Getuid() == 0 {
		if err := os.Lchown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := acquireInstance(deep, quiet)
		var running *RunningError
		if errors.As(err, &running) || err == nil || !strings.Contains(err.Error(), "belongs to user id 65534") {
			t.Fatalf("a socket of another owner was believed: %v", err)
		}
		if _, serr := os.Lstat(path); serr != nil {
			t.Fatalf("another user's socket was removed: %v", serr)
		}
	}
}
