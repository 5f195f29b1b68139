package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
)

// TestLocalServerOfARealOtherAccount runs a fake Ollama as the account
// nobody and lets FreeLane find it with the operating system's own answer
// of who owns the socket (no owner function is injected): the server is
// shown as another user's, with uid 65534, and gets no prompt, while the
// same server run by FreeLane's own account serves.
func TestLocalServerOfARealOtherAccount(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("starting a server as another account needs root")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	bin := filepath.Join(t.TempDir(), "fakelocal")
	if out, err := exec.Command("go", "build", "-o", bin, "freelane/backend/cmd/fakelocal").CombinedOutput(); err != nil {
		t.Fatalf("building fakelocal: %v\n%s", err, out)
	}
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(asNobody bool) int {
		port := freeLoopbackPort(t)
		args := []string{"-kind", "ollama", "-port", strconv.Itoa(port), "-model", "qwen2.5:7b:8192"}
		cmd := exec.Command(bin, args...)
		if asNobody {
			cmd = exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(out)
			ready <- sc.Scan() && strings.Contains(sc.Text(), strconv.Itoa(port))
			_, _ = io.Copy(io.Discard, out)
		}()
		select {
		case ok := <-ready:
			if !ok {
				t.Fatal("fakelocal did not say it listens")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("fakelocal did not start")
		}
		return port
	}
	theirs, mine := start(true), start(false)

	e := &env{t: t, clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), dir: t.TempDir()}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Discovery.Ports = []int{theirs, mine}
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: e.dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Clock: e.clock, ManualProbes: true, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	e.g, e.base = g, "http://"+g.Addr()
	g.ScanLocal(context.Background())

	byPort := map[int]localView{}
	for _, l := range localOf(t, e) {
		byPort[l.Port] = l
	}
	if l := byPort[theirs]; !l.Foreign || l.Allowed || l.OwnerUID != 65534 || l.Provider != "" {
		t.Errorf("nobody's server: %+v", l)
	}
	if l := byPort[mine]; l.Foreign || l.Provider != fmt.Sprintf("ollama-%d", mine) {
		t.Errorf("root's own server: %+v", l)
	}
	r := e.post("/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"my secret plans"}]}`)
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != fmt.Sprintf("ollama-%d/qwen2.5:7b", mine) {
		t.Errorf("auto: %d from %q, want the own server: %s", r.status, r.header.Get("X-FreeLane-Backend"), r.body)
	}
	if r := e.post("/v1/chat/completions", fmt.Sprintf(`{"model":"ollama-%d/qwen2.5:7b","messages":[{"role":"user","content":"x"}]}`, theirs)); r.status != http.StatusNotFound {
		t.Errorf("nobody's server by its name: %d %s", r.status, r.body)
	}
}

// freeLoopbackPort returns a loopback port nothing listens on now.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
