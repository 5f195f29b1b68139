package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// maxStreamCalls bounds the tool calls of one streamed answer, so a
// hostile upstream that numbers every fragment anew cannot grow the
// decoder without end.
const maxStreamCalls = 1024

var doneMarker = []byte("[DONE]")

// legacyIndex is the vendor index given to a legacy function_call delta,
// which has none.
const legacyIndex = -2

type streamDecoder struct {
	// calls are the tool calls seen, in our order.
	calls []streamCall
	// relay classifies events that are relayed unchanged.
	relay relay
}

type streamCall struct {
	vendor int // the vendor's index; -1 when it sent none
	id     string
	open   bool
}

// NewStreamDecoder returns a decoder for one upstream stream.
func (codec) NewStreamDecoder() protocol.StreamDecoder { return &streamDecoder{} }

// Decode reads one chunk. Tool calls have no end event in this dialect: a
// call ends when the finish reason or [DONE] arrives, and Decode then
// closes every open one.
//
// Decode is on the path of every event of a stream converted for a client
// of another dialect, so it scans the chunk (once json.Valid has accepted
// it) instead of decoding it by reflection; a member of the wrong type
// makes the chunk malformed, as the decoder would have found.
func (d *streamDecoder) Decode(dst []llm.Delta, name, data []byte) ([]llm.Delta, bool, error) {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, doneMarker) {
		return d.closeCalls(dst), true, nil
	}
	if string(name) == "error" {
		return dst, false, streamError(data)
	}
	if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		return dst, false, protocol.ErrMalformed
	}
	var choices, used, errv []byte
	jsonscan.EachMember(data, 0, func(k []byte, vs, ve int) bool {
		switch string(k) {
		case "choices":
			choices = data[vs:ve]
		case "usage":
			used = data[vs:ve]
		case "error":
			errv = data[vs:ve]
		}
		return true
	})
	if !isNull(errv) {
		return dst, false, streamError(data)
	}
	var err error
	if !isNull(choices) {
		if choices[0] != '[' {
			return dst, false, protocol.ErrMalformed
		}
		jsonscan.EachElement(choices, func(es, ee int) bool {
			dst, err = d.choice(dst, choices[es:ee])
			return err == nil
		})
		if err != nil {
			return dst, false, err
		}
	}
	// Some servers report usage on the last chunk with choices rather than
	// on one of its own; an all-zero usage, which others put on every
	// chunk, says nothing.
	if !isNull(used) {
		u := new(usage)
		if used[0] != '{' || json.Unmarshal(used, u) != nil {
			return dst, false, protocol.ErrMalformed
		}
		if n := u.neutral(); *n != (llm.Usage{}) {
			dst = append(dst, llm.Delta{Kind: llm.DeltaUsage, Usage: n})
		}
	}
	return dst, false, nil
}

// choice reads one element of a chunk's choices. FreeLane asks for one
// choice; any other is not the answer.
func (d *streamDecoder) choice(dst []llm.Delta, c []byte) ([]llm.Delta, error) {
	if c[0] != '{' {
		return dst, protocol.ErrMalformed
	}
	index := 0
	var delta, text, finish []byte
	bad := false
	jsonscan.EachMember(c, 0, func(k []byte, vs, ve int) bool {
		switch string(k) {
		case "index":
			var ok bool
			index, ok = intValue(c[vs:ve], 0)
			bad = !ok
		case "delta":
			delta = c[vs:ve]
		case "text":
			text = c[vs:ve]
		case "finish_reason":
			finish = c[vs:ve]
		}
		return !bad
	})
	if bad {
		return dst, protocol.ErrMalformed
	}
	if index != 0 {
		return dst, nil
	}
	var err error
	if !isNull(delta) {
		if dst, err = d.delta(dst, delta); err != nil {
			return dst, err
		}
	}
	// A legacy completion's chunk has its text in the choice.
	legacy, ok := stringValue(text)
	if !ok {
		return dst, protocol.ErrMalformed
	}
	if legacy != "" {
		dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: legacy})
	}
	reason, ok := stringValue(finish)
	if !ok {
		return dst, protocol.ErrMalformed
	}
	if reason != "" {
		dst = d.closeCalls(dst)
		dst = append(dst, llm.Delta{Kind: llm.DeltaFinish, Finish: finishReason(reason, len(d.calls) > 0)})
	}
	return dst, nil
}

// delta reads a choice's delta: reasoning, text, then tool calls.
func (d *streamDecoder) delta(dst []llm.Delta, v []byte) ([]llm.Delta, error) {
	if v[0] != '{' {
		return dst, protocol.ErrMalformed
	}
	var content, reasoningContent, reasoning, refusal, calls, legacy []byte
	jsonscan.EachMember(v, 0, func(k []byte, vs, ve int) bool {
		switch string(k) {
		case "content":
			content = v[vs:ve]
		case "reasoning_content":
			reasoningContent = v[vs:ve]
		case "reasoning":
			reasoning = v[vs:ve]
		case "refusal":
			refusal = v[vs:ve]
		case "tool_calls":
			calls = v[vs:ve]
		case "function_call":
			legacy = v[vs:ve]
		}
		return true
	})
	text, ok1 := stringValue(content)
	think, ok2 := stringValue(reasoningContent)
	refused, ok3 := stringValue(refusal)
	if !ok1 || !ok2 || !ok3 {
		return dst, protocol.ErrMalformed
	}
	if think == "" && len(reasoning) > 0 && reasoning[0] == '"' {
		// reasoning is OpenRouter's and Ollama's name; a server that sends
		// both sends the same text twice.
		think = jsonscan.Unquote(reasoning)
	}
	if think != "" {
		dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Text: think})
	}
	if text != "" {
		dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: text})
	}
	if refused != "" {
		dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: refused})
	}
	var err error
	if !isNull(calls) {
		if calls[0] != '[' {
			return dst, protocol.ErrMalformed
		}
		jsonscan.EachElement(calls, func(es, ee int) bool {
			dst, err = d.toolCall(dst, calls[es:ee])
			return err == nil
		})
		if err != nil {
			return dst, err
		}
	}
	if !isNull(legacy) {
		if legacy[0] != '{' {
			return dst, protocol.ErrMalformed
		}
		return d.function(dst, legacy, legacyIndex, "")
	}
	return dst, nil
}

// toolCall reads one tool_calls element.
func (d *streamDecoder) toolCall(dst []llm.Delta, v []byte) ([]llm.Delta, error) {
	if v[0] != '{' {
		return dst, protocol.ErrMalformed
	}
	vendor := -1
	var id, fn []byte
	bad := false
	jsonscan.EachMember(v, 0, func(k []byte, vs, ve int) bool {
		switch string(k) {
		case "index":
			var ok bool
			vendor, ok = intValue(v[vs:ve], -1)
			bad = !ok
		case "id":
			id = v[vs:ve]
		case "function":
			fn = v[vs:ve]
		}
		return !bad
	})
	callID, ok := stringValue(id)
	if bad || !ok || (!isNull(fn) && fn[0] != '{') {
		return dst, protocol.ErrMalformed
	}
	if isNull(fn) {
		fn = emptyObject
	}
	return d.function(dst, fn, vendor, callID)
}

var emptyObject = []byte("{}")

// function reads a call's function object (a legacy function_call is one
// too) and makes its deltas.
func (d *streamDecoder) function(dst []llm.Delta, fn []byte, vendor int, id string) ([]llm.Delta, error) {
	var name, args []byte
	jsonscan.EachMember(fn, 0, func(k []byte, vs, ve int) bool {
		switch string(k) {
		case "name":
			name = fn[vs:ve]
		case "arguments":
			args = fn[vs:ve]
		}
		return true
	})
	callName, ok1 := stringValue(name)
	callArgs, ok2 := stringValue(args)
	if !ok1 || !ok2 {
		return dst, protocol.ErrMalformed
	}
	return d.toolDelta(dst, vendor, id, function{Name: callName, Arguments: callArgs})
}

// stringValue reads a JSON string, or null or nothing as ""; ok is false
// for any other value.
func stringValue(v []byte) (string, bool) {
	switch {
	case isNull(v):
		return "", true
	case v[0] == '"':
		return jsonscan.Unquote(v), true
	}
	return "", false
}

// intValue reads a non-negative JSON integer, or null or nothing as def.
func intValue(v []byte, def int) (int, bool) {
	if isNull(v) {
		return def, true
	}
	n, err := strconv.Atoi(string(v))
	return n, err == nil && n >= 0
}

// toolDelta turns one tool_calls element into deltas. A fragment belongs
// to the latest open call of its vendor index, unless it brings another
// id: some servers number every call 0, or not at all, and tell them apart
// only by id.
func (d *streamDecoder) toolDelta(dst []llm.Delta, vendor int, id string, f function) ([]llm.Delta, error) {
	i := d.find(vendor, id)
	if i < 0 {
		if len(d.calls) >= maxStreamCalls {
			return dst, protocol.ErrMalformed
		}
		i = len(d.calls)
		d.calls = append(d.calls, streamCall{vendor: vendor, id: id, open: true})
		dst = append(dst, llm.Delta{Kind: llm.DeltaToolStart, Index: i, ID: id, Name: f.Name})
	}
	if f.Arguments != "" {
		dst = append(dst, llm.Delta{Kind: llm.DeltaToolArgs, Index: i, Text: f.Arguments})
	}
	return dst, nil
}

// find returns our index of the open call a fragment continues, or -1.
func (d *streamDecoder) find(vendor int, id string) int {
	for i := len(d.calls) - 1; i >= 0; i-- {
		c := &d.calls[i]
		if !c.open {
			continue
		}
		if vendor == -1 && id == "" {
			return i // no index and no id: the call being written
		}
		if (c.vendor == vendor || vendor == -1) && (id == "" || id == c.id) {
			return i
		}
		if c.vendor == vendor {
			return -1 // same index, another id: a new call
		}
	}
	return -1
}

// closeCalls ends every open tool call.
func (d *streamDecoder) closeCalls(dst []llm.Delta) []llm.Delta {
	for i := range d.calls {
		if d.calls[i].open {
			d.calls[i].open = false
			dst = append(dst, llm.Delta{Kind: llm.DeltaToolEnd, Index: i})
		}
	}
	return dst
}

// Classify says what a chunk means when it is relayed unchanged.
func (d *streamDecoder) Classify(name, data []byte) (llm.EventKind, *llm.Usage, error) {
	return d.relay.classify(name, data)
}

// rateCodes are the error codes and types OpenAI-compatible servers give a
// rate or quota limit.
var rateCodes = map[string]bool{"rate_limit_exceeded": true, "rate_limit_error": true, "insufficient_quota": true,
	"tokens": true, "requests": true}

// streamError is the error an upstream reported inside a stream. Its Body
// is a copy: the event's data belongs to the stream reader's buffer.
func streamError(data []byte) *llm.Error {
	msg := llm.ErrorMessage(data)
	e := &llm.Error{Class: llm.Transient, Status: http.StatusOK, Dialect: llm.DialectOpenAI, Body: bytes.Clone(data)}
	if info, ok := Codec.DecodeError(data); ok {
		e.Code = info.Code
		if e.Code == "" {
			e.Code = info.Type
		}
	}
	if llm.QuotaText(msg) || llm.QuotaText(e.Code) || rateCodes[e.Code] {
		e.Class = llm.RateLimited
		e.Message = "quota exceeded mid-stream: " + llm.Truncate(msg, 120)
		return e
	}
	e.Message = "upstream error mid-stream: " + llm.Truncate(msg, 120)
	return e
}

// streamEncoder writes chat.completion.chunk events.
type streamEncoder struct {
	// prefix is every chunk's head up to its choices array's content.
	prefix   []byte
	started  bool // the role chunk is out
	finished bool
	calls    bool
	// pending is usage that came before the finish reason; it is written
	// after the finish chunk, where clients expect it.
	pending *llm.Usage
}

// NewStreamEncoder returns an encoder of one stream for a client. The
// usage chunk is always written, as a UsageOnly event: the router drops it
// for a client that did not ask.
// A tool call without an id gets one made from its index.
func (codec) NewStreamEncoder(o protocol.ResponseOptions) protocol.StreamEncoder {
	p := make([]byte, 0, 128+len(o.ID)+len(o.Model))
	p = append(p, `{"id":`...)
	p = jsonscan.AppendString(p, responseID(o.ID))
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, o.Created, 10)
	p = append(p, `,"model":`...)
	p = jsonscan.AppendString(p, o.Model)
	p = append(p, `,"choices":[`...)
	return &streamEncoder{prefix: p}
}

const (
	choiceHead = `{"index":0,"delta":`
	choiceTail = `,"finish_reason":null}]}`
)

// begin starts a chunk's data up to its delta, with room for extra more
// bytes, so each event costs one allocation.
func (e *streamEncoder) begin(extra int) []byte {
	b := make([]byte, 0, len(e.prefix)+len(choiceHead)+len(choiceTail)+extra+48)
	b = append(b, e.prefix...)
	return append(b, choiceHead...)
}

// Encode appends the chunks for one delta.
func (e *streamEncoder) Encode(dst []llm.Event, d llm.Delta) []llm.Event {
	switch d.Kind {
	case llm.DeltaText, llm.DeltaReasoning:
		if d.Text == "" {
			return dst // a signature or redacted reasoning has no place here
		}
		dst = e.role(dst)
		b := e.begin(len(d.Text) + len(d.Text)/8)
		if d.Kind == llm.DeltaText {
			b = append(b, `{"content":`...)
		} else {
			b = append(b, `{"reasoning_content":`...)
		}
		b = jsonscan.AppendString(b, d.Text)
		b = append(b, '}')
		return append(dst, llm.Event{Kind: llm.Content, Data: append(b, choiceTail...)})
	case llm.DeltaToolStart:
		e.calls = true
		dst = e.role(dst)
		b := e.begin(len(d.ID) + len(d.Name) + 64)
		b = append(b, `{"tool_calls":[{"index":`...)
		b = strconv.AppendInt(b, int64(d.Index), 10)
		b = append(b, `,"id":`...)
		b = jsonscan.AppendString(b, callID(d.ID, d.Index))
		b = append(b, `,"type":"function","function":{"name":`...)
		b = jsonscan.AppendString(b, d.Name)
		b = append(b, `,"arguments":""}}]}`...)
		return append(dst, llm.Event{Kind: llm.Content, Data: append(b, choiceTail...)})
	case llm.DeltaToolArgs:
		if d.Text == "" {
			return dst
		}
		dst = e.role(dst)
		b := e.begin(len(d.Text) + len(d.Text)/4 + 48)
		b = append(b, `{"tool_calls":[{"index":`...)
		b = strconv.AppendInt(b, int64(d.Index), 10)
		b = append(b, `,"function":{"arguments":`...)
		b = jsonscan.AppendString(b, d.Text)
		b = append(b, `}}]}`...)
		return append(dst, llm.Event{Kind: llm.Content, Data: append(b, choiceTail...)})
	case llm.DeltaFinish:
		if e.finished {
			return dst
		}
		return e.finish(dst, d.Finish)
	case llm.DeltaUsage:
		if d.Usage == nil {
			return dst
		}
		u := *d.Usage
		if !e.finished {
			e.pending = &u
			return dst
		}
		return e.usage(dst, &u)
	}
	return dst // DeltaToolEnd: calls end with the finish reason
}

// End closes the answer with a finish chunk if none was written, and the
// usage still held back.
func (e *streamEncoder) End(dst []llm.Event) []llm.Event {
	if !e.finished {
		dst = e.finish(dst, "")
	}
	return dst
}

// role writes the chunk that opens the assistant's message, once.
func (e *streamEncoder) role(dst []llm.Event) []llm.Event {
	if e.started {
		return dst
	}
	e.started = true
	b := e.begin(32)
	b = append(b, `{"role":"assistant","content":""}`...)
	return append(dst, llm.Event{Kind: llm.Held, Data: append(b, choiceTail...)})
}

func (e *streamEncoder) finish(dst []llm.Event, reason llm.FinishReason) []llm.Event {
	if reason == "" {
		reason = finishReason("", e.calls)
	}
	dst = e.role(dst)
	e.finished = true
	b := e.begin(len(reason))
	b = append(b, `{},"finish_reason":`...)
	b = jsonscan.AppendString(b, string(reason))
	b = append(b, "}]}"...)
	dst = append(dst, llm.Event{Kind: llm.Held, Data: b})
	if e.pending != nil {
		dst = e.usage(dst, e.pending)
		e.pending = nil
	}
	return dst
}

// usage writes the trailing usage chunk, with empty choices.
func (e *streamEncoder) usage(dst []llm.Event, u *llm.Usage) []llm.Event {
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	b := make([]byte, 0, len(e.prefix)+128)
	b = append(b, e.prefix...)
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	if u.CacheReadTokens > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CacheReadTokens), 10)
		b = append(b, '}')
	}
	b = append(b, "}}"...)
	return append(dst, llm.Event{Kind: llm.UsageOnly, Data: b, Usage: u})
}

// StreamEnd is the [DONE] event that ends every complete stream.
// streamEnd is the same for every stream; StreamEnd's full slice
// expression makes an append copy instead of writing into it.
var streamEnd = []byte("data: [DONE]\n\n")

func (codec) StreamEnd() []byte { return streamEnd[:len(streamEnd):len(streamEnd)] }

// EventName is "": chat completion chunks have no names.
func (codec) EventName([]byte) string { return "" }
