//go:build unix

package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"freelane/backend/config"
	"freelane/backend/connect"
	"freelane/backend/internal/fakeupstream"
)

// The settings `freelane connect TOOL --write` puts into a tool's own
// config file are all a real CLI needs: written into an empty HOME, with
// nothing else set, Claude Code and Gemini CLI reach FreeLane's default
// chain, with FreeLane's inbound token too when it requires one.

// agentToken is the inbound token of the tests that require one.
const agentToken = "fl-agent-token-0123456789abcdef"

// connectHome is a fresh HOME holding tool's settings as connect writes
// them for a.
func connectHome(t *testing.T, a *agentEnv, tool string, tokenRequired bool) string {
	t.Helper()
	home := t.TempDir()
	w, err := connect.Write(context.Background(), home, tool, connect.Options{Base: a.url, TokenRequired: tokenRequired}, a.clock)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(w.File)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s:\n%s", w.File, b)
	return home
}

func TestAgentClaudeConnectSettings(t *testing.T) {
	for _, tokenRequired := range []bool{false, true} {
		name := "open"
		if tokenRequired {
			name = "token"
		}
		t.Run(name, func(t *testing.T) {
			var mutate func(*config.Config)
			env := []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
			if tokenRequired {
				mutate = func(cfg *config.Config) { cfg.Server.Token = agentToken }
				env = append(env, "ANTHROPIC_AUTH_TOKEN="+agentToken)
			}
			a := newAgentEnvWith(t, mutate, config.Chain{Name: "mine", Backends: []string{agentOpenAI1}})
			marker := newMarker(t)
			a.up.SetDefault(fakeupstream.Behavior{Chunks: []string{"The answer ", "is ", marker}})
			home := connectHome(t, a, "claude-code", tokenRequired)
			res := a.run(t, agentCmd{Bin: agentBin(t, "", "claude"), Args: []string{"-p", "Say the answer."},
				Env: append(env, "HOME="+home)})
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
				if r.Header.Get("X-Api-Key") != "" {
					t.Errorf("%s %s also sent x-api-key", r.Method, r.Path)
				}
			}
		})
	}
}

func TestAgentGeminiConnectSettings(t *testing.T) {
	for _, tokenRequired := range []bool{false, true} {
		name := "open"
		if tokenRequired {
			name = "token"
		}
		t.Run(name, func(t *testing.T) {
			var mutate func(*config.Config)
			var env []string
			if tokenRequired {
				mutate = func(cfg *config.Config) { cfg.Server.Token = agentToken }
				env = append(env, "GEMINI_API_KEY="+agentToken)
			}
			a := newAgentEnvWith(t, mutate, config.Chain{Name: "mine", Backends: []string{agentAnthropic1}})
			marker := newMarker(t)
			// Gemini CLI's own default model first asks which model to use
			// (see TestAgentGeminiDefaultModels).
			a.up.SetRules(backendModel(agentAnthropic1),
				fakeupstream.Rule{Contains: "complexity_score", Behavior: fakeupstream.Behavior{
					Chunks: []string{`{"complexity_reasoning":"A direct request.","complexity_score":10}`}}},
				fakeupstream.Rule{Behavior: fakeupstream.Behavior{Chunks: []string{"The answer ", "is ", marker}}},
			)
			home := connectHome(t, a, "gemini-cli", tokenRequired)
			// The sign-in choice the CLI would ask for once, and the
			// working folder trusted, as a user's own settings hold them.
			if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(geminiSettings), 0o600); err != nil {
				t.Fatal(err)
			}
			res := a.run(t, agentCmd{Bin: agentBin(t, "", "gemini"), Args: []string{"-p", "Say the answer."},
				Env: append(env, "HOME="+home, "GEMINI_CLI_TRUST_WORKSPACE=true")})
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, marker) {
				t.Errorf("the answer is not in the output: %s", res)
			}
			for _, r := range a.inbound() {
				if !strings.HasPrefix(r.Path, "/v1beta/models/gemini-") {
					t.Errorf("Gemini CLI asked for %s", r.Path)
				}
				if tokenRequired && r.Header.Get("X-Goog-Api-Key") != agentToken {
					t.Errorf("%s sent x-goog-api-key %q", r.Path, r.Header.Get("X-Goog-Api-Key"))
				}
			}
		})
	}
}
