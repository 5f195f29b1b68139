package responses

import (
	"encoding/json"
	"errors"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// Response is the Response object, with the fields OpenAI's own have that
// FreeLane can fill.
type Response struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         int64           `json:"created_at"`
	Status            string          `json:"status"`
	Background        bool            `json:"background"`
	Error             *ResponseError  `json:"error"`
	IncompleteDetails *incomplete     `json:"incomplete_details"`
	Model             string          `json:"model"`
	Output            []any           `json:"output"`
	ParallelToolCalls bool            `json:"parallel_tool_calls"`
	ToolChoice        string          `json:"tool_choice"`
	Tools             []any           `json:"tools"`
	Text              json.RawMessage `json:"text"`
	Truncation        string          `json:"truncation"`
	Usage             *usage          `json:"usage"`
	Metadata          map[string]any  `json:"metadata"`
}

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

// usage is the Responses API's token accounting.
type usage struct {
	InputTokens         int           `json:"input_tokens"`
	InputTokensDetails  inputDetails  `json:"input_tokens_details"`
	OutputTokens        int           `json:"output_tokens"`
	OutputTokensDetails outputDetails `json:"output_tokens_details"`
	TotalTokens         int           `json:"total_tokens"`
}

type inputDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type outputDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

func usageOf(u *llm.Usage) *usage {
	if u == nil {
		return &usage{}
	}
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return &usage{InputTokens: u.PromptTokens, InputTokensDetails: inputDetails{CachedTokens: u.CacheReadTokens},
		OutputTokens: u.CompletionTokens, TotalTokens: total}
}

// The output items, one type each, so every item carries exactly the
// fields OpenAI's have.
type (
	messageItem struct {
		ID      string       `json:"id"`
		Type    string       `json:"type"`
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []outputText `json:"content"`
	}
	outputText struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
		Logprobs    []any  `json:"logprobs"`
	}
	functionCallItem struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
	}
	reasoningItem struct {
		ID               string        `json:"id"`
		Type             string        `json:"type"`
		Summary          []summaryText `json:"summary"`
		EncryptedContent string        `json:"encrypted_content,omitempty"`
	}
	summaryText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
)

// defaultText is the text setting of an answer: plain text.
var defaultText = json.RawMessage(`{"format":{"type":"text"}}`)

func newResponse(id, model string, created int64) Response {
	return Response{
		ID: id, Object: "response", CreatedAt: created, Status: "in_progress", Model: model,
		Output: []any{}, ParallelToolCalls: true, ToolChoice: "auto", Tools: []any{},
		Text: defaultText, Truncation: "disabled", Metadata: map[string]any{},
	}
}

// finish sets a finished response's status: incomplete when the answer
// was cut at its token limit or by a content filter.
func (r *Response) finish(f llm.FinishReason, u *llm.Usage) {
	r.Status = "completed"
	switch f {
	case llm.FinishLength:
		r.Status, r.IncompleteDetails = "incomplete", &incomplete{"max_output_tokens"}
	case llm.FinishContentFilter:
		r.Status, r.IncompleteDetails = "incomplete", &incomplete{"content_filter"}
	}
	r.Usage = usageOf(u)
}

// EncodeResponse writes a complete answer as a Response object.
func (codec) EncodeResponse(a *llm.Answer, o protocol.ResponseOptions) ([]byte, error) {
	if a == nil {
		return nil, errors.New("responses: no answer")
	}
	model := o.Model
	if model == "" {
		model = a.Model
	}
	r := newResponse(ResponseID(o), model, o.Created)
	r.Output = OutputItems(a.Parts)
	r.finish(a.Finish, a.Usage)
	return marshal(r), nil
}

// OutputItems writes an answer's parts as output items: consecutive text
// is one message, each reasoning part one reasoning item, each tool call
// one function_call.
func OutputItems(parts []llm.Part) []any {
	out := []any{}
	var text strings.Builder
	flush := func() {
		if text.Len() == 0 {
			return
		}
		out = append(out, messageItem{ID: newID("msg_"), Type: "message", Status: "completed", Role: "assistant",
			Content: []outputText{{Type: "output_text", Text: text.String(), Annotations: []any{}, Logprobs: []any{}}}})
		text.Reset()
	}
	for _, p := range parts {
		switch p.Kind {
		case llm.PartText:
			text.WriteString(p.Text)
		case llm.PartReasoning:
			flush()
			it := reasoningItem{ID: newID("rs_"), Type: "reasoning", Summary: []summaryText{}, EncryptedContent: seal(p.Signature, p.Redacted)}
			if p.Text != "" {
				it.Summary = append(it.Summary, summaryText{"summary_text", p.Text})
			}
			out = append(out, it)
		case llm.PartToolCall:
			flush()
			if tc := p.ToolCall; tc != nil {
				out = append(out, functionCallItem{ID: newID("fc_"), Type: "function_call", Status: "completed",
					Arguments: orEmptyObject(tc.Arguments), CallID: callID(tc.ID), Name: tc.Name})
			}
		}
	}
	flush()
	return out
}

// callID keeps a tool call's id (another vendor's too: clients only match
// it with their function_call_output) and makes one when it is missing.
func callID(id string) string {
	if id == "" {
		return newID("call_")
	}
	return id
}
