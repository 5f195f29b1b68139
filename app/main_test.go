package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the tests run this binary as the real freelane command: with
// FREELANE_TEST_MAIN set, the test binary is main.
func TestMain(m *testing.M) {
	if os.Getenv("FREELANE_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func TestCheckReportsProblemsWithLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	cfg := `listen: 127.0.0.1:7788
providers:
  - name: groq
    kind: openai
    tier: gratis
    base_url: api.groq.com
    api_key: sk-x
    models:
      - {id: llama, params_b: 70}
chains:
  - name: coding
    backends: [groq/llama, groq/nope]
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"check", "--config", path}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, out %s err %s", code, out.String(), errb.String())
	}
	for _, want := range []string{":5: providers[0].tier", ":6: providers[0].base_url", ":12: chains[0].backends[1]", "3 problem(s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCheckAcceptsTheExample(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", "../backend/config/example.yaml"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "OK") {
		t.Errorf("output %s", out.String())
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	for _, arg := range []string{"help", "-h", "--help"} {
		var out, errb bytes.Buffer
		if code := run([]string{arg}, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d", arg, code)
		}
		for _, c := range []string{"freelane serve", "freelane check", "freelane dashboard-url", "freelane connect", "freelane version"} {
			if !strings.Contains(out.String(), c) {
				t.Errorf("%s: the help lacks %q", arg, c)
			}
		}
	}
}

func TestVersionAndUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "freelane ") {
		t.Errorf("version: %d %q", code, out.String())
	}
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown command") {
		t.Errorf("unknown: %d %q", code, errb.String())
	}
}

// TestServeStartsAndStopsCleanly runs the real command with the example
// config (which points at nothing reachable), asks it for /v1/models, then
// sends SIGTERM and expects a clean exit.
func TestServeStartsAndStopsCleanly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "serve", "--config", "../backend/config/example.yaml", "--data-dir", dir, "--listen", addr)
	cmd.Env = append(os.Environ(), "FREELANE_TEST_MAIN=1")
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
	links := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), "FreeLane dashboard: "); ok {
				links <- l
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	var resp *http.Response
	for {
		resp, err = http.Get("http://" + addr + "/v1/models")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/v1/models: %d", resp.StatusCode)
	}
	// serve printed a login link, and dashboard-url mints another; both
	// carry the code in the fragment, and the codes sign in.
	var printed string
	select {
	case printed = <-links:
	case <-time.After(5 * time.Second):
		t.Fatal("serve printed no dashboard link")
	}
	ask := exec.Command(os.Args[0], "dashboard-url", "--data-dir", dir)
	ask.Env = cmd.Env
	out, err := ask.Output()
	if err != nil {
		t.Fatalf("dashboard-url: %v", err)
	}
	minted := strings.TrimSpace(string(out))
	for _, link := range []string{printed, minted} {
		code, ok := strings.CutPrefix(link, "http://"+addr+"/#login=")
		if !ok || code == "" || strings.ContainsAny(code, "?&#/") {
			t.Errorf("dashboard link %q: want http://%s/#login=CODE", link, addr)
			continue
		}
		req, _ := http.NewRequest("POST", "http://"+addr+"/api/login", strings.NewReader(`{"code":"`+code+`"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("POST /api/login with the code of %q: %d", link, resp.StatusCode)
		}
	}
	if printed == minted {
		t.Error("dashboard-url printed the link serve had printed, not a fresh one")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "msg=stopped") {
		t.Errorf("no clean stop in the log:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "freelane.db")); err != nil {
		t.Errorf("database not created: %v", err)
	}
}

// TestOneVersionNumber keeps the version Wails' files carry (wails.json,
// which fills the Windows and macOS metadata) the one of build/VERSION,
// which the binary and the packages carry.
func TestOneVersionNumber(t *testing.T) {
	want, err := os.ReadFile("../build/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../wails.json")
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Info struct {
			ProductVersion string `json:"productVersion"`
		} `json:"info"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(want)); w.Info.ProductVersion != v || !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("wails.json says %q, build/VERSION %q; they must be one version, MAJOR.MINOR.PATCH", w.Info.ProductVersion, v)
	}
}
