package teamtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// FreeLane is a `freelane serve` process, the program a team runs on each
// of its servers.
type FreeLane struct {
	// Addr is the loopback host:port it listens on; it keeps it across
	// restarts, so a load balancer in front finds it again.
	Addr string
	bin  string
	args []string
	env  []string
	log  string
	s    *server
}

// freelaneBuild builds the freelane program at most once per test binary.
var freelaneBuild once[string]

// freelaneBinary builds FreeLane's program (./app, with no build tags: the
// headless router freelane serve runs) into a directory removed when the
// test binary ends.
func freelaneBinary(tb testing.TB) string {
	return freelaneBuild.get(tb, "the go command", "golang", func() (string, error) {
		goTool, err := lookPath("go")
		if err != nil {
			return "", err
		}
		out, err := exec.Command(goTool, "env", "GOMOD").Output()
		if err != nil {
			return "", fmt.Errorf("teamtest: go env GOMOD: %w", err)
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "freelane-bin-")
		if err != nil {
			return "", err
		}
		onStop(func() { _ = os.RemoveAll(dir) })
		bin := filepath.Join(dir, "freelane")
		cmd := exec.Command(goTool, "build", "-o", bin, "./app")
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("teamtest: go build ./app: %w\n%s", err, msg)
		}
		return bin, nil
	})
}

// StartFreeLane runs `freelane serve` with the config file cfg and the
// data directory dataDir, on a free loopback port, with env added to a
// bare environment (a home of its own, no keychain), and waits until it
// serves. It is stopped when tb ends, if still running.
func StartFreeLane(tb testing.TB, cfg, dataDir string, env ...string) *FreeLane {
	tb.Helper()
	bin := freelaneBinary(tb)
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	home := tb.TempDir()
	f := &FreeLane{Addr: hostPort(port), bin: bin,
		args: []string{"serve", "--config", cfg, "--data-dir", dataDir, "--listen", hostPort(port), "--log-level", "warn"},
		env:  append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + home, "FREELANE_KEYCHAIN=off"}, env...),
	}
	f.Start(tb)
	tb.Cleanup(f.Stop)
	return f
}

// Start starts the process again after Kill, with the same address,
// config and data directory.
func (f *FreeLane) Start(tb testing.TB) {
	tb.Helper()
	dir, err := os.MkdirTemp("", "freelane-run-")
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(f.bin, f.args...)
	cmd.Env = f.env
	// serve prints this line once it listens and has taken its config.
	s, err := start("freelane", dir, "tcp", f.Addr, "FreeLane dashboard: ", cmd)
	if err != nil {
		tb.Fatal(err)
	}
	f.s, f.log = s, filepath.Join(dir, "freelane.log")
}

// Kill ends the process with SIGKILL, as kill -9 does: nothing it had not
// written by then survives it.
func (f *FreeLane) Kill() {
	if f.s == nil {
		return
	}
	_ = f.s.cmd.Process.Kill()
	<-f.s.done
	f.s.log.Close()
	_ = os.RemoveAll(f.s.dir)
	f.s = nil
}

// Stop ends the process as a service manager does (SIGTERM).
func (f *FreeLane) Stop() {
	if f.s != nil {
		f.s.stop(os.Interrupt)
		f.s = nil
	}
}

// Log is what the running process has printed so far.
func (f *FreeLane) Log() string {
	if f.s == nil {
		return ""
	}
	b, _ := os.ReadFile(f.log)
	return string(b)
}
