package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"freelane/backend/internal/fakeupstream"
)

// The official OpenAI Go SDK is the client here, as it is for many users:
// whatever FreeLane sends must be something it parses.

func sdkClient(e *env) openai.Client {
	// The SDK retries by itself; FreeLane must be the only retry layer, so
	// the test turns that off to see FreeLane's own answer.
	return openai.NewClient(option.WithBaseURL(e.base+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

func userParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello")},
	}
}

func TestSDKChat(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{Status: 503})
	c := sdkClient(e)
	var raw *http.Response
	res, err := c.Chat.Completions.New(context.Background(), userParams("auto"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != "Hello from mb" || res.Model != "mb" {
		t.Errorf("got %q from %q", res.Choices[0].Message.Content, res.Model)
	}
	if res.Usage.TotalTokens == 0 {
		t.Error("usage not passed through")
	}
	if got := raw.Header.Get("X-FreeLane-Attempts"); got != "a/ma=503; b/mb=ok" {
		t.Errorf("attempts %q", got)
	}
}

func TestSDKStream(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{CutAfter: -1})
	c := sdkClient(e)
	params := userParams("main")
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello from mb" {
		t.Errorf("content %q", got)
	}
	if acc.Usage.CompletionTokens == 0 {
		t.Error("usage chunk not delivered though the client asked")
	}
}

func TestSDKToolCall(t *testing.T) {
	e := newEnv(t, nil)
	e.up.Set("ma", fakeupstream.Behavior{ToolCall: true})
	c := sdkClient(e)
	params := userParams("main")
	params.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name:       "get_weather",
		Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	})}
	// Non-stream.
	res, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	tc := res.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].Function.Name != "get_weather" || tc[0].Function.Arguments != `{"city":"Paris"}` {
		t.Errorf("tool calls %+v", tc)
	}
	if !strings.Contains(string(e.up.Requests()[0].Body), `"get_weather"`) {
		t.Error("tools not passed upstream")
	}
	// Stream.
	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	calls := acc.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Arguments != `{"city":"Paris"}` {
		t.Errorf("streamed tool calls %+v", calls)
	}
}

func TestSDKErrors(t *testing.T) {
	e := newEnv(t, nil)
	for _, m := range []string{"ma", "mb", "mc"} {
		e.up.Set(m, fakeupstream.Behavior{Status: 429})
	}
	c := sdkClient(e)
	_, err := c.Chat.Completions.New(context.Background(), userParams("main"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %T %v", err, err)
	}
	if apiErr.StatusCode != 429 || apiErr.Code != "all_backends_rate_limited" || !strings.Contains(apiErr.Message, "a/ma: HTTP 429") {
		t.Errorf("got %d %q %q", apiErr.StatusCode, apiErr.Code, apiErr.Message)
	}

	_, err = c.Chat.Completions.New(context.Background(), userParams("no-such-model"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model: %v", err)
	}

	// A stream broken after it started surfaces as an error in the SDK, not
	// as a short but complete answer.
	e.up.Set("ma", fakeupstream.Behavior{CutAfter: 1})
	e.clock.Advance(2 * 60 * 1e9)
	stream := c.Chat.Completions.NewStreaming(context.Background(), userParams("main"))
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("broken stream: err %v", err)
	}
}
