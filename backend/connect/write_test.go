package connect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"freelane/backend/connect"
	"freelane/backend/internal/clocktest"
)

var writeTime = time.Date(2026, 12, 1, 14, 30, 5, 0, time.UTC)

const stamp = ".freelane-backup-20261201-143005"

var fileTools = []string{"claude-code", "codex", "gemini-cli", "opencode", "continue"}

func write(t *testing.T, home, id string, o connect.Options) (connect.Written, error) {
	t.Helper()
	if o.Base == "" {
		o.Base = base
	}
	return connect.Write(context.Background(), home, id, o, clocktest.New(writeTime))
}

func toolFile(t *testing.T, home, id string) string {
	t.Helper()
	tl, err := connect.ForTool(id, connect.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(home, filepath.FromSlash(tl.File.Path))
}

// undo runs the undo command the user is shown.
func undo(t *testing.T, w connect.Written) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the undo command is for a POSIX shell")
	}
	out, err := exec.Command("sh", "-c", w.UndoAll()).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", w.UndoAll(), err, out)
	}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestWriteCreatesEachFileAndUndoRemovesIt(t *testing.T) {
	for _, id := range fileTools {
		t.Run(id, func(t *testing.T) {
			home := t.TempDir()
			w, err := write(t, home, id, connect.Options{})
			if err != nil {
				t.Fatal(err)
			}
			path := toolFile(t, home, id)
			if w.File != path || w.Backup != "" || w.Unchanged || w.Undo != "rm "+path {
				t.Errorf("written %+v", w)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tl, _ := connect.ForTool(id, connect.Options{Base: base})
			if string(got) != tl.File.Content {
				t.Errorf("the file differs from the content shown:\n%s\nshown:\n%s", got, tl.File.Content)
			}
			if runtime.GOOS != "windows" {
				if m := mode(t, path); m != 0o600 {
					t.Errorf("file mode %o", m)
				}
				if m := mode(t, filepath.Dir(path)); m != 0o700 {
					t.Errorf("directory mode %o", m)
				}
			}
			again, err := write(t, home, id, connect.Options{})
			if err != nil || !again.Unchanged || again.Backup != "" {
				t.Errorf("a second write: %+v %v", again, err)
			}
			undo(t, w)
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("undo left the file: %v", err)
			}
		})
	}
}

// existing holds a user's own file for each tool, with settings of their
// own and an old FreeLane entry to be replaced.
var existing = map[string]string{
	"claude-code": `{
  "permissions": {"allow": ["Bash(make test)"]},
  "env": {"DISABLE_TELEMETRY": "1", "ANTHROPIC_BASE_URL": "http://old:1"},
  "model": "opus"
}
`,
	"codex": `# my Codex settings
approval_policy = "on-request"
model = "gpt-5.1"   # the old model
model_provider = "openai"

[model_providers.freelane]
name = "old"
base_url = "http://old:1/v1"
wire_api = "responses"
request_max_retries = 9

# Ollama on the box
[model_providers.ollama]
name = "Ollama"
base_url = """
http://localhost:11434/v1"""

[mcp_servers.docs]
command = "docs-mcp"
args = ["--port", "1"]
`,
	"gemini-cli": `# Gemini CLI
GOOGLE_CLOUD_PROJECT="my-project"
export GEMINI_API_KEY=old-key
NOTE="two
lines"
`,
	"opencode": `{
  "$schema": "https://opencode.ai/config.json",
  "theme": "tokyonight",
  "provider": {
    "ollama": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "http://localhost:11434/v1"}},
    "freelane": {"name": "old"}
  },
  "model": "ollama/qwen"
}
`,
	"continue": `name: My Config
version: 0.0.1
schema: v1
# the models I use
models:
  - name: Ollama
    provider: ollama
    model: qwen2.5-coder
  - name: FreeLane
    provider: openai
    model: old
context:
  - provider: code
`,
}

func TestWriteMergesIntoTheUsersFileAndUndoRestoresIt(t *testing.T) {
	for _, id := range fileTools {
		t.Run(id, func(t *testing.T) {
			home := t.TempDir()
			path := toolFile(t, home, id)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			orig := []byte(existing[id])
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := write(t, home, id, connect.Options{Model: "coding"})
			if err != nil {
				t.Fatal(err)
			}
			if w.Backup != path+stamp || w.Undo != "mv "+w.Backup+" "+path {
				t.Errorf("written %+v", w)
			}
			if b, err := os.ReadFile(w.Backup); err != nil || !bytes.Equal(b, orig) {
				t.Errorf("the backup differs from the original: %v\n%s", err, b)
			}
			if runtime.GOOS != "windows" && mode(t, path) != 0o644 {
				t.Errorf("file mode %o, want 0644 as the file had", mode(t, path))
			}
			merged, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			checkMerged[id](t, string(merged))
			undo(t, w)
			if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, orig) {
				t.Errorf("undo did not restore the original bytes: %v\n%s", err, b)
			}
		})
	}
}

var checkMerged = map[string]func(t *testing.T, merged string){
	"claude-code": func(t *testing.T, merged string) {
		var c struct {
			Permissions map[string][]string `json:"permissions"`
			Env         map[string]string   `json:"env"`
			Model       string              `json:"model"`
		}
		if err := json.Unmarshal([]byte(merged), &c); err != nil {
			t.Fatal(err)
		}
		if c.Model != "opus" || len(c.Permissions["allow"]) != 1 || c.Env["DISABLE_TELEMETRY"] != "1" {
			t.Errorf("the user's settings were lost:\n%s", merged)
		}
		if c.Env["ANTHROPIC_BASE_URL"] != base || c.Env["ANTHROPIC_MODEL"] != "coding" || c.Env["ANTHROPIC_AUTH_TOKEN"] != "freelane" {
			t.Errorf("FreeLane's settings are missing:\n%s", merged)
		}
		// The keys keep the user's order.
		if strings.Index(merged, `"permissions"`) > strings.Index(merged, `"env"`) || strings.Index(merged, `"env"`) > strings.Index(merged, `"model": "opus"`) {
			t.Errorf("the keys were reordered:\n%s", merged)
		}
	},
	"codex": func(t *testing.T, merged string) {
		var c map[string]any
		if err := toml.Unmarshal([]byte(merged), &c); err != nil {
			t.Fatalf("%v\n%s", err, merged)
		}
		p := c["model_providers"].(map[string]any)
		fl := p["freelane"].(map[string]any)
		if c["model"] != "coding" || c["model_provider"] != "freelane" || fl["base_url"] != base+"/v1" || fl["wire_api"] != "responses" || fl["request_max_retries"] != nil {
			t.Errorf("FreeLane's settings:\n%s", merged)
		}
		if c["approval_policy"] != "on-request" || p["ollama"].(map[string]any)["base_url"] != "http://localhost:11434/v1" || c["mcp_servers"] == nil {
			t.Errorf("the user's settings were lost:\n%s", merged)
		}
		for _, kept := range []string{"# my Codex settings", "# Ollama on the box"} {
			if !strings.Contains(merged, kept) {
				t.Errorf("the comment %q was lost:\n%s", kept, merged)
			}
		}
		if strings.Contains(merged, "\n\n\n") {
			t.Errorf("the removed table left a double blank line:\n%s", merged)
		}
		if strings.Count(merged, "model =") != 1 || strings.Contains(merged, "gpt-5.1") {
			t.Errorf("the old model is still there:\n%s", merged)
		}
	},
	"gemini-cli": func(t *testing.T, merged string) {
		want := "# Gemini CLI\nGOOGLE_CLOUD_PROJECT=\"my-project\"\nGEMINI_API_KEY=freelane\nNOTE=\"two\nlines\"\n" +
			"GOOGLE_GEMINI_BASE_URL=" + base + "\nGEMINI_MODEL=coding\n"
		if merged != want {
			t.Errorf("merged:\n%s\nwant:\n%s", merged, want)
		}
	},
	"opencode": func(t *testing.T, merged string) {
		var c struct {
			Theme    string                    `json:"theme"`
			Model    string                    `json:"model"`
			Provider map[string]map[string]any `json:"provider"`
		}
		if err := json.Unmarshal([]byte(merged), &c); err != nil {
			t.Fatal(err)
		}
		if c.Theme != "tokyonight" || c.Provider["ollama"] == nil {
			t.Errorf("the user's settings were lost:\n%s", merged)
		}
		if c.Model != "freelane/coding" || c.Provider["freelane"]["npm"] != "@ai-sdk/openai-compatible" || c.Provider["freelane"]["name"] != "FreeLane" {
			t.Errorf("FreeLane's settings:\n%s", merged)
		}
	},
	"continue": func(t *testing.T, merged string) {
		var c struct {
			Name    string
			Models  []map[string]any
			Context []map[string]any
		}
		if err := yaml.Unmarshal([]byte(merged), &c); err != nil {
			t.Fatal(err)
		}
		if c.Name != "My Config" || len(c.Context) != 1 || len(c.Models) != 2 || c.Models[0]["name"] != "Ollama" {
			t.Fatalf("the user's settings were lost:\n%s", merged)
		}
		if fl := c.Models[1]; fl["name"] != "FreeLane" || fl["model"] != "coding" || fl["apiBase"] != base+"/v1" || fl["provider"] != "openai" {
			t.Errorf("FreeLane's entry:\n%s", merged)
		}
		if !strings.Contains(merged, "# the models I use") {
			t.Errorf("the comment was lost:\n%s", merged)
		}
	},
}

func TestWriteRefusesFilesItCannotParse(t *testing.T) {
	broken := map[string]struct {
		text string
		line int
	}{
		"claude-code": {"{\n  \"env\": {\n    \"A\": 1,,\n  }\n}\n", 3},
		"codex":       {"model = \"x\"\n[model_providers.freelane\nname = 1\n", 2},
		"gemini-cli":  {"A=1\nthis is not a variable\n", 2},
		"opencode":    {"{\n  // a comment\n  \"theme\": \"x\"\n}\n", 2},
		"continue":    {"name: x\nmodels:\n  - name: a\nbad: : x\n", 4},
	}
	for id, b := range broken {
		t.Run(id, func(t *testing.T) {
			home := t.TempDir()
			path := toolFile(t, home, id)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(b.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := write(t, home, id, connect.Options{})
			var pe *connect.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want a ParseError", err)
			}
			if pe.File != path || pe.Line != b.line || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "untouched") {
				t.Errorf("error %q (line %d, want %d)", err, pe.Line, b.line)
			}
			if got, _ := os.ReadFile(path); string(got) != b.text {
				t.Errorf("the file was changed:\n%s", got)
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("files were left next to it: %v", entries)
			}
		})
	}
}

// TestCodexProviderWrittenInlineIsRefused: the provider defined as an
// inline table cannot be replaced line by line, so nothing is written.
func TestCodexProviderWrittenInlineIsRefused(t *testing.T) {
	for _, text := range []string{
		"model_providers = { freelane = { name = \"mine\" } }\n",
		"[model_providers]\nfreelane = { name = \"mine\" }\n",
		"model_providers.freelane.name = \"mine\"\n",
	} {
		home := t.TempDir()
		path := toolFile(t, home, "codex")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := write(t, home, "codex", connect.Options{})
		var pe *connect.ParseError
		if !errors.As(err, &pe) || pe.Line == 0 || !strings.Contains(err.Error(), "[model_providers.freelane] table") {
			t.Errorf("%q: %v", text, err)
		}
		if got, _ := os.ReadFile(path); string(got) != text {
			t.Errorf("the file was changed:\n%s", got)
		}
	}
}

func TestWriteWithATokenRemovesTheOldKey(t *testing.T) {
	home := t.TempDir()
	path := toolFile(t, home, "claude-code")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"env":{"ANTHROPIC_AUTH_TOKEN":"freelane"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := write(t, home, "claude-code", connect.Options{TokenRequired: true}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if strings.Contains(string(got), "ANTHROPIC_AUTH_TOKEN") {
		t.Errorf("the key in the file would win over the token:\n%s", got)
	}
}

func TestBackupsNeverOverwriteEachOther(t *testing.T) {
	home := t.TempDir()
	path := toolFile(t, home, "gemini-cli")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first, err := write(t, home, "gemini-cli", connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := write(t, home, "gemini-cli", connect.Options{Model: "coding"})
	if err != nil {
		t.Fatal(err)
	}
	if first.Backup != path+stamp || second.Backup != path+stamp+"-2" {
		t.Errorf("backups %q and %q", first.Backup, second.Backup)
	}
	if b, _ := os.ReadFile(first.Backup); string(b) != "A=1\n" {
		t.Errorf("the first backup was overwritten: %q", b)
	}
}

// TestWriteFollowsALinkInsideTheToolsDirectory: a config file linked to
// another file in the tool's directory (a profile switcher does this) is
// written where it lives, and the link stays; so is a link to a file that
// does not exist yet.
func TestWriteFollowsALinkInsideTheToolsDirectory(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	home := t.TempDir()
	link := toolFile(t, home, "claude-code")
	profiles := filepath.Join(filepath.Dir(link), "profiles")
	if err := os.MkdirAll(profiles, 0o700); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(profiles, "work.json")
	if err := os.WriteFile(real, []byte(`{"model":"opus"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("profiles/work.json", link); err != nil {
		t.Fatal(err)
	}
	w, err := write(t, home, "claude-code", connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w.File != real || w.Backup != real+stamp {
		t.Errorf("wrote %s (backup %s), want the link's target %s", w.File, w.Backup, real)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if b, _ := os.ReadFile(link); !strings.Contains(string(b), "ANTHROPIC_BASE_URL") || !strings.Contains(string(b), "opus") {
		t.Errorf("through the link: %s", b)
	}

	// A link to a file not made yet, in a linked directory inside.
	env := toolFile(t, home, "gemini-cli")
	dir := filepath.Dir(env)
	if err := os.MkdirAll(filepath.Join(dir, "real"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "current")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("current/gemini.env", env); err != nil {
		t.Fatal(err)
	}
	w, err = write(t, home, "gemini-cli", connect.Options{Model: "coding"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "real", "gemini.env"); w.File != want || mode(t, want) != 0o600 {
		t.Errorf("wrote %s, want %s, mode 0600", w.File, want)
	}
}

func TestWriteRefusesGUIToolsAndBadInput(t *testing.T) {
	home := t.TempDir()
	for _, id := range []string{"cline", "cursor"} {
		if _, err := write(t, home, id, connect.Options{}); !errors.Is(err, connect.ErrNoFile) {
			t.Errorf("%s: %v", id, err)
		}
	}
	if _, err := write(t, home, "vim", connect.Options{}); !errors.Is(err, connect.ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := write(t, "", "codex", connect.Options{}); err == nil {
		t.Error("an empty home was accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := connect.Write(ctx, home, "codex", connect.Options{Base: base}, clocktest.New(writeTime)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("refused writes left files: %v", entries)
	}
}

// TestWriteKeepsWindowsLineEndings: a file with CRLF lines gets CRLF lines
// from FreeLane too.
func TestWriteKeepsWindowsLineEndings(t *testing.T) {
	for id, text := range map[string]string{
		"codex":      "approval_policy = \"never\"\r\n\r\n[mcp_servers.x]\r\ncommand = \"x\"\r\n",
		"gemini-cli": "A=1\r\n# note\r\n",
	} {
		home := t.TempDir()
		path := toolFile(t, home, id)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := write(t, home, id, connect.Options{}); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		got, _ := os.ReadFile(path)
		if strings.Count(string(got), "\n") != strings.Count(string(got), "\r\n") {
			t.Errorf("%s: a bare LF among CRLF lines:\n%q", id, got)
		}
		for _, line := range strings.SplitAfter(text, "\r\n") {
			if !strings.Contains(string(got), line) {
				t.Errorf("%s: the line %q was lost:\n%q", id, line, got)
			}
		}
	}
}

// Gemini CLI needs its sign-in method in settings.json as well as the
// variables in .env: both are written, the user's other settings kept,
// both put back by the one undo command, and neither written when one
// cannot be parsed.
func TestGeminiSettingsWrittenWithItsEnvFile(t *testing.T) {
	home := t.TempDir()
	settings := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	const user = `{"ui": {"theme": "Dracula"}, "security": {"folderTrust": {"enabled": true}}}`
	if err := os.WriteFile(settings, []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := write(t, home, "gemini-cli", connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Also) != 1 || w.Also[0].File != settings || w.Also[0].Backup != settings+stamp {
		t.Fatalf("written %+v", w)
	}
	var got struct {
		UI       map[string]any `json:"ui"`
		Security struct {
			Auth        map[string]any `json:"auth"`
			FolderTrust map[string]any `json:"folderTrust"`
		} `json:"security"`
	}
	b, _ := os.ReadFile(settings)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if got.Security.Auth["selectedType"] != "gemini-api-key" || got.UI["theme"] != "Dracula" || got.Security.FolderTrust["enabled"] != true {
		t.Errorf("settings.json = %s", b)
	}
	undo(t, w)
	if b, _ := os.ReadFile(settings); string(b) != user {
		t.Errorf("undo left settings.json as %s", b)
	}
	if _, err := os.Stat(toolFile(t, home, "gemini-cli")); !os.IsNotExist(err) {
		t.Errorf("undo left the .env file: %v", err)
	}

	if err := os.WriteFile(settings, []byte(`{"ui": `), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = write(t, home, "gemini-cli", connect.Options{})
	var pe *connect.ParseError
	if !errors.As(err, &pe) || pe.File != settings {
		t.Fatalf("an unparseable settings.json gave %v", err)
	}
	if _, err := os.Stat(toolFile(t, home, "gemini-cli")); !os.IsNotExist(err) {
		t.Errorf("the .env was written although settings.json could not be: %v", err)
	}
}

// TestWriteRefusesLinksOutOfTheToolsDirectory: a config file, or a
// directory on its way, linked to somewhere outside the tool's config
// directory is not written through. Run as root with another user's HOME,
// FreeLane would otherwise overwrite (and re-mode) whatever file that user
// links there, such as /etc/passwd.
func TestWriteRefusesLinksOutOfTheToolsDirectory(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	etc := t.TempDir()
	// Two targets: one no tool's format parses, and a JSON file the
	// old code would have rewritten.
	targets := map[string]string{
		"passwd":    "root:x:0:0:root:/root:/bin/bash\n",
		"conf.json": `{"keep": true}`,
	}
	for name, content := range targets {
		path := filepath.Join(etc, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	passwd, conf := filepath.Join(etc, "passwd"), filepath.Join(etc, "conf.json")
	untouched := func(t *testing.T) {
		t.Helper()
		for name, content := range targets {
			path := filepath.Join(etc, name)
			if b, err := os.ReadFile(path); err != nil || string(b) != content {
				t.Errorf("the target outside was changed: %q %v", b, err)
			}
			if m := mode(t, path); m != 0o644 {
				t.Errorf("the target's mode became %o", m)
			}
		}
		if entries, _ := os.ReadDir(etc); len(entries) != len(targets) {
			t.Errorf("files were made outside: %v", entries)
		}
	}
	refused := func(t *testing.T, err error) {
		t.Helper()
		var le *connect.LinkError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), "outside") || !strings.Contains(err.Error(), "nothing was written") {
			t.Fatalf("not refused: %v", err)
		}
	}

	t.Run("file linked out", func(t *testing.T) {
		home := t.TempDir()
		link := toolFile(t, home, "gemini-cli")
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(passwd, link); err != nil {
			t.Fatal(err)
		}
		_, err := write(t, home, "gemini-cli", connect.Options{Model: "coding"})
		refused(t, err)
		untouched(t)
	})
	t.Run("parseable file linked out", func(t *testing.T) {
		home := t.TempDir()
		link := toolFile(t, home, "claude-code")
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(conf, link); err != nil {
			t.Fatal(err)
		}
		_, err := write(t, home, "claude-code", connect.Options{})
		refused(t, err)
		untouched(t)
	})
	t.Run("dangling link out", func(t *testing.T) {
		home := t.TempDir()
		link := toolFile(t, home, "claude-code")
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(etc, "sudoers"), link); err != nil {
			t.Fatal(err)
		}
		_, err := write(t, home, "claude-code", connect.Options{})
		refused(t, err)
		untouched(t)
	})
	t.Run("directory linked out", func(t *testing.T) {
		home := t.TempDir()
		// ~/.codex -> etc: config.toml would land in etc.
		if err := os.Symlink(etc, filepath.Join(home, ".codex")); err != nil {
			t.Fatal(err)
		}
		_, err := write(t, home, "codex", connect.Options{Model: "coding"})
		refused(t, err)
		untouched(t)
	})
	t.Run("parent directory linked out", func(t *testing.T) {
		home := t.TempDir()
		// ~/.config -> etc: opencode/opencode.json would land in etc.
		if err := os.Symlink(etc, filepath.Join(home, ".config")); err != nil {
			t.Fatal(err)
		}
		_, err := write(t, home, "opencode", connect.Options{Model: "coding"})
		refused(t, err)
		untouched(t)
	})
	t.Run("link up and out", func(t *testing.T) {
		home := t.TempDir()
		link := toolFile(t, home, "continue")
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(filepath.Dir(link), passwd)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rel, link); err != nil {
			t.Fatal(err)
		}
		_, err = write(t, home, "continue", connect.Options{Model: "coding"})
		refused(t, err)
		untouched(t)
	})
}

// TestWriteKeepsTheFilesModeAndOwner: a rewrite and its backup keep the
// mode (and, as root, the owner) the user gave the file; a new file is
// private, since it may hold a key.
func TestWriteKeepsTheFilesModeAndOwner(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix modes")
	}
	home := t.TempDir()
	path := toolFile(t, home, "codex")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(existing["codex"]), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	asRoot := os.Getuid() == 0
	if asRoot {
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	w, err := write(t, home, "codex", connect.Options{Model: "coding"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, w.Backup} {
		if m := mode(t, f); m != 0o640 {
			t.Errorf("%s: mode %o, want 0640 as the file had", f, m)
		}
		if asRoot {
			if uid, gid := owner(t, f); uid != 65534 || gid != 65534 {
				t.Errorf("%s: owner %d:%d, want 65534:65534 as the file had", f, uid, gid)
			}
		}
	}
	// A new file is 0600, whatever the umask.
	w, err = write(t, home, "claude-code", connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(t, w.File); m != 0o600 {
		t.Errorf("a new file has mode %o, want 0600", m)
	}
}

// TestWriteThroughAToolDirectoryLinkedInsideTheHome: dotfile managers link
// a whole tool directory to a folder of theirs in the home directory; the
// settings are written there and the link stays, while a tool directory
// linked out of the home is refused.
func TestWriteThroughAToolDirectoryLinkedInsideTheHome(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	home := t.TempDir()
	file := toolFile(t, home, "claude-code")
	toolDir := filepath.Dir(file)
	dotfiles := filepath.Join(home, "dotfiles", "claude")
	if err := os.MkdirAll(dotfiles, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dotfiles, toolDir); err != nil {
		t.Fatal(err)
	}
	w, err := write(t, home, "claude-code", connect.Options{})
	if err != nil {
		t.Fatalf("a tool directory linked inside the home: %v", err)
	}
	if want := filepath.Join(dotfiles, filepath.Base(file)); w.File != want {
		t.Errorf("wrote %s, want %s", w.File, want)
	}
	if fi, err := os.Lstat(toolDir); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the directory link was replaced: %v", err)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "ANTHROPIC_BASE_URL") {
		t.Errorf("through the link: %s", b)
	}

	outside := t.TempDir()
	home2 := t.TempDir()
	toolDir2 := filepath.Dir(toolFile(t, home2, "claude-code"))
	if err := os.Symlink(outside, toolDir2); err != nil {
		t.Fatal(err)
	}
	_, err = write(t, home2, "claude-code", connect.Options{})
	var le *connect.LinkError
	if !errors.As(err, &le) {
		t.Fatalf("a tool directory linked out of the home: %v, want a LinkError", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files were made outside the home: %v", entries)
	}
}
