package responses

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"freelane/backend/llm"
)

// The request body as a client sends it, for decoding into the neutral
// model. Members FreeLane has no place for (include, prompt_cache_key,
// service_tier, truncation...) are not listed and so ignored.
type inRequest struct {
	Instructions      *string           `json:"instructions"`
	Input             json.RawMessage   `json:"input"`
	Tools             []inTool          `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	MaxOutputTokens   int               `json:"max_output_tokens"`
	Temperature       *float64          `json:"temperature"`
	TopP              *float64          `json:"top_p"`
	Reasoning         *inReasoning      `json:"reasoning"`
	Text              *inText           `json:"text"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	User              string            `json:"user"`
	SafetyIdentifier  string            `json:"safety_identifier"`
	Metadata          map[string]string `json:"metadata"`
	Stream            *bool             `json:"stream"`
}

// inItem is any input item.
type inItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	// Input is a custom tool call's free-form input.
	Input  string          `json:"input"`
	Output json.RawMessage `json:"output"`
	// Summary is a reasoning item's summary parts.
	Summary          []inPart `json:"summary"`
	EncryptedContent string   `json:"encrypted_content"`
	// Action is a local shell call's.
	Action json.RawMessage `json:"action"`
}

// inPart is a content part, of a message, a tool output or a reasoning
// summary.
type inPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	// Refusal is an output_text refusal's text.
	Refusal string `json:"refusal"`
}

type inTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

type inReasoning struct {
	Effort string `json:"effort"`
}

type inText struct {
	Format *struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"format"`
}

// Conversation decodes the whole body, after the stored conversation it
// continues, into the neutral model.
func (s *Source) Conversation() (*llm.Conversation, error) {
	var in inRequest
	if err := json.Unmarshal(s.body, &in); err != nil {
		return nil, llm.BadRequest("", "request body does not match the Responses API: %s", typeError(err))
	}
	c := &llm.Conversation{
		MaxOutput:         in.MaxOutputTokens,
		Temperature:       in.Temperature,
		TopP:              in.TopP,
		ParallelToolCalls: in.ParallelToolCalls,
		Metadata:          in.Metadata,
	}
	if in.Stream != nil && *in.Stream {
		c.Stream, c.IncludeUsage = true, true
	}
	if in.Instructions != nil && *in.Instructions != "" {
		c.System = append(c.System, llm.Part{Kind: llm.PartText, Text: *in.Instructions})
	}
	b := builder{c: c, names: map[string]string{}}
	if s.history != nil {
		var items []inItem
		if err := json.Unmarshal(s.history, &items); err != nil {
			return nil, fmt.Errorf("responses: the stored conversation cannot be read: %w", err)
		}
		if err := b.items(items, "previous_response_id"); err != nil {
			return nil, err
		}
	}
	items, err := inputItems(in.Input)
	if err != nil {
		return nil, err
	}
	if err := b.items(items, "input"); err != nil {
		return nil, err
	}
	for _, t := range in.Tools {
		if t.Type != "function" {
			continue // noted when the request was parsed
		}
		c.Tools = append(c.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict != nil && *t.Strict})
	}
	c.ToolChoice = toolChoice(in.ToolChoice)
	if r := in.Reasoning; r != nil {
		switch r.Effort {
		case "":
		case "none":
			c.Reasoning = &llm.Reasoning{Disabled: true}
		case "xhigh":
			c.Reasoning = &llm.Reasoning{Effort: "high"}
		default:
			c.Reasoning = &llm.Reasoning{Effort: r.Effort}
		}
	}
	if t := in.Text; t != nil && t.Format != nil {
		switch f := t.Format; f.Type {
		case "json_schema":
			c.ResponseFormat = &llm.ResponseFormat{Type: "json_schema", Name: f.Name, Schema: f.Schema, Strict: f.Strict != nil && *f.Strict}
		case "json_object":
			c.ResponseFormat = &llm.ResponseFormat{Type: "json_object"}
		}
	}
	return c, nil
}

// inputItems reads input: a string is one user message.
func inputItems(raw json.RawMessage) ([]inItem, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, llm.BadRequest("input", "input: %s", typeError(err))
		}
		content, _ := json.Marshal(s)
		return []inItem{{Type: "message", Role: "user", Content: content}}, nil
	}
	var items []inItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, llm.BadRequest("input", "input must be a string or an array of input items: %s", typeError(err))
	}
	return items, nil
}

// builder turns items into messages. Consecutive assistant output (text,
// reasoning, function calls) is one assistant turn, as the other dialects
// have it.
type builder struct {
	c *llm.Conversation
	// names remembers each call's name for the output that answers it,
	// which other dialects (Gemini) must name.
	names map[string]string
}

// assistant returns the assistant turn at the end of the conversation,
// opening one if the last turn is another's.
func (b *builder) assistant() *llm.Message {
	ms := b.c.Messages
	if len(ms) == 0 || ms[len(ms)-1].Role != llm.RoleAssistant {
		b.c.Messages = append(b.c.Messages, llm.Message{Role: llm.RoleAssistant})
	}
	return &b.c.Messages[len(b.c.Messages)-1]
}

func (b *builder) items(items []inItem, param string) error {
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", param, i)
		t := it.Type
		if t == "" && it.Role != "" {
			t = "message"
		}
		switch t {
		case "message":
			if err := b.message(it, p); err != nil {
				return err
			}
		case "function_call":
			b.names[it.CallID] = it.Name
			m := b.assistant()
			m.Parts = append(m.Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: orEmptyObject(it.Arguments)}})
		case "custom_tool_call":
			// A free-form call reads as a function call of one string
			// argument in every other dialect.
			b.names[it.CallID] = it.Name
			args := string(marshal(map[string]string{"input": it.Input}))
			m := b.assistant()
			m.Parts = append(m.Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: args}})
		case "local_shell_call":
			b.names[it.CallID] = "local_shell"
			args := "{}"
			if len(it.Action) > 0 {
				args = string(it.Action)
			}
			m := b.assistant()
			m.Parts = append(m.Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: it.CallID, Name: "local_shell", Arguments: args}})
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			content, err := outputParts(it.Output, p+".output")
			if err != nil {
				return err
			}
			tr := &llm.ToolResult{CallID: it.CallID, Name: b.names[it.CallID], Content: content}
			b.c.Messages = append(b.c.Messages, llm.Message{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: tr}}})
		case "reasoning":
			if part, ok := reasoningPart(it); ok {
				m := b.assistant()
				m.Parts = append(m.Parts, part)
			}
		case "compaction", "compaction_summary":
			// A compaction made by FreeLane holds its summary; one made by
			// another server is opaque and left out.
			if sum, ok := summaryOf(it.EncryptedContent); ok {
				b.c.Messages = append(b.c.Messages, llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: SummaryPrefix + sum}}})
			}
		}
		// Other items (web_search_call, file_search_call...) are the
		// traces of OpenAI's own tools, which no backend can read.
	}
	return nil
}

func (b *builder) message(it inItem, param string) error {
	parts, err := contentParts(it.Content, param+".content")
	if err != nil {
		return err
	}
	switch it.Role {
	case "system", "developer":
		for _, p := range parts {
			if p.Kind == llm.PartText && p.Text != "" {
				b.c.System = append(b.c.System, p)
			}
		}
	case "assistant":
		m := b.assistant()
		for _, p := range parts {
			if p.Kind == llm.PartText && p.Text != "" {
				m.Parts = append(m.Parts, p)
			}
		}
	default:
		if len(parts) > 0 {
			b.c.Messages = append(b.c.Messages, llm.Message{Role: llm.RoleUser, Parts: parts})
		}
	}
	return nil
}

// contentParts reads a message's content: a string, or an array of parts.
func contentParts(raw json.RawMessage, param string) ([]llm.Part, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, llm.BadRequest(param, "%s: %s", param, typeError(err))
		}
		if s == "" {
			return nil, nil
		}
		return []llm.Part{{Kind: llm.PartText, Text: s}}, nil
	}
	var ps []inPart
	if err := json.Unmarshal(raw, &ps); err != nil {
		return nil, llm.BadRequest(param, "%s must be a string or an array of content parts: %s", param, typeError(err))
	}
	var out []llm.Part
	for _, p := range ps {
		switch p.Type {
		case "input_text", "output_text", "text", "summary_text":
			if p.Text != "" {
				out = append(out, llm.Part{Kind: llm.PartText, Text: p.Text})
			}
		case "refusal":
			if p.Refusal != "" {
				out = append(out, llm.Part{Kind: llm.PartText, Text: p.Refusal})
			}
		case "input_image":
			if img := image(p); img != nil {
				out = append(out, llm.Part{Kind: llm.PartImage, Image: img})
			}
		}
		// input_file and input_audio have no neutral form.
	}
	return out, nil
}

// outputParts reads a tool output: a string, or an array of parts.
func outputParts(raw json.RawMessage, param string) ([]llm.Part, error) {
	parts, err := contentParts(raw, param)
	if err != nil {
		return nil, err
	}
	if parts == nil {
		// An empty output still answers its call.
		parts = []llm.Part{{Kind: llm.PartText, Text: ""}}
	}
	return parts, nil
}

// image reads an input_image: a data: URL is inline data, anything else a
// URL.
func image(p inPart) *llm.Image {
	u := p.ImageURL
	if u == "" {
		return nil
	}
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		if mt, isB64 := strings.CutSuffix(meta, ";base64"); ok && isB64 {
			return &llm.Image{MediaType: mt, Data: data, Detail: p.Detail}
		}
	}
	return &llm.Image{URL: u, Detail: p.Detail}
}

// reasoningPart reads a reasoning item. Its summary is the reasoning's
// text; encrypted_content is kept only when FreeLane wrote it (a vendor's
// signature over the reasoning, which that vendor wants back), since
// OpenAI's own is meaningful to OpenAI alone.
func reasoningPart(it inItem) (llm.Part, bool) {
	var text strings.Builder
	for _, s := range it.Summary {
		if s.Text != "" {
			if text.Len() > 0 {
				text.WriteString("\n\n")
			}
			text.WriteString(s.Text)
		}
	}
	p := llm.Part{Kind: llm.PartReasoning, Text: text.String()}
	if sig, red, ok := sealOf(it.EncryptedContent); ok {
		p.Signature, p.Redacted = sig, red
	}
	return p, p.Text != "" || p.Signature != "" || p.Redacted != ""
}

func orEmptyObject(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

// toolChoice reads tool_choice: a mode, or an object naming a function.
func toolChoice(raw json.RawMessage) *llm.ToolChoice {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		switch s {
		case "auto":
			return &llm.ToolChoice{Mode: llm.ToolAuto}
		case "none":
			return &llm.ToolChoice{Mode: llm.ToolNone}
		case "required":
			return &llm.ToolChoice{Mode: llm.ToolRequired}
		}
		return nil
	}
	var o struct {
		Type string `json:"type"`
		Name string `json:"name"`
		Mode string `json:"mode"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	switch o.Type {
	case "function", "custom":
		if o.Name != "" {
			return &llm.ToolChoice{Mode: llm.ToolNamed, Name: o.Name}
		}
	case "allowed_tools":
		if o.Mode == "required" {
			return &llm.ToolChoice{Mode: llm.ToolRequired}
		}
		return &llm.ToolChoice{Mode: llm.ToolAuto}
	}
	// A hosted tool's choice names a tool no backend has.
	return &llm.ToolChoice{Mode: llm.ToolAuto}
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

// The prefixes of the opaque fields FreeLane writes, so it can tell its own
// from another server's when a client sends them back.
const (
	compactionPrefix = "freelane.compaction.v1."
	reasoningPrefix  = "freelane.reasoning.v1."
)

// SummaryPrefix introduces a compacted conversation's summary to the
// model, which reads it as the handoff of an earlier context.
const SummaryPrefix = "The conversation so far was compacted to save context. This is a summary of it, written for you to continue the work from:\n\n"

// SealSummary is the encrypted_content of a compaction item holding
// summary. It is not encrypted: FreeLane's compactions are read back by
// FreeLane, on the user's own machine.
func SealSummary(summary string) string {
	return compactionPrefix + base64.StdEncoding.EncodeToString([]byte(summary))
}

// summaryOf reads a compaction item's encrypted_content written by
// SealSummary.
func summaryOf(enc string) (string, bool) {
	rest, ok := strings.CutPrefix(enc, compactionPrefix)
	if !ok {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// seal is a reasoning item's encrypted_content holding a vendor's
// signature over the reasoning, or its redacted reasoning, so the client's
// next turn can give them back.
func seal(signature, redacted string) string {
	if signature == "" && redacted == "" {
		return ""
	}
	b := marshal(struct {
		S string `json:"s,omitempty"`
		R string `json:"r,omitempty"`
	}{signature, redacted})
	return reasoningPrefix + base64.StdEncoding.EncodeToString(b)
}

func sealOf(enc string) (signature, redacted string, ok bool) {
	rest, ok := strings.CutPrefix(enc, reasoningPrefix)
	if !ok {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return "", "", false
	}
	var v struct {
		S string `json:"s"`
		R string `json:"r"`
	}
	if json.Unmarshal(b, &v) != nil {
		return "", "", false
	}
	return v.S, v.R, true
}
