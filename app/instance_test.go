package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
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

// launchAtOnce starts n launches on dir at the same moment and checks
// that exactly one of them runs while the others find it running.
func launchAtOnce(t *testing.T, dir string, n int) {
	t.Helper()
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

func TestSingleInstanceRace(t *testing.T) {
	dir := shortDir(t)
	const n = 8
	launchAtOnce(t, dir, n)
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
// with the checks' own inputs: a fallback directory others may write to
// (passed by for a fresh one), a socket file of another owner, and a process whose peer credentials name
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
	in, err := acquireInstance(deep, quiet)
	if err != nil {
		t.Fatalf("a world-writable socket directory stopped the launch: %v", err)
	}
	in.Close()
	if filepath.Dir(in.path) == squat || privateDir(filepath.Dir(in.path)) != nil {
		t.Fatalf("a world-writable socket directory was used: %s", in.path)
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

// squatSocketDir plays another account that made the fallback socket
// directory first: it creates TMPDIR/freelane-UID owned by nobody (uid
// 65534), as only root can. The test is skipped for other users.
func squatSocketDir(t *testing.T) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: the test makes a directory owned by another account (nobody, uid 65534)")
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", shortDir(t))
	squat := filepath.Join(os.TempDir(), fmt.Sprintf("freelane-%d", os.Getuid()))
	if err := os.Mkdir(squat, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(squat, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return squat
}

// TestInstanceSocketDirSquatted: another account that pre-creates the
// fallback socket directory does not stop FreeLane from starting. FreeLane
// makes a private directory of its own under a random name, records it in
// the data directory, and a second launch (a real process) finds the
// running instance there.
func TestInstanceSocketDirSquatted(t *testing.T) {
	squat := squatSocketDir(t)
	deep := filepath.Join(t.TempDir(), strings.Repeat("deep-folder-name/", 8))
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))

	first, err := acquireInstance(deep, log)
	if err != nil {
		t.Fatalf("a directory made by another account stopped the launch: %v", err)
	}
	defer first.Close()
	dir := filepath.Dir(first.path)
	if dir == squat || filepath.Dir(dir) != os.TempDir() {
		t.Fatalf("the socket is at %s, want a fresh directory in %s", first.path, os.TempDir())
	}
	if err := privateDir(dir); err != nil {
		t.Fatalf("the fresh directory is not private: %v", err)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the fresh directory: %v %v", fi.Mode(), err)
	}
	if rec, err := os.ReadFile(filepath.Join(deep, socketDirRecord)); err != nil || strings.TrimSpace(string(rec)) != dir {
		t.Fatalf("the data directory records %q (%v), want %s", rec, err, dir)
	}
	if n := strings.Count(logs.String(), "single-instance socket"); n != 1 || !strings.Contains(logs.String(), "belongs to user id 65534") {
		t.Errorf("the log should say once what happened, got:\n%s", logs.String())
	}
	if fi, err := os.Lstat(squat); err != nil {
		t.Errorf("the other account's directory is gone: %v", err)
	} else if uid, ok := fileUID(fi); !ok || uid != 65534 {
		t.Errorf("the other account's directory changed owner: %d", uid)
	}

	// A second launch in-process hears the first one ...
	first.setShow(func() bool { return true }, "http://127.0.0.1:7788/v1")
	var running *RunningError
	if _, err := acquireInstance(deep, log); !errors.As(err, &running) || running.Endpoint != "http://127.0.0.1:7788/v1" {
		t.Fatalf("a second launch did not find the running instance: %v", err)
	}
	// ... and so does a real second process, with nothing new in the log.
	cmd := exec.Command(os.Args[0], "serve", "--data-dir", deep, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "FREELANE_TEST_MAIN=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another FreeLane uses the data directory") {
		t.Fatalf("a second process did not find the running instance: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "single-instance socket") {
		t.Errorf("the second launch logged the directory again:\n%s", out)
	}
	if n := strings.Count(logs.String(), "single-instance socket"); n != 1 {
		t.Errorf("the log says it %d times:\n%s", n, logs.String())
	}
}

// TestInstanceSocketDirRecordStale: a recorded directory that is gone, or
// no longer private to this user, is replaced by a fresh one.
func TestInstanceSocketDirRecordStale(t *testing.T) {
	squatSocketDir(t)
	deep := filepath.Join(t.TempDir(), strings.Repeat("deep-folder-name/", 8))
	in, err := acquireInstance(deep, quiet)
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
	dir := filepath.Dir(in.path)

	// Gone (the temporary directory was cleaned): a fresh one is made.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	in, err = acquireInstance(deep, quiet)
	if err != nil {
		t.Fatalf("a gone directory in the record stopped the launch: %v", err)
	}
	in.Close()
	second := filepath.Dir(in.path)
	if second == dir || privateDir(second) != nil {
		t.Fatalf("after the directory went: %s (was %s)", second, dir)
	}

	// No longer ours: another account took it over; it is left alone.
	if err := os.Chown(second, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	in, err = acquireInstance(deep, quiet)
	if err != nil {
		t.Fatalf("a foreign directory in the record stopped the launch: %v", err)
	}
	defer in.Close()
	third := filepath.Dir(in.path)
	if third == second || privateDir(third) != nil {
		t.Fatalf("a directory of another owner was used: %s", third)
	}
	if rec, _ := os.ReadFile(filepath.Join(deep, socketDirRecord)); strings.TrimSpace(string(rec)) != third {
		t.Errorf("the record names %q, want %s", rec, third)
	}

	// A record pointing at a symlink to a directory of ours is not used.
	link := filepath.Join(os.TempDir(), "link")
	if err := os.Symlink(third, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, socketDirRecord), []byte(link+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in.Close()
	again, err := acquireInstance(deep, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if d := filepath.Dir(again.path); d == link || privateDir(d) != nil {
		t.Fatalf("a symlink in the record was used: %s", again.path)
	}
}

// TestInstanceSocketDirSquattedRace: launches that all find the usual
// directory taken agree on one fresh directory, so exactly one of them
// runs.
func TestInstanceSocketDirSquattedRace(t *testing.T) {
	squatSocketDir(t)
	deep := filepath.Join(t.TempDir(), strings.Repeat("deep-folder-name/", 8))
	const n = 6
	launchAtOnce(t, deep, n)
	entries, _ := os.ReadDir(os.TempDir())
	var made int
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "freelane-") && e.Name() != fmt.Sprintf("freelane-%d", os.Getuid()) {
			made++
		}
	}
	if made != 1 {
		t.Errorf("%d fresh directories were made, want 1", made)
	}
}
