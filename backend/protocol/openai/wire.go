package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// Endpoints are the kinds of request OpenAI-compatible servers serve.
func (codec) Endpoints() []llm.Endpoint {
	return []llm.Endpoint{llm.Chat, llm.Completions, llm.Embeddings}
}

// Path is the endpoint's path below the base URL; the model travels in
// the body. The paths are constants, so building a request's URL costs one
// concatenation.
func (codec) Path(ep llm.Endpoint, _ string, _ bool) string {
	switch ep {
	case llm.Chat:
		return "/chat/completions"
	case llm.Completions:
		return "/completions"
	case llm.Embeddings:
		return "/embeddings"
	}
	return "/" + string(ep)
}

// Header sets the bearer key, when there is one.
func (codec) Header(h http.Header, key string) {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}

// Classify keeps the generic classification, which is written for this
// dialect's statuses and error bodies, and notes the error's code.
func (codec) Classify(e *llm.Error, _ int, _ http.Header, body []byte, _ time.Time) {
	if info, ok := Codec.DecodeError(body); ok {
		e.Code = info.Code
		if e.Code == "" {
			e.Code = info.Type
		}
	}
}

// seen records that a JSON value is there, and whether it is an empty
// array or string, without keeping a copy of it: an embeddings answer's
// data, or a long answer's text, is nearly the whole body, and checking an
// answer must not double what it costs.
type seen struct{ set, empty bool }

func (s *seen) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	s.set = string(b) != "null"
	s.empty = string(b) == "[]" || string(b) == `""`
	return nil
}

// quotaNoticeMax is the longest answer text that is checked for a quota
// notice (a free tier's error put in the assistant's message).
const quotaNoticeMax = 200

// content is a message's content as checkAnswer needs it: text or parts,
// whether it is empty, and the text itself only when it is short enough
// to be a quota notice.
type content struct {
	seen
	text  bool
	short string
}

func (c *content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if err := c.seen.UnmarshalJSON(b); err != nil {
		return err
	}
	if len(b) == 0 || b[0] != '"' {
		return nil
	}
	c.text = true
	// A character takes at most 6 bytes escaped, so a longer value holds
	// more than quotaNoticeMax bytes of text and need not be decoded.
	if len(b) > 2+6*quotaNoticeMax {
		return nil
	}
	return json.Unmarshal(b, &c.short)
}

// answer is the part of a non-streaming answer needed to tell a usable
// answer from an empty or broken one.
type answer struct {
	Choices []checkedChoice `json:"choices"`
	Data    seen            `json:"data"`
	Usage   *usage          `json:"usage"`
	Error   seen            `json:"error"`
}

// checkedChoice is a choice of an answer as CheckAnswer reads it.
type checkedChoice struct {
	Message *checkedMessage `json:"message"`
	Text    seen            `json:"text"`
}

// checkedMessage is a choice's message as CheckAnswer reads it.
type checkedMessage struct {
	Content          content `json:"content"`
	ToolCalls        seen    `json:"tool_calls"`
	FunctionCall     seen    `json:"function_call"`
	ReasoningContent seen    `json:"reasoning_content"`
	Reasoning        seen    `json:"reasoning"`
	Refusal          seen    `json:"refusal"`
}

// CheckAnswer decides whether a 200 body is a real answer (an empty or
// unparseable one is a soft failure) and extracts its usage. A usable
// answer is never scanned for text; the caller redacts the messages of
// the errors, which quote the upstream.
func (codec) CheckAnswer(ep llm.Endpoint, body []byte) (llm.Usage, error) {
	var a answer
	if !scanAnswer(body, &a) {
		a = answer{}
		if err := json.Unmarshal(body, &a); err != nil {
			return llm.Usage{}, llm.SoftError(llm.SubMalformed, "unparseable answer: %s", llm.Truncate(err.Error(), 80))
		}
	}
	var usage llm.Usage
	if u := a.Usage.neutral(); u != nil {
		usage = *u
	}
	if a.Error.set {
		msg := llm.ErrorMessage(body)
		if llm.QuotaText(msg) {
			return usage, llm.SoftError(llm.SubQuota, "quota exceeded (in a 200 answer): %s", llm.Truncate(msg, 120))
		}
		return usage, llm.SoftError(llm.SubMalformed, "error in a 200 answer: %s", llm.Truncate(msg, 120))
	}
	switch ep {
	case llm.Embeddings:
		if !a.Data.set || a.Data.empty {
			return usage, llm.SoftError(llm.SubEmpty, "empty embeddings")
		}
		return usage, nil
	case llm.Completions:
		for _, ch := range a.Choices {
			if ch.Text.set && !ch.Text.empty {
				return usage, nil
			}
		}
		return usage, llm.SoftError(llm.SubEmpty, "empty answer")
	}
	for _, ch := range a.Choices {
		m := ch.Message
		if m == nil {
			continue
		}
		if m.ToolCalls.set && !m.ToolCalls.empty || m.FunctionCall.set {
			return usage, nil
		}
		for _, s := range []seen{m.Refusal, m.ReasoningContent, m.Reasoning} {
			if s.set && !s.empty {
				return usage, nil
			}
		}
		c := m.Content
		if c.text || !c.set {
			if !c.set || c.empty {
				continue
			}
			// Some free tiers put their quota error into the assistant's
			// message; a short answer that says so is not an answer.
			if c.short != "" && len(c.short) < quotaNoticeMax && llm.QuotaText(c.short) {
				return usage, llm.SoftError(llm.SubQuota, "quota exceeded (in the answer text)")
			}
			return usage, nil
		}
		if !c.empty {
			return usage, nil // content parts
		}
	}
	return usage, llm.SoftError(llm.SubEmpty, "empty answer")
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// relay classifies the events of one stream for relaying them unchanged.
// Each event is judged on its own, so it holds no state.
type relay struct{}

// classify says what one event means for the stream rule. It reads the
// few members the router needs by scanning the event's bytes, once they
// are known to be valid JSON: decoding every chunk would cost more than
// relaying it, since OpenAI-style servers put "usage":null in each one.
// Only an error or a usage is decoded, and a chunk the scan cannot read
// exactly as encoding/json would (see scanChunk) is decoded whole.
func (r *relay) classify(name, data []byte) (llm.EventKind, *llm.Usage, error) {
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		return llm.Done, nil, nil
	}
	// One pass checks the chunk and finds the members classify reads.
	var v [3][]byte
	valid, picked := jsonscan.PickValid(data, chunkKeys, v[:])
	if !valid {
		return 0, nil, protocol.ErrMalformed
	}
	if picked {
		if kind, u, err, ok := scanPicked(name, data, &v); ok {
			return kind, u, err
		}
	}
	return classifyDecoded(name, data)
}

// chunk is the part of a streamed chunk the router looks at.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content          *string         `json:"content"`
			ReasoningContent *string         `json:"reasoning_content"`
			Reasoning        *string         `json:"reasoning"`
			Refusal          *string         `json:"refusal"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
			FunctionCall     json.RawMessage `json:"function_call"`
		} `json:"delta"`
		Text *string `json:"text"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func nonEmpty(s *string) bool { return s != nil && *s != "" }

// classifyDecoded is classify by decoding the chunk.
func classifyDecoded(name, data []byte) (llm.EventKind, *llm.Usage, error) {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, nil, protocol.ErrMalformed
	}
	if present(c.Error) || string(name) == "error" {
		return 0, nil, streamError(data)
	}
	if len(c.Choices) == 0 && c.Usage != nil {
		return llm.UsageOnly, c.Usage.neutral(), nil
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		if nonEmpty(d.Content) || nonEmpty(d.ReasoningContent) || nonEmpty(d.Reasoning) || nonEmpty(d.Refusal) ||
			nonEmpty(ch.Text) || (present(d.ToolCalls) && string(d.ToolCalls) != "[]") || present(d.FunctionCall) {
			return llm.Content, c.Usage.neutral(), nil
		}
	}
	return llm.Held, c.Usage.neutral(), nil
}

// scanPicked is classify for a valid chunk whose members named by
// chunkKeys have been picked into v, by scanning it. ok is false where
// encoding/json could read the chunk otherwise than an exact scan does: a
// key that folds to one of chunk's (encoding/json matches keys without
// regard to case), a repeated member (which it merges), or a member of a
// type chunk cannot hold (an error there).
func scanPicked(name, data []byte, v *[3][]byte) (kind llm.EventKind, u *llm.Usage, err error, ok bool) {
	choices, use, errv := v[0], v[1], v[2]
	if present(errv) || string(name) == "error" {
		return 0, nil, streamError(data), true
	}
	var uw *usage
	if present(use) {
		if use[0] != '{' {
			return 0, nil, nil, false
		}
		uw = new(usage)
		if !scanUsage(use, uw) {
			*uw = usage{}
			if json.Unmarshal(use, uw) != nil {
				return 0, nil, nil, false
			}
		}
	}
	none := !present(choices)
	if !none && choices[0] != '[' {
		return 0, nil, nil, false
	}
	content, n := false, 0
	if !none {
		jsonscan.EachElement(choices, func(cs, ce int) bool {
			n++
			var said bool
			said, ok = choiceHasContent(choices[cs:ce])
			content = content || said
			return ok
		})
		if !ok {
			return 0, nil, nil, false
		}
	}
	switch {
	case n == 0 && uw != nil:
		return llm.UsageOnly, uw.neutral(), nil, true
	case content:
		return llm.Content, uw.neutral(), nil, true
	}
	return llm.Held, uw.neutral(), nil, true
}

// scanUsage reads a chunk's usage object into u by scanning it. It
// reports false, having read nothing that matters, where encoding/json
// could read it otherwise or would refuse it (see jsonscan.Pick): then the
// caller decodes it.
func scanUsage(use []byte, u *usage) bool {
	var v [5][]byte
	if !jsonscan.Pick(use, usageKeys, v[:]) {
		return false
	}
	var ok bool
	if u.PromptTokens, ok = jsonscan.Count(v[0]); !ok {
		return false
	}
	if u.CompletionTokens, ok = jsonscan.Count(v[1]); !ok {
		return false
	}
	if u.TotalTokens, ok = jsonscan.Count(v[2]); !ok {
		return false
	}
	if u.CacheHitTokens, ok = jsonscan.Count(v[4]); !ok {
		return false
	}
	switch d := v[3]; {
	case d == nil || string(d) == "null":
	case d[0] == '{':
		var dv [1][]byte
		if !jsonscan.Pick(d, promptDetailKeys, dv[:]) {
			return false
		}
		u.PromptTokensDetails = new(promptDetails)
		if u.PromptTokensDetails.CachedTokens, ok = jsonscan.Count(dv[0]); !ok {
			return false
		}
	default:
		return false
	}
	return true
}

// choiceHasContent reports whether one of a chunk's choices carries
// anything a client shows: text, reasoning, a refusal or a tool call. ok
// is false as for scanChunk.
func choiceHasContent(choice []byte) (content, ok bool) {
	switch choice[0] {
	case 'n':
		return false, true
	case '{':
	default:
		return false, false
	}
	var v [2][]byte
	if !jsonscan.Pick(choice, choiceKeys, v[:]) {
		return false, false
	}
	text, ok := stringMember(v[0])
	if !ok {
		return false, false
	}
	var delta bool
	switch d := v[1]; {
	case d == nil || d[0] == 'n':
	case d[0] == '{':
		delta, ok = deltaHasContent(d)
	default:
		ok = false
	}
	return text || delta, ok
}

// deltaHasContent reports whether a choice's delta (a JSON object)
// carries content; ok is false as for scanChunk.
func deltaHasContent(delta []byte) (content, ok bool) {
	var v [6][]byte
	if !jsonscan.Pick(delta, deltaKeys, v[:]) {
		return false, false
	}
	// content, reasoning_content, reasoning and refusal are strings.
	for _, m := range v[:4] {
		said, ok := stringMember(m)
		if !ok {
			return false, false
		}
		content = content || said
	}
	toolCalls, functionCall := v[4], v[5]
	return content || (present(toolCalls) && string(toolCalls) != "[]") || present(functionCall), true
}

// The members scanChunk reads: of a chunk, of one of its choices, and of
// a choice's delta.
var (
	chunkKeys  = []string{"choices", "usage", "error"}
	choiceKeys = []string{"text", "delta"}
	deltaKeys  = []string{"content", "reasoning_content", "reasoning", "refusal", "tool_calls", "function_call"}
	// usageKeys are the members of usage, in scanUsage's order.
	usageKeys        = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "prompt_cache_hit_tokens"}
	promptDetailKeys = []string{"cached_tokens"}
)

// stringMember reads a member that must be a string or null (or absent,
// nil): whether it is a string other than "", and ok false for any other
// type.
func stringMember(v []byte) (nonEmpty, ok bool) {
	if v == nil {
		return false, true
	}
	switch v[0] {
	case '"':
		return nonEmptyString(v), true
	case 'n':
		return false, true
	}
	return false, false
}

// nonEmptyString reports whether a JSON value is a string other than "".
func nonEmptyString(v []byte) bool { return len(v) > 2 && v[0] == '"' }
