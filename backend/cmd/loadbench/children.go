package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"freelane/backend/clock"
)

// binaries are the programs the harness runs as children.
type binaries struct {
	freelane, upstream, proxy string
}

// buildAll compiles the three programs into dir, in parallel, once per
// run, so that what is measured is a normal build and not go run's.
// FreeLane is built with tags, by default none: the headless router that
// freelane serve runs, with neither the window nor the tray linked in.
// It also reports whether the dashboard was built into frontend/dist,
// since the binary embeds whatever is there.
func buildAll(ctx context.Context, dir, tags string) (binaries, bool, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return binaries{}, false, fmt.Errorf("the go command builds the targets and is not on PATH: %w", err)
	}
	root, err := moduleRoot(ctx, goTool)
	if err != nil {
		return binaries{}, false, err
	}
	_, statErr := os.Stat(filepath.Join(root, "frontend", "dist", "index.html"))
	dashboard := statErr == nil
	b := binaries{freelane: filepath.Join(dir, "freelane"), upstream: filepath.Join(dir, "fakeupstream"), proxy: filepath.Join(dir, "bareproxy")}
	jobs := map[string]string{b.freelane: "./app", b.upstream: "./backend/cmd/fakeupstream", b.proxy: "./backend/cmd/bareproxy"}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for out, pkg := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"build", "-o", out}
			if out == b.freelane && tags != "" {
				args = append(args, "-tags", tags)
			}
			cmd := exec.CommandContext(ctx, goTool, append(args, pkg)...)
			cmd.Dir = root
			if msg, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("go build %s: %w\n%s", pkg, err, msg))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return b, dashboard, errors.Join(errs...)
}

// moduleRoot is the directory of FreeLane's go.mod, wherever the harness
// was started from (make runs it at the root, go test in its package).
func moduleRoot(ctx context.Context, goTool string) (string, error) {
	out, err := exec.CommandContext(ctx, goTool, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run loadbench inside the FreeLane module: go env GOMOD names no go.mod")
	}
	return filepath.Dir(mod), nil
}

// prebuilt takes the three programs from dir instead of building them.
func prebuilt(dir string) (binaries, error) {
	b := binaries{freelane: filepath.Join(dir, "freelane"), upstream: filepath.Join(dir, "fakeupstream"), proxy: filepath.Join(dir, "bareproxy")}
	for _, p := range []string{b.freelane, b.upstream, b.proxy} {
		if _, err := os.Stat(p); err != nil {
			return b, fmt.Errorf("-bin %s: %w", dir, err)
		}
	}
	return b, nil
}

// child is a program the harness started and measures.
type child struct {
	name string
	cmd  *exec.Cmd
	// url is what the child printed once it was ready to serve.
	url  string
	log  string // the file its stdout and stderr go to
	done chan struct{}
	err  error // how it ended, set before done is closed
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// startChild runs bin with args and waits until ready finds, in a line the
// child prints on stdout, the URL it serves on. Everything the child
// prints goes to a log file in logDir, which the harness shows when the
// child fails.
func startChild(ctx context.Context, clk clock.Clock, name, bin string, args, env []string, logDir string, ready func(line string) (string, bool)) (*child, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = logFile
	dieWithParent(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		// The child's stdout is read to its end, whatever it prints after
		// the ready line, so that it never blocks on a full pipe.
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if !sent {
				if u, ok := ready(line); ok {
					found <- u
					sent = true
				}
			}
		}
		_, _ = io.Copy(logFile, stdout)
		c.err = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	t, expired := clk.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case c.url = <-found:
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("%s ended before it was ready (%v)%s", name, c.err, logTail(logPath))
	case <-expired:
		c.stop(clk)
		return nil, fmt.Errorf("%s was not ready within %v%s", name, startTimeout, logTail(logPath))
	case <-ctx.Done():
		c.stop(clk)
		return nil, fmt.Errorf("starting %s: %w", name, ctx.Err())
	}
}

// startTimeout bounds how long a child may take to start serving; FreeLane
// opens its database and reads its catalog first, which takes a second or
// two on a loaded machine.
const startTimeout = 30 * time.Second

// stopGrace is how long a child has to end after SIGTERM before it is
// killed.
const stopGrace = 10 * time.Second

// stop ends the child: SIGTERM, then SIGKILL if it has not ended within
// stopGrace. It reports whether the child had already ended on its own.
func (c *child) stop(clk clock.Clock) (alreadyDead bool) {
	select {
	case <-c.done:
		return true
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	t, expired := clk.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-expired:
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	return false
}

// alive fails when the child has ended, naming how, with the end of its
// log.
func (c *child) alive() error {
	select {
	case <-c.done:
		return fmt.Errorf("%s ended during the run (%v)%s", c.name, c.err, logTail(c.log))
	default:
		return nil
	}
}

// logTail is the end of a child's log, indented, for an error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	const keep = 2000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return "; the end of its log (" + path + "):\n    " + strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "\n    ")
}

// childEnv is the environment of every child: a home of its own in the
// run's directory, so that nothing of the user's is read, no key variable
// (a catalog provider picked up from the environment would change what is
// measured), and the Go runtime's tuning variables when the user set them,
// so that their effect can be measured.
func childEnv(home string) []string {
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TMPDIR=" + home,
		// The key vault keeps its master key in a file in the data
		// directory: a benchmark machine has no Secret Service.
		"FREELANE_KEYCHAIN=off"}
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GODEBUG", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// tunedRuntime lists the Go runtime variables passed to the children, for
// the report.
func tunedRuntime() string {
	var set []string
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GODEBUG", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(k); ok {
			set = append(set, k+"="+v)
		}
	}
	if len(set) == 0 {
		return "Go runtime defaults"
	}
	return strings.Join(set, " ")
}
