package openai

import (
	"encoding/json"
	"strconv"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// chatResponse is a chat.completion object.
type chatResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message answerMessage `json:"message"`
		// Text is a legacy completion's, which has no message.
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// answerMessage is the assistant message of an answer. reasoning_content
// is where DeepSeek, vLLM and most OpenAI-compatible servers put the
// visible reasoning; OpenRouter and Ollama call it reasoning.
type answerMessage struct {
	Content          json.RawMessage `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	Refusal          *string         `json:"refusal"`
	ToolCalls        []toolCall      `json:"tool_calls"`
	FunctionCall     *function       `json:"function_call"`
}

// DecodeResponse reads a chat.completion answer. Only the first choice
// counts: FreeLane never asks for more. A 200 that holds an error instead
// of choices is a soft *llm.Error, one whose text is a quota notice of
// class SubQuota.
func (codec) DecodeResponse(body []byte) (*llm.Answer, error) {
	var r chatResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, llm.SoftError(llm.SubMalformed, "answer is not a chat completion: %s", llm.Truncate(jsonErr(err), 120))
	}
	if len(r.Choices) == 0 && !isNull(r.Error) {
		msg := llm.ErrorMessage(body)
		if llm.QuotaText(msg) {
			return nil, llm.SoftError(llm.SubQuota, "quota exceeded (in a 200 answer): %s", llm.Truncate(msg, 120))
		}
		return nil, llm.SoftError(llm.SubMalformed, "error in a 200 answer: %s", llm.Truncate(msg, 120))
	}
	a := &llm.Answer{ID: r.ID, Model: r.Model, Usage: r.Usage.neutral()}
	if len(r.Choices) == 0 {
		return a, nil
	}
	ch := r.Choices[0]
	m := ch.Message
	if s := reasoningText(m.ReasoningContent, m.Reasoning); s != "" {
		a.Parts = append(a.Parts, llm.Part{Kind: llm.PartReasoning, Text: s})
	}
	a.Parts = append(a.Parts, answerContent(m.Content)...)
	if ch.Text != "" {
		a.Parts = append(a.Parts, llm.Part{Kind: llm.PartText, Text: ch.Text})
	}
	if m.Refusal != nil && *m.Refusal != "" && len(a.Parts) == 0 {
		a.Parts = append(a.Parts, llm.Part{Kind: llm.PartText, Text: *m.Refusal})
	}
	calls := false
	for _, tc := range m.ToolCalls {
		a.Parts = append(a.Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{
			ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments,
		}})
		calls = true
	}
	if fc := m.FunctionCall; fc != nil && len(m.ToolCalls) == 0 {
		a.Parts = append(a.Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{
			Name: fc.Name, Arguments: fc.Arguments,
		}})
		calls = true
	}
	a.Finish = finishReason(ch.FinishReason, calls)
	return a, nil
}

// reasoningText is the reasoning of a message or a delta: reasoning_content,
// or reasoning when it is a string (some servers send both, the same).
func reasoningText(content *string, reasoning json.RawMessage) string {
	if content != nil && *content != "" {
		return *content
	}
	var s string
	if len(reasoning) > 0 && reasoning[0] == '"' {
		_ = json.Unmarshal(reasoning, &s)
	}
	return s
}

// answerContent reads an answer's content: a string, or the array of parts
// some servers send (Mistral's reasoning models put their thinking in it).
func answerContent(raw json.RawMessage) []llm.Part {
	if isNull(raw) {
		return nil
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		if s == "" {
			return nil
		}
		return []llm.Part{{Kind: llm.PartText, Text: s}}
	}
	var list []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []llm.Part
	for _, p := range list {
		switch p.Type {
		case "text", "output_text":
			if p.Text != "" {
				out = append(out, llm.Part{Kind: llm.PartText, Text: p.Text})
			}
		case "thinking", "reasoning":
			if s := thinkingText(p.Thinking, p.Text); s != "" {
				out = append(out, llm.Part{Kind: llm.PartReasoning, Text: s})
			}
		}
	}
	return out
}

// thinkingText reads a thinking part's text, given as a string or as an
// array of text parts.
func thinkingText(raw json.RawMessage, text string) string {
	if isNull(raw) {
		return text
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// finishReason maps a vendor's finish reason onto the neutral ones; an
// unknown or missing one is a normal stop, or tool_calls when the answer
// calls tools.
func finishReason(s string, calls bool) llm.FinishReason {
	switch s {
	case "length", "max_tokens", "model_length":
		return llm.FinishLength
	case "tool_calls", "function_call":
		return llm.FinishToolCalls
	case "content_filter":
		return llm.FinishContentFilter
	}
	if calls {
		return llm.FinishToolCalls
	}
	return llm.FinishStop
}

// usage is the usage member of answers and chunks. Its prompt_tokens
// counts cached tokens too, as the neutral model's PromptTokens does;
// prompt_tokens_details.cached_tokens says how many of them were read from
// the cache (DeepSeek says it in prompt_cache_hit_tokens).
type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details,omitempty"`
	CacheHitTokens      int            `json:"prompt_cache_hit_tokens,omitempty"`
	// n is the neutral form neutral returns, held here so that reading a
	// usage costs one allocation on the relay of every stream.
	n llm.Usage
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// neutral is u in the neutral model, its total completed when the vendor
// left it out; nil for none. It points into u.
func (u *usage) neutral() *llm.Usage {
	if u == nil {
		return nil
	}
	u.n = llm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
		CacheReadTokens: u.CacheHitTokens}
	n := &u.n
	if d := u.PromptTokensDetails; d != nil && d.CachedTokens > 0 {
		n.CacheReadTokens = d.CachedTokens
	}
	if n.TotalTokens == 0 {
		n.TotalTokens = n.PromptTokens + n.CompletionTokens
	}
	return n
}

// usageOf is u as answers write it; nil for none.
func usageOf(u *llm.Usage) *usage {
	if u == nil {
		return nil
	}
	w := &usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if w.TotalTokens == 0 {
		w.TotalTokens = w.PromptTokens + w.CompletionTokens
	}
	if u.CacheReadTokens > 0 {
		w.PromptTokensDetails = &promptDetails{CachedTokens: u.CacheReadTokens}
	}
	return w
}

type outResponse struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []outChoice `json:"choices"`
	Usage   *usage      `json:"usage,omitempty"`
}

type outChoice struct {
	Index        int       `json:"index"`
	Message      outAnswer `json:"message"`
	FinishReason string    `json:"finish_reason"`
}

type outAnswer struct {
	Role string `json:"role"`
	// Content is null in an answer of tool calls only, as OpenAI sends it.
	Content          *string    `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
}

// EncodeResponse writes a as a chat.completion object. Reasoning goes in
// reasoning_content, the field the OpenAI-compatible servers that show
// reasoning use; a tool call without an id gets one.
func (codec) EncodeResponse(a *llm.Answer, o protocol.ResponseOptions) ([]byte, error) {
	var text, reasoning strings.Builder
	var calls []toolCall
	for _, p := range a.Parts {
		switch p.Kind {
		case llm.PartText:
			text.WriteString(p.Text)
		case llm.PartReasoning:
			reasoning.WriteString(p.Text)
		case llm.PartToolCall:
			calls = append(calls, toolCall{ID: callID(p.ToolCall.ID, len(calls)), Type: "function",
				Function: function{Name: p.ToolCall.Name, Arguments: p.ToolCall.Arguments}})
		}
	}
	msg := outAnswer{Role: "assistant", ReasoningContent: reasoning.String(), ToolCalls: calls}
	if text.Len() > 0 || len(calls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	finish := a.Finish
	if finish == "" {
		finish = finishReason("", len(calls) > 0)
	}
	model := o.Model
	if model == "" {
		model = a.Model
	}
	r := outResponse{
		ID:      responseID(o.ID),
		Object:  "chat.completion",
		Created: o.Created,
		Model:   model,
		Choices: []outChoice{{Message: msg, FinishReason: string(finish)}},
		Usage:   usageOf(a.Usage),
	}
	return marshal(r)
}

// callID is a tool call's id, or one made from its position when the
// upstream gave none: a client answers a call by its id, so it must have
// one.
func callID(id string, i int) string {
	if id != "" {
		return id
	}
	return "call_" + strconv.Itoa(i)
}

// responseID is id in OpenAI's style, prefixed "chatcmpl-".
func responseID(id string) string {
	if strings.HasPrefix(id, "chatcmpl-") {
		return id
	}
	return "chatcmpl-" + id
}
