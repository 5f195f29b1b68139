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

// Claude Code (@anthropic-ai/claude-code, a native binary) speaks
// Anthropic's Messages API, always streamed, to ANTHROPIC_BASE_URL; these
// tests serve it from backends of every dialect through FreeLane.

// claudeChain is the chain the Claude Code tests name as every model the
// CLI may ask for: its main model and the small one it uses for side
// tasks.
const claudeChain = "agent"

// claudeEnv is the environment that points Claude Code at a and keeps it
// from sending anything but the requests a session needs.
func claudeEnv(a *agentEnv) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + a.url,
		"ANTHROPIC_API_KEY=" + agentKey,
		"ANTHROPIC_MODEL=" + claudeChain,
		"ANTHROPIC_SMALL_FAST_MODEL=" + claudeChain,
		"ANTHROPIC_DEFAULT_HAIKU_MODEL=" + claudeChain,
		"ANTHROPIC_DEFAULT_SONNET_MODEL=" + claudeChain,
		"ANTHROPIC_DEFAULT_OPUS_MODEL=" + claudeChain,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_ENABLE_TELEMETRY=0",
		"DISABLE_UPDATES=1",
	}
}

// runClaude runs Claude Code in print mode (-p) on prompt with extra
// arguments and environment, in dir (a fresh directory when empty).
func runClaude(t *testing.T, a *agentEnv, dir, prompt string, env []string, args ...string) agentResult {
	t.Helper()
	return a.run(t, agentCmd{
		Bin:  agentBin(t, "", "claude"),
		Args: append([]string{"-p", prompt, "--model", claudeChain, "--output-format", "text"}, args...),
		Env:  append(claudeEnv(a), env...),
		Dir:  dir,
	})
}

// backendName is the part of a backend reference that names its provider,
// the subtest name for the backend's dialect.
func backendName(backend string) string { return strings.SplitN(backend, "/", 2)[0] }

// backendModel is the model id of a backend reference, the name the fake
// vendor scripts it by.
func backendModel(backend string) string { return strings.SplitN(backend, "/", 2)[1] }

// agentBackends are one backend of each dialect.
var agentBackends = []string{agentAnthropic1, agentOpenAI1, agentGemini1}

// (a) A plain answer from a backend of each dialect is printed.
func TestAgentClaudePlain(t *testing.T) {
	for _, backend := range agentBackends {
		t.Run(backendName(backend), func(t *testing.T) {
			a := newAgentEnv(t, config.Chain{Name: claudeChain, Backends: []string{backend}})
			marker := newMarker(t)
			a.up.SetDefault(fakeupstream.Behavior{Chunks: []string{"The answer ", "is ", marker}})
			res := runClaude(t, a, "", "Say the answer.", nil)
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, marker) {
				t.Errorf("the answer is not in the output: %s", res)
			}
			if len(a.vendorRequests(backendModel(backend))) == 0 {
				t.Errorf("%s was not asked", backend)
			}
			if at := a.attempts(); len(at) == 0 || at[len(at)-1] != backend+"=ok" {
				t.Errorf("attempts %q", at)
			}
			t.Logf("requests:\n%s", a.describeInbound())
		})
	}
}

// (b) The first backend of the chain is rate limited on every request; the
// second, of another dialect, serves the stream, and FreeLane's attempts
// header tells of the 429.
func TestAgentClaudeFailover(t *testing.T) {
	for _, pair := range [][2]string{{agentAnthropic1, agentGemini1}, {agentOpenAI1, agentAnthropic1}, {agentGemini1, agentOpenAI1}} {
		first, second := pair[0], pair[1]
		t.Run(backendName(first)+"-"+backendName(second), func(t *testing.T) {
			a := newAgentEnv(t, config.Chain{Name: claudeChain, Backends: []string{first, second}})
			marker := newMarker(t)
			a.up.Set(backendModel(first), fakeupstream.Behavior{Status: 429})
			a.up.Set(backendModel(second), fakeupstream.Behavior{Chunks: []string{"Served ", "by the second: ", marker}})
			res := runClaude(t, a, "", "Say the answer.", nil)
			res.mustSucceed(t, a)
			if !strings.Contains(res.Stdout, marker) {
				t.Errorf("the second backend's answer is not in the output: %s", res)
			}
			// Claude Code may ask twice (see the system-role fallback in
			// the plain test's log); by then the first backend may rest
			// after its 429 and be skipped, so the 429 shows in some
			// answer's attempts and the last answer came from the second.
			at := a.attempts()
			rateLimited := false
			for _, h := range at {
				rateLimited = rateLimited || strings.HasPrefix(h, first+"=429; ")
			}
			if !rateLimited || len(at) == 0 || !strings.HasSuffix(at[len(at)-1], second+"=ok") {
				t.Errorf("attempts %q: want %s's 429 and %s's answer:\n%s", at, first, second, a.describeInbound())
			}
		})
	}
}

// (c) The fake answers with a call of Claude Code's own Bash tool; Claude
// Code runs the command and sends its output back, and the final answer
// to that is printed. The command computes part of the marker, so the
// marker as a whole is only in a request that carries the tool's result.
func TestAgentClaudeToolCall(t *testing.T) {
	for _, backend := range agentBackends {
		t.Run(backendName(backend), func(t *testing.T) {
			a := newAgentEnv(t, config.Chain{Name: claudeChain, Backends: []string{backend}})
			id := newMarker(t)
			command := `echo "` + id + `-$((6*7))"`
			ran := id + "-42"
			final := "Finished: the command printed " + ran
			a.up.SetRules(backendModel(backend),
				fakeupstream.Rule{Contains: ran, Behavior: fakeupstream.Behavior{Chunks: []string{"Finished: ", "the command printed ", ran}}},
				fakeupstream.Rule{Behavior: fakeupstream.Behavior{ToolCall: true, ToolName: "Bash",
					ToolArgs: `{"command":` + jsonString(command) + `,"description":"Print the marker"}`}},
			)
			res := runClaude(t, a, "", "Run the marker command.", nil, "--allowedTools", "Bash")
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

// (d) The stream breaks after its first chunk. FreeLane has committed to
// the backend by then and does not fail over, so Claude Code sees a broken
// stream (FreeLane ends it with an Anthropic error event). Claude Code then
// asks again without streaming; the fake resets that connection too, so
// every attempt fails and Claude Code must fail, not print the partial
// answer as a complete one. With the fallback off the stream's own error
// is what it reports.
func TestAgentClaudeBrokenStream(t *testing.T) {
	for _, backend := range agentBackends {
		for _, fallback := range []bool{true, false} {
			name := backendName(backend)
			var env []string
			if !fallback {
				name += "-nofallback"
				env = append(env, "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK=1")
			}
			t.Run(name, func(t *testing.T) {
				a := newAgentEnv(t, config.Chain{Name: claudeChain, Backends: []string{backend}})
				marker := newMarker(t)
				chunks := []string{"Partial ", "answer ", marker}
				cut := fakeupstream.Behavior{Chunks: chunks, CutAfter: 1}
				reset := fakeupstream.Behavior{Reset: true}
				if backend == agentGemini1 {
					// Gemini streams by path, not by a body field, so the
					// script goes by order: the first request is the stream.
					a.up.Set(backendModel(backend), cut, reset)
				} else {
					a.up.SetRules(backendModel(backend),
						fakeupstream.Rule{Contains: `"stream":true`, Behavior: cut},
						fakeupstream.Rule{Behavior: reset},
					)
				}
				res := runClaude(t, a, "", "Say the answer.", append(env, "CLAUDE_CODE_MAX_RETRIES=1"))
				t.Logf("outcome: %s\nrequests:\n%s", res, a.describeInbound())
				if res.Exit == 0 || res.TimedOut {
					t.Errorf("Claude Code did not fail on a broken stream")
				}
				if strings.Contains(res.Stdout, marker) {
					t.Errorf("the cut answer's end is in the output")
				}
				if !fallback && !strings.Contains(res.Stdout+res.Stderr, "incomplete") {
					t.Errorf("Claude Code did not report the stream's error")
				}
			})
		}
	}
}

// With nothing set but the base URL and a key, as a user would start,
// Claude Code asks for its own model names (claude-...), which FreeLane's
// built-in claude-* alias routes to the default chain.
func TestAgentClaudeDefaultModels(t *testing.T) {
	a := newAgentEnv(t, config.Chain{Name: "mine", Backends: []string{agentGemini1}})
	marker := newMarker(t)
	a.up.SetDefault(fakeupstream.Behavior{Chunks: []string{"The answer ", "is ", marker}})
	res := a.run(t, agentCmd{
		Bin:  agentBin(t, "", "claude"),
		Args: []string{"-p", "Say the answer."},
		Env: []string{"ANTHROPIC_BASE_URL=" + a.url, "ANTHROPIC_API_KEY=" + agentKey,
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_UPDATES=1"},
	})
	res.mustSucceed(t, a)
	if !strings.Contains(res.Stdout, marker) {
		t.Errorf("the answer is not in the output: %s", res)
	}
	for _, r := range a.inbound() {
		t.Logf("%s %s model %s -> %d [%s]", r.Method, r.Path, jsonField(r.Body, "model"), r.Status, r.RespHeader.Get("X-FreeLane-Attempts"))
		if m := jsonField(r.Body, "model"); r.Method == "POST" && !strings.HasPrefix(m, "claude-") {
			t.Errorf("Claude Code asked for %q", m)
		}
	}
}

// Claude Code's model discovery (CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY)
// reads GET /v1/models from the gateway and keeps only ids that start with
// "claude": FreeLane's chains are listed to it as claude-freelane-NAME,
// which the /model picker then offers and which route to the chain.
func TestAgentClaudeModelDiscovery(t *testing.T) {
	a := newAgentEnv(t, config.Chain{Name: "auto2", Backends: []string{agentOpenAI1}},
		config.Chain{Name: claudeChain, Backends: []string{agentGemini1}})
	marker := newMarker(t)
	a.up.SetDefault(fakeupstream.Behavior{Chunks: []string{"The answer ", "is ", marker}})
	home := t.TempDir()
	res := a.run(t, agentCmd{
		Bin:  agentBin(t, "", "claude"),
		Args: []string{"-p", "Say the answer.", "--model", "claude-freelane-" + claudeChain, "--output-format", "text"},
		Env: []string{"HOME=" + home, "ANTHROPIC_BASE_URL=" + a.url, "ANTHROPIC_API_KEY=" + agentKey,
			"CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1", "CLAUDE_CODE_ENABLE_TELEMETRY=0", "DISABLE_UPDATES=1"},
	})
	res.mustSucceed(t, a)
	if !strings.Contains(res.Stdout, marker) {
		t.Errorf("the answer is not in the output: %s", res)
	}
	if len(a.vendorRequests(backendModel(agentGemini1))) == 0 {
		t.Errorf("claude-freelane-%s did not reach the chain's backend %s:\n%s", claudeChain, agentGemini1, a.describeInbound())
	}
	var listed bool
	for _, r := range a.inbound() {
		if r.Method == "GET" && r.Path == "/v1/models" {
			listed = true
			if !strings.Contains(string(r.RespBody), `"id":"claude-freelane-`+claudeChain+`"`) {
				t.Errorf("the model list Claude Code read: %s", r.RespBody)
			}
		}
	}
	if !listed {
		t.Fatalf("Claude Code did not ask for the model list:\n%s", a.describeInbound())
	}
	cache, err := os.ReadFile(filepath.Join(home, ".claude", "cache", "gateway-models.json"))
	if err != nil {
		t.Fatalf("Claude Code kept no discovered models: %v", err)
	}
	for _, want := range []string{"claude-freelane-auto2", "claude-freelane-" + claudeChain} {
		if !strings.Contains(string(cache), want) {
			t.Errorf("Claude Code's discovered models lack %s: %s", want, cache)
		}
	}
}
