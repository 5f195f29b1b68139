package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// The upstream direction: a conversation written as a Responses request,
// and a Responses answer or stream read back. No provider kind speaks the
// Responses API yet, so the router never calls these; they are kept
// complete so that FreeLane's own answers and streams can be read back in
// tests, and a provider kind needs only its wire added.

// outRequest is a Responses request as FreeLane writes it.
type outRequest struct {
	Model             string        `json:"model"`
	Instructions      string        `json:"instructions,omitempty"`
	Input             []any         `json:"input"`
	Tools             []outTool     `json:"tools,omitempty"`
	ToolChoice        any           `json:"tool_choice,omitempty"`
	MaxOutputTokens   int           `json:"max_output_tokens,omitempty"`
	Temperature       *float64      `json:"temperature,omitempty"`
	TopP              *float64      `json:"top_p,omitempty"`
	Reasoning         *outReasoning `json:"reasoning,omitempty"`
	Text              *outText      `json:"text,omitempty"`
	ParallelToolCalls *bool         `json:"parallel_tool_calls,omitempty"`
	// PromptCacheKey and User are FreeLane's keyed hashes of the
	// caller's session and end user (llm.Edits), never the caller's own.
	PromptCacheKey string            `json:"prompt_cache_key,omitempty"`
	User           string            `json:"user,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	Stream         bool              `json:"stream,omitempty"`
	// Store is false: what FreeLane sends is the whole conversation, and
	// the vendor need not keep it.
	Store bool `json:"store"`
}

type outTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

type outReasoning struct {
	Effort string `json:"effort"`
}

type outText struct {
	Format outFormat `json:"format"`
}

type outFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

type (
	outMessage struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []any  `json:"content"`
	}
	outImage struct {
		Type     string `json:"type"`
		ImageURL string `json:"image_url"`
		Detail   string `json:"detail,omitempty"`
	}
	outCall struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	outCallOutput struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output any    `json:"output"`
	}
)

// dropNames maps the parameter names upstream quirks use (OpenAI's chat
// names) to the members of a Responses request they stand for.
var dropNames = map[string]string{
	"max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens",
	"reasoning_effort": "reasoning", "response_format": "text",
}

// EncodeRequest writes c as a Responses request for model. Reasoning parts
// are left out: the vendor's own reasoning items carry ids and encrypted
// content only it made.
func (codec) EncodeRequest(c *llm.Conversation, model string, e llm.Edits) ([]byte, error) {
	if c == nil {
		return nil, fmt.Errorf("responses: no conversation")
	}
	r := outRequest{Model: model, Input: []any{}, Temperature: c.Temperature, TopP: c.TopP,
		ParallelToolCalls: c.ParallelToolCalls, User: e.User, PromptCacheKey: e.Session, Metadata: c.Metadata, Stream: c.Stream, MaxOutputTokens: c.MaxOutput}
	var sys []string
	for _, p := range c.System {
		if p.Kind == llm.PartText && p.Text != "" {
			sys = append(sys, p.Text)
		}
	}
	r.Instructions = strings.Join(sys, "\n\n")
	for _, m := range c.Messages {
		r.Input = appendItems(r.Input, m)
	}
	for _, t := range c.Tools {
		r.Tools = append(r.Tools, outTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict})
	}
	if tc := c.ToolChoice; tc != nil {
		switch tc.Mode {
		case llm.ToolNamed:
			r.ToolChoice = map[string]string{"type": "function", "name": tc.Name}
		default:
			r.ToolChoice = string(tc.Mode)
		}
	}
	if rs := c.Reasoning; rs != nil {
		switch {
		case rs.Disabled:
			r.Reasoning = &outReasoning{"none"}
		case rs.Effort != "":
			r.Reasoning = &outReasoning{rs.Effort}
		case rs.BudgetTokens > 0:
			r.Reasoning = &outReasoning{effortOf(rs.BudgetTokens)}
		}
	}
	if f := c.ResponseFormat; f != nil && f.Type != "text" {
		r.Text = &outText{outFormat{Type: f.Type, Name: f.Name, Schema: f.Schema, Strict: f.Strict}}
		if f.Type == "json_schema" && r.Text.Format.Name == "" {
			r.Text.Format.Name = "response"
		}
	}
	if e.MaxOutput > 0 && (r.MaxOutputTokens == 0 || r.MaxOutputTokens > e.MaxOutput) {
		r.MaxOutputTokens = e.MaxOutput
	}
	body := marshal(r)
	if len(e.Drop) == 0 {
		return body, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("responses: %w", err)
	}
	for _, d := range e.Drop {
		if d == "model" || d == "input" {
			continue
		}
		delete(m, d)
		delete(m, dropNames[d])
	}
	return marshal(m), nil
}

// effortOf is the effort closest to a thinking budget.
func effortOf(budget int) string {
	switch {
	case budget <= 2048:
		return "low"
	case budget <= 8192:
		return "medium"
	}
	return "high"
}

// appendItems writes one message as input items.
func appendItems(items []any, m llm.Message) []any {
	switch m.Role {
	case llm.RoleTool:
		for _, p := range m.Parts {
			if p.Kind != llm.PartToolResult || p.ToolResult == nil {
				continue
			}
			items = append(items, outCallOutput{Type: "function_call_output", CallID: p.ToolResult.CallID, Output: toolOutput(p.ToolResult.Content)})
		}
	case llm.RoleAssistant:
		var text []any
		flush := func() {
			if len(text) > 0 {
				items = append(items, outMessage{Type: "message", Role: "assistant", Content: text})
				text = nil
			}
		}
		for _, p := range m.Parts {
			switch p.Kind {
			case llm.PartText:
				if p.Text != "" {
					text = append(text, textPart{Type: "output_text", Text: p.Text})
				}
			case llm.PartToolCall:
				flush()
				tc := p.ToolCall
				items = append(items, outCall{Type: "function_call", CallID: callID(tc.ID), Name: tc.Name, Arguments: orEmptyObject(tc.Arguments)})
			}
		}
		flush()
	default:
		var content []any
		for _, p := range m.Parts {
			switch p.Kind {
			case llm.PartText:
				content = append(content, textPart{Type: "input_text", Text: p.Text})
			case llm.PartImage:
				content = append(content, imagePart(p.Image))
			}
		}
		if len(content) > 0 {
			items = append(items, outMessage{Type: "message", Role: "user", Content: content})
		}
	}
	return items
}

func imagePart(img *llm.Image) outImage {
	u := img.URL
	if img.Data != "" {
		u = "data:" + img.MediaType + ";base64," + img.Data
	}
	return outImage{Type: "input_image", ImageURL: u, Detail: img.Detail}
}

// toolOutput is a tool result's content: a string when it is text only.
func toolOutput(parts []llm.Part) any {
	var text strings.Builder
	var content []any
	images := false
	for _, p := range parts {
		switch p.Kind {
		case llm.PartText:
			text.WriteString(p.Text)
			content = append(content, textPart{Type: "input_text", Text: p.Text})
		case llm.PartImage:
			images = true
			content = append(content, imagePart(p.Image))
		}
	}
	if !images {
		return text.String()
	}
	return content
}

// inResponse is a Response object as a server sends it.
type inResponse struct {
	ID                string   `json:"id"`
	Model             string   `json:"model"`
	Status            string   `json:"status"`
	Output            []inItem `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *usage         `json:"usage"`
	Error *ResponseError `json:"error"`
}

func (u *usage) neutral() *llm.Usage {
	if u == nil {
		return nil
	}
	// input_tokens includes the cached tokens, as the neutral prompt does.
	return &llm.Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens,
		CacheReadTokens: u.InputTokensDetails.CachedTokens}
}

// DecodeResponse reads a complete Response object.
func (codec) DecodeResponse(body []byte) (*llm.Answer, error) {
	var r inResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("responses: answer is not a response: %w", err)
	}
	if r.Error != nil && r.Error.Message != "" {
		return nil, fmt.Errorf("responses: answer is an error: %s", llm.Truncate(r.Error.Message, 200))
	}
	a := &llm.Answer{ID: r.ID, Model: r.Model, Usage: r.Usage.neutral()}
	calls := false
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			parts, err := contentParts(it.Content, "output")
			if err != nil {
				return nil, err
			}
			a.Parts = append(a.Parts, parts...)
		case "reasoning":
			if p, ok := reasoningPart(it); ok {
				a.Parts = append(a.Parts, p)
			}
		case "function_call":
			calls = true
			a.Parts = append(a.Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: orEmptyObject(it.Arguments)}})
		}
	}
	a.Finish = finishOf(r.Status, r.IncompleteDetails, calls)
	return a, nil
}

func finishOf(status string, inc *struct {
	Reason string `json:"reason"`
}, calls bool) llm.FinishReason {
	if status == "incomplete" && inc != nil {
		if inc.Reason == "content_filter" {
			return llm.FinishContentFilter
		}
		return llm.FinishLength
	}
	if calls {
		return llm.FinishToolCalls
	}
	return llm.FinishStop
}

// streamEvent is any event of a Responses stream.
type streamEvent struct {
	Type        string      `json:"type"`
	OutputIndex int         `json:"output_index"`
	ItemID      string      `json:"item_id"`
	Delta       string      `json:"delta"`
	Item        *inItem     `json:"item"`
	Response    *inResponse `json:"response"`
	// Error is an error event's, in either of the shapes servers send:
	// nested, or code and message at the top level.
	Error   *ResponseError `json:"error"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
}

// decoder reads one Responses stream.
type decoder struct {
	// tools maps a function call's output index to its tool call number.
	tools map[int]int
	calls int
}

// NewStreamDecoder returns a converter for one Responses stream.
func (codec) NewStreamDecoder() protocol.StreamDecoder { return &decoder{tools: map[int]int{}} }

// maxCalls bounds the calls one stream may open, so a hostile upstream
// cannot grow the decoder's map without end.
const maxCalls = 1 << 12

func parseEvent(name, data []byte) (streamEvent, error) {
	var ev streamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return ev, protocol.ErrMalformed
	}
	if ev.Type == "" {
		ev.Type = string(name)
	}
	return ev, nil
}

func (d *decoder) Decode(dst []llm.Delta, name, data []byte) ([]llm.Delta, bool, error) {
	ev, err := parseEvent(name, data)
	if err != nil {
		return dst, false, err
	}
	switch ev.Type {
	case evTextDelta:
		if ev.Delta != "" {
			dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: ev.Delta})
		}
	case evSummaryDelta, "response.reasoning_text.delta":
		if ev.Delta != "" {
			dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Text: ev.Delta})
		}
	case evItemAdded:
		if it := ev.Item; it != nil && it.Type == "function_call" {
			if _, ok := d.tools[ev.OutputIndex]; !ok {
				if len(d.tools) >= maxCalls {
					return dst, false, protocol.ErrMalformed
				}
				d.tools[ev.OutputIndex] = d.calls
				d.calls++
			}
			dst = append(dst, llm.Delta{Kind: llm.DeltaToolStart, Index: d.tools[ev.OutputIndex], ID: it.CallID, Name: it.Name})
		}
	case evArgsDelta:
		if ev.Delta == "" {
			break
		}
		n, ok := d.tools[ev.OutputIndex]
		if !ok {
			// Arguments of a call never announced: start it nameless,
			// as the encoder does.
			if len(d.tools) >= maxCalls {
				return dst, false, protocol.ErrMalformed
			}
			n = d.calls
			d.tools[ev.OutputIndex] = n
			d.calls++
			dst = append(dst, llm.Delta{Kind: llm.DeltaToolStart, Index: n})
		}
		dst = append(dst, llm.Delta{Kind: llm.DeltaToolArgs, Index: n, Text: ev.Delta})
	case evItemDone:
		it := ev.Item
		if it == nil {
			break
		}
		switch it.Type {
		case "function_call":
			if n, ok := d.tools[ev.OutputIndex]; ok {
				dst = append(dst, llm.Delta{Kind: llm.DeltaToolEnd, Index: n})
			}
		case "reasoning":
			if sig, red, ok := sealOf(it.EncryptedContent); ok {
				dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Signature: sig, Redacted: red})
			}
		}
	case evCompleted, evIncomplete:
		if r := ev.Response; r != nil {
			dst = append(dst, llm.Delta{Kind: llm.DeltaFinish, Finish: finishOf(r.Status, r.IncompleteDetails, d.calls > 0)})
			if u := r.Usage.neutral(); u != nil {
				dst = append(dst, llm.Delta{Kind: llm.DeltaUsage, Usage: u})
			}
		}
		return dst, true, nil
	case evFailed, evError:
		return dst, false, d.streamError(ev, data)
	}
	return dst, false, nil
}

// streamError is the *llm.Error of a response.failed or error event.
func (d *decoder) streamError(ev streamEvent, data []byte) *llm.Error {
	code, msg := ev.Code, ev.Message
	if e := ev.Error; e != nil {
		code, msg = e.Code, e.Message
	}
	if r := ev.Response; r != nil && r.Error != nil {
		code, msg = r.Error.Code, r.Error.Message
	}
	e := &llm.Error{Class: llm.Transient, Status: http.StatusOK, Code: code, Dialect: llm.DialectResponses, Body: bytes.Clone(data),
		Message: "upstream error mid-stream: " + llm.Truncate(strings.TrimSpace(code+": "+msg), 200)}
	switch {
	case code == "rate_limit_exceeded" || code == "insufficient_quota" || llm.QuotaText(msg):
		e.Class = llm.RateLimited
	case code == "context_length_exceeded":
		e.Class = llm.TooLong
	}
	return e
}

func (d *decoder) Classify(name, data []byte) (llm.EventKind, *llm.Usage, error) {
	if kind, ok := scanDelta(data); ok {
		return kind, nil, nil
	}
	return d.classifyDecoded(name, data)
}

// classifyDecoded is Classify by decoding the event.
func (d *decoder) classifyDecoded(name, data []byte) (llm.EventKind, *llm.Usage, error) {
	out, end, err := d.Decode(nil, name, data)
	if err != nil {
		return llm.Held, nil, err
	}
	var u *llm.Usage
	kind := llm.Held
	for _, dl := range out {
		if dl.IsContent() {
			kind = llm.Content
		}
		if dl.Usage != nil {
			u = dl.Usage
		}
	}
	if end {
		kind = llm.Done
	}
	return kind, u, nil
}

// The text deltas that make up most of a stream, as their type members'
// bytes, and the members of streamEvent that scanDelta checks.
var (
	deltaTypes = [][]byte{[]byte(`"` + evTextDelta + `"`), []byte(`"` + evSummaryDelta + `"`), []byte(`"response.reasoning_text.delta"`)}
	eventKeys  = []string{"type", "delta", "output_index", "item_id", "code", "message", "item", "response", "error"}
)

// scanDelta classifies a text or reasoning delta, what a same-dialect
// stream is mostly made of, by scanning its bytes: decoding each one would
// cost more than relaying it. ok is false for any other event and for one
// that encoding/json could read otherwise (see jsonscan.Pick) or would
// refuse into streamEvent; Decode then judges it. Such deltas change no
// decoder state, so skipping Decode for them loses nothing.
func scanDelta(data []byte) (kind llm.EventKind, ok bool) {
	var v [9][]byte
	if valid, picked := jsonscan.PickValid(data, eventKeys, v[:]); !valid || !picked {
		return 0, false
	}
	typ, delta := v[0], v[1]
	if typ == nil || !slices.ContainsFunc(deltaTypes, func(t []byte) bool { return bytes.Equal(typ, t) }) {
		return 0, false
	}
	if !jsonscan.Int(v[2]) {
		return 0, false
	}
	for _, m := range v[3:6] {
		if m != nil && m[0] != '"' && string(m) != "null" {
			return 0, false
		}
	}
	for _, m := range v[6:] {
		if m != nil && string(m) != "null" {
			return 0, false
		}
	}
	switch {
	case delta == nil || string(delta) == "null":
		return llm.Held, true
	case delta[0] != '"':
		return 0, false
	case len(delta) > 2:
		return llm.Content, true
	}
	return llm.Held, true
}
