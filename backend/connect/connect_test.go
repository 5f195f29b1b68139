package connect_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"freelane/backend/connect"
	"freelane/backend/llm"
)

const base = "http://127.0.0.1:7788"

func settings(t *testing.T, o connect.Options) connect.Setup {
	t.Helper()
	s, err := connect.For(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tool(t *testing.T, s connect.Setup, id string) connect.ToolSetup {
	t.Helper()
	for _, tl := range s.Tools {
		if tl.ID == id {
			return tl
		}
	}
	t.Fatalf("no tool %q", id)
	return connect.ToolSetup{}
}

func TestEveryToolIsDescribed(t *testing.T) {
	s := settings(t, connect.Options{Base: base})
	if s.OpenAIBase != base+"/v1" || s.Key != "freelane" || s.Model != "auto" || s.TokenRequired {
		t.Errorf("settings %+v", s)
	}
	if len(s.Tools) != len(connect.IDs) {
		t.Fatalf("%d tools, want %d", len(s.Tools), len(connect.IDs))
	}
	dialects := map[string]llm.Dialect{
		"claude-code": llm.DialectAnthropic, "codex": llm.DialectResponses, "gemini-cli": llm.DialectGemini,
		"opencode": llm.DialectOpenAI, "continue": llm.DialectOpenAI, "cline": llm.DialectOpenAI, "cursor": llm.DialectOpenAI,
	}
	for _, tl := range s.Tools {
		if tl.Name == "" || tl.Dialect != dialects[tl.ID] || !strings.HasPrefix(tl.Endpoint, base+"/") || len(tl.Notes) == 0 {
			t.Errorf("%s: %+v", tl.ID, tl)
		}
		gui := tl.ID == "cline" || tl.ID == "cursor"
		if gui != (tl.File == nil) || gui != (len(tl.Steps) > 0) || gui != (tl.Write == "") {
			t.Errorf("%s: a file, steps or write command where there should be none: %+v", tl.ID, tl)
		}
		if tl.File != nil {
			if tl.Write != "freelane connect "+tl.ID+" --write" || tl.File.Content == "" || strings.HasPrefix(tl.File.Path, "/") {
				t.Errorf("%s: file %+v write %q", tl.ID, tl.File, tl.Write)
			}
		}
	}
}

func TestFileContentsParseAndSayWhatTheToolsNeed(t *testing.T) {
	s := settings(t, connect.Options{Base: base, Model: "coding"})

	var claude struct {
		Env map[string]string `json:"env"`
	}
	if err := json.Unmarshal([]byte(tool(t, s, "claude-code").File.Content), &claude); err != nil {
		t.Fatal(err)
	}
	if claude.Env["ANTHROPIC_BASE_URL"] != base || claude.Env["ANTHROPIC_AUTH_TOKEN"] != "freelane" || claude.Env["ANTHROPIC_MODEL"] != "coding" || claude.Env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] != "coding" {
		t.Errorf("claude env %v", claude.Env)
	}

	var codex struct {
		ModelProvider  string `toml:"model_provider"`
		Model          string
		ModelProviders map[string]map[string]string `toml:"model_providers"`
	}
	if err := toml.Unmarshal([]byte(tool(t, s, "codex").File.Content), &codex); err != nil {
		t.Fatal(err)
	}
	p := codex.ModelProviders["freelane"]
	if codex.ModelProvider != "freelane" || codex.Model != "coding" || p["base_url"] != base+"/v1" || p["wire_api"] != "responses" || p["name"] == "" {
		t.Errorf("codex %+v", codex)
	}
	if _, ok := p["env_key"]; ok {
		t.Errorf("codex names a key variable though no token is required: %v", p)
	}

	gem := tool(t, s, "gemini-cli").File.Content
	for _, line := range []string{"GOOGLE_GEMINI_BASE_URL=" + base + "\n", "GEMINI_API_KEY=freelane\n", "GEMINI_MODEL=coding\n"} {
		if !strings.Contains(gem, line) {
			t.Errorf("gemini .env lacks %q:\n%s", line, gem)
		}
	}

	var oc struct {
		Model    string
		Provider map[string]struct {
			NPM     string            `json:"npm"`
			Options map[string]string `json:"options"`
			Models  map[string]any    `json:"models"`
		}
	}
	if err := json.Unmarshal([]byte(tool(t, s, "opencode").File.Content), &oc); err != nil {
		t.Fatal(err)
	}
	fl := oc.Provider["freelane"]
	if oc.Model != "freelane/coding" || fl.NPM != "@ai-sdk/openai-compatible" || fl.Options["baseURL"] != base+"/v1" || fl.Models["coding"] == nil {
		t.Errorf("opencode %+v", oc)
	}

	var cont struct {
		Name, Version, Schema string
		Models                []map[string]any
	}
	if err := yaml.Unmarshal([]byte(tool(t, s, "continue").File.Content), &cont); err != nil {
		t.Fatal(err)
	}
	if cont.Schema != "v1" || cont.Name == "" || cont.Version == "" || len(cont.Models) != 1 {
		t.Fatalf("continue %+v", cont)
	}
	m := cont.Models[0]
	if m["provider"] != "openai" || m["apiBase"] != base+"/v1" || m["model"] != "coding" || m["name"] != "FreeLane" {
		t.Errorf("continue model %v", m)
	}
}

// TestTokenIsNamedNeverHeld: with a token the settings refer to
// FREELANE_TOKEN the way each tool expands it, and no file holds a key.
func TestTokenIsNamedNeverHeld(t *testing.T) {
	s := settings(t, connect.Options{Base: base, TokenRequired: true})
	if s.Key != "$FREELANE_TOKEN" {
		t.Errorf("key %q", s.Key)
	}
	want := map[string]string{
		"claude-code": "", // the key is left to the shell
		"codex":       `env_key = "FREELANE_TOKEN"`,
		"gemini-cli":  "",
		"opencode":    `"apiKey": "{env:FREELANE_TOKEN}"`,
		"continue":    "${{ secrets.FREELANE_TOKEN }}",
	}
	for id, ref := range want {
		c := tool(t, s, id).File.Content
		if !strings.Contains(c, ref) {
			t.Errorf("%s does not refer to the token as %q:\n%s", id, ref, c)
		}
		if strings.Contains(c, `"apiKey": "freelane"`) || strings.Contains(c, "=freelane") || strings.Contains(c, "apiKey: freelane") || strings.Contains(c, `"ANTHROPIC_AUTH_TOKEN"`) {
			t.Errorf("%s holds the placeholder key though a token is required:\n%s", id, c)
		}
	}
	if sh := tool(t, s, "claude-code").Shell; !strings.Contains(sh, `export ANTHROPIC_AUTH_TOKEN="$FREELANE_TOKEN"`) {
		t.Errorf("claude shell %q", sh)
	}
	if sh := tool(t, s, "gemini-cli").Shell; !strings.Contains(sh, `export GEMINI_API_KEY="$FREELANE_TOKEN"`) {
		t.Errorf("gemini shell %q", sh)
	}
	for _, id := range []string{"cline", "cursor"} {
		if steps := strings.Join(tool(t, s, id).Steps, "\n"); !strings.Contains(steps, "FREELANE_TOKEN") {
			t.Errorf("%s steps do not name the token: %s", id, steps)
		}
	}
}

func TestBadOptionsAreRefused(t *testing.T) {
	for _, o := range []connect.Options{
		{Base: "127.0.0.1:7788"},
		{Base: "ftp://127.0.0.1:7788"},
		{Base: "http://127.0.0.1:7788/api"},
		{Base: "http://u:p@127.0.0.1:7788"},
		{Base: "http://127.0.0.1:7788?x=1"},
		{Base: base, Model: `auto"; rm -rf /`},
		{Base: base, Model: strings.Repeat("m", 257)},
	} {
		if _, err := connect.For(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	for raw, want := range map[string]string{
		"http://127.0.0.1:7788/":   base,
		"http://127.0.0.1:7788/v1": base,
		"https://box.lan:8443":     "https://box.lan:8443",
	} {
		s, err := connect.For(connect.Options{Base: raw})
		if err != nil || s.Base != want {
			t.Errorf("%s: %q %v, want %q", raw, s.Base, err, want)
		}
	}
	if _, err := connect.ForTool("vim", connect.Options{Base: base}); !errors.Is(err, connect.ErrUnknownTool) || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestBaseFromListen(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:7788": base,
		"0.0.0.0:9000":   "http://127.0.0.1:9000",
		":7788":          base,
		"[::]:7788":      base,
		"10.0.0.5:7788":  "http://10.0.0.5:7788",
		"[::1]:7788":     "http://[::1]:7788",
	} {
		got, err := connect.BaseFromListen(listen)
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", listen, got, err, want)
		}
	}
	if _, err := connect.BaseFromListen("nope"); err == nil {
		t.Error("a listen address without a port was accepted")
	}
}
