package gemini

import (
	"encoding/json"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// TestRequestRoundTrip encodes a conversation the dialect can say whole,
// parses the body as a Gemini client's and decodes it again.
func TestRequestRoundTrip(t *testing.T) {
	schema := json.RawMessage(`{"properties":{"city":{"type":"string"},"days":{"type":["integer","null"]}},"required":["city"],"type":"object"}`)
	want := &llm.Conversation{
		System: []llm.Part{{Kind: llm.PartText, Text: "be brief"}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Kind: llm.PartText, Text: "weather?"},
				{Kind: llm.PartImage, Image: &llm.Image{MediaType: "image/png", Data: "iVBORw0KGgo="}},
				{Kind: llm.PartImage, Image: &llm.Image{MediaType: "image/jpeg", URL: "https://example.com/x.jpg"}},
			}},
			{Role: llm.RoleAssistant, Parts: []llm.Part{
				{Kind: llm.PartText, Text: "checking"},
				{Kind: llm.PartReasoning, Signature: "c2lnbmF0dXJl"},
				{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "call_0", Name: "weather", Arguments: `{"city":"Paris"}`}},
			}},
			{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{
				CallID: "call_0", Name: "weather", Content: []llm.Part{{Kind: llm.PartText, Text: "sunny"}},
			}}}},
			{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{
				CallID: "call_1", Name: "weather", IsError: true, Content: []llm.Part{{Kind: llm.PartText, Text: "no such call"}},
			}}}},
			{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "thanks"}}},
		},
		Tools:            []llm.Tool{{Name: "weather", Description: "the weather", Parameters: schema}},
		ToolChoice:       &llm.ToolChoice{Mode: llm.ToolNamed, Name: "weather"},
		MaxOutput:        1000,
		Temperature:      ptr(0.5),
		TopP:             ptr(0.9),
		TopK:             ptr(20),
		Stop:             []string{"END"},
		Seed:             ptr(int64(3)),
		PresencePenalty:  ptr(0.25),
		FrequencyPenalty: ptr(0.5),
		ResponseFormat:   &llm.ResponseFormat{Type: "json_schema", Name: "response", Schema: schema},
		Reasoning:        &llm.Reasoning{BudgetTokens: 2048},
		Stream:           true,
		IncludeUsage:     true,
	}
	body, err := Codec.EncodeRequest(want, "m", llm.Edits{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseRequestFor(llm.Chat, "m", true, body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Conversation()
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSON(t, got, want) {
		t.Errorf("round trip:\n%s\nwant\n%s", pretty(t, got), pretty(t, want))
	}
}

// TestAnswerRoundTrip writes answers and reads them back.
func TestAnswerRoundTrip(t *testing.T) {
	for _, a := range []*llm.Answer{
		{Finish: llm.FinishStop, Parts: []llm.Part{{Kind: llm.PartText, Text: "hi"}}, Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
		{Finish: llm.FinishToolCalls, Parts: []llm.Part{
			{Kind: llm.PartReasoning, Text: "so", Signature: "c2ln"},
			{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "x1", Name: "f", Arguments: `{"a":[1,2]}`}},
			{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "x2", Name: "g", Arguments: `{}`}},
		}},
		{Finish: llm.FinishLength, Parts: []llm.Part{{Kind: llm.PartText, Text: "cut"}, {Kind: llm.PartReasoning, Signature: "c2ln"}}},
		{Finish: llm.FinishContentFilter, Parts: []llm.Part{{Kind: llm.PartText, Text: "half"}}},
	} {
		out, err := Codec.EncodeResponse(a, protocol.ResponseOptions{ID: "id", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		back, err := Codec.DecodeResponse(out)
		if err != nil {
			t.Fatal(err)
		}
		a.ID, a.Model = "id", "m"
		if !equalJSON(t, back, a) {
			t.Errorf("round trip:\n%s\nwant\n%s", pretty(t, back), pretty(t, a))
		}
	}
}
