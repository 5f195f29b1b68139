package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
)

// Anthropic's own Go SDK, the client Claude-speaking tools are built on,
// calls FreeLane's /v1/messages: the chain behind it is the same mixed one
// of an Anthropic, a Gemini and an OpenAI-compatible backend, so its
// answers arrive relayed, or translated from the other two dialects.

func anthropicClient(e *env) sdk.Client {
	// FreeLane is the only retry layer.
	return sdk.NewClient(option.WithBaseURL(e.base), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

func hello(model string) sdk.MessageNewParams {
	return sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: 256,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Say hello"))}}
}

func TestAnthropicClientsAreServedByEveryDialect(t *testing.T) {
	for _, c := range []struct {
		name   string
		faults []string // models that fail first
		served string
	}{
		{"relayed from anthropic", nil, "claude-x"},
		{"translated from gemini", []string{"claude-x"}, "gemini-y"},
		{"translated from openai", []string{"claude-x", "gemini-y"}, "llama-z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := mixedEnv(t)
			for _, m := range c.faults {
				e.up.SetDefault(fakeupstream.Behavior{})
				e.up.Set(m, fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503})
			}
			cl := anthropicClient(e)
			ctx := context.Background()

			var raw *http.Response
			m, err := cl.Messages.New(ctx, hello("mixed"), option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Content) != 1 || m.Content[0].Text != "Hello from "+c.served || m.StopReason != sdk.StopReasonEndTurn ||
				m.Usage.OutputTokens == 0 {
				t.Fatalf("message %+v", m)
			}
			if !strings.HasSuffix(raw.Header.Get("X-FreeLane-Backend"), "/"+c.served) {
				t.Errorf("served by %q", raw.Header.Get("X-FreeLane-Backend"))
			}

			// Streamed, accumulated by the SDK.
			stream := cl.Messages.NewStreaming(ctx, hello("mixed"))
			var acc sdk.Message
			for stream.Next() {
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Content) != 1 || acc.Content[0].Text != "Hello from "+c.served || acc.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("streamed message %+v", acc)
			}

			// A tool call, streamed, and its result.
			e.up.Set(c.served, fakeupstream.Behavior{ToolCall: true}, fakeupstream.Behavior{})
			params := hello("mixed")
			params.Tools = []sdk.ToolUnionParam{{OfTool: &sdk.ToolParam{Name: "get_weather",
				InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}
			stream = cl.Messages.NewStreaming(ctx, params)
			acc = sdk.Message{}
			for stream.Next() {
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			var call *sdk.ToolUseBlock
			for _, b := range acc.Content {
				if tu, ok := b.AsAny().(sdk.ToolUseBlock); ok {
					call = &tu
				}
			}
			if call == nil || call.Name != "get_weather" || string(call.Input) != `{"city":"Paris"}` || acc.StopReason != sdk.StopReasonToolUse {
				t.Fatalf("tool call %+v in %+v", call, acc)
			}
			params.Messages = append(params.Messages, acc.ToParam(),
				sdk.NewUserMessage(sdk.NewToolResultBlock(call.ID, `{"temp_c":18}`, false)))
			if _, err := cl.Messages.New(ctx, params); err != nil {
				t.Fatalf("tool result turn: %v", err)
			}
		})
	}
}

// Errors reach Anthropic clients in Anthropic's envelope, and a stream
// broken after its first byte ends with an error event, never as a
// complete message.
func TestAnthropicClientsGetAnthropicErrors(t *testing.T) {
	e := mixedEnv(t)
	cl := anthropicClient(e)
	ctx := context.Background()

	_, err := cl.Messages.New(ctx, hello("no-such-model"))
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || !strings.Contains(apiErr.Error(), "not_found_error") {
		t.Fatalf("unknown model: %v", err)
	}

	r := e.do(http.MethodPost, "/v1/messages", `{"model":"mixed","messages":[{"role":"user","content":"hi"}]}`, nil)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"type":"error"`) ||
		!strings.Contains(string(r.body), `"invalid_request_error"`) || !strings.Contains(string(r.body), "max_tokens") {
		t.Fatalf("missing max_tokens: %d %s", r.status, r.body)
	}

	e.up.Set("claude-x", fakeupstream.Behavior{CutAfter: 1})
	stream := cl.Messages.NewStreaming(ctx, hello("mixed"))
	var acc sdk.Message
	for stream.Next() {
		_ = acc.Accumulate(stream.Current())
	}
	if stream.Err() == nil {
		t.Fatalf("a cut stream ended cleanly: %+v", acc)
	}
	if e.up.Calls("gemini-y") != 0 {
		t.Error("the stream failed over after its first byte")
	}
}

// count_tokens is answered offline, the models list comes in Anthropic's
// shape when asked with Anthropic's version header, and the client's
// version and beta headers reach an Anthropic upstream as sent.
func TestAnthropicSideEndpoints(t *testing.T) {
	e := mixedEnv(t)
	cl := anthropicClient(e)
	ctx := context.Background()
	n, err := cl.Messages.CountTokens(ctx, sdk.MessageCountTokensParams{Model: sdk.Model("mixed"),
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Count the tokens of this sentence, please."))}})
	if err != nil || n.InputTokens < 5 || n.InputTokens > 40 {
		t.Fatalf("count_tokens: %+v %v", n, err)
	}
	if e.up.Calls("claude-x")+e.up.Calls("gemini-y")+e.up.Calls("llama-z") != 0 {
		t.Error("count_tokens called an upstream")
	}

	page, err := cl.Models.List(ctx, sdk.ModelListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if !strings.Contains(strings.Join(ids, " "), "mixed") || !strings.Contains(strings.Join(ids, " "), claude) {
		t.Errorf("models %v", ids)
	}

	if _, err := cl.Messages.New(ctx, hello(claude), option.WithHeader("anthropic-beta", "interleaved-thinking-2025-05-14"),
		option.WithHeader("anthropic-version", "2024-01-01")); err != nil {
		t.Fatal(err)
	}
	sent := lastRequest(t, e, "claude-x")
	if sent.Header.Get("Anthropic-Beta") != "interleaved-thinking-2025-05-14" || sent.Header.Get("Anthropic-Version") != "2024-01-01" ||
		sent.Header.Get("X-Api-Key") != "sk-ant-test-key" {
		t.Errorf("headers upstream %v", sent.Header)
	}
}

// The inbound token is read from x-api-key, where Anthropic's clients put
// their key, and a refusal comes in Anthropic's envelope; so do FreeLane's
// own refusals before routing (a paused router, a body of another type).
func TestAnthropicClientsAndFreeLanesOwnRefusals(t *testing.T) {
	const token = "anthropic-inbound-token-0123"
	e := newEnv(t, func(cfg *config.Config) { cfg.Server.Token = token })
	body := `{"model":"main","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	jsonOnly := map[string]string{"Content-Type": "application/json"}
	r := e.raw(http.MethodPost, "/v1/messages", body, jsonOnly)
	if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), `{"type":"error","error":{"type":"authentication_error"`) {
		t.Fatalf("no key: %d %s", r.status, r.body)
	}
	r = e.raw(http.MethodPost, "/v1/messages", body, map[string]string{"Content-Type": "application/json", "X-Api-Key": token})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"type":"message"`) {
		t.Fatalf("with x-api-key: %d %s", r.status, r.body)
	}
	r = e.raw(http.MethodPost, "/v1/messages", body, map[string]string{"Content-Type": "text/plain", "X-Api-Key": token})
	if r.status != http.StatusUnsupportedMediaType || !strings.Contains(string(r.body), `"type":"error"`) {
		t.Fatalf("text/plain: %d %s", r.status, r.body)
	}
	e.g.SetRoutingPaused(true)
	r = e.raw(http.MethodPost, "/v1/messages", body, map[string]string{"Content-Type": "application/json", "X-Api-Key": token})
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), `"type":"error"`) || !strings.Contains(string(r.body), "paused") {
		t.Fatalf("paused: %d %s", r.status, r.body)
	}
	// OpenAI clients keep OpenAI's shape.
	r = e.raw(http.MethodPost, "/v1/chat/completions", `{"model":"main","messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token})
	if r.status != http.StatusServiceUnavailable || r.code() != "freelane_paused" {
		t.Fatalf("paused, OpenAI: %d %s", r.status, r.body)
	}
}
