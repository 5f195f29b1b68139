package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"freelane/backend/connect"
)

// connectRun runs freelane connect with a temporary HOME and no token in
// the environment.
func connectRun(t *testing.T, home string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	var out, errb bytes.Buffer
	code = run(append([]string{"connect"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestConnectListsEveryTool(t *testing.T) {
	t.Setenv("FREELANE_TOKEN", "")
	code, out, errs := connectRun(t, t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range append(append([]string{}, connect.IDs...), "~/.codex/config.toml", "its settings screen", "OPENAI_BASE_URL=http://127.0.0.1:7788/v1", "--write") {
		if !strings.Contains(out, want) {
			t.Errorf("the list lacks %q:\n%s", want, out)
		}
	}
}

func TestConnectPrintsAToolsSettings(t *testing.T) {
	t.Setenv("FREELANE_TOKEN", "")
	code, out, errs := connectRun(t, t.TempDir(), "claude-code", "--model", "coding")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{`export ANTHROPIC_BASE_URL="http://127.0.0.1:7788"`, `"ANTHROPIC_MODEL": "coding"`, "~/.claude/settings.json", "freelane connect claude-code --write --model coding"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = connectRun(t, t.TempDir(), "cursor", "--url", "http://10.0.0.2:7788/")
	if code != 0 || !strings.Contains(out, "Override OpenAI Base URL and enter: http://10.0.0.2:7788/v1") || strings.Contains(out, "--write") {
		t.Errorf("cursor: %d\n%s", code, out)
	}
}

// TestConnectReadsTheConfig: the listen address and server.token come from
// --config, and the token itself is never printed.
func TestConnectReadsTheConfig(t *testing.T) {
	t.Setenv("FREELANE_TOKEN", "")
	const secret = "0123456789abcdef0123"
	cfg := filepath.Join(t.TempDir(), "freelane.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 0.0.0.0:9999\nserver:\n  token: "+secret+"\nproviders: []\nchains: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := connectRun(t, t.TempDir(), "codex", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, `base_url = "http://127.0.0.1:9999/v1"`) || !strings.Contains(out, `env_key = "FREELANE_TOKEN"`) {
		t.Errorf("output:\n%s", out)
	}
	if strings.Contains(out, secret) {
		t.Errorf("the token was printed:\n%s", out)
	}
	t.Setenv("FREELANE_TOKEN", secret)
	_, out, _ = connectRun(t, t.TempDir(), "gemini-cli")
	if !strings.Contains(out, `export GEMINI_API_KEY="$FREELANE_TOKEN"`) || strings.Contains(out, secret) {
		t.Errorf("with FREELANE_TOKEN set:\n%s", out)
	}
}

func TestConnectWriteAndUndo(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the undo command is for a POSIX shell")
	}
	t.Setenv("FREELANE_TOKEN", "")
	home := t.TempDir()
	code, out, errs := connectRun(t, home, "opencode", "--write")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	path := filepath.Join(home, ".config", "opencode", "opencode.json")
	if !strings.Contains(out, "into "+path) || !strings.Contains(out, "To undo:             rm "+path) {
		t.Errorf("output:\n%s", out)
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = connectRun(t, home, "--write", "opencode")
	if code != 0 || !strings.Contains(out, "nothing was written") {
		t.Errorf("a second write: %d\n%s", code, out)
	}

	code, out, errs = connectRun(t, home, "opencode", "--write", "--model", "coding")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "The file as it was:  "+path+".freelane-backup-") {
		t.Errorf("output:\n%s", out)
	}
	var undo string
	for _, line := range strings.Split(out, "\n") {
		if u, ok := strings.CutPrefix(line, "To undo:"); ok {
			undo = strings.TrimSpace(u)
		}
	}
	if !strings.HasPrefix(undo, "mv ") {
		t.Fatalf("undo %q", undo)
	}
	if b, err := exec.Command("sh", "-c", undo).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", undo, err, b)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, first) {
		t.Errorf("undo did not restore the file:\n%s", b)
	}
}

func TestConnectRefusals(t *testing.T) {
	t.Setenv("FREELANE_TOKEN", "")
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"vim"}, 2, "unknown tool"},
		{[]string{"cline", "--write"}, 2, "settings screen"},
		{[]string{"--write"}, 2, "needs a tool"},
		{[]string{"codex", "--url", "127.0.0.1:7788"}, 2, "--url"},
		{[]string{"codex", "--model", "a b"}, 2, "model name"},
		{[]string{"codex", "extra"}, 2, "unexpected argument"},
	} {
		code, _, errs := connectRun(t, home, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errs)
		}
	}

	path := filepath.Join(home, ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	bad := "model = \"x\"\nmodel_provider = = 1\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := connectRun(t, home, "codex", "--write")
	if code != 1 || !strings.Contains(errs, path+":2:") || !strings.Contains(errs, "untouched") {
		t.Errorf("unparseable file: exit %d, stderr %q", code, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != bad {
		t.Errorf("the file was changed: %s", b)
	}
}
