//go:build unix

package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"freelane/backend/config"
	"freelane/backend/connect"
	"freelane/backend/internal/fakeupstream"
)

// This file holds the opencode tests and the check suite they share with
// the Continue and Codex tests: the same checks (a plain answer, a streamed
// answer through a failover, a tool call the agent runs, a stream broken
// after its first byte, two tool calls in one session and those turns
// carried over to another dialect, the settings of `freelane connect`)
// for every CLI that is described by a suiteCLI.

// suiteDir is the npm project the opencode, Continue and Codex CLIs are
// installed in.
const suiteDir = "testdata/agents2"

// suiteChain is the chain the suite's CLIs are pointed at, by naming it as
// their model.
const suiteChain = "agent"

// suiteCLI is how the check suite drives one CLI.
type suiteCLI struct {
	// run runs the CLI non-interactively on prompt against FreeLane's
	// chain suiteChain, in dir (a fresh directory when empty).
	run func(t *testing.T, a *agentEnv, dir, prompt string) agentResult
	// shellTool is the name of the CLI's own tool that runs a shell
	// command, and shellArgs its arguments for command, as JSON.
	shellTool string
	shellArgs func(command string) string
	// mainTurn, when not empty, is text that only the agent's own turns
	// carry and its side requests (such as a title for the session) do
	// not, so that only those turns are answered with the tool call.
	mainTurn string
	// failover is the pair of backends the failover check chains: the
	// first rate limited, the second serving. Each CLI takes another pair
	// of dialects, so the suite as a whole crosses them all.
	failover [2]string
}

// env starts FreeLane with suiteChain over backends.
func (c suiteCLI) env(t *testing.T, backends ...string) *agentEnv {
	t.Helper()
	requireIsolatedNetwork(t)
	return newAgentEnv(t, config.Chain{Name: suiteChain, Backends: backends})
}

// checkPlain is check (a): a plain answer from a backend of each dialect
// is printed, and FreeLane names that backend as the one that served.
func (c suiteCLI) checkPlain(t *testing.T) {
	for _, backend := range agentBackends {
		t.Run(backendName(backend), func(t *testing.T) {
			a := c.env(t, backend)
			marker := newMarker(t)
			a.up.SetDefault(fakeupstream.Behavior{Chunks: []string{"The answer ", "is ", marker}})
			res := c.run(t, a, "", "Say the answer.")
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, marker) {
				t.Errorf("the answer is not in the output: %s\nrequests:\n%s", res, a.describeInbound())
			}
			sent := a.vendorRequests(backendModel(backend))
			if len(sent) == 0 {
				t.Errorf("%s was not asked", backend)
			}
			// The key the CLI was given is FreeLane's to check, never a
			// vendor's to see.
			for _, r := range sent {
				var h strings.Builder
				_ = r.Header.Write(&h)
				if strings.Contains(h.String(), agentKey) || strings.Contains(string(r.Body), agentKey) {
					t.Errorf("the CLI's key reached %s: %s", backend, h.String())
				}
			}
			if at := a.attempts(); len(at) == 0 || at[len(at)-1] != backend+"=ok" {
				t.Errorf("attempts %q, want the last to be %s=ok", at, backend)
			}
			t.Logf("requests:\n%s", a.describeInbound())
		})
	}
}

// checkFailover is check (b): the first backend of the chain is rate
// limited on every request, the second, of another dialect, streams the
// answer, and FreeLane's attempts header tells of the 429.
func (c suiteCLI) checkFailover(t *testing.T) {
	first, second := c.failover[0], c.failover[1]
	a := c.env(t, first, second)
	marker := newMarker(t)
	a.up.Set(backendModel(first), fakeupstream.Behavior{Status: 429})
	a.up.Set(backendModel(second), fakeupstream.Behavior{Chunks: []string{"Served ", "by the second: ", marker}})
	res := c.run(t, a, "", "Say the answer.")
	res.mustSucceed(t, a)
	if !strings.Contains(res.Stdout, marker) {
		t.Errorf("the second backend's answer is not in the output: %s", res)
	}
	// A CLI that sends side requests may find the first backend resting
	// after its 429 and skipped, so the 429 shows in some answer's
	// attempts and the last answer came from the second.
	at := a.attempts()
	rateLimited := false
	for _, h := range at {
		rateLimited = rateLimited || strings.HasPrefix(h, first+"=429; ")
	}
	if !rateLimited || len(at) == 0 || !strings.HasSuffix(at[len(at)-1], second+"=ok") {
		t.Errorf("attempts %q: want %s's 429 and %s's answer:\n%s", at, first, second, a.describeInbound())
	}
	for _, r := range a.inbound() {
		var body struct {
			Stream bool `json:"stream"`
		}
		if r.Method == "POST" && json.Unmarshal(r.Body, &body) == nil && !body.Stream {
			t.Errorf("%s %s was not streamed", r.Method, r.Path)
		}
	}
	t.Logf("requests:\n%s", a.describeInbound())
}

// checkToolCall is check (c), for a backend of each dialect: the fake
// answers with a call of the CLI's own shell tool, the CLI runs the
// command and sends its output back, and the final answer to that is
// printed. The command computes part of the marker, so the marker as a
// whole is only in a request that carries the tool's result.
func (c suiteCLI) checkToolCall(t *testing.T) {
	for _, backend := range agentBackends {
		t.Run(backendName(backend), func(t *testing.T) {
			a := c.env(t, backend)
			id := newMarker(t)
			command := `echo "` + id + `-$((6*7))"`
			ran := id + "-42"
			final := "Finished: the command printed " + ran
			a.up.SetRules(backendModel(backend),
				fakeupstream.Rule{Contains: ran, Behavior: fakeupstream.Behavior{Chunks: []string{"Finished: ", "the command printed ", ran}}},
				fakeupstream.Rule{Contains: c.mainTurn, Behavior: fakeupstream.Behavior{ToolCall: true, ToolName: c.shellTool,
					ToolArgs: c.shellArgs(command)}},
			)
			res := c.run(t, a, "", "Run the marker command.")
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, final) {
				t.Errorf("the final answer is not in the output: %s\nrequests:\n%s", res, a.describeInbound())
			}
			carried := false
			for _, r := range a.vendorRequests(backendModel(backend)) {
				carried = carried || strings.Contains(string(r.Body), ran)
			}
			if !carried {
				t.Errorf("no request to %s carried the command's output %q", backend, ran)
			}
			t.Logf("requests:\n%s", a.describeInbound())
		})
	}
}

// checkToolCallsInTurn runs two tool calls one after the other in the same
// session, for a backend of each dialect: the second call comes after the
// first's result, so the history the CLI sends back then holds two calls
// and two results, which the backend's dialect must tell apart although
// some vendors (Gemini) give calls no ids of their own.
func (c suiteCLI) checkToolCallsInTurn(t *testing.T) {
	for _, backend := range agentBackends {
		t.Run(backendName(backend), func(t *testing.T) {
			a := c.env(t, backend)
			id := newMarker(t)
			first, second := id+"-42", id+"-56"
			call := func(command string) fakeupstream.Behavior {
				return fakeupstream.Behavior{ToolCall: true, ToolName: c.shellTool, ToolArgs: c.shellArgs(command)}
			}
			a.up.SetRules(backendModel(backend),
				fakeupstream.Rule{Contains: second, Behavior: fakeupstream.Behavior{Chunks: []string{"Finished: ", "both printed ", second}}},
				fakeupstream.Rule{Contains: first, Behavior: call(`echo "` + id + `-$((7*8))"`)},
				fakeupstream.Rule{Contains: c.mainTurn, Behavior: call(`echo "` + id + `-$((6*7))"`)},
			)
			res := c.run(t, a, "", "Run the marker commands.")
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, "Finished: both printed "+second) {
				t.Errorf("the final answer is not in the output: %s\nrequests:\n%s", res, a.describeInbound())
			}
			carried := false
			for _, r := range a.vendorRequests(backendModel(backend)) {
				carried = carried || strings.Contains(string(r.Body), first) && strings.Contains(string(r.Body), second)
			}
			if !carried {
				t.Errorf("no request to %s carried both commands' output", backend)
			}
			t.Logf("requests:\n%s", a.describeInbound())
		})
	}
}

// checkToolTurnsFailover has a Gemini backend make two tool calls in one
// session and then rate limit the turn that carries both results, so the
// session goes on at an Anthropic backend: the history FreeLane hands
// Anthropic holds the calls Gemini made, under the ids FreeLane gave them,
// and Anthropic refuses a request whose tool_use ids repeat.
func (c suiteCLI) checkToolTurnsFailover(t *testing.T) {
	a := c.env(t, agentGemini1, agentAnthropic1)
	id := newMarker(t)
	first, second := id+"-42", id+"-56"
	call := func(command string) fakeupstream.Behavior {
		return fakeupstream.Behavior{ToolCall: true, ToolName: c.shellTool, ToolArgs: c.shellArgs(command)}
	}
	a.up.SetRules(backendModel(agentGemini1),
		fakeupstream.Rule{Contains: second, Behavior: fakeupstream.Behavior{Status: 429}},
		fakeupstream.Rule{Contains: first, Behavior: call(`echo "` + id + `-$((7*8))"`)},
		fakeupstream.Rule{Contains: c.mainTurn, Behavior: call(`echo "` + id + `-$((6*7))"`)},
	)
	final := "Finished after the failover: " + second
	a.up.SetRules(backendModel(agentAnthropic1),
		fakeupstream.Rule{Contains: second, Behavior: fakeupstream.Behavior{Chunks: []string{"Finished ", "after the failover: ", second}}})
	res := c.run(t, a, "", "Run the marker commands.")
	res.mustSucceed(t, a)
	if !strings.Contains(res.Stdout, final) {
		t.Errorf("the final answer is not in the output: %s\nrequests:\n%s", res, a.describeInbound())
	}
	failedOver := false
	for _, h := range a.attempts() {
		failedOver = failedOver || h == agentGemini1+"=429; "+agentAnthropic1+"=ok"
	}
	if !failedOver {
		t.Errorf("attempts %q: want the last turn failed over from %s to %s", a.attempts(), agentGemini1, agentAnthropic1)
	}
	t.Logf("requests:\n%s", a.describeInbound())
}

// checkBrokenStream is check (d): every backend of the chain, one of each
// dialect, cuts its stream after the first chunk. FreeLane has committed
// to a backend once a byte reached the CLI and does not fail over, so the
// CLI sees a broken stream on every try and must report an error, not the
// partial answer as a complete one.
func (c suiteCLI) checkBrokenStream(t *testing.T) {
	a := c.env(t, agentBackends...)
	marker := newMarker(t)
	for _, backend := range agentBackends {
		a.up.Set(backendModel(backend), fakeupstream.Behavior{Chunks: []string{"Partial ", "answer ", marker}, CutAfter: 1})
	}
	res := c.run(t, a, "", "Say the answer.")
	t.Logf("outcome: %s\nrequests:\n%s", res, a.describeInbound())
	if res.TimedOut {
		t.Fatal("the CLI hung on a broken stream")
	}
	if res.Exit == 0 {
		t.Errorf("the CLI exited 0 on a broken stream")
	}
	if strings.Contains(res.Stdout, marker) {
		t.Errorf("the cut answer's end is in the output")
	}
}

// opencode (opencode-ai, a native binary built with Bun, installed here as
// its Linux x64 package, which is what opencode-ai's installer copies)
// talks to the provider its opencode.json declares through the AI SDK
// package the provider names, all bundled: @ai-sdk/openai-compatible
// speaks OpenAI's chat completions, @ai-sdk/openai the Responses API, both
// always streamed. Besides the agent's turns it asks the same model for a
// session title.
var opencodeCLI = suiteCLI{
	run: func(t *testing.T, a *agentEnv, dir, prompt string) agentResult {
		t.Helper()
		return runOpencode(t, a, dir, prompt, "@ai-sdk/openai-compatible")
	},
	shellTool: "bash",
	shellArgs: func(command string) string {
		return `{"command":` + jsonString(command) + `,"description":"Print the marker"}`
	},
	// The title request has its own system prompt ("You are a title
	// generator").
	mainTurn: "You are opencode",
	failover: [2]string{agentOpenAI1, agentGemini1},
}

// opencodeResponsesCLI is opencode with FreeLane declared as an OpenAI
// provider, which @ai-sdk/openai reaches over /v1/responses. A run of
// opencode takes several seconds, so this second client of the Responses
// API gets the checks whose answers differ most between the two APIs (a
// tool call, a failover, a broken stream); the plain answers and the two
// calls in a session are left to the other clients.
var opencodeResponsesCLI = func() suiteCLI {
	c := opencodeCLI
	c.run = func(t *testing.T, a *agentEnv, dir, prompt string) agentResult {
		t.Helper()
		return runOpencode(t, a, dir, prompt, "@ai-sdk/openai")
	}
	c.failover = [2]string{agentGemini1, agentOpenAI1}
	return c
}()

func TestAgentOpencodePlain(t *testing.T)        { opencodeCLI.checkPlain(t) }
func TestAgentOpencodeFailover(t *testing.T)     { opencodeCLI.checkFailover(t) }
func TestAgentOpencodeToolCall(t *testing.T)     { opencodeCLI.checkToolCall(t) }
func TestAgentOpencodeBrokenStream(t *testing.T) { opencodeCLI.checkBrokenStream(t) }

func TestAgentOpencodeResponsesFailover(t *testing.T) { opencodeResponsesCLI.checkFailover(t) }
func TestAgentOpencodeResponsesToolCall(t *testing.T) { opencodeResponsesCLI.checkToolCall(t) }
func TestAgentOpencodeResponsesBrokenStream(t *testing.T) {
	opencodeResponsesCLI.checkBrokenStream(t)
}

// runOpencode runs `opencode run` with a fresh home whose global config
// declares FreeLane as a provider served by the AI SDK package npm.
func runOpencode(t *testing.T, a *agentEnv, dir, prompt, npm string) agentResult {
	t.Helper()
	bin := opencodeBin(t)
	home := t.TempDir()
	cfgDir := filepath.Join(home, ".config", "opencode")
	// The settings FreeLane's README and `freelane connect opencode` give,
	// with the chain the test names as the model.
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"model":   "freelane/" + suiteChain,
		"provider": map[string]any{"freelane": map[string]any{
			"npm":     npm,
			"name":    "FreeLane",
			"options": map[string]any{"baseURL": a.url + "/v1", "apiKey": agentKey},
			"models":  map[string]any{suiteChain: map[string]any{"name": "FreeLane " + suiteChain}},
		}},
	}
	writeJSON(t, filepath.Join(cfgDir, "opencode.json"), cfg)
	seedOpencodePlugin(t, cfgDir)
	return a.run(t, agentCmd{
		Bin:  bin,
		Args: []string{"run", "--print-logs", "--log-level", "WARN", "--model", "freelane/" + suiteChain, prompt},
		Env:  opencodeEnv(home),
		Dir:  dir,
	})
}

// opencodeBin is the installed opencode binary. It skips the test outside
// an isolated network namespace, as agentBin does.
func opencodeBin(t *testing.T) string {
	t.Helper()
	requireIsolatedNetwork(t)
	bin, err := filepath.Abs(filepath.Join(suiteDir, "node_modules", "opencode-linux-x64-baseline", "bin", "opencode"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("opencode is not installed in %s (its package is for Linux x64 only): run `make deps-test` (%v)", suiteDir, err)
	}
	return bin
}

// opencodeEnv is the environment that gives opencode home as its HOME and
// keeps it from fetching what a provider declared in full does not need.
func opencodeEnv(home string) []string {
	return []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		// The model catalogue from models.dev is not needed for a
		// provider the config declares whole.
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
	}
}

// seedOpencodePlugin makes opencode's config directory cfgDir look as if
// its plugin package were installed. opencode installs @opencode-ai/plugin
// from npm into every config directory in the background, unless the
// directory already has a node_modules and a lock file that lists the
// package; offline that install only fails.
func seedOpencodePlugin(t *testing.T, cfgDir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(cfgDir, "node_modules"), 0o700); err != nil {
		t.Fatal(err)
	}
	deps := map[string]any{"dependencies": map[string]string{"@opencode-ai/plugin": "*"}}
	writeJSON(t, filepath.Join(cfgDir, "package.json"), deps)
	writeJSON(t, filepath.Join(cfgDir, "package-lock.json"), map[string]any{"lockfileVersion": 3, "packages": map[string]any{"": deps}})
}

// writeJSON writes v as JSON into path, making its directory.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkConnectSettings runs a CLI with nothing but the settings `freelane
// connect TOOL --write` puts into an empty HOME, against FreeLane's default
// chain: once open, once with an inbound token that the settings name by
// its variable. run starts the CLI with that HOME and, when token is not
// empty, the token where connect's notes say it goes.
func checkConnectSettings(t *testing.T, tool string, run func(t *testing.T, a *agentEnv, home, token string) agentResult) {
	for _, tokenRequired := range []bool{false, true} {
		name := "open"
		if tokenRequired {
			name = "token"
		}
		t.Run(name, func(t *testing.T) {
			requireIsolatedNetwork(t)
			var mutate func(*config.Config)
			token := ""
			if tokenRequired {
				token = agentToken
				mutate = func(cfg *config.Config) { cfg.Server.Token = agentToken }
			}
			a := newAgentEnvWith(t, mutate, config.Chain{Name: "mine", Backends: []string{agentGemini1}})
			marker := newMarker(t)
			a.up.SetDefault(fakeupstream.Behavior{Chunks: []string{"The answer ", "is ", marker}})
			home := connectHome(t, a, tool, tokenRequired)
			res := run(t, a, home, token)
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, marker) {
				t.Errorf("the answer is not in the output: %s", res)
			}
			for _, r := range a.inbound() {
				if m := jsonField(r.Body, "model"); m != connect.DefaultModel {
					t.Errorf("%s %s asked for model %q", r.Method, r.Path, m)
				}
				if tokenRequired && r.Header.Get("Authorization") != "Bearer "+agentToken {
					t.Errorf("%s %s sent Authorization %q", r.Method, r.Path, r.Header.Get("Authorization"))
				}
			}
			t.Logf("requests:\n%s", a.describeInbound())
		})
	}
}

func TestAgentOpencodeConnectSettings(t *testing.T) {
	checkConnectSettings(t, "opencode", func(t *testing.T, a *agentEnv, home, token string) agentResult {
		seedOpencodePlugin(t, filepath.Join(home, ".config", "opencode"))
		env := opencodeEnv(home)
		if token != "" {
			env = append(env, connect.TokenVar+"="+token)
		}
		return a.run(t, agentCmd{Bin: opencodeBin(t), Args: []string{"run", "--print-logs", "--log-level", "WARN", "Say the answer."}, Env: env})
	})
}
