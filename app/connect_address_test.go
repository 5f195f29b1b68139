package main

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freeAddr is a loopback address nothing listens on, for a moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestConnectAsksTheRunningFreeLane: freelane connect points tools at the
// FreeLane that runs with the data directory, on the port it listens on,
// ahead of the config's listen address; with none running it falls back
// to the config's address, and without a config to the default one. The
// --write command it shows carries --url for an address other than the
// default.
func TestConnectAsksTheRunningFreeLane(t *testing.T) {
	t.Setenv("FREELANE_TOKEN", "")
	dir := shortDir(t)
	home := t.TempDir()
	running, configured := freeAddr(t), freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "freelane.yaml")
	if err := os.WriteFile(cfg, []byte("listen: "+configured+"\nproviders: []\nchains: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errs := connectRun(t, home, "codex", "--config", cfg, "--data-dir", dir)
	if code != 0 || !strings.Contains(out, `base_url = "http://`+configured+`/v1"`) || !strings.Contains(out, "--write --url http://"+configured) {
		t.Fatalf("nothing running, the config's address: exit %d %s\n%s", code, errs, out)
	}
	code, out, errs = connectRun(t, home, "codex", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, `base_url = "http://127.0.0.1:7788/v1"`) || strings.Contains(out, "--url") {
		t.Fatalf("nothing running and no config, the default address: exit %d %s\n%s", code, errs, out)
	}

	cmd := exec.Command(os.Args[0], "serve", "--config", cfg, "--data-dir", dir, "--listen", running)
	cmd.Env = append(os.Environ(), "FREELANE_TEST_MAIN=1", "FREELANE_KEYCHAIN=off", "FREELANE_TOKEN=")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "FreeLane dashboard: ") {
				close(up)
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(15 * time.Second):
		t.Fatalf("serve did not come up:\n%s", logs.String())
	}
	if resp, err := http.Get("http://" + running + "/healthz"); err != nil {
		t.Fatalf("the server on %s: %v", running, err)
	} else {
		resp.Body.Close()
	}

	code, out, errs = connectRun(t, home, "codex", "--config", cfg, "--data-dir", dir)
	if code != 0 || !strings.Contains(out, `base_url = "http://`+running+`/v1"`) || !strings.Contains(out, "freelane connect codex --write --url http://"+running) {
		t.Fatalf("while FreeLane runs on %s: exit %d %s\n%s", running, code, errs, out)
	}
	code, out, _ = connectRun(t, home, "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "OPENAI_BASE_URL=http://"+running+"/v1") {
		t.Fatalf("the list while FreeLane runs: exit %d\n%s", code, out)
	}
	// --url still wins over the running FreeLane.
	code, out, _ = connectRun(t, home, "codex", "--data-dir", dir, "--url", "http://10.0.0.2:7788")
	if code != 0 || !strings.Contains(out, `base_url = "http://10.0.0.2:7788/v1"`) {
		t.Fatalf("--url: exit %d\n%s", code, out)
	}
	// --write writes the running FreeLane's address.
	code, out, errs = connectRun(t, home, "codex", "--write", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("--write: exit %d %s\n%s", code, errs, out)
	}
	written, err := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	if err != nil || !strings.Contains(string(written), "http://"+running+"/v1") {
		t.Fatalf("the written file: %v\n%s", err, written)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, logs.String())
	}
	code, out, _ = connectRun(t, home, "codex", "--config", cfg, "--data-dir", dir)
	if code != 0 || !strings.Contains(out, `base_url = "http://`+configured+`/v1"`) {
		t.Fatalf("after FreeLane stopped, the config's address again: exit %d\n%s", code, out)
	}
}
