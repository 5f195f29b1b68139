//go:build unix

package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
)

// Gemini CLI (@google/gemini-cli, a Node bundle) speaks Google's
// generateContent API to GOOGLE_GEMINI_BASE_URL; these tests serve it from
// backends of every dialect through FreeLane.

// geminiChain is the chain the Gemini CLI tests name as the CLI's model.
const geminiChain = "agent"

// geminiSettings is the user settings file the CLI starts with: the API
// key sign-in chosen (so it never asks), usage statistics, telemetry and
// update checks off, and the working folder trusted.
const geminiSettings = `{
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "ui": {"hideBanner": true, "hideTips": true}
}`

// geminiEnv is the environment that points Gemini CLI at a.
func geminiEnv(a *agentEnv) []string {
	return []string{
		"GOOGLE_GEMINI_BASE_URL=" + a.url,
		"GEMINI_API_KEY=" + agentKey,
		"GEMINI_MODEL=" + geminiChain,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		// One process instead of a launcher that starts the CLI again
		// with a larger heap: a headless run needs no more.
		"GEMINI_CLI_NO_RELAUNCH=true",
	}
}

// runGemini runs Gemini CLI headless (-p) on prompt with extra arguments
// and environment, in dir (a fresh directory when empty). Its settings
// file is written into the run's HOME, which agentBaseEnv made.
func runGemini(t *testing.T, a *agentEnv, dir, prompt string, env []string, args ...string) agentResult {
	t.Helper()
	bin := agentBin(t, "", "gemini")
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(geminiSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	return a.run(t, agentCmd{
		Bin:  bin,
		Args: append([]string{"-p", prompt, "-m", geminiChain}, args...),
		Env:  append(append(geminiEnv(a), "HOME="+home), env...),
		Dir:  dir,
	})
}

// (a) A plain answer from a backend of each dialect is printed.
func TestAgentGeminiPlain(t *testing.T) {
	for _, backend := range agentBackends {
		t.Run(backendName(backend), func(t *testing.T) {
			a := newAgentEnv(t, config.Chain{Name: geminiChain, Backends: []string{backend}})
			marker := newMarker(t)
			a.up.SetDefault(fakeupstream.Behavior{Chunks: []string{"The answer ", "is ", marker}})
			res := runGemini(t, a, "", "Say the answer.", nil)
			t.Logf("requests:\n%s", a.describeInbound())
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, marker) {
				t.Errorf("the answer is not in the output: %s", res)
			}
		})
	}
}

// (b) The first backend of the chain is rate limited on every request; the
// second, of another dialect, serves the stream, and FreeLane's attempts
// header tells of the 429.
func TestAgentGeminiFailover(t *testing.T) {
	for _, pair := range [][2]string{{agentGemini1, agentAnthropic1}, {agentAnthropic1, agentOpenAI1}, {agentOpenAI1, agentGemini1}} {
		first, second := pair[0], pair[1]
		t.Run(backendName(first)+"-"+backendName(second), func(t *testing.T) {
			a := newAgentEnv(t, config.Chain{Name: geminiChain, Backends: []string{first, second}})
			marker := newMarker(t)
			a.up.Set(backendModel(first), fakeupstream.Behavior{Status: 429})
			a.up.Set(backendModel(second), fakeupstream.Behavior{Chunks: []string{"Served ", "by the second: ", marker}})
			res := runGemini(t, a, "", "Say the answer.", nil)
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, marker) {
				t.Errorf("the second backend's answer is not in the output: %s", res)
			}
			at := a.attempts()
			if len(at) == 0 || at[0] != first+"=429; "+second+"=ok" {
				t.Errorf("attempts %q: want %s's 429 and %s's answer:\n%s", at, first, second, a.describeInbound())
			}
		})
	}
}

// (c) The fake answers with a call of Gemini CLI's own read_file tool on a
// file in the working directory; the CLI reads it and sends its content
// back, and the final answer to that is printed. The marker is only in the
// file, so a request that carries it carries the tool's result.
func TestAgentGeminiToolCall(t *testing.T) {
	for _, backend := range agentBackends {
		t.Run(backendName(backend), func(t *testing.T) {
			a := newAgentEnv(t, config.Chain{Name: geminiChain, Backends: []string{backend}})
			dir := t.TempDir()
			marker := newMarker(t)
			file := filepath.Join(dir, "notes.txt")
			if err := os.WriteFile(file, []byte("The secret is "+marker+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			final := "Finished: the file says " + marker
			a.up.SetRules(backendModel(backend),
				fakeupstream.Rule{Contains: marker, Behavior: fakeupstream.Behavior{Chunks: []string{"Finished: ", "the file says ", marker}}},
				fakeupstream.Rule{Behavior: fakeupstream.Behavior{ToolCall: true, ToolName: "read_file",
					ToolArgs: `{"file_path":` + jsonString(file) + `}`}},
			)
			res := runGemini(t, a, dir, "Read notes.txt and tell me the secret.", nil)
			t.Logf("requests:\n%s", a.describeInbound())
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, final) {
				t.Errorf("the final answer is not in the output: %s", res)
			}
			carried := false
			for _, r := range a.vendorRequests(backendModel(backend)) {
				carried = carried || strings.Contains(string(r.Body), marker)
			}
			if !carried {
				t.Errorf("no request to %s carried the file's content", backend)
			}
		})
	}
}

// (c) In yolo mode the CLI also offers run_shell_command, and runs the
// command a backend of another dialect calls it with. The command joins the
// marker's parts, so the whole marker is only in the command's output (the
// CLI refuses commands with $(...) or $((...)) in them).
func TestAgentGeminiShellTool(t *testing.T) {
	a := newAgentEnv(t, config.Chain{Name: geminiChain, Backends: []string{agentOpenAI1}})
	id := newMarker(t)
	ran := id + "-42"
	a.up.SetRules(backendModel(agentOpenAI1),
		fakeupstream.Rule{Contains: ran, Behavior: fakeupstream.Behavior{Chunks: []string{"Finished: ", "the command printed ", ran}}},
		fakeupstream.Rule{Behavior: fakeupstream.Behavior{ToolCall: true, ToolName: "run_shell_command",
			ToolArgs: `{"command":` + jsonString(`printf '%s-%s\n' `+id+` 42`) + `,"description":"Print the marker"}`}},
	)
	res := runGemini(t, a, "", "Run the marker command.", nil, "--approval-mode", "yolo")
	t.Logf("requests:\n%s", a.describeInbound())
	res.mustSucceed(t, a)
	if !strings.Contains(res.Stdout, "Finished: the command printed "+ran) {
		t.Errorf("the final answer is not in the output: %s", res)
	}
}

// (d) Every backend breaks its stream after the first chunk. FreeLane has
// committed by then and does not fail over; it ends the stream with
// Google's error object. Gemini CLI retries a broken stream three times,
// printing each attempt's partial text, and must then fail with the error
// rather than end as if the partial answer were complete.
func TestAgentGeminiBrokenStream(t *testing.T) {
	for _, backend := range agentBackends {
		t.Run(backendName(backend), func(t *testing.T) {
			a := newAgentEnv(t, config.Chain{Name: geminiChain, Backends: []string{backend}})
			marker := newMarker(t)
			a.up.SetDefault(fakeupstream.Behavior{Chunks: []string{"Partial ", "answer ", marker}, CutAfter: 1})
			res := runGemini(t, a, "", "Say the answer.", nil)
			t.Logf("outcome: %s\nrequests:\n%s", res, a.describeInbound())
			if res.Exit == 0 || res.TimedOut {
				t.Errorf("Gemini CLI did not fail on a broken stream")
			}
			if strings.Contains(res.Stdout, marker) {
				t.Errorf("the cut answer's end is in the output")
			}
			// The SDK reads the error object as an API error when it
			// arrives in a read of its own, and as a truncated stream when
			// it arrives together with the chunk before it.
			if !strings.Contains(res.Stderr, "answer is incomplete") && !strings.Contains(res.Stderr, "Incomplete JSON segment") {
				t.Errorf("Gemini CLI did not report the broken stream")
			}
		})
	}
}

// With nothing set but the base URL and a key, as a user would start,
// Gemini CLI asks for its own model names (gemini-...), which FreeLane's
// built-in gemini-* alias routes to the default chain. Its default model,
// auto, first asks a small model (not streamed, for JSON that follows a
// schema) how complex the prompt is, to pick the model for the answer; it
// retries that for a minute and a half on answers that are not such JSON,
// so the fake answers it properly.
func TestAgentGeminiDefaultModels(t *testing.T) {
	a := newAgentEnv(t, config.Chain{Name: "mine", Backends: []string{agentAnthropic1}})
	marker := newMarker(t)
	a.up.SetRules(backendModel(agentAnthropic1),
		fakeupstream.Rule{Contains: "complexity_score", Behavior: fakeupstream.Behavior{
			Chunks: []string{`{"complexity_reasoning":"A direct request.","complexity_score":10}`}}},
		fakeupstream.Rule{Behavior: fakeupstream.Behavior{Chunks: []string{"The answer ", "is ", marker}}},
	)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(geminiSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	res := a.run(t, agentCmd{
		Bin:  agentBin(t, "", "gemini"),
		Args: []string{"-p", "Say the answer."},
		Env:  []string{"HOME=" + home, "GOOGLE_GEMINI_BASE_URL=" + a.url, "GEMINI_API_KEY=" + agentKey, "GEMINI_CLI_TRUST_WORKSPACE=true"},
	})
	res.mustSucceed(t, a)
	if !strings.Contains(res.Stdout, marker) {
		t.Errorf("the answer is not in the output: %s", res)
	}
	for _, r := range a.inbound() {
		t.Logf("%s %s -> %d [%s]", r.Method, r.Path, r.Status, r.RespHeader.Get("X-FreeLane-Attempts"))
		if !strings.HasPrefix(r.Path, "/v1beta/models/gemini-") {
			t.Errorf("Gemini CLI asked for %s", r.Path)
		}
	}
}
