//go:build unix

package gateway_test

import (
	"os"
	"path/filepath"
	"testing"

	"freelane/backend/connect"
)

// The Continue CLI (@continuedev/cli, `cn`, plain Node) speaks OpenAI's
// chat completions, always streamed, through the openai package, to the
// apiBase of a model its config.yaml declares with provider "openai". In
// print mode (-p) it sends the agent's turns and nothing else, and runs
// its Bash tool without asking. It also asks api.continue.dev for its
// latest version at every start, which no setting turns off; offline that
// fails quietly.
var continueCLI = suiteCLI{
	run:       runContinue,
	shellTool: "Bash",
	shellArgs: func(command string) string { return `{"command":` + jsonString(command) + `}` },
	failover:  [2]string{agentGemini1, agentAnthropic1},
}

func TestAgentContinuePlain(t *testing.T)             { continueCLI.checkPlain(t) }
func TestAgentContinueFailover(t *testing.T)          { continueCLI.checkFailover(t) }
func TestAgentContinueToolCall(t *testing.T)          { continueCLI.checkToolCall(t) }
func TestAgentContinueTwoToolCalls(t *testing.T)      { continueCLI.checkToolCallsInTurn(t) }
func TestAgentContinueToolTurnsFailover(t *testing.T) { continueCLI.checkToolTurnsFailover(t) }
func TestAgentContinueBrokenStream(t *testing.T)      { continueCLI.checkBrokenStream(t) }

// runContinue runs `cn -p` with a config.yaml that declares FreeLane as an
// OpenAI model, and Continue's own directory inside the test's home.
func runContinue(t *testing.T, a *agentEnv, dir, prompt string) agentResult {
	t.Helper()
	bin := agentBin(t, suiteDir, "cn")
	home := t.TempDir()
	cfg := filepath.Join(home, "config.yaml")
	// The settings FreeLane's README and `freelane connect continue` give,
	// with the chain the test names as the model, written as JSON, which
	// is YAML that quotes every value safely.
	yaml := `{"name": "Local Config", "version": "1.0.0", "schema": "v1", "models": [{"name": "FreeLane", "provider": "openai",` +
		` "model": ` + jsonString(suiteChain) + `, "apiBase": ` + jsonString(a.url+"/v1/") + `, "apiKey": ` + jsonString(agentKey) +
		`, "roles": ["chat", "edit", "apply"]}]}`
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return a.run(t, agentCmd{
		Bin:  bin,
		Args: []string{"-p", "--config", cfg, prompt},
		Env: []string{
			"CONTINUE_GLOBAL_DIR=" + filepath.Join(home, ".continue"),
			// Continue exports metrics only to an OTLP endpoint named in
			// the environment; these keep that off whatever the test
			// process has.
			"CONTINUE_CLI_ENABLE_TELEMETRY=0",
			"CONTINUE_METRICS_ENABLED=0",
		},
		Dir: dir,
	})
}

func TestAgentContinueConnectSettings(t *testing.T) {
	checkConnectSettings(t, "continue", func(t *testing.T, a *agentEnv, home, token string) agentResult {
		if token != "" {
			// Where connect's notes tell the user to put the token.
			if err := os.WriteFile(filepath.Join(home, ".continue", ".env"), []byte(connect.TokenVar+"="+token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return a.run(t, agentCmd{Bin: agentBin(t, suiteDir, "cn"), Args: []string{"-p", "Say the answer."},
			Env: []string{"HOME=" + home, "CONTINUE_CLI_ENABLE_TELEMETRY=0", "CONTINUE_METRICS_ENABLED=0"}})
	})
}
