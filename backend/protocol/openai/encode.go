package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"freelane/backend/llm"
)

// The chat request as FreeLane writes it. Pointers and omitempty leave out
// whatever the conversation does not set, so the upstream applies its own
// defaults.
type outRequest struct {
	Model               string          `json:"model"`
	Messages            []outMessage    `json:"messages"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          any             `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	TopK                *int            `json:"top_k,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	PresencePenalty     *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	// PromptCacheKey and User are FreeLane's keyed hashes of the
	// caller's session and end user (llm.Edits), never the caller's own
	// values: the session steers OpenAI's prompt cache, the user its
	// abuse limits.
	PromptCacheKey string            `json:"prompt_cache_key,omitempty"`
	User           string            `json:"user,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	Stream         bool              `json:"stream,omitempty"`
	StreamOptions  *streamOptions    `json:"stream_options,omitempty"`
}

type outMessage struct {
	Role string `json:"role"`
	// Content is a string, an array of parts, or nil (null) for an
	// assistant turn of tool calls only.
	Content    any        `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type outPart struct {
	Type     string     `json:"type"`
	Text     string     `json:"text,omitempty"`
	ImageURL *imagePart `json:"image_url,omitempty"`
}

type namedChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// EncodeRequest writes c as a chat completions body for model. The system
// goes first as one system message; each tool result is a tool message of
// its own. Reasoning from earlier assistant turns is left out: the chat
// dialect has no field that sends it back. Images returned by a tool,
// which tool messages cannot carry, follow the results in a user message.
//
// e.MaxOutput lowers a larger max_tokens (OpenAI needs no default). e.Drop
// names parameters to leave out; dropping "max_tokens" alone sends the
// limit as max_completion_tokens instead, which the models that refuse
// max_tokens want.
func (codec) EncodeRequest(c *llm.Conversation, model string, e llm.Edits) ([]byte, error) {
	if len(c.System) == 0 && len(c.Messages) == 0 {
		// A body without messages is one every server refuses.
		return nil, errors.New("openai: the conversation has no messages")
	}
	req := outRequest{
		Model:             model,
		ParallelToolCalls: c.ParallelToolCalls,
		Temperature:       c.Temperature,
		TopP:              c.TopP,
		TopK:              c.TopK,
		Stop:              c.Stop,
		Seed:              c.Seed,
		PresencePenalty:   c.PresencePenalty,
		FrequencyPenalty:  c.FrequencyPenalty,
		User:              e.User,
		PromptCacheKey:    e.Session,
		Metadata:          c.Metadata,
		Stream:            c.Stream,
		ReasoningEffort:   reasoningEffort(c.Reasoning),
	}
	req.Messages = make([]outMessage, 0, len(c.Messages)+1)
	if len(c.System) > 0 {
		req.Messages = append(req.Messages, outMessage{Role: "system", Content: encodeText(c.System)})
	}
	for i, m := range c.Messages {
		var err error
		if req.Messages, err = encodeMessage(req.Messages, m); err != nil {
			return nil, fmt.Errorf("openai: messages[%d]: %w", i, err)
		}
	}
	for _, t := range c.Tools {
		req.Tools = append(req.Tools, chatTool{Type: "function", Function: chatFunction{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict,
		}})
	}
	req.ToolChoice = encodeToolChoice(c.ToolChoice)
	req.ResponseFormat = encodeResponseFormat(c.ResponseFormat)
	req.MaxTokens = c.MaxOutput
	if e.MaxOutput > 0 && req.MaxTokens > e.MaxOutput {
		req.MaxTokens = e.MaxOutput
	}
	if c.Stream && (c.IncludeUsage || e.AddUsage) {
		req.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	applyDrops(&req, e.Drop)
	return marshal(req)
}

// applyDrops leaves out the parameters the upstream's model refuses.
func applyDrops(req *outRequest, drop []string) {
	for _, name := range drop {
		switch name {
		case "max_tokens":
			if !slices.Contains(drop, "max_completion_tokens") {
				req.MaxCompletionTokens = req.MaxTokens
			}
			req.MaxTokens = 0
		case "max_completion_tokens":
			req.MaxCompletionTokens = 0
		case "tools":
			req.Tools = nil
		case "tool_choice":
			req.ToolChoice = nil
		case "parallel_tool_calls":
			req.ParallelToolCalls = nil
		case "temperature":
			req.Temperature = nil
		case "top_p":
			req.TopP = nil
		case "top_k":
			req.TopK = nil
		case "stop":
			req.Stop = nil
		case "seed":
			req.Seed = nil
		case "presence_penalty":
			req.PresencePenalty = nil
		case "frequency_penalty":
			req.FrequencyPenalty = nil
		case "response_format":
			req.ResponseFormat = nil
		case "reasoning_effort":
			req.ReasoningEffort = ""
		case "user":
			req.User = ""
		case "prompt_cache_key":
			req.PromptCacheKey = ""
		case "metadata":
			req.Metadata = nil
		case "stream_options":
			req.StreamOptions = nil
		}
	}
}

// reasoningEffort says r in the chat dialect, which knows only an effort:
// a budget becomes the effort that spends about as much, and no reasoning
// is the effort "none".
func reasoningEffort(r *llm.Reasoning) string {
	switch {
	case r == nil:
		return ""
	case r.Disabled:
		return "none"
	case r.Effort != "":
		return r.Effort
	case r.BudgetTokens <= 0:
		return ""
	case r.BudgetTokens <= 2048:
		return "low"
	case r.BudgetTokens <= 8192:
		return "medium"
	}
	return "high"
}

func encodeMessage(out []outMessage, m llm.Message) ([]outMessage, error) {
	switch m.Role {
	case llm.RoleUser:
		return append(out, outMessage{Role: "user", Content: encodeContent(m.Parts)}), nil
	case llm.RoleAssistant:
		msg := outMessage{Role: "assistant"}
		var content []llm.Part
		for _, p := range m.Parts {
			switch p.Kind {
			case llm.PartText:
				content = append(content, p)
			case llm.PartToolCall:
				msg.ToolCalls = append(msg.ToolCalls, toolCall{ID: p.ToolCall.ID, Type: "function",
					Function: function{Name: p.ToolCall.Name, Arguments: p.ToolCall.Arguments}})
			case llm.PartReasoning:
			default:
				return nil, fmt.Errorf("an assistant turn cannot carry a %s part", p.Kind)
			}
		}
		if len(content) > 0 || len(msg.ToolCalls) == 0 {
			msg.Content = encodeText(content)
		}
		return append(out, msg), nil
	case llm.RoleTool:
		var images []llm.Part
		for _, p := range m.Parts {
			if p.Kind != llm.PartToolResult {
				return nil, fmt.Errorf("a tool turn cannot carry a %s part", p.Kind)
			}
			var text []llm.Part
			for _, c := range p.ToolResult.Content {
				if c.Kind == llm.PartImage {
					images = append(images, c)
				} else {
					text = append(text, c)
				}
			}
			out = append(out, outMessage{Role: "tool", ToolCallID: p.ToolResult.CallID, Content: encodeText(text)})
		}
		if len(images) > 0 {
			out = append(out, outMessage{Role: "user", Content: encodeContent(images)})
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown role %q", m.Role)
}

// encodeText writes the text parts of a system, assistant or tool message
// as one string: many OpenAI-compatible servers take nothing else there.
func encodeText(parts []llm.Part) string {
	if len(parts) == 1 {
		return parts[0].Text
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Kind == llm.PartText {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, textSeparator)
}

// encodeContent writes a user message's parts as its content: a lone text
// as a string, which every server takes, anything else as an array of
// parts.
func encodeContent(parts []llm.Part) any {
	switch {
	case len(parts) == 0:
		return ""
	case len(parts) == 1 && parts[0].Kind == llm.PartText:
		return parts[0].Text
	}
	out := make([]outPart, 0, len(parts))
	for _, p := range parts {
		switch p.Kind {
		case llm.PartText:
			out = append(out, outPart{Type: "text", Text: p.Text})
		case llm.PartImage:
			out = append(out, outPart{Type: "image_url", ImageURL: encodeImage(p.Image)})
		}
	}
	return out
}

func encodeImage(img *llm.Image) *imagePart {
	u := &imagePart{URL: img.URL, Detail: img.Detail}
	if img.Data != "" {
		u.URL = "data:" + img.MediaType + ";base64," + img.Data
	}
	return u
}

func encodeToolChoice(tc *llm.ToolChoice) any {
	if tc == nil {
		return nil
	}
	switch tc.Mode {
	case llm.ToolNamed:
		var n namedChoice
		n.Type, n.Function.Name = "function", tc.Name
		return n
	case llm.ToolNone, llm.ToolRequired, llm.ToolAuto:
		return string(tc.Mode)
	}
	return nil
}

func encodeResponseFormat(rf *llm.ResponseFormat) *responseFormat {
	if rf == nil {
		return nil
	}
	out := &responseFormat{Type: rf.Type}
	if rf.Type == "json_schema" {
		// OpenAI requires a name; the dialects that have none get one.
		name := rf.Name
		if name == "" {
			name = "response"
		}
		out.JSONSchema = &schemaFormat{Name: name, Schema: rf.Schema, Strict: rf.Strict}
	}
	return out
}

// marshal writes v as compact JSON without escaping <, > and &, which
// JSON does not need and which would only make bodies harder to read.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
