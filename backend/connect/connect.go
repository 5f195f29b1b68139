// Package connect knows how each coding agent and SDK is pointed at
// FreeLane: the environment variables, the config file and its content, or
// the settings screen to fill in. The dashboard's Connect screen, the
// freelane connect command and the README all read it, so a tool's settings
// are written down once.
//
// Settings never hold the inbound token itself. When FreeLane requires one,
// they name the FREELANE_TOKEN environment variable in the form each tool
// expands, or tell the user to export it; otherwise the key is the
// placeholder "freelane", which FreeLane ignores.
package connect

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"freelane/backend/defaults"
	"freelane/backend/llm"
)

// DefaultModel is the model the settings use unless told otherwise: the
// default chain.
const DefaultModel = "auto"

// DefaultBase is FreeLane's address when nothing says otherwise, the
// default listen address; a command for another address names it.
const DefaultBase = "http://" + defaults.Listen

// PlaceholderKey is the API key tools are given when FreeLane requires no
// token: every tool insists on one, and FreeLane ignores it.
const PlaceholderKey = "freelane"

// TokenVar is the environment variable settings name when FreeLane requires
// its inbound token, so the secret stays out of every file written.
const TokenVar = "FREELANE_TOKEN"

// maxModel bounds the model name, as FreeLane's own parsers do.
const maxModel = 256

// Options say which FreeLane the settings point at.
type Options struct {
	// Base is FreeLane's address as scheme://host:port, without a path.
	Base string
	// TokenRequired is set when FreeLane requires its inbound token.
	TokenRequired bool
	// Model is the model name tools ask for; "" is DefaultModel.
	Model string
}

// Setup is every tool's settings for one FreeLane.
type Setup struct {
	// Base is FreeLane's address, scheme://host:port.
	Base string `json:"base"`
	// OpenAIBase is Base plus /v1, the base URL OpenAI-compatible tools take.
	OpenAIBase string `json:"openai_base"`
	// TokenRequired is true when FreeLane requires its inbound token.
	TokenRequired bool `json:"token_required"`
	// Key is what to give a tool as its API key: "freelane", or
	// "$FREELANE_TOKEN" when the token is required.
	Key   string      `json:"key"`
	Model string      `json:"model"`
	Tools []ToolSetup `json:"tools"`
}

// ToolSetup is one tool's settings.
type ToolSetup struct {
	// ID names the tool in freelane connect ID.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Dialect is the API the tool speaks, and Endpoint the URL it calls.
	Dialect  llm.Dialect `json:"dialect"`
	Endpoint string      `json:"endpoint"`
	// Env are the environment variables to set, and Shell the same as
	// export lines to paste.
	Env   []EnvVar `json:"env"`
	Shell string   `json:"shell"`
	// File is the tool's config file; nil for tools set up in a GUI.
	File *ConfigFile `json:"file"`
	// Steps say what to fill in, for tools set up in a GUI.
	Steps []string `json:"steps"`
	// Write is the command that merges File into the user's own file; ""
	// for tools without a file.
	Write string   `json:"write"`
	Notes []string `json:"notes"`
}

// EnvVar is one environment variable. Value is written as a shell would
// expand it: "$FREELANE_TOKEN" names the token without holding it.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// File is a config file and what to put in it.
type ConfigFile struct {
	// Path is relative to the home directory with slashes, the same on
	// Linux and macOS; Windows is relative to %USERPROFILE%.
	Path    string `json:"path"`
	Windows string `json:"windows"`
	// Format is json, toml, yaml or dotenv.
	Format string `json:"format"`
	// Content is the whole file for a user who has none; Write merges the
	// same settings into an existing one.
	Content string `json:"content"`
}

// IDs lists the tools in the order they are shown.
var IDs = []string{"claude-code", "codex", "gemini-cli", "opencode", "continue", "cline", "cursor"}

// ErrUnknownTool is returned for a tool ID that is not in IDs.
var ErrUnknownTool = errors.New("unknown tool")

// For returns every tool's settings.
func For(o Options) (Setup, error) {
	o, err := o.normalize()
	if err != nil {
		return Setup{}, err
	}
	s := Setup{Base: o.Base, OpenAIBase: o.Base + "/v1", TokenRequired: o.TokenRequired, Key: o.key(), Model: o.Model}
	for _, id := range IDs {
		s.Tools = append(s.Tools, build(id, o))
	}
	return s, nil
}

// ForTool returns one tool's settings.
func ForTool(id string, o Options) (ToolSetup, error) {
	o, err := o.normalize()
	if err != nil {
		return ToolSetup{}, err
	}
	for _, known := range IDs {
		if known == id {
			return build(id, o), nil
		}
	}
	return ToolSetup{}, fmt.Errorf("%w %q: use one of %s", ErrUnknownTool, id, strings.Join(IDs, ", "))
}

// BaseFromListen turns a listen address into the base tools on this
// machine call: an unspecified host (0.0.0.0, ::) becomes loopback.
func BaseFromListen(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("the listen address %q is not host:port: %w", listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

func (o Options) normalize() (Options, error) {
	base, err := normalizeBase(o.Base)
	if err != nil {
		return Options{}, err
	}
	o.Base = base
	if o.Model == "" {
		o.Model = DefaultModel
	}
	if err := CheckModel(o.Model); err != nil {
		return Options{}, err
	}
	return o, nil
}

// normalizeBase accepts http(s)://host[:port], with an optional trailing
// slash or /v1 that users copy from other tools' settings.
func normalizeBase(raw string) (string, error) {
	if len(raw) > 2048 {
		return "", errors.New("the URL is longer than 2048 bytes")
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("the URL %q is not http://host:port (for example http://127.0.0.1:7788)", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("the URL %q may not carry a user, query or fragment: give http://host:port", raw)
	}
	path := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	if path != "" {
		return "", fmt.Errorf("the URL %q has a path: give FreeLane's address without one, such as http://127.0.0.1:7788", raw)
	}
	// Settings are written into JSON, TOML, YAML and shell lines; a host
	// holds none of the characters that would need escaping there.
	for _, c := range u.Host {
		if !isURLHostChar(c) {
			return "", fmt.Errorf("the URL %q has a character %q that is not allowed in a host", raw, c)
		}
	}
	return u.Scheme + "://" + u.Host, nil
}

func isURLHostChar(c rune) bool {
	return c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]_%", c))
}

// CheckModel keeps model names to the characters chain names and
// provider/model ids use, so they need no quoting in any file format.
func CheckModel(m string) error {
	if len(m) > maxModel {
		return fmt.Errorf("the model name is longer than %d bytes", maxModel)
	}
	for _, c := range m {
		if !(c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:/@+-", c))) {
			return fmt.Errorf("the model name %q has the character %q: use a chain name or provider/model (letters, digits and . _ : / @ + -)", m, c)
		}
	}
	return nil
}

// key is the API key as a shell expands it.
func (o Options) key() string {
	if o.TokenRequired {
		return "$" + TokenVar
	}
	return PlaceholderKey
}

func build(id string, o Options) ToolSetup {
	var t ToolSetup
	switch id {
	case "claude-code":
		t = claudeCode(o)
	case "codex":
		t = codex(o)
	case "gemini-cli":
		t = geminiCLI(o)
	case "opencode":
		t = opencode(o)
	case "continue":
		t = continueDev(o)
	case "cline":
		t = cline(o)
	case "cursor":
		t = cursor(o)
	}
	t.ID = id
	t.Shell = shell(t.Env)
	if t.File != nil {
		// The content for a user without the file is what Write makes of
		// no file, so the two never disagree. Merging into nothing cannot
		// fail.
		content, err := merge(id, t.File.Path, nil, false, o)
		if err != nil {
			panic(fmt.Sprintf("connect: settings for %s: %v", id, err))
		}
		t.File.Content = string(content)
		t.Write = "freelane connect " + id + " --write"
		if o.Base != DefaultBase {
			// The command finds a running FreeLane by itself, but the
			// settings shown are for this address, wherever it is run.
			t.Write += " --url " + o.Base
		}
		if o.Model != DefaultModel {
			t.Write += " --model " + o.Model
		}
	}
	if t.Env == nil {
		t.Env = []EnvVar{}
	}
	if t.Steps == nil {
		t.Steps = []string{}
	}
	if o.TokenRequired {
		t.Notes = append(t.Notes, "This FreeLane requires its inbound token: "+TokenVar+" must hold it in the environment the tool starts from (the same value FreeLane was given as "+TokenVar+" or server.token).")
	}
	return t
}

// shell writes env as export lines. Values are double-quoted, so
// $FREELANE_TOKEN expands and nothing else in them is special: URLs and
// model names were checked to hold no quote, dollar or backslash.
func shell(env []EnvVar) string {
	var b strings.Builder
	for _, e := range env {
		fmt.Fprintf(&b, "export %s=\"%s\"\n", e.Name, e.Value)
	}
	return b.String()
}

// claudeModelVars are the variables Claude Code reads its model names from:
// the main model and the ones behind its opus, sonnet and haiku aliases,
// which background tasks use. All of them name the FreeLane model, so every
// request Claude Code makes is routed by FreeLane's chain.
var claudeModelVars = []string{"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL"}

func claudeCode(o Options) ToolSetup {
	env := []EnvVar{{"ANTHROPIC_BASE_URL", o.Base}, {"ANTHROPIC_AUTH_TOKEN", o.key()}}
	for _, v := range claudeModelVars {
		env = append(env, EnvVar{v, o.Model})
	}
	t := ToolSetup{
		Name: "Claude Code", Dialect: llm.DialectAnthropic, Endpoint: o.Base + "/v1/messages",
		Env:  env,
		File: &ConfigFile{Path: ".claude/settings.json", Windows: `.claude\settings.json`, Format: "json"},
		Notes: []string{
			"ANTHROPIC_BASE_URL is FreeLane's address without /v1: Claude Code adds /v1/messages itself.",
			"Values in the env block of ~/.claude/settings.json win over the same variables exported in the shell.",
			"Leave ANTHROPIC_API_KEY unset: with both set Claude Code sends two keys. Run /status in Claude Code to see the base URL it uses.",
		},
	}
	if o.TokenRequired {
		t.Notes = append(t.Notes, "The settings file holds no secret: export ANTHROPIC_AUTH_TOKEN=\"$"+TokenVar+"\" in the shell that starts claude. Writing the file removes an ANTHROPIC_AUTH_TOKEN from its env block, since that would win over the shell's.")
	}
	return t
}

// codexProvider is the key of FreeLane's table under model_providers.
const codexProvider = "freelane"

func codex(o Options) ToolSetup {
	t := ToolSetup{
		Name: "Codex CLI", Dialect: llm.DialectResponses, Endpoint: o.Base + "/v1/responses",
		File: &ConfigFile{Path: ".codex/config.toml", Windows: `.codex\config.toml`, Format: "toml"},
		Notes: []string{
			"Codex speaks only the Responses API: wire_api must be \"responses\" (current Codex refuses \"chat\").",
			"Codex reads model providers only from ~/.codex/config.toml ($CODEX_HOME/config.toml when CODEX_HOME is set), not from a project's .codex/config.toml. Root keys come before the first [table].",
			"Codex has no metadata for FreeLane's model names and says so once; the warning is harmless.",
		},
	}
	if o.TokenRequired {
		t.Notes = append(t.Notes, "env_key = \""+TokenVar+"\" makes Codex send that variable's value as its Bearer key; Codex stops with an error while it is unset.")
	} else {
		t.Notes = append(t.Notes, "Without env_key Codex sends no key, which this FreeLane accepts since it requires no token.")
	}
	return t
}

// codexTable is the body of [model_providers.freelane], in order.
func codexTable(o Options) [][2]string {
	kv := [][2]string{{"name", "FreeLane"}, {"base_url", o.Base + "/v1"}, {"wire_api", "responses"}}
	if o.TokenRequired {
		kv = append(kv, [2]string{"env_key", TokenVar})
	}
	return kv
}

func codexRoot(o Options) [][2]string {
	return [][2]string{{"model_provider", codexProvider}, {"model", o.Model}}
}

// tomlString quotes s as a TOML basic string. Values were checked to hold
// no quote, backslash or control character, so this is all it takes.
func tomlString(s string) string { return `"` + s + `"` }

func geminiCLI(o Options) ToolSetup {
	t := ToolSetup{
		Name: "Gemini CLI", Dialect: llm.DialectGemini, Endpoint: o.Base + "/v1beta/models/MODEL:streamGenerateContent?alt=sse",
		Env:  []EnvVar{{"GOOGLE_GEMINI_BASE_URL", o.Base}, {"GEMINI_API_KEY", o.key()}},
		File: &ConfigFile{Path: ".gemini/.env", Windows: `.gemini\.env`, Format: "dotenv"},
		Notes: []string{
			"GOOGLE_GEMINI_BASE_URL is FreeLane's address without a path: Gemini CLI adds /v1beta/models/... itself.",
			"Gemini CLI loads only the first .env it finds: a .gemini/.env or .env in the project directory or a parent wins over ~/.gemini/.env. Variables already set in the environment win over the file.",
			"Gemini CLI reads ~/.gemini/.env only in folders it trusts. For gemini -p in a folder it has not been told to trust, export the variables above in the shell instead (or set GEMINI_CLI_TRUST_WORKSPACE=true).",
			"Choose the Gemini API key as the sign-in method: --write sets security.auth.selectedType to \"gemini-api-key\" in ~/.gemini/settings.json too, since a run without a terminal cannot ask.",
		},
	}
	if o.Model == DefaultModel {
		t.Notes = append(t.Notes, "Gemini CLI asks for its own model names (gemini-2.5-pro and the like); FreeLane routes gemini-* names to its default chain. Set GEMINI_MODEL to a chain name for another chain.")
	} else {
		t.Env = append(t.Env, EnvVar{"GEMINI_MODEL", o.Model})
	}
	if o.TokenRequired {
		t.Notes = append(t.Notes, "The .env file cannot refer to a variable, so it holds no key: export GEMINI_API_KEY=\"$"+TokenVar+"\" in the shell that starts gemini.")
	}
	return t
}

// geminiVars is FreeLane's part of ~/.gemini/.env, in order.
func geminiVars(o Options) []EnvVar {
	vars := []EnvVar{{"GOOGLE_GEMINI_BASE_URL", o.Base}}
	if !o.TokenRequired {
		vars = append(vars, EnvVar{"GEMINI_API_KEY", PlaceholderKey})
	}
	// Gemini CLI takes "auto" as its own alias for its model picker, so the
	// default chain is reached through the gemini-* names instead.
	if o.Model != DefaultModel {
		vars = append(vars, EnvVar{"GEMINI_MODEL", o.Model})
	}
	return vars
}

// opencodeProvider is the key of FreeLane's entry under provider.
const opencodeProvider = "freelane"

func opencode(o Options) ToolSetup {
	t := ToolSetup{
		Name: "opencode", Dialect: llm.DialectOpenAI, Endpoint: o.Base + "/v1/chat/completions",
		File: &ConfigFile{Path: ".config/opencode/opencode.json", Windows: `.config\opencode\opencode.json`, Format: "json"},
		Notes: []string{
			"The provider uses the @ai-sdk/openai-compatible package, which calls /v1/chat/completions; model sets opencode's default to " + opencodeProvider + "/" + o.Model + ".",
			"Pick another FreeLane chain in opencode with /models, after adding it under models.",
		},
	}
	if o.TokenRequired {
		t.Notes = append(t.Notes, "opencode replaces {env:"+TokenVar+"} with the variable's value when it starts.")
	}
	return t
}

func opencodeKey(o Options) string {
	if o.TokenRequired {
		return "{env:" + TokenVar + "}"
	}
	return PlaceholderKey
}

// continueModelName names FreeLane's entry in Continue's models list; Write
// finds the entry to replace by it.
const continueModelName = "FreeLane"

func continueDev(o Options) ToolSetup {
	t := ToolSetup{
		Name: "Continue", Dialect: llm.DialectOpenAI, Endpoint: o.Base + "/v1/chat/completions",
		File: &ConfigFile{Path: ".continue/config.yaml", Windows: `.continue\config.yaml`, Format: "yaml"},
		Notes: []string{
			"provider: openai with apiBase reaches any OpenAI-compatible server; the entry named " + continueModelName + " is FreeLane's, and writing the file replaces only that entry.",
		},
	}
	if o.TokenRequired {
		t.Notes = append(t.Notes, "Continue fills in ${{ secrets."+TokenVar+" }} from ~/.continue/.env: put "+TokenVar+"=<the token> there.")
	}
	return t
}

func continueKey(o Options) string {
	if o.TokenRequired {
		return "${{ secrets." + TokenVar + " }}"
	}
	return PlaceholderKey
}

// continueEntry is FreeLane's entry in the models list, in order.
func continueEntry(o Options) [][2]any {
	return [][2]any{
		{"name", continueModelName},
		{"provider", "openai"},
		{"model", o.Model},
		{"apiBase", o.Base + "/v1"},
		{"apiKey", continueKey(o)},
		{"roles", []string{"chat", "edit", "apply"}},
	}
}

func cline(o Options) ToolSetup {
	key := PlaceholderKey
	if o.TokenRequired {
		key = "the value of " + TokenVar
	}
	return ToolSetup{
		Name: "Cline", Dialect: llm.DialectOpenAI, Endpoint: o.Base + "/v1/chat/completions",
		Steps: []string{
			"Open Cline's settings (the gear in the Cline panel).",
			"API Provider: OpenAI Compatible",
			"Base URL: " + o.Base + "/v1",
			"API Key: " + key,
			"Model ID: " + o.Model,
		},
		Notes: []string{"Cline keeps these settings in VS Code, not in a file. Roo Code has the same fields."},
	}
}

func cursor(o Options) ToolSetup {
	key := PlaceholderKey
	if o.TokenRequired {
		key = "the value of " + TokenVar
	}
	return ToolSetup{
		Name: "Cursor", Dialect: llm.DialectOpenAI, Endpoint: o.Base + "/v1/chat/completions",
		Steps: []string{
			"Open Cursor Settings > Models.",
			"Under API Keys, turn on OpenAI API Key and enter: " + key,
			"Turn on Override OpenAI Base URL and enter: " + o.Base + "/v1",
			"Add the model " + o.Model + " and turn it on; turn off the models FreeLane does not serve.",
		},
		Notes: []string{"Some Cursor features call the model from Cursor's own servers, which cannot reach a FreeLane on this machine; chat with the model picked above works."},
	}
}
