package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"freelane/backend/llm"
)

// The chat request as OpenAI defines it, for decoding into the neutral
// model. Fields that take several shapes (content, stop, tool_choice) stay
// raw and are read by hand.
type chatRequest struct {
	Messages            []chatMessage   `json:"messages"`
	Tools               []chatTool      `json:"tools"`
	Functions           []chatFunction  `json:"functions"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	FunctionCall        json.RawMessage `json:"function_call"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	ResponseFormat      *responseFormat `json:"response_format"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	// Reasoning is OpenRouter's reasoning object, which several gateways
	// accept in place of reasoning_effort.
	Reasoning         *routerReasoning  `json:"reasoning"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	User              string            `json:"user"`
	Metadata          map[string]string `json:"metadata"`
	Stream            *bool             `json:"stream"`
	StreamOptions     *streamOptions    `json:"stream_options"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []toolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	// FunctionCall is the legacy single call of an assistant message.
	FunctionCall     *function       `json:"function_call"`
	Refusal          *string         `json:"refusal"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
}

type toolCall struct {
	// Index is only in stream chunks.
	Index    *int     `json:"index,omitempty"`
	ID       string   `json:"id,omitempty"`
	Type     string   `json:"type,omitempty"`
	Function function `json:"function"`
}

type function struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

type responseFormat struct {
	Type       string        `json:"type"`
	JSONSchema *schemaFormat `json:"json_schema,omitempty"`
}

type schemaFormat struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

type routerReasoning struct {
	Effort    string `json:"effort"`
	MaxTokens int    `json:"max_tokens"`
	Enabled   *bool  `json:"enabled"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// contentPart is one element of an array content.
type contentPart struct {
	Type     string     `json:"type"`
	Text     string     `json:"text"`
	Refusal  string     `json:"refusal"`
	ImageURL *imagePart `json:"image_url"`
}

type imagePart struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// Conversation decodes the body into the neutral model. Only chat bodies
// have one.
//
// System and developer messages at the head of the conversation become
// its System, their texts joined into one. One that comes later stays where it is, as a user message
// with its text: moving it to the front would change what it refers to,
// and the dialects without mid-conversation instructions read it there as
// well. The participant name of a message has no neutral place and is
// dropped.
func (r *source) Conversation() (*llm.Conversation, error) {
	if r.ep != llm.Chat {
		e := llm.BadRequest("", "the %s endpoint cannot be translated for an upstream of another dialect; only chat/completions can", r.ep)
		e.Code = "unsupported_endpoint"
		return nil, e
	}
	return decodeConversation(r.body)
}

func decodeConversation(body []byte) (*llm.Conversation, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, typeError(err)
	}
	c := &llm.Conversation{
		Temperature:       req.Temperature,
		TopP:              req.TopP,
		TopK:              req.TopK,
		Seed:              req.Seed,
		PresencePenalty:   req.PresencePenalty,
		FrequencyPenalty:  req.FrequencyPenalty,
		ParallelToolCalls: req.ParallelToolCalls,
		Metadata:          req.Metadata,
		Stream:            req.Stream != nil && *req.Stream,
	}
	// Usage is only ever asked of a stream; OpenAI refuses stream_options
	// on a request that is not one.
	c.IncludeUsage = c.Stream && req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	if len(c.Metadata) == 0 {
		c.Metadata = nil
	}
	var err error
	if c.MaxOutput, err = maxOutput(req); err != nil {
		return nil, err
	}
	if c.Stop, err = decodeStop(req.Stop); err != nil {
		return nil, err
	}
	if c.Tools, err = decodeTools(req.Tools, req.Functions); err != nil {
		return nil, err
	}
	if c.ToolChoice, err = decodeToolChoice(req.ToolChoice, req.FunctionCall); err != nil {
		return nil, err
	}
	if c.ResponseFormat, err = decodeResponseFormat(req.ResponseFormat); err != nil {
		return nil, err
	}
	c.Reasoning = decodeReasoning(req.ReasoningEffort, req.Reasoning)
	if err := decodeMessages(c, req.Messages); err != nil {
		return nil, err
	}
	return c, nil
}

// typeError explains a body json.Valid accepted but whose fields have the
// wrong types.
func typeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" && te.Type != nil {
		want := "another type"
		switch te.Type.Kind() {
		case reflect.String:
			want = "a string"
		case reflect.Bool:
			want = "true or false"
		case reflect.Int, reflect.Int64:
			want = "an integer"
		case reflect.Float64:
			want = "a number"
		case reflect.Slice:
			want = "an array"
		case reflect.Struct, reflect.Map:
			want = "an object"
		}
		return llm.BadRequest(te.Field, "%s must be %s, not a JSON %s", te.Field, want, te.Value)
	}
	return llm.BadRequest("", "request body cannot be read: %s", jsonErr(err))
}

func maxOutput(req chatRequest) (int, error) {
	n := 0
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 {
			return 0, llm.BadRequest(f.name, "%s must be a positive integer", f.name)
		}
		n = max(n, *f.v)
	}
	return n, nil
}

func decodeStop(raw json.RawMessage) ([]string, error) {
	switch {
	case isNull(raw):
		return nil, nil
	case raw[0] == '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, llm.BadRequest("stop", "stop must be a string or an array of strings")
	}
	if len(list) == 0 {
		return nil, nil
	}
	return list, nil
}

func decodeTools(tools []chatTool, functions []chatFunction) ([]llm.Tool, error) {
	var out []llm.Tool
	for i, t := range tools {
		if t.Type != "function" && t.Type != "" {
			return nil, llm.BadRequest(fmt.Sprintf("tools[%d].type", i),
				"tools[%d] is a %q tool, which cannot be translated for this upstream; only function tools can", i, t.Type)
		}
		tool, err := decodeFunction(fmt.Sprintf("tools[%d].function", i), t.Function)
		if err != nil {
			return nil, err
		}
		out = append(out, tool)
	}
	for i, f := range functions {
		tool, err := decodeFunction(fmt.Sprintf("functions[%d]", i), f)
		if err != nil {
			return nil, err
		}
		out = append(out, tool)
	}
	return out, nil
}

func decodeFunction(param string, f chatFunction) (llm.Tool, error) {
	if f.Name == "" {
		return llm.Tool{}, llm.BadRequest(param+".name", "%s.name is required", param)
	}
	t := llm.Tool{Name: f.Name, Description: f.Description, Strict: f.Strict}
	if !isNull(f.Parameters) {
		if f.Parameters[0] != '{' {
			return llm.Tool{}, llm.BadRequest(param+".parameters", "%s.parameters must be a JSON schema object", param)
		}
		t.Parameters = compact(f.Parameters)
	}
	return t, nil
}

// decodeToolChoice reads tool_choice, or the legacy function_call when
// tool_choice is absent.
func decodeToolChoice(raw, legacy json.RawMessage) (*llm.ToolChoice, error) {
	param := "tool_choice"
	if isNull(raw) {
		raw, param = legacy, "function_call"
	}
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		switch s {
		case "auto":
			return &llm.ToolChoice{Mode: llm.ToolAuto}, nil
		case "none":
			return &llm.ToolChoice{Mode: llm.ToolNone}, nil
		case "required", "any":
			return &llm.ToolChoice{Mode: llm.ToolRequired}, nil
		}
		return nil, llm.BadRequest(param, "%s must be \"auto\", \"none\", \"required\" or a named function, not %q", param, s)
	}
	var named struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return nil, llm.BadRequest(param, "%s must be a string or an object naming a function", param)
	}
	name := named.Function.Name
	if param == "function_call" {
		name = named.Name
	} else if named.Type != "function" && named.Type != "" {
		return nil, llm.BadRequest(param+".type", "a tool_choice of type %q cannot be translated for this upstream; use \"auto\", \"none\", \"required\" or a function", named.Type)
	}
	if name == "" {
		return nil, llm.BadRequest(param, "%s must name the function to call", param)
	}
	return &llm.ToolChoice{Mode: llm.ToolNamed, Name: name}, nil
}

func decodeResponseFormat(f *responseFormat) (*llm.ResponseFormat, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case "text", "json_object":
		return &llm.ResponseFormat{Type: f.Type}, nil
	case "json_schema":
		if f.JSONSchema == nil {
			return nil, llm.BadRequest("response_format.json_schema", "response_format.json_schema is required for the json_schema type")
		}
		rf := &llm.ResponseFormat{Type: f.Type, Name: f.JSONSchema.Name, Strict: f.JSONSchema.Strict}
		if !isNull(f.JSONSchema.Schema) {
			rf.Schema = compact(f.JSONSchema.Schema)
		}
		return rf, nil
	}
	return nil, llm.BadRequest("response_format.type", "response_format.type must be \"text\", \"json_object\" or \"json_schema\", not %q", f.Type)
}

// decodeReasoning reads reasoning_effort, or OpenRouter's reasoning
// object. The effort "none" is the explicit request for no reasoning.
func decodeReasoning(effort string, r *routerReasoning) *llm.Reasoning {
	if effort == "" && r != nil {
		switch {
		case r.Enabled != nil && !*r.Enabled:
			return &llm.Reasoning{Disabled: true}
		case r.Effort != "":
			effort = r.Effort
		case r.MaxTokens > 0:
			return &llm.Reasoning{BudgetTokens: r.MaxTokens}
		}
	}
	switch effort {
	case "":
		return nil
	case "none":
		return &llm.Reasoning{Disabled: true}
	}
	return &llm.Reasoning{Effort: effort}
}

// decodeMessages fills the system and the turns of c.
func decodeMessages(c *llm.Conversation, msgs []chatMessage) error {
	// calls maps each tool call's id to its function's name, so tool
	// results can say which tool answered; legacy calls, which have no id,
	// get one made from their position.
	calls := map[string]string{}
	var legacyOpen []llm.ToolCall
	head := true
	for i, m := range msgs {
		param := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer":
			parts, err := decodeContent(param, m.Content, false)
			if err != nil {
				return err
			}
			if head {
				c.System = joinText(append(c.System, parts...))
				continue
			}
			c.Messages = append(c.Messages, llm.Message{Role: llm.RoleUser, Parts: parts})
			continue
		case "user":
			parts, err := decodeContent(param, m.Content, true)
			if err != nil {
				return err
			}
			c.Messages = append(c.Messages, llm.Message{Role: llm.RoleUser, Parts: parts})
		case "assistant":
			msg, err := decodeAssistant(param, m, len(c.Messages))
			if err != nil {
				return err
			}
			for _, p := range msg.Parts {
				if p.Kind == llm.PartToolCall {
					calls[p.ToolCall.ID] = p.ToolCall.Name
				}
			}
			if m.FunctionCall != nil && len(m.ToolCalls) == 0 {
				legacyOpen = append(legacyOpen, *msg.Parts[len(msg.Parts)-1].ToolCall)
			}
			c.Messages = append(c.Messages, msg)
		case "tool", "function":
			parts, err := decodeContent(param, m.Content, true)
			if err != nil {
				return err
			}
			res := &llm.ToolResult{CallID: m.ToolCallID, Content: joinText(parts)}
			if m.Role == "function" {
				// A legacy result answers the latest open call of its name.
				res.Name = m.Name
				for j := len(legacyOpen) - 1; j >= 0; j-- {
					if legacyOpen[j].Name == m.Name {
						res.CallID = legacyOpen[j].ID
						legacyOpen = append(legacyOpen[:j], legacyOpen[j+1:]...)
						break
					}
				}
				if res.CallID == "" {
					return llm.BadRequest(param+".name", "%s answers no earlier function_call of %q", param, m.Name)
				}
			} else {
				if m.ToolCallID == "" {
					return llm.BadRequest(param+".tool_call_id", "%s.tool_call_id is required for a tool message", param)
				}
				res.Name = calls[m.ToolCallID]
			}
			part := llm.Part{Kind: llm.PartToolResult, ToolResult: res}
			// Results of one round of calls share one message, as the
			// dialects that carry them in a single turn expect.
			if n := len(c.Messages); n > 0 && c.Messages[n-1].Role == llm.RoleTool {
				c.Messages[n-1].Parts = append(c.Messages[n-1].Parts, part)
			} else {
				c.Messages = append(c.Messages, llm.Message{Role: llm.RoleTool, Parts: []llm.Part{part}})
			}
		default:
			return llm.BadRequest(param+".role", "%s.role must be system, developer, user, assistant or tool, not %q", param, m.Role)
		}
		head = false
	}
	return nil
}

// decodeAssistant reads an assistant turn: its reasoning, its text and its
// tool calls, in that order. n is the turn's position, which names the
// call of a legacy function_call.
func decodeAssistant(param string, m chatMessage, n int) (llm.Message, error) {
	msg := llm.Message{Role: llm.RoleAssistant}
	reasoning := ""
	if m.ReasoningContent != nil {
		reasoning = *m.ReasoningContent
	} else if len(m.Reasoning) > 0 && m.Reasoning[0] == '"' {
		_ = json.Unmarshal(m.Reasoning, &reasoning)
	}
	if reasoning != "" {
		msg.Parts = append(msg.Parts, llm.Part{Kind: llm.PartReasoning, Text: reasoning})
	}
	parts, err := decodeContent(param, m.Content, false)
	if err != nil {
		return msg, err
	}
	msg.Parts = append(msg.Parts, joinText(parts)...)
	if len(parts) == 0 && m.Refusal != nil && *m.Refusal != "" {
		msg.Parts = append(msg.Parts, llm.Part{Kind: llm.PartText, Text: *m.Refusal})
	}
	for j, tc := range m.ToolCalls {
		p := fmt.Sprintf("%s.tool_calls[%d]", param, j)
		if tc.Type != "function" && tc.Type != "" {
			return msg, llm.BadRequest(p+".type", "%s is a %q call, which cannot be translated for this upstream; only function calls can", p, tc.Type)
		}
		if tc.Function.Name == "" {
			return msg, llm.BadRequest(p+".function.name", "%s.function.name is required", p)
		}
		msg.Parts = append(msg.Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{
			ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments,
		}})
	}
	if fc := m.FunctionCall; fc != nil && len(m.ToolCalls) == 0 {
		if fc.Name == "" {
			return msg, llm.BadRequest(param+".function_call.name", "%s.function_call.name is required", param)
		}
		msg.Parts = append(msg.Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{
			ID: "call_" + strconv.Itoa(n), Name: fc.Name, Arguments: fc.Arguments,
		}})
	}
	return msg, nil
}

// decodeContent reads a message's content: a string, or an array of text
// parts, and of image parts where images is set. Empty text is dropped:
// it says nothing, and some dialects refuse empty blocks.
func decodeContent(param string, raw json.RawMessage, images bool) ([]llm.Part, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		if s == "" {
			return nil, nil
		}
		return []llm.Part{{Kind: llm.PartText, Text: s}}, nil
	}
	var list []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		return nil, llm.BadRequest(param+".content", "%s.content must be a string or an array of content parts", param)
	}
	var out []llm.Part
	for j, el := range list {
		p := fmt.Sprintf("%s.content[%d]", param, j)
		var cp contentPart
		if err := json.Unmarshal(el, &cp); err != nil {
			return nil, llm.BadRequest(p, "%s must be a content part object", p)
		}
		switch cp.Type {
		case "text", "input_text", "output_text":
			if cp.Text != "" {
				out = append(out, llm.Part{Kind: llm.PartText, Text: cp.Text})
			}
		case "refusal":
			if cp.Refusal != "" {
				out = append(out, llm.Part{Kind: llm.PartText, Text: cp.Refusal})
			}
		case "image_url":
			if !images {
				return nil, llm.BadRequest(p+".type", "%s is an image, which this role cannot carry", p)
			}
			img, err := decodeImage(p, cp.ImageURL)
			if err != nil {
				return nil, err
			}
			out = append(out, llm.Part{Kind: llm.PartImage, Image: img})
		case "input_audio", "file", "audio":
			return nil, llm.BadRequest(p+".type", "%s is a %s part, which cannot be translated for this upstream's dialect; send it to an OpenAI-compatible model or leave it out", p, cp.Type)
		default:
			return nil, llm.BadRequest(p+".type", "%s has the unknown type %q; use text or image_url", p, cp.Type)
		}
	}
	return out, nil
}

// textSeparator joins the texts of a message whose dialect or whose
// upstreams want one string: the system, assistant turns and tool results.
const textSeparator = "\n\n"

// joinText makes the text parts of parts one, unless an image is among
// them. System, assistant and tool content is sent as a single string,
// which every OpenAI-compatible server takes (many refuse arrays there),
// so it is decoded as one too.
func joinText(parts []llm.Part) []llm.Part {
	if len(parts) < 2 {
		return parts
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Kind != llm.PartText {
			return parts
		}
		texts = append(texts, p.Text)
	}
	return []llm.Part{{Kind: llm.PartText, Text: strings.Join(texts, textSeparator)}}
}

// decodeImage reads an image_url part: a data: URL becomes inline data,
// an http(s) URL stays a URL.
func decodeImage(param string, u *imagePart) (*llm.Image, error) {
	if u == nil || u.URL == "" {
		return nil, llm.BadRequest(param+".image_url.url", "%s.image_url.url is required", param)
	}
	img := &llm.Image{Detail: u.Detail}
	rest, ok := strings.CutPrefix(u.URL, "data:")
	if !ok {
		if !strings.HasPrefix(u.URL, "https://") && !strings.HasPrefix(u.URL, "http://") {
			return nil, llm.BadRequest(param+".image_url.url", "%s.image_url.url must be an http(s) URL or a data: URL", param)
		}
		img.URL = u.URL
		return img, nil
	}
	meta, data, ok := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isBase64 || mediaType == "" || strings.Contains(mediaType, ";") {
		return nil, llm.BadRequest(param+".image_url.url", "%s.image_url.url must be a data URL of the form data:<media type>;base64,<data>", param)
	}
	if data == "" {
		return nil, llm.BadRequest(param+".image_url.url", "%s.image_url.url is a data URL without data", param)
	}
	img.MediaType, img.Data = mediaType, data
	return img, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// compact returns the JSON text without insignificant space, so a schema
// compares equal however the client laid it out.
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
