package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/internal/fakeupstream"
)

// Anthropic's and Google's official Node SDKs call FreeLane's Anthropic and
// Gemini endpoints with a chain of three dialects behind them: each reads
// answers translated from another dialect as its own, tool calls included,
// and a stream that breaks after FreeLane committed to it as an error.

// runNodeClient runs one script of testdata/clients against e with model
// and decodes the JSON object it prints into out.
func runNodeClient(t *testing.T, e *env, script, url, model string, out any) {
	t.Helper()
	dir, err := filepath.Abs("testdata/clients")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@google", "genai")); err != nil {
		t.Fatalf("the Node client libraries are not installed: run `make deps-test` (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FREELANE_URL="+url, "FREELANE_MODEL="+model)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s%s", script, err, stdout, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("output %s: %v", stdout, err)
	}
}

// The Node Anthropic SDK, with the chain's Anthropic backend overloaded, is
// served by its Gemini backend.
func TestNodeAnthropicSDK(t *testing.T) {
	e := mixedEnv(t)
	e.up.Set("claude-x", fakeupstream.Behavior{Status: 529})
	e.up.SetRules("gemini-y",
		fakeupstream.Rule{Contains: "Break please", Behavior: fakeupstream.Behavior{CutAfter: 1}},
		fakeupstream.Rule{Contains: `"functionDeclarations"`, Lacks: `"functionResponse"`, Behavior: fakeupstream.Behavior{ToolCall: true}},
	)
	var got struct {
		Plain       string          `json:"plain"`
		PlainStop   string          `json:"plain_stop"`
		PlainUsage  int             `json:"plain_usage"`
		Streamed    string          `json:"streamed"`
		Deltas      string          `json:"deltas"`
		ToolName    string          `json:"tool_name"`
		ToolInput   json.RawMessage `json:"tool_input"`
		ToolStop    string          `json:"tool_stop"`
		AfterTool   string          `json:"after_tool"`
		Broken      string          `json:"broken"`
		BrokenError string          `json:"broken_error"`
		Backends    []string        `json:"backends"`
	}
	runNodeClient(t, e, "anthropic-chain.mjs", e.base, "mixed", &got)
	const hello = "Hello from gemini-y"
	if got.Plain != hello || got.PlainStop != "end_turn" || got.PlainUsage == 0 || len(got.Backends) != 1 || got.Backends[0] != gem {
		t.Errorf("plain %+v", got)
	}
	if got.Streamed != hello || got.Deltas != hello {
		t.Errorf("streamed %q, deltas %q", got.Streamed, got.Deltas)
	}
	if got.ToolName != "get_weather" || string(got.ToolInput) != `{"city":"Paris"}` || got.ToolStop != "tool_use" || got.AfterTool != hello {
		t.Errorf("tool round %+v", got)
	}
	if got.Broken != "Hello" || !strings.Contains(got.BrokenError, "incomplete") {
		t.Errorf("broken stream %q, error %q", got.Broken, got.BrokenError)
	}
	answered := false
	for _, r := range e.up.Requests() {
		answered = answered || r.Model == "gemini-y" && strings.Contains(string(r.Body), `"functionResponse"`)
	}
	if !answered {
		t.Error("the tool result did not reach Gemini as a functionResponse")
	}
}

// Google's Node SDK, at /v1beta and at /v1, is served by the chain's
// Anthropic backend.
func TestNodeGenAISDK(t *testing.T) {
	e := mixedEnv(t)
	e.up.SetRules("claude-x",
		fakeupstream.Rule{Contains: "Break please", Behavior: fakeupstream.Behavior{CutAfter: 1}},
		fakeupstream.Rule{Contains: `"tools"`, Lacks: `"tool_result"`, Behavior: fakeupstream.Behavior{ToolCall: true}},
	)
	var got map[string]struct {
		Plain       string          `json:"plain"`
		Finish      string          `json:"finish"`
		Usage       int             `json:"usage"`
		Streamed    string          `json:"streamed"`
		CallName    string          `json:"call_name"`
		CallArgs    json.RawMessage `json:"call_args"`
		AfterCall   string          `json:"after_call"`
		Broken      string          `json:"broken"`
		BrokenError string          `json:"broken_error"`
	}
	rec := startRecorder(t, e.base)
	runNodeClient(t, e, "genai-chain.mjs", rec.url, "mixed", &got)
	const hello = "Hello from claude-x"
	for _, version := range []string{"v1beta", "v1"} {
		r, ok := got[version]
		if !ok {
			t.Fatalf("no results for %s: %v", version, got)
		}
		if r.Plain != hello || r.Finish != "STOP" || r.Usage == 0 || r.Streamed != hello {
			t.Errorf("%s: answers %+v", version, r)
		}
		if r.CallName != "get_weather" || string(r.CallArgs) != `{"city":"Paris"}` || r.AfterCall != hello {
			t.Errorf("%s: function call %+v", version, r)
		}
		// The SDK reads FreeLane's closing error object as an error, not
		// the cut answer as a short one.
		if r.Broken != "Hello" || !strings.Contains(r.BrokenError, "incomplete") && !strings.Contains(r.BrokenError, "Incomplete JSON") {
			t.Errorf("%s: broken stream %q, error %q", version, r.Broken, r.BrokenError)
		}
	}
	paths := map[string]int{}
	for _, r := range rec.inbound() {
		paths[r.Path+"?"+r.RawQuery]++
	}
	for _, version := range []string{"v1beta", "v1"} {
		if paths["/"+version+"/models/mixed:generateContent?"] != 2 || paths["/"+version+"/models/mixed:streamGenerateContent?alt=sse"] != 3 {
			t.Errorf("%s: the SDK asked for %v", version, paths)
		}
	}
	answered := false
	for _, r := range e.up.Requests() {
		answered = answered || r.Model == "claude-x" && strings.Contains(string(r.Body), `"tool_result"`)
	}
	if !answered {
		t.Error("the function response did not reach Anthropic as a tool_result")
	}
}
