package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// inMessageBody is an answer as Anthropic sends it (or an error envelope
// in its place).
type inMessageBody struct {
	Type       string    `json:"type"`
	ID         string    `json:"id"`
	Model      string    `json:"model"`
	Content    []inBlock `json:"content"`
	StopReason string    `json:"stop_reason"`
	Usage      *usage    `json:"usage"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// usage is Anthropic's token accounting. Cached input is counted apart
// from input_tokens, so the prompt is the sum of the three input counts;
// the neutral model's prompt is that sum, its cache counts the parts.
type usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

func (u usage) prompt() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

func (u usage) neutral() *llm.Usage {
	p := u.prompt()
	return &llm.Usage{PromptTokens: p, CompletionTokens: u.OutputTokens, TotalTokens: p + u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
}

// usageOf is a neutral usage in Anthropic's terms, the cached input taken
// out of input_tokens.
func usageOf(u llm.Usage) usage {
	return usage{InputTokens: u.Uncached(), CacheCreationInputTokens: u.CacheWriteTokens,
		CacheReadInputTokens: u.CacheReadTokens, OutputTokens: u.CompletionTokens}
}

// finishReasons maps stop_reason to the neutral finish. pause_turn (a
// server tool's long turn paused) ends this answer like end_turn does.
var finishReasons = map[string]llm.FinishReason{
	"end_turn":                      llm.FinishStop,
	"stop_sequence":                 llm.FinishStop,
	"pause_turn":                    llm.FinishStop,
	"max_tokens":                    llm.FinishLength,
	"model_context_window_exceeded": llm.FinishLength,
	"tool_use":                      llm.FinishToolCalls,
	"refusal":                       llm.FinishContentFilter,
}

// stopReasons is the way back.
var stopReasons = map[llm.FinishReason]string{
	llm.FinishStop:          "end_turn",
	llm.FinishLength:        "max_tokens",
	llm.FinishToolCalls:     "tool_use",
	llm.FinishContentFilter: "refusal",
}

func finishReason(s string) llm.FinishReason {
	if f, ok := finishReasons[s]; ok {
		return f
	}
	if s == "" {
		return ""
	}
	return llm.FinishStop
}

// DecodeResponse reads a complete Messages API answer.
func (codec) DecodeResponse(body []byte) (*llm.Answer, error) {
	var m inMessageBody
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("anthropic: answer is not a message: %w", err)
	}
	if m.Type == "error" || m.Error != nil {
		msg := ""
		if m.Error != nil {
			msg = m.Error.Message
		}
		return nil, fmt.Errorf("anthropic: answer is an error: %s", llm.Truncate(msg, 200))
	}
	a := &llm.Answer{ID: m.ID, Model: m.Model, Finish: finishReason(m.StopReason)}
	for _, b := range m.Content {
		if p, ok := assistantPart(b); ok {
			a.Parts = append(a.Parts, p)
		}
	}
	if m.Usage != nil {
		a.Usage = m.Usage.neutral()
	}
	return a, nil
}

// outMessage is an answer as FreeLane writes it, with the fields (and the
// nulls) Anthropic's own answers have.
type outMessage struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []any   `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        usage   `json:"usage"`
}

// EncodeResponse writes a complete answer.
func (codec) EncodeResponse(a *llm.Answer, o protocol.ResponseOptions) ([]byte, error) {
	if a == nil {
		return nil, errors.New("anthropic: no answer")
	}
	m := outMessage{
		ID:      messageID(o.ID, a.ID),
		Type:    "message",
		Role:    "assistant",
		Model:   o.Model,
		Content: []any{},
	}
	if m.Model == "" {
		m.Model = a.Model
	}
	calls := false
	for _, p := range a.Parts {
		switch p.Kind {
		case llm.PartText:
			if p.Text != "" {
				m.Content = append(m.Content, textBlock{Type: "text", Text: p.Text})
			}
		case llm.PartReasoning:
			if p.Redacted != "" {
				m.Content = append(m.Content, redactedBlock{"redacted_thinking", p.Redacted})
			} else if p.Text != "" || p.Signature != "" {
				m.Content = append(m.Content, thinkingBlock{"thinking", p.Text, p.Signature})
			}
		case llm.PartToolCall:
			if tc := p.ToolCall; tc != nil {
				calls = true
				m.Content = append(m.Content, toolUseBlock{Type: "tool_use", ID: toolID(tc.ID), Name: tc.Name, Input: arguments(tc.Arguments)})
			}
		}
	}
	stop := stopReason(a.Finish, calls)
	m.StopReason = &stop
	if a.Usage != nil {
		m.Usage = usageOf(*a.Usage)
	}
	return marshal(m), nil
}

// stopReason is the stop_reason for a finish; an answer that ended
// without saying why ended its turn, with its tool calls if it made any.
func stopReason(f llm.FinishReason, calls bool) string {
	if s, ok := stopReasons[f]; ok {
		return s
	}
	if calls {
		return "tool_use"
	}
	return "end_turn"
}

// messageID is the answer's id in Anthropic's style: "msg_" and the
// router's id, the upstream's when the router gave none, or a new one.
func messageID(ids ...string) string {
	for _, id := range ids {
		if id != "" {
			if strings.HasPrefix(id, "msg_") {
				return id
			}
			return "msg_" + id
		}
	}
	return newID("msg_")
}

// toolID keeps a tool call's id (another vendor's "call_..." too: clients
// only match it with their tool_result) and makes one when it is missing.
func toolID(id string) string {
	if id == "" {
		return newID("toolu_")
	}
	return id
}

// CheckAnswer decides whether a 200 answer can be relayed unchanged and
// reads its usage.
func (codec) CheckAnswer(_ llm.Endpoint, body []byte) (llm.Usage, error) {
	var m inMessageBody
	if err := json.Unmarshal(body, &m); err != nil {
		return llm.Usage{}, llm.SoftError(llm.SubMalformed, "answer is not a Messages API message: %s", llm.Truncate(err.Error(), 120))
	}
	var u llm.Usage
	if m.Usage != nil {
		u = *m.Usage.neutral()
	}
	if m.Type == "error" || m.Error != nil {
		msg := ""
		if m.Error != nil {
			msg = m.Error.Type + ": " + m.Error.Message
		}
		sub := llm.SubNone
		if llm.QuotaText(msg) || (m.Error != nil && m.Error.Type == "rate_limit_error") {
			sub = llm.SubQuota
		}
		return u, llm.SoftError(sub, "error inside a 200 answer: %s", llm.Truncate(msg, 200))
	}
	usable, text := false, ""
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			usable = usable || b.Text != ""
			text += b.Text
		case "tool_use":
			usable = true
		case "thinking":
			usable = usable || b.Thinking != ""
		case "redacted_thinking":
			usable = usable || b.Data != ""
		}
	}
	switch {
	case !usable:
		return u, llm.SoftError(llm.SubEmpty, "empty answer (stop_reason %q)", llm.Truncate(m.StopReason, 40))
	case len(text) < 300 && llm.QuotaText(text):
		return u, llm.SoftError(llm.SubQuota, "answer says the quota is used up: %s", llm.Truncate(text, 120))
	}
	return u, nil
}
