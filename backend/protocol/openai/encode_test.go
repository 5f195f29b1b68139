package openai

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"freelane/backend/llm"
)

// encoded encodes c and decodes the body into a map for inspection.
func encoded(t *testing.T, c *llm.Conversation, e llm.Edits) map[string]any {
	t.Helper()
	body, err := Codec.EncodeRequest(c, "up", e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return m
}

func TestEncodeRequestEdits(t *testing.T) {
	temp, topK, seed := 0.7, 5, int64(1)
	full := func() *llm.Conversation {
		return &llm.Conversation{
			Messages:          []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "hi"}}}},
			Tools:             []llm.Tool{{Name: "f"}},
			ToolChoice:        &llm.ToolChoice{Mode: llm.ToolAuto},
			MaxOutput:         5000,
			Temperature:       &temp,
			TopP:              &temp,
			TopK:              &topK,
			Stop:              []string{"x"},
			Seed:              &seed,
			ResponseFormat:    &llm.ResponseFormat{Type: "json_object"},
			Reasoning:         &llm.Reasoning{Effort: "low"},
			ParallelToolCalls: new(bool),
			Metadata:          map[string]string{"k": "v"},
			Stream:            true,
		}
	}
	tests := []struct {
		name    string
		conv    func(c *llm.Conversation)
		edits   llm.Edits
		want    map[string]any
		without []string
	}{
		{"clamp", nil, llm.Edits{MaxOutput: 1000}, map[string]any{"max_tokens": 1000.0}, []string{"max_completion_tokens"}},
		{"no clamp below", nil, llm.Edits{MaxOutput: 8000}, map[string]any{"max_tokens": 5000.0}, nil},
		{"no default max", func(c *llm.Conversation) { c.MaxOutput = 0 }, llm.Edits{MaxOutput: 8000}, nil, []string{"max_tokens"}},
		{"usage asked by the upstream", nil, llm.Edits{AddUsage: true}, map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}, nil},
		{"usage asked by the client", func(c *llm.Conversation) { c.IncludeUsage = true }, llm.Edits{}, map[string]any{"stream_options": map[string]any{"include_usage": true}}, nil},
		{"no usage unasked", nil, llm.Edits{}, nil, []string{"stream_options"}},
		{"no usage without stream", func(c *llm.Conversation) { c.Stream, c.IncludeUsage = false, true }, llm.Edits{AddUsage: true}, nil, []string{"stream", "stream_options"}},
		{"drop", nil, llm.Edits{AddUsage: true, Drop: []string{
			"reasoning_effort", "parallel_tool_calls", "stream_options", "temperature", "top_p", "top_k",
			"stop", "seed", "response_format", "tool_choice", "metadata", "user",
		}}, map[string]any{"stream": true}, []string{
			"reasoning_effort", "parallel_tool_calls", "stream_options", "temperature", "top_p", "top_k",
			"stop", "seed", "response_format", "tool_choice", "metadata", "user",
		}},
		{"max_tokens renamed", nil, llm.Edits{MaxOutput: 100, Drop: []string{"max_tokens"}}, map[string]any{"max_completion_tokens": 100.0}, []string{"max_tokens"}},
		{"both limits dropped", nil, llm.Edits{Drop: []string{"max_tokens", "max_completion_tokens"}}, nil, []string{"max_tokens", "max_completion_tokens"}},
		{"budget as effort", func(c *llm.Conversation) { c.Reasoning = &llm.Reasoning{BudgetTokens: 4000} }, llm.Edits{}, map[string]any{"reasoning_effort": "medium"}, nil},
		{"big budget", func(c *llm.Conversation) { c.Reasoning = &llm.Reasoning{BudgetTokens: 32000} }, llm.Edits{}, map[string]any{"reasoning_effort": "high"}, nil},
		{"no reasoning", func(c *llm.Conversation) { c.Reasoning = &llm.Reasoning{Disabled: true} }, llm.Edits{}, map[string]any{"reasoning_effort": "none"}, nil},
		{"nameless schema", func(c *llm.Conversation) {
			c.ResponseFormat = &llm.ResponseFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object"}`)}
		}, llm.Edits{}, map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
			"name": "response", "schema": map[string]any{"type": "object"},
		}}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := full()
			if tc.conv != nil {
				tc.conv(c)
			}
			m := encoded(t, c, tc.edits)
			if m["model"] != "up" {
				t.Errorf("model = %v", m["model"])
			}
			for k, v := range tc.want {
				if !reflect.DeepEqual(m[k], v) {
					t.Errorf("%s = %#v, want %#v", k, m[k], v)
				}
			}
			for _, k := range tc.without {
				if _, ok := m[k]; ok {
					t.Errorf("%s is present: %#v", k, m[k])
				}
			}
		})
	}
}

func TestEncodeRequestMessages(t *testing.T) {
	c := &llm.Conversation{Messages: []llm.Message{
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			{Kind: llm.PartReasoning, Text: "hidden", Signature: "sig"},
			{Kind: llm.PartText, Text: "a"},
			{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c1", Name: "look", Arguments: `{"q":1}`}},
			{Kind: llm.PartText, Text: "b"},
		}},
		{Role: llm.RoleTool, Parts: []llm.Part{
			{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c1", Content: []llm.Part{
				{Kind: llm.PartText, Text: "see"},
				{Kind: llm.PartImage, Image: &llm.Image{MediaType: "image/png", Data: "QUJD"}},
			}}},
			{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c2", IsError: true}},
		}},
		{Role: llm.RoleAssistant},
	}}
	body, err := Codec.EncodeRequest(c, "up", llm.Edits{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"up","messages":[` +
		`{"role":"assistant","content":"a\n\nb","tool_calls":[{"id":"c1","type":"function","function":{"name":"look","arguments":"{\"q\":1}"}}]},` +
		`{"role":"tool","content":"see","tool_call_id":"c1"},` +
		`{"role":"tool","content":"","tool_call_id":"c2"},` +
		`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,QUJD"}}]},` +
		`{"role":"assistant","content":""}]}`
	if string(body) != want {
		t.Errorf("got  %s\nwant %s", body, want)
	}
	if strings.Contains(string(body), "hidden") {
		t.Error("reasoning was sent back")
	}
}

func TestEncodeRequestRefusesForeignParts(t *testing.T) {
	for _, m := range []llm.Message{
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartImage, Image: &llm.Image{URL: "https://x"}}}},
		{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartText, Text: "x"}}},
		{Role: "narrator"},
	} {
		if _, err := Codec.EncodeRequest(&llm.Conversation{Messages: []llm.Message{m}}, "up", llm.Edits{}); err == nil {
			t.Errorf("%s with %v: no error", m.Role, m.Parts)
		}
	}
}
