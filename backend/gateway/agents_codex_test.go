//go:build unix

package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"freelane/backend/connect"
	"freelane/backend/internal/fakeupstream"
)

// Codex (@openai/codex, a native Rust binary) speaks OpenAI's Responses
// API, always streamed, to POST {base_url}/responses of the provider its
// config.toml declares with wire_api "responses". Its shell tool, for a
// model it has no metadata for, is exec_command with the command in "cmd".
var codexCLI = suiteCLI{
	run:       runCodex,
	shellTool: "exec_command",
	shellArgs: func(command string) string { return `{"cmd":` + jsonString(command) + `}` },
	failover:  [2]string{agentAnthropic1, agentOpenAI1},
}

func TestAgentCodexPlain(t *testing.T)             { codexCLI.checkPlain(t) }
func TestAgentCodexFailover(t *testing.T)          { codexCLI.checkFailover(t) }
func TestAgentCodexToolCall(t *testing.T)          { codexCLI.checkToolCall(t) }
func TestAgentCodexTwoToolCalls(t *testing.T)      { codexCLI.checkToolCallsInTurn(t) }
func TestAgentCodexToolTurnsFailover(t *testing.T) { codexCLI.checkToolTurnsFailover(t) }
func TestAgentCodexBrokenStream(t *testing.T)      { codexCLI.checkBrokenStream(t) }

// Codex compacts a session whose context passes the configured limit: for
// a provider of its own it asks the model itself, over /v1/responses, for
// a summary (its X-Codex-Turn-Metadata names the request kind
// "compaction") and goes on from the summary alone. Here the limit is
// passed as soon as the first tool call has run, on a backend of each
// dialect.
func TestAgentCodexCompaction(t *testing.T) {
	for _, backend := range agentBackends {
		t.Run(backendName(backend), func(t *testing.T) {
			a := codexCLI.env(t, backend)
			id := newMarker(t)
			ran, summary := id+"-42", id+"-summary"
			a.up.SetRules(backendModel(backend),
				fakeupstream.Rule{Contains: "CONTEXT CHECKPOINT COMPACTION", Behavior: fakeupstream.Behavior{Chunks: []string{"The command printed ", summary}}},
				fakeupstream.Rule{Contains: summary, Behavior: fakeupstream.Behavior{Chunks: []string{"Finished after compaction: ", summary}}},
				fakeupstream.Rule{Contains: ran, Behavior: fakeupstream.Behavior{Chunks: []string{"Finished without compaction"}}},
				fakeupstream.Rule{Behavior: fakeupstream.Behavior{ToolCall: true, ToolName: codexCLI.shellTool,
					ToolArgs: codexCLI.shellArgs(`echo "` + id + `-$((6*7))"`)}},
			)
			res := runCodexWith(t, a, "", "Run the marker command.", "model_auto_compact_token_limit = 100\nmodel_context_window = 200000\n")
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, "Finished after compaction: "+summary) {
				t.Errorf("the answer after compaction is not in the output: %s\nrequests:\n%s", res, a.describeInbound())
			}
			compacted := false
			for _, r := range a.inbound() {
				var meta struct {
					Kind string `json:"request_kind"`
				}
				_ = json.Unmarshal([]byte(r.Header.Get("X-Codex-Turn-Metadata")), &meta)
				if meta.Kind == "compaction" {
					compacted = true
					if r.Path != "/v1/responses" || r.Status != 200 || !strings.Contains(string(r.Body), ran) {
						t.Errorf("compaction request %s -> %d, carrying the tool's output: %v", r.Path, r.Status, strings.Contains(string(r.Body), ran))
					}
				}
			}
			if !compacted {
				t.Errorf("Codex sent no compaction request:\n%s", a.describeInbound())
			}
			t.Logf("requests:\n%s", a.describeInbound())
		})
	}
}

// runCodex runs `codex exec` with a CODEX_HOME whose config.toml declares
// FreeLane as the model provider.
func runCodex(t *testing.T, a *agentEnv, dir, prompt string) agentResult {
	t.Helper()
	return runCodexWith(t, a, dir, prompt, "")
}

// runCodexWith is runCodex with more top-level settings in config.toml,
// as TOML lines.
func runCodexWith(t *testing.T, a *agentEnv, dir, prompt, topLevel string) agentResult {
	t.Helper()
	bin := agentBin(t, suiteDir, "codex")
	codexHome := filepath.Join(t.TempDir(), ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	// The provider is the one FreeLane's README and `freelane connect
	// codex` give: without env_key Codex sends no key, which FreeLane
	// without an inbound token accepts. Codex retries a failed request 4
	// times and a broken stream 5 times by default, with growing pauses;
	// one retry of each shows the same behaviour in a fraction of the time.
	// Plugins are off because Codex otherwise syncs its curated plugin list
	// from GitHub at every start, and analytics because it otherwise spends
	// some five seconds at exit trying to send its events.
	cfg := topLevel + `model = ` + jsonString(suiteChain) + `
model_provider = "freelane"
check_for_update_on_startup = false

[features]
plugins = false

[analytics]
enabled = false

[model_providers.freelane]
name = "FreeLane"
base_url = ` + jsonString(a.url+"/v1") + `
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1
`
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return a.run(t, agentCmd{
		Bin:  bin,
		Args: []string{"exec", "--skip-git-repo-check", "--color", "never", prompt},
		Env: []string{
			"CODEX_HOME=" + codexHome,
		},
		Dir: dir,
	})
}

func TestAgentCodexConnectSettings(t *testing.T) {
	checkConnectSettings(t, "codex", func(t *testing.T, a *agentEnv, home, token string) agentResult {
		env := []string{"HOME=" + home}
		if token != "" {
			env = append(env, connect.TokenVar+"="+token)
		}
		// Analytics off, as in every other run: Codex otherwise spends some
		// five seconds at exit trying to send its events, offline in vain.
		return a.run(t, agentCmd{Bin: agentBin(t, suiteDir, "codex"), Env: env,
			Args: []string{"exec", "-c", "analytics.enabled=false", "--skip-git-repo-check", "--color", "never", "Say the answer."}})
	})
}
