package anthropic

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// The official client reads what FreeLane writes: answers, streams and
// requests.

func TestSDKReadsAnswer(t *testing.T) {
	a := &llm.Answer{
		ID:    "upstream-1",
		Model: "m",
		Parts: []llm.Part{
			{Kind: llm.PartReasoning, Text: "thinking it over", Signature: "sig"},
			{Kind: llm.PartText, Text: "Calling the tool."},
			{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"city": "Oslo"}`}},
		},
		Finish: llm.FinishToolCalls,
		Usage:  &llm.Usage{PromptTokens: 30, CompletionTokens: 12, TotalTokens: 42},
	}
	body, err := Codec.EncodeResponse(a, protocol.ResponseOptions{ID: "abc", Model: "freelane/auto"})
	if err != nil {
		t.Fatal(err)
	}
	var m sdk.Message
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("the SDK cannot read the answer: %v\n%s", err, body)
	}
	for name, f := range map[string]interface{ Valid() bool }{
		"id": m.JSON.ID, "type": m.JSON.Type, "role": m.JSON.Role, "model": m.JSON.Model,
		"content": m.JSON.Content, "stop_reason": m.JSON.StopReason, "usage": m.JSON.Usage,
	} {
		if !f.Valid() {
			t.Errorf("the SDK finds no %s", name)
		}
	}
	if m.ID != "msg_abc" || m.Model != "freelane/auto" || m.Role != "assistant" || m.StopReason != sdk.StopReasonToolUse {
		t.Errorf("id %q model %q role %q stop %q", m.ID, m.Model, m.Role, m.StopReason)
	}
	if m.Usage.InputTokens != 30 || m.Usage.OutputTokens != 12 {
		t.Errorf("usage %+v", m.Usage)
	}
	if len(m.Content) != 3 {
		t.Fatalf("%d content blocks, want 3", len(m.Content))
	}
	th := m.Content[0].AsThinking()
	tx := m.Content[1].AsText()
	tu := m.Content[2].AsToolUse()
	if th.Thinking != "thinking it over" || th.Signature != "sig" || tx.Text != "Calling the tool." {
		t.Errorf("thinking %+v text %+v", th, tx)
	}
	var in map[string]string
	if err := json.Unmarshal(tu.Input, &in); err != nil || in["city"] != "Oslo" || tu.ID != "call_1" || tu.Name != "get_weather" {
		t.Errorf("tool_use %+v (%v)", tu, err)
	}
}

// accumulate feeds a stream FreeLane wrote to the SDK's accumulator.
func accumulate(t *testing.T, wire []byte) sdk.Message {
	t.Helper()
	var m sdk.Message
	for _, ev := range readSSE(wire) {
		var u sdk.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(ev.data), &u); err != nil {
			t.Fatalf("the SDK cannot read %s: %v", ev.data, err)
		}
		if u.Type != ev.name {
			t.Errorf("event named %q carries type %q", ev.name, u.Type)
		}
		if err := m.Accumulate(u); err != nil {
			t.Fatalf("the SDK refuses %s: %v", ev.data, err)
		}
	}
	return m
}

func TestSDKAccumulatesStream(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "stream", "full.encoded.golden.sse"))
	if err != nil {
		t.Fatal(err)
	}
	m := accumulate(t, body)
	if m.ID != "msg_0123456789abcdef" || m.Model != "freelane-test" || m.StopReason != sdk.StopReasonToolUse {
		t.Errorf("id %q model %q stop %q", m.ID, m.Model, m.StopReason)
	}
	// The upstream read 128 of the 600 prompt tokens from its cache, which
	// Anthropic counts apart from input_tokens.
	if u := m.Usage; u.InputTokens != 472 || u.CacheReadInputTokens != 128 || u.OutputTokens != 89 {
		t.Errorf("usage in %d cached %d out %d, want 472, 128 and 89", u.InputTokens, u.CacheReadInputTokens, u.OutputTokens)
	}
	if len(m.Content) != 4 {
		t.Fatalf("%d blocks, want 4", len(m.Content))
	}
	th := m.Content[0].AsThinking()
	if th.Thinking != "The user wants the weather in Paris; I should call the tool." || !strings.HasPrefix(th.Signature, "EqQB") {
		t.Errorf("thinking %+v", th)
	}
	if got := m.Content[1].AsText().Text; got != "Let me check the weather <now> & here." {
		t.Errorf("text %q", got)
	}
	for i, want := range []struct{ id, name, input string }{
		{"toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather", `{"location":"Paris, France","unit":"celsius"}`},
		{"toolu_02", "get_time", `{"tz":"Europe/Paris"}`},
	} {
		tu := m.Content[2+i].AsToolUse()
		if tu.ID != want.id || tu.Name != want.name || compactInput(tu.Input) != want.input {
			t.Errorf("tool %d: %s %s %s", i, tu.ID, tu.Name, tu.Input)
		}
	}
}

// An encoder fed only by another dialect's deltas, in an unusual order,
// still writes a stream the SDK accumulates into the right message.
func TestSDKAccumulatesConvertedStream(t *testing.T) {
	enc := Codec.NewStreamEncoder(protocol.ResponseOptions{ID: "x", Model: "m"})
	var evs []llm.Event
	for _, d := range []llm.Delta{
		{Kind: llm.DeltaUsage, Usage: &llm.Usage{PromptTokens: 5}},
		{Kind: llm.DeltaText, Text: "Hi"},
		{Kind: llm.DeltaToolArgs, Index: 0, Text: `{"a":`}, // before its start
		{Kind: llm.DeltaToolArgs, Index: 0, Text: `1}`},
		{Kind: llm.DeltaToolStart, Index: 1, ID: "call_b", Name: "b"},
		{Kind: llm.DeltaToolArgs, Index: 1, Text: `{}`},
		{Kind: llm.DeltaReasoning, Text: "after the calls"},
		{Kind: llm.DeltaUsage, Usage: &llm.Usage{PromptTokens: 5, CompletionTokens: 7}},
	} {
		evs = enc.Encode(evs, d)
	}
	evs = enc.End(evs)
	m := accumulate(t, append(writeSSE(evs), Codec.StreamEnd()...))
	if len(m.Content) != 4 || m.Content[0].AsText().Text != "Hi" || m.Content[3].AsThinking().Thinking != "after the calls" {
		t.Fatalf("content %+v", m.Content)
	}
	if in := compactInput(m.Content[1].AsToolUse().Input); in != `{"a":1}` {
		t.Errorf("first call's input %s", in)
	}
	if tu := m.Content[2].AsToolUse(); tu.ID != "call_b" || tu.Name != "b" || compactInput(tu.Input) != "{}" {
		t.Errorf("second call %+v", tu)
	}
	if m.StopReason != sdk.StopReasonToolUse || m.Usage.OutputTokens != 7 || m.Usage.InputTokens != 5 {
		t.Errorf("stop %q usage %+v", m.StopReason, m.Usage)
	}
}

func TestSDKReadsRequest(t *testing.T) {
	for _, in := range cases(t, "encode/*.golden.json") {
		body, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		var p sdk.MessageNewParams
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("%s: the SDK cannot read it: %v", in, err)
			continue
		}
		if p.Model != "claude-sonnet-4-5" || p.MaxTokens <= 0 || len(p.Messages) == 0 {
			t.Errorf("%s: model %q max %d messages %d", in, p.Model, p.MaxTokens, len(p.Messages))
		}
		if r := sdkRole(p.Messages[0]); r != "user" {
			t.Errorf("%s: first turn is %q", in, r)
		}
		for i := 1; i < len(p.Messages); i++ {
			if r := sdkRole(p.Messages[i]); r == sdkRole(p.Messages[i-1]) || r == "" {
				t.Errorf("%s: turns %d and %d are both %q", in, i-1, i, r)
			}
		}
	}
}

func sdkRole(m sdk.MessageParam) string {
	switch {
	case m.OfUser != nil:
		return "user"
	case m.OfAssistant != nil:
		return "assistant"
	case m.OfSystem != nil:
		return "system"
	}
	return ""
}
