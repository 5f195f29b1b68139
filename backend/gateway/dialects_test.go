package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/tier"
)

// A chain of three dialects, the way users mix their own Anthropic key, a
// free Gemini tier and a free OpenAI-compatible tier, serves clients that
// speak OpenAI: each backend is sent its vendor's request (the fake
// vendors refuse anything the real APIs refuse) and its answers come back
// as OpenAI answers.

const (
	claude = "claude/claude-x"
	gem    = "gem/gemini-y"
	groq   = "groq/llama-z"
)

func mixedEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, func(cfg *config.Config) {
		base := cfg.Providers[0].BaseURL // the fake's OpenAI wire, .../v1
		gemURL := strings.TrimSuffix(base, "/v1") + "/v1beta"
		cfg.Providers = append(cfg.Providers,
			config.Provider{Name: "claude", Kind: config.KindAnthropic, Tier: tier.Own, BaseURL: base, APIKey: "sk-ant-test-key",
				Models: []config.Model{{ID: "claude-x", Context: 200000, MaxOutput: 8192,
					Capabilities: []string{"tools", "vision", "reasoning"}}}, Timeouts: fastTimeouts},
			config.Provider{Name: "gem", Kind: config.KindGemini, Tier: tier.Free, BaseURL: gemURL, APIKey: "AIza-test-key",
				Models: []config.Model{{ID: "gemini-y", Context: 1000000, MaxOutput: 65536,
					Capabilities: []string{"tools", "vision", "json", "reasoning"}}}, Timeouts: fastTimeouts},
			config.Provider{Name: "groq", Kind: config.KindOpenAI, Tier: tier.Free, BaseURL: base, APIKey: "gsk-test-key",
				Models: []config.Model{{ID: "llama-z", Context: 131072}}, Timeouts: fastTimeouts},
		)
		cfg.Chains = append(cfg.Chains, config.Chain{Name: "mixed", Backends: []string{claude, gem, groq}})
	})
}

// weatherTool is the tool the fake vendors call.
var weatherTool = openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("The weather in a city"),
	Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required": []string{"city"}, "additionalProperties": false},
})

// A one-pixel PNG.
const pixel = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

func TestMixedChainServesOpenAIClients(t *testing.T) {
	e := mixedEnv(t)
	c := sdkClient(e)
	ctx := context.Background()

	// Plain text, not streamed: Anthropic's answer as an OpenAI one.
	var raw *http.Response
	res, err := c.Chat.Completions.New(ctx, userParams("mixed"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Message.Content; got != "Hello from claude-x" {
		t.Fatalf("content %q", got)
	}
	if res.Usage.PromptTokens == 0 || res.Usage.CompletionTokens == 0 || res.Choices[0].FinishReason != "stop" {
		t.Errorf("usage %+v finish %q", res.Usage, res.Choices[0].FinishReason)
	}
	if got := raw.Header.Get("X-FreeLane-Attempts"); got != claude+"=ok" {
		t.Errorf("attempts %q", got)
	}
	sent := lastRequest(t, e, "claude-x")
	if sent.Path != "/v1/messages" || sent.Header.Get("X-Api-Key") != "sk-ant-test-key" || sent.Header.Get("Anthropic-Version") == "" ||
		sent.Header.Get("Authorization") != "" {
		t.Errorf("anthropic request %s with headers %v", sent.Path, sent.Header)
	}
	var body struct {
		System    any `json:"system"`
		MaxTokens int `json:"max_tokens"`
	}
	_ = json.Unmarshal(sent.Body, &body)
	if body.MaxTokens != 8192 {
		t.Errorf("max_tokens %d, want the model's max_output", body.MaxTokens)
	}

	// Streamed, with usage asked for.
	params := userParams("mixed")
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	acc := accumulate(t, c.Chat.Completions.NewStreaming(ctx, params))
	if got := acc.Choices[0].Message.Content; got != "Hello from claude-x" || acc.Usage.CompletionTokens == 0 {
		t.Errorf("stream content %q usage %+v", got, acc.Usage)
	}

	// A tool call with streamed arguments, then the tool's result.
	params = userParams("mixed")
	params.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	e.up.Set("claude-x", fakeupstream.Behavior{ToolCall: true}, fakeupstream.Behavior{})
	acc = accumulate(t, c.Chat.Completions.NewStreaming(ctx, params))
	calls := acc.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Paris"}` ||
		calls[0].ID == "" || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("tool calls %+v, finish %q", calls, acc.Choices[0].FinishReason)
	}
	params.Messages = append(params.Messages, acc.Choices[0].Message.ToParam(), openai.ToolMessage(`{"temp_c":18}`, calls[0].ID))
	res, err = c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatalf("tool result turn: %v", err)
	}
	if res.Choices[0].Message.Content == "" {
		t.Error("no answer to the tool result")
	}
	sent = lastRequest(t, e, "claude-x")
	if !strings.Contains(string(sent.Body), `"tool_result"`) || !strings.Contains(string(sent.Body), `"tool_use_id":"`+calls[0].ID+`"`) {
		t.Errorf("the tool result did not reach Anthropic as one: %s", sent.Body)
	}

	// An image.
	params = openai.ChatCompletionNewParams{Model: "mixed", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in this picture?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: pixel}),
		}),
	}}
	if _, err := c.Chat.Completions.New(ctx, params); err != nil {
		t.Fatalf("image: %v", err)
	}
	sent = lastRequest(t, e, "claude-x")
	if !strings.Contains(string(sent.Body), `"type":"base64"`) || !strings.Contains(string(sent.Body), `"media_type":"image/png"`) {
		t.Errorf("the image did not reach Anthropic inline: %s", sent.Body)
	}
}

// Each fault of one backend moves the request on to the next, whatever
// dialect either speaks, streamed or not; the client sees one clean answer.
func TestMixedChainFailsOverOnEveryFault(t *testing.T) {
	faults := []struct {
		name string
		b    fakeupstream.Behavior
		// word is how the attempt shows in X-FreeLane-Attempts.
		word string
	}{
		{"429", fakeupstream.Behavior{Status: 429, Headers: map[string]string{"Retry-After": "30"}}, "429"},
		{"500", fakeupstream.Behavior{Status: 500}, "500"},
		{"529 overloaded", fakeupstream.Behavior{Status: 529}, "529"},
		{"401", fakeupstream.Behavior{Status: 401}, "401"},
		{"404", fakeupstream.Behavior{Status: 404}, "404"},
		{"reset", fakeupstream.Behavior{Reset: true}, "transient"},
		{"no answer", fakeupstream.Behavior{Hang: true}, "transient"},
		{"slow first token", fakeupstream.Behavior{FirstTokenDelay: 2 * time.Second}, "transient"},
		{"empty", fakeupstream.Behavior{Empty: true}, "soft"},
		{"error before content", fakeupstream.Behavior{ErrorEvent: fakeupstream.ErrorServer}, "transient"},
	}
	for _, f := range faults {
		for _, stream := range []bool{true, false} {
			if !stream && (f.name == "slow first token" || f.name == "error before content") {
				continue // stream faults
			}
			t.Run(fmt.Sprintf("%s/stream=%v", f.name, stream), func(t *testing.T) {
				e := mixedEnv(t)
				c := sdkClient(e)
				e.up.Set("claude-x", f.b)
				e.up.Set("gemini-y", f.b)
				var raw *http.Response
				var content string
				if stream {
					acc := accumulate(t, c.Chat.Completions.NewStreaming(context.Background(), userParams("mixed"), option.WithResponseInto(&raw)))
					content = acc.Choices[0].Message.Content
				} else {
					res, err := c.Chat.Completions.New(context.Background(), userParams("mixed"), option.WithResponseInto(&raw))
					if err != nil {
						t.Fatal(err)
					}
					content = res.Choices[0].Message.Content
				}
				if content != "Hello from llama-z" {
					t.Errorf("content %q", content)
				}
				want := fmt.Sprintf("%s=%s; %s=%s; %s=ok", claude, f.word, gem, f.word, groq)
				if got := raw.Header.Get("X-FreeLane-Attempts"); got != want {
					t.Errorf("attempts %q, want %q", got, want)
				}
			})
		}
	}
}

// Once a translated stream has reached the client it stays with its
// backend: a cut afterwards ends the client's stream with an error, and no
// other backend is asked.
func TestMixedChainKeepsTheStreamRule(t *testing.T) {
	for _, b := range []string{"claude-x", "gemini-y"} {
		t.Run(b, func(t *testing.T) {
			e := mixedEnv(t)
			c := sdkClient(e)
			if b == "gemini-y" {
				e.up.Set("claude-x", fakeupstream.Behavior{Status: 503})
			}
			e.up.Set(b, fakeupstream.Behavior{CutAfter: 1})
			stream := c.Chat.Completions.NewStreaming(context.Background(), userParams("mixed"))
			var got string
			for stream.Next() {
				if ch := stream.Current(); len(ch.Choices) > 0 {
					got += ch.Choices[0].Delta.Content
				}
			}
			if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "incomplete") {
				t.Fatalf("err %v after %q", err, got)
			}
			if got != "Hello" {
				t.Errorf("content before the cut %q", got)
			}
			if n := e.up.Calls("llama-z"); n != 0 {
				t.Errorf("the next backend was called %d times after the commit", n)
			}
		})
	}
}

// Embeddings and other requests a backend cannot serve pass it by without
// calling it.
func TestMixedChainSkipsWhatABackendCannotServe(t *testing.T) {
	e := mixedEnv(t)
	r := e.post("/v1/embeddings", `{"model":"mixed","input":"hello"}`)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	want := claude + "=skip(unsupported); " + gem + "=skip(unsupported); " + groq + "=ok"
	if got := r.attempts(); got != want {
		t.Errorf("attempts %q, want %q", got, want)
	}
	if e.up.Calls("claude-x")+e.up.Calls("gemini-y") != 0 {
		t.Error("a chat-only backend was sent an embeddings request")
	}
}

// The Node OpenAI SDK, the other official client, streams a tool call and
// its result through the same chain while the first backend fails.
func TestMixedChainNodeSDK(t *testing.T) {
	dir, err := filepath.Abs("testdata/clients")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Fatalf("the Node client libraries are not installed: run `make deps-test` (%v)", err)
	}
	e := mixedEnv(t)
	e.up.Set("claude-x", fakeupstream.Behavior{Status: 529})
	e.up.Set("gemini-y", fakeupstream.Behavior{ToolCall: true}, fakeupstream.Behavior{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "openai-chain.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FREELANE_URL="+e.base+"/v1", "FREELANE_MODEL=mixed", "IMAGE_URL="+pixel)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Streamed   string `json:"streamed"`
		ToolName   string `json:"tool_name"`
		ToolArgs   string `json:"tool_args"`
		Finish     string `json:"finish"`
		AfterTool  string `json:"after_tool"`
		ImageReply string `json:"image_reply"`
		Backends   []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	if got.ToolName != "get_weather" || got.ToolArgs != `{"city":"Paris"}` || got.Finish != "tool_calls" {
		t.Errorf("tool call %+v", got)
	}
	if got.AfterTool == "" || got.ImageReply == "" || got.Streamed == "" {
		t.Errorf("answers %+v", got)
	}
	for _, b := range got.Backends {
		if b != gem {
			t.Errorf("served by %q, want %s after claude's 529s", b, gem)
		}
	}
	answered := false
	for _, r := range e.up.Requests() {
		answered = answered || r.Model == "gemini-y" && strings.Contains(string(r.Body), `"functionResponse"`)
	}
	if !answered {
		t.Error("the tool result did not reach Gemini as a functionResponse")
	}
}

func accumulate(t *testing.T, stream interface {
	Next() bool
	Current() openai.ChatCompletionChunk
	Err() error
}) openai.ChatCompletionAccumulator {
	t.Helper()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) == 0 {
		t.Fatal("no choices in the stream")
	}
	return acc
}

// lastRequest is the last request the fake received for model.
func lastRequest(t *testing.T, e *env, model string) fakeupstream.Request {
	t.Helper()
	rs := e.up.Requests()
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Model == model {
			return rs[i]
		}
	}
	t.Fatalf("no request for %s", model)
	return fakeupstream.Request{}
}

// Anthropic's rate-limit headers teach FreeLane the key's limits as
// OpenAI's do: a backend that said it has no requests left is passed by
// until the reset it named, and a 429's retry-after cools it down.
func TestAnthropicRateLimitHeadersAreLearned(t *testing.T) {
	e := mixedEnv(t)
	e.clock.Freeze()
	reset := e.clock.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	e.up.Set("claude-x", fakeupstream.Behavior{Headers: map[string]string{
		"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0",
		"anthropic-ratelimit-requests-reset": reset,
	}}, fakeupstream.Behavior{})
	if r := e.post("/v1/chat/completions", chat("mixed", false)); r.header.Get("X-FreeLane-Backend") != claude {
		t.Fatalf("first: %d %q %s", r.status, r.attempts(), r.body)
	}
	if r := e.post("/v1/chat/completions", chat("mixed", false)); r.attempts() != claude+"=skip(quota); "+gem+"=ok" {
		t.Fatalf("after Anthropic said 0 remaining: %q", r.attempts())
	}
	q := e.state().quota(claude)
	// The header is in whole seconds.
	if !q.Exhausted || len(q.Limits) != 1 || !q.Limits[0].Learned || q.Limits[0].Limit != 50 ||
		q.Limits[0].ResetsAt == nil || q.Limits[0].ResetsAt.Format(time.RFC3339) != reset {
		t.Fatalf("learned view: %+v %+v", q, q.Limits)
	}
	e.clock.Advance(2*time.Hour + time.Second)

	e.up.Set("claude-x", fakeupstream.Behavior{Status: 429, Headers: map[string]string{"retry-after": "40"}}, fakeupstream.Behavior{})
	if r := e.post("/v1/chat/completions", chat("mixed", false)); r.attempts() != claude+"=429; "+gem+"=ok" {
		t.Fatalf("429: %q", r.attempts())
	}
	if r := e.post("/v1/chat/completions", chat("mixed", false)); !strings.HasPrefix(r.attempts(), claude+"=skip(") {
		t.Fatalf("during the cooldown: %q", r.attempts())
	}
	e.clock.Advance(41 * time.Second)
	if r := e.post("/v1/chat/completions", chat("mixed", false)); r.header.Get("X-FreeLane-Backend") != claude {
		t.Fatalf("after the cooldown: %q", r.attempts())
	}
}

// A provider of another protocol refusing the request is the caller's
// problem: no failover, and its own message comes back in OpenAI's error
// shape, as does Gemini's safety block.
func TestMixedChainCallerErrorsInTheClientsShape(t *testing.T) {
	for _, c := range []struct {
		name    string
		set     func(e *env)
		attempt string
		message string
	}{
		{"anthropic 400", func(e *env) { e.up.Set("claude-x", fakeupstream.Behavior{Status: 400}) },
			claude + "=400", "claude/claude-x rejected the request: HTTP 400: "},
		{"gemini safety block", func(e *env) {
			e.up.Set("claude-x", fakeupstream.Behavior{Status: 503})
			e.up.Set("gemini-y", fakeupstream.Behavior{Blocked: "SAFETY"})
		}, claude + "=503; " + gem + "=400", "gem/gemini-y rejected the request: the request was blocked by Gemini's safety filters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := mixedEnv(t)
			c.set(e)
			for _, stream := range []bool{false, true} {
				r := e.post("/v1/chat/completions", chat("mixed", stream))
				var body struct {
					Error struct {
						Message string `json:"message"`
						Type    string `json:"type"`
						Code    string `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal(r.body, &body); err != nil || r.status != http.StatusBadRequest {
					t.Fatalf("stream=%v: %d %s", stream, r.status, r.body)
				}
				if !strings.HasPrefix(body.Error.Message, c.message) || body.Error.Type != "invalid_request_error" ||
					body.Error.Code != "upstream_rejected_request" {
					t.Errorf("stream=%v: error %+v", stream, body.Error)
				}
				if r.attempts() != c.attempt {
					t.Errorf("stream=%v: attempts %q, want %q", stream, r.attempts(), c.attempt)
				}
				e.clock.Advance(2 * time.Minute) // past any cooldown
			}
			if e.up.Calls("llama-z") != 0 {
				t.Error("a caller error failed over")
			}
		})
	}
}

// Quirks are data: parameters a provider or model rejects are left out,
// reasoning is only asked of models that declare it, and max_tokens is
// lowered to the model's max_output, whatever dialect the backend speaks.
func TestQuirksFromTheConfig(t *testing.T) {
	e := newEnv(t, func(cfg *config.Config) {
		base := cfg.Providers[0].BaseURL
		cfg.Providers = append(cfg.Providers,
			config.Provider{Name: "quirky", Kind: config.KindOpenAI, Tier: tier.Free, BaseURL: base, APIKey: "k-quirky-0123456789",
				DropParams: []string{"parallel_tool_calls"},
				Models: []config.Model{{ID: "plain", MaxOutput: 1000, Capabilities: []string{"tools"}},
					{ID: "thinker", MaxOutput: 1000, Capabilities: []string{"tools", "reasoning"}, DropParams: []string{"seed"}}},
				Timeouts: fastTimeouts},
			config.Provider{Name: "claude", Kind: config.KindAnthropic, Tier: tier.Own, BaseURL: base, APIKey: "sk-ant-quirks-0123",
				Models: []config.Model{{ID: "claude-x", MaxOutput: 2000, Capabilities: []string{"tools"}}}, Timeouts: fastTimeouts},
		)
	})
	const body = `{"model":%q,"max_tokens":5000,"seed":7,"reasoning_effort":"high","parallel_tool_calls":false,"messages":[{"role":"user","content":"hi"}]}`
	sent := func(model, upstream string) map[string]any {
		t.Helper()
		if r := e.post("/v1/chat/completions", fmt.Sprintf(body, model)); r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", model, r.status, r.body)
		}
		var got map[string]any
		if err := json.Unmarshal(lastRequest(t, e, upstream).Body, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := sent("quirky/plain", "plain")
	if _, ok := got["parallel_tool_calls"]; ok {
		t.Error("the provider's dropped parameter was sent")
	}
	if _, ok := got["reasoning_effort"]; ok {
		t.Error("reasoning_effort was sent to a model that does not reason")
	}
	if got["max_tokens"] != float64(1000) || got["seed"] != float64(7) {
		t.Errorf("max_tokens %v seed %v", got["max_tokens"], got["seed"])
	}
	got = sent("quirky/thinker", "thinker")
	if got["reasoning_effort"] != "high" {
		t.Errorf("reasoning_effort %v, want it kept for a reasoning model", got["reasoning_effort"])
	}
	if _, ok := got["seed"]; ok {
		t.Error("the model's dropped parameter was sent")
	}
	got = sent("claude/claude-x", "claude-x")
	if got["max_tokens"] != float64(2000) {
		t.Errorf("anthropic max_tokens %v, want the model's max_output", got["max_tokens"])
	}
	if _, ok := got["thinking"]; ok {
		t.Error("thinking was asked of a model that does not reason")
	}
}
