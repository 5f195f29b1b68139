package openai

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *llm.Answer
	}{
		{"no choices", `{"id":"a","model":"m","choices":[]}`, &llm.Answer{ID: "a", Model: "m"}},
		{"null finish with calls", `{"choices":[{"message":{"content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}`,
			&llm.Answer{Finish: llm.FinishToolCalls, Parts: []llm.Part{{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c", Name: "f", Arguments: "{}"}}}}},
		{"legacy function call", `{"choices":[{"message":{"content":null,"function_call":{"name":"f","arguments":"{}"}},"finish_reason":"function_call"}]}`,
			&llm.Answer{Finish: llm.FinishToolCalls, Parts: []llm.Part{{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{Name: "f", Arguments: "{}"}}}}},
		{"refusal", `{"choices":[{"message":{"content":null,"refusal":"I can't."},"finish_reason":"stop"}]}`,
			&llm.Answer{Finish: llm.FinishStop, Parts: []llm.Part{{Kind: llm.PartText, Text: "I can't."}}}},
		{"content parts with thinking", `{"choices":[{"message":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]},{"type":"text","text":"ok"}]},"finish_reason":"stop"}]}`,
			&llm.Answer{Finish: llm.FinishStop, Parts: []llm.Part{{Kind: llm.PartReasoning, Text: "hm"}, {Kind: llm.PartText, Text: "ok"}}}},
		{"content filter", `{"choices":[{"message":{"content":""},"finish_reason":"content_filter"}]}`, &llm.Answer{Finish: llm.FinishContentFilter}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Codec.DecodeResponse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", dump(t, got), dump(t, tc.want))
			}
		})
	}
}

func TestDecodeResponseFailures(t *testing.T) {
	for _, tc := range []struct {
		body string
		sub  llm.Sub
	}{
		{`not json`, llm.SubMalformed},
		{`{"choices":"x"}`, llm.SubMalformed},
		{`{"error":{"message":"Rate limit exceeded: free-models-per-day"}}`, llm.SubQuota},
		{`{"error":{"message":"upstream failed","code":502}}`, llm.SubMalformed},
	} {
		_, err := Codec.DecodeResponse([]byte(tc.body))
		var e *llm.Error
		if !errors.As(err, &e) || e.Class != llm.Soft || e.Sub != tc.sub {
			t.Errorf("DecodeResponse(%s) = %v, want a soft %s error", tc.body, err, tc.sub)
		}
	}
}

func TestEncodeResponse(t *testing.T) {
	a := &llm.Answer{Model: "upstream", Parts: []llm.Part{
		{Kind: llm.PartReasoning, Text: "think"},
		{Kind: llm.PartText, Text: "a"},
		{Kind: llm.PartText, Text: "b"},
	}}
	body, err := Codec.EncodeResponse(a, protocol.ResponseOptions{ID: "chatcmpl-x", Created: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"chatcmpl-x","object":"chat.completion","created":5,"model":"upstream","choices":[{"index":0,"message":{"role":"assistant","content":"ab","reasoning_content":"think"},"finish_reason":"stop"}]}`
	if string(body) != want {
		t.Errorf("got  %s\nwant %s", body, want)
	}
	body, _ = Codec.EncodeResponse(&llm.Answer{Parts: []llm.Part{{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{Name: "f", Arguments: "{}"}}}}, protocol.ResponseOptions{ID: "1"})
	if !strings.Contains(string(body), `"content":null,"tool_calls":[{"id":"call_0","type":"function"`) || !strings.Contains(string(body), `"finish_reason":"tool_calls"`) {
		t.Errorf("call without id: %s", body)
	}
	body, _ = Codec.EncodeResponse(&llm.Answer{}, protocol.ResponseOptions{ID: "1"})
	if !strings.Contains(string(body), `"id":"chatcmpl-1"`) || !strings.Contains(string(body), `"content":""`) {
		t.Errorf("empty answer: %s", body)
	}
}
