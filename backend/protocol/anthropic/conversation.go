package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"freelane/backend/llm"
)

// The request body as a client sends it, for decoding into the neutral
// model. Members FreeLane has no place for (context_management,
// container, service_tier...) are not listed and so ignored; the
// metadata's user_id is not read either: upstreams get FreeLane's
// pseudonym of it (llm.Edits.User), never the client's own.
type inRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	Messages      []inMessage     `json:"messages"`
	Tools         []inTool        `json:"tools"`
	ToolChoice    *inToolChoice   `json:"tool_choice"`
	Thinking      *inThinking     `json:"thinking"`
	OutputConfig  *outputConfig   `json:"output_config"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        *bool           `json:"stream"`
}

// inCacheControl is a block's or a tool's prompt-cache breakpoint.
type inCacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl"`
}

// cachePoint reads a breakpoint: only the ephemeral kind exists, and
// only the lifetimes Anthropic knows are kept (any other is the
// default).
func cachePoint(cc *inCacheControl) *llm.CachePoint {
	if cc == nil || cc.Type != "ephemeral" {
		return nil
	}
	cp := &llm.CachePoint{}
	switch cc.TTL {
	case "5m", "1h":
		cp.TTL = cc.TTL
	}
	return cp
}

type inMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// inBlock is any content block, of a request or an answer.
type inBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Source    *inSource       `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	// CacheControl marks the block as the end of a prefix to cache.
	CacheControl *inCacheControl `json:"cache_control"`
}

type inSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

type inTool struct {
	// Type is empty or "custom" for a client's own tool; Anthropic's
	// server tools (web_search_20250305, bash_20250124...) have others.
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      bool            `json:"strict"`
	// CacheControl marks the tools up to this one as a prefix to cache.
	CacheControl *inCacheControl `json:"cache_control"`
}

type inToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

type inThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type outputConfig struct {
	Effort string `json:"effort"`
	Format *struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	} `json:"format"`
}

// Conversation decodes the whole body into the neutral model.
func (s *source) Conversation() (*llm.Conversation, error) {
	var in inRequest
	if err := json.Unmarshal(s.body, &in); err != nil {
		return nil, llm.BadRequest("", "request body does not match the Messages API: %s", typeError(err))
	}
	c := &llm.Conversation{
		MaxOutput:   in.MaxTokens,
		Temperature: in.Temperature,
		TopP:        in.TopP,
		TopK:        in.TopK,
		Stop:        in.StopSequences,
	}
	if in.Stream != nil && *in.Stream {
		c.Stream, c.IncludeUsage = true, true
	}
	var err error
	if c.System, err = systemParts(in.System); err != nil {
		return nil, err
	}
	// names remembers each tool call's name for the results that answer
	// it, which other dialects (Gemini) must name.
	names := map[string]string{}
	for i, m := range in.Messages {
		param := fmt.Sprintf("messages[%d].content", i)
		blocks, err := contentBlocks(m.Content, param)
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case "system":
			// Some clients put their instructions among the messages;
			// Anthropic keeps them apart, and so does the neutral model.
			for _, b := range blocks {
				if b.Type == "text" && b.Text != "" {
					c.System = append(c.System, llm.Part{Kind: llm.PartText, Text: b.Text, Cache: cachePoint(b.CacheControl)})
				}
			}
		case "assistant":
			msg := llm.Message{Role: llm.RoleAssistant}
			for _, b := range blocks {
				if p, ok := assistantPart(b); ok {
					p.Cache = cachePoint(b.CacheControl)
					if p.Kind == llm.PartToolCall {
						names[p.ToolCall.ID] = p.ToolCall.Name
					}
					msg.Parts = append(msg.Parts, p)
				}
			}
			c.Messages = append(c.Messages, msg)
		default:
			// Tool results come first, one tool message each, as OpenAI
			// has them; the rest of the turn follows as a user message.
			user := llm.Message{Role: llm.RoleUser}
			for j, b := range blocks {
				if b.Type == "tool_result" {
					tr, err := toolResultPart(b, names, fmt.Sprintf("%s[%d].content", param, j))
					if err != nil {
						return nil, err
					}
					tr.Cache = cachePoint(b.CacheControl)
					c.Messages = append(c.Messages, llm.Message{Role: llm.RoleTool, Parts: []llm.Part{tr}})
					continue
				}
				if p, ok := userPart(b); ok {
					p.Cache = cachePoint(b.CacheControl)
					user.Parts = append(user.Parts, p)
				}
			}
			if len(user.Parts) > 0 {
				c.Messages = append(c.Messages, user)
			}
		}
	}
	for _, t := range in.Tools {
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool runs at Anthropic; no other vendor has it
		}
		c.Tools = append(c.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema, Strict: t.Strict, Cache: cachePoint(t.CacheControl)})
	}
	if tc := in.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto":
			c.ToolChoice = &llm.ToolChoice{Mode: llm.ToolAuto}
		case "any":
			c.ToolChoice = &llm.ToolChoice{Mode: llm.ToolRequired}
		case "tool":
			c.ToolChoice = &llm.ToolChoice{Mode: llm.ToolNamed, Name: tc.Name}
		case "none":
			c.ToolChoice = &llm.ToolChoice{Mode: llm.ToolNone}
		}
		if tc.DisableParallelToolUse {
			no := false
			c.ParallelToolCalls = &no
		}
	}
	c.Reasoning = reasoning(in.Thinking, in.OutputConfig)
	if oc := in.OutputConfig; oc != nil && oc.Format != nil && oc.Format.Type == "json_schema" {
		c.ResponseFormat = &llm.ResponseFormat{Type: "json_schema", Schema: oc.Format.Schema}
	}
	return c, nil
}

// reasoning maps thinking (and the effort of output_config, which adaptive
// thinking goes by) to the neutral setting.
func reasoning(t *inThinking, oc *outputConfig) *llm.Reasoning {
	effort := ""
	if oc != nil {
		effort = oc.Effort
		if effort == "max" {
			effort = "high"
		}
	}
	switch {
	case t == nil:
		if effort != "" {
			return &llm.Reasoning{Effort: effort}
		}
		return nil
	case t.Type == "enabled":
		return &llm.Reasoning{BudgetTokens: t.BudgetTokens}
	case t.Type == "disabled":
		return &llm.Reasoning{Disabled: true}
	case t.Type == "adaptive":
		if effort == "" {
			effort = "medium"
		}
		return &llm.Reasoning{Effort: effort}
	}
	return nil
}

// systemParts reads system: a string or an array of text blocks.
func systemParts(raw json.RawMessage) ([]llm.Part, error) {
	blocks, err := contentBlocks(raw, "system")
	if err != nil {
		return nil, err
	}
	var out []llm.Part
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			out = append(out, llm.Part{Kind: llm.PartText, Text: b.Text, Cache: cachePoint(b.CacheControl)})
		}
	}
	return out, nil
}

// contentBlocks reads content that is a string or an array of blocks; a
// string is one text block.
func contentBlocks(raw json.RawMessage, param string) ([]inBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, llm.BadRequest(param, "%s: %s", param, typeError(err))
		}
		return []inBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []inBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, llm.BadRequest(param, "%s must be a string or an array of content blocks: %s", param, typeError(err))
	}
	return blocks, nil
}

func userPart(b inBlock) (llm.Part, bool) {
	switch b.Type {
	case "text":
		return llm.Part{Kind: llm.PartText, Text: b.Text}, b.Text != ""
	case "image":
		if img := sourceImage(b.Source); img != nil {
			return llm.Part{Kind: llm.PartImage, Image: img}, true
		}
	case "document":
		// A plain-text document reads as text anywhere; a PDF has no
		// neutral form and is left out.
		if b.Source != nil && b.Source.Type == "text" && b.Source.Data != "" {
			return llm.Part{Kind: llm.PartText, Text: b.Source.Data}, true
		}
	}
	return llm.Part{}, false
}

func assistantPart(b inBlock) (llm.Part, bool) {
	switch b.Type {
	case "text":
		return llm.Part{Kind: llm.PartText, Text: b.Text}, b.Text != ""
	case "thinking":
		return llm.Part{Kind: llm.PartReasoning, Text: b.Thinking, Signature: b.Signature}, true
	case "redacted_thinking":
		return llm.Part{Kind: llm.PartReasoning, Redacted: b.Data}, true
	case "tool_use":
		return llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: compactInput(b.Input)}}, true
	}
	return llm.Part{}, false
}

// compactInput is a tool_use input as the JSON text of the arguments.
func compactInput(in json.RawMessage) string {
	var b bytes.Buffer
	if len(in) == 0 || json.Compact(&b, in) != nil || b.String() == "null" {
		return "{}"
	}
	return b.String()
}

func toolResultPart(b inBlock, names map[string]string, param string) (llm.Part, error) {
	tr := &llm.ToolResult{CallID: b.ToolUseID, Name: names[b.ToolUseID], IsError: b.IsError}
	blocks, err := contentBlocks(b.Content, param)
	if err != nil {
		return llm.Part{}, err
	}
	for _, cb := range blocks {
		if p, ok := userPart(cb); ok {
			tr.Content = append(tr.Content, p)
		}
	}
	return llm.Part{Kind: llm.PartToolResult, ToolResult: tr}, nil
}

func sourceImage(s *inSource) *llm.Image {
	if s == nil {
		return nil
	}
	switch s.Type {
	case "base64":
		if s.Data != "" {
			return &llm.Image{MediaType: s.MediaType, Data: s.Data}
		}
	case "url":
		if s.URL != "" {
			return &llm.Image{URL: s.URL}
		}
	}
	return nil
}

// typeError says which field of a body has the wrong type.
func typeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%s must not be a JSON %s", te.Field, te.Value)
		}
		return fmt.Sprintf("a JSON %s is not allowed here", te.Value)
	}
	return err.Error()
}
