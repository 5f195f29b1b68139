package gemini

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// finishReasons maps the API's finish reasons to the neutral ones; a
// reason not listed (OTHER, MALFORMED_FUNCTION_CALL, ...) is a stop.
var finishReasons = map[string]llm.FinishReason{
	"STOP":                     llm.FinishStop,
	"MAX_TOKENS":               llm.FinishLength,
	"SAFETY":                   llm.FinishContentFilter,
	"RECITATION":               llm.FinishContentFilter,
	"PROHIBITED_CONTENT":       llm.FinishContentFilter,
	"BLOCKLIST":                llm.FinishContentFilter,
	"SPII":                     llm.FinishContentFilter,
	"IMAGE_SAFETY":             llm.FinishContentFilter,
	"IMAGE_PROHIBITED_CONTENT": llm.FinishContentFilter,
	"LANGUAGE":                 llm.FinishContentFilter,
}

// finish maps a finish reason; a stop after function calls is a tool-call
// finish, which is how every other dialect says the model wants its tools
// run.
func finish(reason string, calls bool) llm.FinishReason {
	f, ok := finishReasons[reason]
	if !ok {
		f = llm.FinishStop
	}
	if f == llm.FinishStop && calls {
		return llm.FinishToolCalls
	}
	return f
}

// finishWord is the API's finish reason for a neutral one.
func finishWord(f llm.FinishReason) string {
	switch f {
	case llm.FinishLength:
		return "MAX_TOKENS"
	case llm.FinishContentFilter:
		return "SAFETY"
	}
	return "STOP"
}

func (u *usageMetadata) usage() *llm.Usage {
	if u == nil {
		return nil
	}
	// promptTokenCount includes the cached content, as the neutral
	// prompt does.
	out := &llm.Usage{
		PromptTokens:     u.PromptTokenCount,
		CompletionTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
		TotalTokens:      u.TotalTokenCount,
		CacheReadTokens:  u.CachedContentTokenCount,
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	return out
}

func usageOf(u *llm.Usage) *usageMetadata {
	if u == nil {
		return nil
	}
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return &usageMetadata{PromptTokenCount: u.PromptTokens, CandidatesTokenCount: u.CompletionTokens, TotalTokenCount: total,
		CachedContentTokenCount: u.CacheReadTokens}
}

// blocked returns the reason a response was refused by the safety filters
// before it said anything, "" when it was not.
func (r *response) blocked() string {
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		return r.PromptFeedback.BlockReason
	}
	if len(r.Candidates) > 0 {
		c := r.Candidates[0]
		if blockedReasons[c.FinishReason] && !hasContent(c.Content) {
			return c.FinishReason
		}
	}
	return ""
}

// hasContent reports whether any part says something: text, a thought or
// a function call.
func hasContent(c *content) bool {
	if c == nil {
		return false
	}
	for _, p := range c.Parts {
		if p.FunctionCall != nil || (p.Text != nil && *p.Text != "") || p.InlineData != nil {
			return true
		}
	}
	return false
}

// parseResponse reads an answer or a stream chunk.
func parseResponse(body []byte) (*response, error) {
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	for i := range r.Candidates {
		if c := r.Candidates[i].Content; c != nil {
			for j := range c.Parts {
				c.Parts[j].normalize()
			}
		}
	}
	return &r, nil
}

// callIDs numbers the function calls that come without an id. Gemini's
// calls often carry none, and clients key tool results by id: within one
// request the calls of a conversation's history are numbered from
// "call_0", and each upstream answer numbers its calls under a random
// prefix of its own, so that the ids of every turn differ and a
// conversation that later moves to a vendor requiring unique ids
// (Anthropic refuses a repeated tool_use id) stays valid.
type callIDs struct {
	prefix string
	n      int
}

// answerCallPrefix makes the id prefix of one upstream answer's calls.
// Tests replace it to keep golden files stable.
var answerCallPrefix = randomCallPrefix

func randomCallPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:]) + "_"
}

// next returns the id of the next call, id itself when the call has one.
func (c *callIDs) next(id string) string {
	n := c.n
	c.n++
	if id != "" {
		return id
	}
	if c.prefix == "" {
		c.prefix = answerCallPrefix()
	}
	return c.prefix + strconv.Itoa(n)
}

// args is a function call's arguments as JSON text; a call without any
// has an empty object.
func args(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// answerParts converts the parts of a candidate. A thought signature on a
// part that is not a thought becomes a reasoning part of its own, with no
// text, just before that part: the neutral model keeps signatures on
// reasoning, and the encoders put it back on the part that follows.
func answerParts(ps []part, calls *callIDs) []llm.Part {
	var out []llm.Part
	for _, p := range ps {
		if p.ThoughtSignature != "" && !p.Thought {
			out = append(out, llm.Part{Kind: llm.PartReasoning, Signature: p.ThoughtSignature})
		}
		switch {
		case p.FunctionCall != nil:
			out = append(out, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{
				ID: calls.next(p.FunctionCall.ID), Name: p.FunctionCall.Name, Arguments: args(p.FunctionCall.Args),
			}})
		case p.Thought:
			text := ""
			if p.Text != nil {
				text = *p.Text
			}
			if text != "" || p.ThoughtSignature != "" {
				out = append(out, llm.Part{Kind: llm.PartReasoning, Text: text, Signature: p.ThoughtSignature})
			}
		case p.Text != nil:
			if *p.Text != "" {
				out = append(out, llm.Part{Kind: llm.PartText, Text: *p.Text})
			}
		case p.InlineData != nil:
			out = append(out, llm.Part{Kind: llm.PartImage, Image: &llm.Image{MediaType: p.InlineData.MimeType, Data: p.InlineData.Data}})
		}
	}
	return out
}

// DecodeResponse reads a complete answer. An answer the safety filters
// refused before it said anything is the caller error of blockedError;
// one they cut short keeps what was said, with a content-filter finish.
func (codec) DecodeResponse(body []byte) (*llm.Answer, error) {
	r, err := parseResponse(body)
	if err != nil {
		return nil, err
	}
	if r.Error != nil {
		return nil, okError(r.Error, "upstream error in a 200 answer: ")
	}
	if reason := r.blocked(); reason != "" {
		return nil, blockedError(reason)
	}
	a := &llm.Answer{ID: r.ResponseID, Model: r.ModelVersion, Usage: r.UsageMetadata.usage(), Finish: llm.FinishStop}
	if len(r.Candidates) > 0 {
		c := r.Candidates[0]
		var calls callIDs
		if c.Content != nil {
			a.Parts = answerParts(c.Content.Parts, &calls)
		}
		a.Finish = finish(c.FinishReason, calls.n > 0)
	}
	return a, nil
}

// CheckAnswer reads a 200 answer for relaying it unchanged to a Gemini
// client: its usage, and whether it is any use.
func (c codec) CheckAnswer(_ llm.Endpoint, body []byte) (llm.Usage, error) {
	a, err := c.DecodeResponse(body)
	var le *llm.Error
	switch {
	case errors.As(err, &le):
		if le.Class == llm.Caller {
			return llm.Usage{}, le
		}
		return llm.Usage{}, llm.SoftError(llm.SubMalformed, "%s", le.Message)
	case err != nil:
		return llm.Usage{}, llm.SoftError(llm.SubMalformed, "answer is not valid JSON: %s", err)
	}
	var u llm.Usage
	if a.Usage != nil {
		u = *a.Usage
	}
	if !a.Usable() {
		return u, llm.SoftError(llm.SubEmpty, "empty answer")
	}
	if text, short := a.ShortText(300); short && llm.QuotaText(text) {
		return u, llm.SoftError(llm.SubQuota, "the answer is a quota notice: %s", llm.Truncate(text, 100))
	}
	return u, nil
}

// validSignature reports whether s can be a thoughtSignature, which the
// API and its SDKs read as base64 bytes: a signature another vendor wrote
// in another form would get the request refused.
func validSignature(s string) bool {
	if s == "" {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		_, err = base64.URLEncoding.DecodeString(s)
	}
	return err == nil
}

// modelParts writes the parts of an answer, or of a model turn of a
// request. Signed reasoning without text hands its signature to the part
// after it, where the API put it. Only an answer has thought parts and
// function call ids. A request leaves the ids out, as the API pairs calls
// and responses by name and order and some of its versions (v1, Vertex
// AI) refuse the field; and it needs no thought summaries back, only
// their signatures, while the v1 API refuses the thought field.
func modelParts(ps []llm.Part, answer bool) []part {
	var out []part
	pending := ""
	sign := func(p part) part {
		if pending != "" {
			p.ThoughtSignature, pending = pending, ""
		}
		return p
	}
	for _, p := range ps {
		switch p.Kind {
		case llm.PartReasoning:
			if p.Text == "" || !answer {
				if validSignature(p.Signature) {
					pending = p.Signature
				}
				continue
			}
			t := p.Text
			tp := part{Text: &t, Thought: true}
			if validSignature(p.Signature) {
				tp.ThoughtSignature = p.Signature
			}
			out = append(out, tp)
		case llm.PartText:
			if p.Text == "" {
				continue
			}
			t := p.Text
			out = append(out, sign(part{Text: &t}))
		case llm.PartToolCall:
			if p.ToolCall == nil {
				continue
			}
			fc := &functionCall{Name: p.ToolCall.Name, Args: objectArgs(p.ToolCall.Arguments)}
			if answer {
				fc.ID = p.ToolCall.ID
			}
			out = append(out, sign(part{FunctionCall: fc}))
		case llm.PartImage:
			if p.Image != nil && p.Image.Data != "" {
				out = append(out, sign(part{InlineData: &blob{MimeType: p.Image.MediaType, Data: p.Image.Data}}))
			}
		}
	}
	// A signature after the last part goes on an empty text of its own in
	// an answer, as the API sends it. A request leaves it out: the API
	// needs back only the signatures of function calls.
	if pending != "" && answer {
		empty := ""
		out = append(out, part{Text: &empty, ThoughtSignature: pending})
	}
	return out
}

// objectArgs is a tool call's arguments as the JSON object the API wants:
// none is {}, and anything that is not an object is wrapped.
func objectArgs(s string) json.RawMessage {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage("{}")
	}
	if b[0] == '{' && json.Valid(b) {
		return b
	}
	wrapped, _ := json.Marshal(map[string]any{"arguments": s})
	return wrapped
}

// EncodeResponse writes a complete answer.
func (codec) EncodeResponse(a *llm.Answer, o protocol.ResponseOptions) ([]byte, error) {
	parts := modelParts(a.Parts, true)
	if len(parts) == 0 {
		// An answer with nothing to say has one empty text, as the API
		// writes it, for clients that read the first part unchecked.
		empty := ""
		parts = []part{{Text: &empty}}
	}
	r := response{
		Candidates: []candidate{{
			Content:      &content{Role: "model", Parts: parts},
			FinishReason: finishWord(a.Finish),
		}},
		UsageMetadata: usageOf(a.Usage),
		ModelVersion:  o.Model,
		ResponseID:    o.ID,
	}
	if r.ModelVersion == "" {
		r.ModelVersion = a.Model
	}
	if r.ResponseID == "" {
		r.ResponseID = a.ID
	}
	return json.Marshal(r)
}
