package fakeupstream

import (
	"freelane/backend/jsonscan"
	"net/http"
	"strconv"
)

// The Anthropic Messages wire: POST /v1/messages, answered with a Message
// object or its stream of named events.

var ctSSEUTF8 = []string{"text/event-stream; charset=utf-8"}

// Malformed Anthropic event, cut off in the middle of a JSON value.
const malformedAnthropic = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\": broken\n\n"

// antRequest is what the server keeps of an Anthropic request body.
type antRequest struct {
	body        object
	model       string
	stream      bool
	promptChars int
}

// parseAnthropic splits an Anthropic body into its members and picks out
// the model and the stream switch. It fails only when the body is not a
// JSON object; fields of the wrong type are left to validateAnthropic.
func parseAnthropic(in []byte) (*antRequest, error) {
	body, err := parseObject(in)
	if err != nil {
		return nil, err
	}
	a := &antRequest{body: body}
	if v, ok := body.get("model"); ok {
		a.model, _ = asString(v)
	}
	if v, ok := body.get("stream"); ok {
		a.stream = string(v) == "true"
	}
	if v, ok := body.get("messages"); ok {
		a.promptChars += len(v)
	}
	if v, ok := body.get("system"); ok {
		a.promptChars += len(v)
	}
	return a, nil
}

// admitAnthropic checks the key, the method, the version header and the
// body of an Anthropic request and answers the first problem it finds. It
// reports whether the request may go on to its scripted answer.
func (x *exchange) admitAnthropic(r *http.Request, allowed bool, parseErr error) bool {
	key := r.Header.Get("X-Api-Key")
	switch {
	case x.t.key != "" && key == "":
		x.anthropicError(http.StatusUnauthorized, "authentication_error", "x-api-key header is required", nil)
	case x.t.key != "" && key != x.t.key:
		x.anthropicError(http.StatusUnauthorized, "authentication_error", "invalid x-api-key", nil)
	case !allowed:
		x.anthropicError(http.StatusMethodNotAllowed, "invalid_request_error", "Method Not Allowed", nil)
	case parseErr != nil:
		x.anthropicError(http.StatusBadRequest, "invalid_request_error", "The request body is not valid JSON: "+parseErr.Error(), nil)
	case r.Header.Get("Anthropic-Version") == "":
		x.anthropicError(http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required", nil)
	default:
		if msg := validateAnthropic(x.ant.body); msg != "" {
			x.anthropicError(http.StatusBadRequest, "invalid_request_error", msg, nil)
			return false
		}
		return true
	}
	return false
}

// anthropicError writes {"type":"error","error":{...},"request_id":...}.
func (x *exchange) anthropicError(status int, typ, msg string, headers map[string]string) {
	h := x.w.Header()
	h["Content-Type"] = ctJSON
	h.Set("Request-Id", x.requestID())
	setHeaders(h, headers)
	x.w.WriteHeader(status)
	b := appendAnthropicError(x.out[:0], typ, msg)
	b = append(b[:len(b)-1], `,"request_id":`...)
	b = jsonscan.AppendString(b, x.requestID())
	x.out = append(b, '}')
	_, _ = x.w.Write(x.out)
}

// requestID is the id Anthropic names a request by in headers and errors.
// Error answers are written before the answer's id is drawn, so it draws
// one then.
func (x *exchange) requestID() string {
	if x.id == 0 {
		x.id = x.s.ids.Add(1)
	}
	return "req_fake" + strconv.FormatUint(x.id, 10)
}

// appendAnthropicError appends {"type":"error","error":{"type":..,"message":..}}.
func appendAnthropicError(b []byte, typ, msg string) []byte {
	b = append(b, `{"type":"error","error":{"type":`...)
	b = jsonscan.AppendString(b, typ)
	b = append(b, `,"message":`...)
	b = jsonscan.AppendString(b, msg)
	return append(b, "}}"...)
}

// anthropicScriptedError writes the default Anthropic error for a scripted
// status and Code.
func (x *exchange) anthropicScriptedError(status int) {
	typ, msg := describeAnthropicError(status, x.t.b.Code, x.req.Model)
	x.anthropicError(status, typ, msg, x.t.b.Headers)
}

// Anthropic's own error types, with the status it sends each with.
var anthropicTypes = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      statusOverloaded,
}

// statusOverloaded is the status Anthropic answers with when it is
// overloaded.
const statusOverloaded = 529

// anthropicStatusForCode is the status Anthropic answers an error code
// with. The code is one of Anthropic's error types or one of the OpenAI
// codes Behavior.Code documents.
func anthropicStatusForCode(code string) int {
	if st, ok := anthropicTypes[code]; ok {
		return st
	}
	switch code {
	case "invalid_api_key":
		return http.StatusUnauthorized
	case "model_not_found":
		return http.StatusNotFound
	case "rate_limit_exceeded":
		return http.StatusTooManyRequests
	}
	// Anthropic reports an exhausted credit balance, like a too long
	// prompt, as a 400.
	return http.StatusBadRequest
}

// describeAnthropicError returns the type and message of the default
// Anthropic error for a status and an optional code, worded as Anthropic
// words them.
func describeAnthropicError(status int, code, model string) (typ, msg string) {
	switch code {
	case "context_length_exceeded":
		return "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"
	case "insufficient_quota":
		return "invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
	case "invalid_api_key":
		return "authentication_error", "invalid x-api-key"
	case "model_not_found":
		return "not_found_error", "model: " + model
	case "rate_limit_exceeded":
		return describeAnthropicError(http.StatusTooManyRequests, "", model)
	}
	if _, ok := anthropicTypes[code]; ok {
		_, msg = describeAnthropicError(anthropicTypes[code], "", model)
		return code, msg
	}
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error", "Invalid request."
	case http.StatusUnauthorized:
		return "authentication_error", "invalid x-api-key"
	case http.StatusPaymentRequired:
		return "billing_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
	case http.StatusForbidden:
		return "permission_error", "Your API key does not have permission to use the specified resource."
	case http.StatusNotFound:
		return "not_found_error", "model: " + model
	case http.StatusRequestEntityTooLarge:
		return "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case http.StatusTooManyRequests:
		return "rate_limit_error", "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."
	case http.StatusGatewayTimeout:
		return "timeout_error", "Request timed out."
	case statusOverloaded, http.StatusServiceUnavailable:
		return "overloaded_error", "Overloaded"
	}
	if status >= 500 {
		return "api_error", "Internal server error"
	}
	return "invalid_request_error", "Invalid request."
}

// anthropicStopReason is the stop_reason of the answer.
func (x *exchange) anthropicStopReason() string {
	switch {
	case x.t.b.Blocked != "":
		return "refusal"
	case x.toolCall():
		return "tool_use"
	}
	return "end_turn"
}

// appendAnthropicUsage appends the usage object, with output tokens out.
func (x *exchange) appendAnthropicUsage(b []byte, out int) []byte {
	if x.t.b.NoUsage {
		return append(b, "null"...)
	}
	// Anthropic counts the tokens read from or written to its cache apart
	// from input_tokens.
	read, write := x.t.prefixTokens(x.promptTokens, true)
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(x.promptTokens-read-write), 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, int64(write), 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, int64(x.t.b.CachedTokens+read), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	return append(b, '}')
}

// appendAnthropicHead appends a Message object up to and including
// `"content":[`.
func (x *exchange) appendAnthropicHead(b []byte) []byte {
	b = append(b, `{"id":"msg_fake`...)
	b = strconv.AppendUint(b, x.id, 10)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = jsonscan.AppendString(b, x.req.Model)
	return append(b, `,"content":[`...)
}

// appendToolID appends the id of the answer's tool_use block.
func (x *exchange) appendToolID(b []byte) []byte {
	b = append(b, `"toolu_fake`...)
	b = strconv.AppendUint(b, x.id, 10)
	return append(b, '"')
}

// anthropicAnswer writes a Message, streamed or not.
func (x *exchange) anthropicAnswer() {
	h := x.w.Header()
	h.Set("Request-Id", x.requestID())
	if x.req.Stream {
		x.anthropicStream()
		return
	}
	h["Content-Type"] = ctJSON
	setHeaders(h, x.t.b.Headers)
	b := x.appendAnthropicHead(x.out[:0])
	switch {
	case x.noContent():
	case x.toolCall():
		b = append(b, `{"type":"tool_use","id":`...)
		b = x.appendToolID(b)
		name, args := x.tool()
		b = append(b, `,"name":`...)
		b = jsonscan.AppendString(b, name)
		b = append(b, `,"input":`...)
		b = append(b, args...)
		b = append(b, '}')
	default:
		b = append(b, `{"type":"text","text":"`...)
		for _, c := range x.chunks() {
			b = jsonscan.AppendStringBody(b, c)
		}
		b = append(b, `"}`...)
	}
	b = append(b, `],"stop_reason":"`...)
	b = append(b, x.anthropicStopReason()...)
	b = append(b, `","stop_sequence":null,"usage":`...)
	b = x.appendAnthropicUsage(b, x.contentEvents())
	x.out = append(b, '}')
	if _, err := x.w.Write(x.out); err != nil {
		x.gone()
	}
}

// anthropicEvent writes one named event whose data is built by data.
func (x *exchange) anthropicEvent(name string, data func([]byte) []byte) bool {
	b := append(x.out[:0], "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = data(b)
	return x.send(append(b, "\n\n"...))
}

// anthropicRaw writes one named event with fixed data.
func (x *exchange) anthropicRaw(name, data string) bool {
	b := append(x.out[:0], "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return x.send(append(b, "\n\n"...))
}

// anthropicStream writes the event stream of a Message and applies the
// stream faults. The content events are the text deltas or, for a tool
// call, the tool_use block's start and its two input_json_delta fragments.
func (x *exchange) anthropicStream() {
	b := &x.t.b
	h := x.w.Header()
	h["Content-Type"] = ctSSEUTF8
	h["Cache-Control"] = noCache
	setHeaders(h, b.Headers)
	x.w.WriteHeader(http.StatusOK)

	n := x.contentEvents()
	text := n > 0 && !x.toolCall()
	ok := x.anthropicEvent("message_start", func(p []byte) []byte {
		p = append(p, `{"type":"message_start","message":`...)
		p = x.appendAnthropicHead(p)
		p = append(p, `],"stop_reason":null,"stop_sequence":null,"usage":`...)
		p = x.appendAnthropicUsage(p, 1)
		return append(p, "}}"...)
	})
	if !ok {
		return
	}
	// A text block opens before the first ping; a tool_use block is itself
	// content, so it waits for the first token.
	if text && !x.anthropicRaw("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) {
		return
	}
	if !x.anthropicRaw("ping", `{"type": "ping"}`) {
		return
	}
	if !x.drive(n, n, x.anthropicContent, x.anthropicMalformed, x.anthropicStreamError) {
		return
	}
	if n > 0 && !x.anthropicRaw("content_block_stop", `{"type":"content_block_stop","index":0}`) {
		return
	}
	ok = x.anthropicEvent("message_delta", func(p []byte) []byte {
		p = append(p, `{"type":"message_delta","delta":{"stop_reason":"`...)
		p = append(p, x.anthropicStopReason()...)
		if b.NoUsage {
			return append(p, `","stop_sequence":null},"usage":null}`...)
		}
		p = append(p, `","stop_sequence":null},"usage":{"output_tokens":`...)
		p = strconv.AppendInt(p, int64(n), 10)
		return append(p, "}}"...)
	})
	if !ok || b.NoDone {
		return
	}
	x.anthropicRaw("message_stop", `{"type":"message_stop"}`)
}

// anthropicContent writes content event i.
func (x *exchange) anthropicContent(i int) bool {
	switch {
	case !x.toolCall():
		return x.anthropicEvent("content_block_delta", func(p []byte) []byte {
			p = append(p, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`...)
			p = jsonscan.AppendString(p, x.chunks()[i])
			return append(p, "}}"...)
		})
	case i == 0:
		return x.anthropicEvent("content_block_start", func(p []byte) []byte {
			p = append(p, `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":`...)
			p = x.appendToolID(p)
			name, _ := x.tool()
			p = append(p, `,"name":`...)
			p = jsonscan.AppendString(p, name)
			return append(p, `,"input":{}}}`...)
		})
	}
	return x.anthropicEvent("content_block_delta", func(p []byte) []byte {
		p = append(p, `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`...)
		p = jsonscan.AppendString(p, x.toolFragment(i-1))
		return append(p, "}}"...)
	})
}

// anthropicMalformed writes the broken event.
func (x *exchange) anthropicMalformed() bool {
	return x.send(append(x.out[:0], malformedAnthropic...))
}

// anthropicStreamError writes the scripted "event: error".
func (x *exchange) anthropicStreamError() bool {
	status, msg := streamErrorKind(x.t.b.ErrorEvent)
	typ, m := describeAnthropicError(status, "", x.req.Model)
	if status == http.StatusServiceUnavailable {
		typ, m = "overloaded_error", "Overloaded"
	}
	if msg != "" {
		m = msg
	}
	return x.anthropicEvent("error", func(p []byte) []byte { return appendAnthropicError(p, typ, m) })
}

// drive runs the content part of an Anthropic or Gemini stream: it applies
// FirstTokenDelay, ChunkDelay, CutAfter, StallAfter, ErrorEvent and
// MalformedAt around the n content events that content writes. ErrorAfter
// is clamped to errLimit. It reports whether the stream goes on to its
// finish.
func (x *exchange) drive(n, errLimit int, content func(int) bool, malformed, streamErr func() bool) bool {
	b := &x.t.b
	cut, stall, errAt := stopPoint(b.CutAfter, n), stopPoint(b.StallAfter, n), errorPoint(b, errLimit)
	for i := 0; ; i++ {
		// Here i content events have been sent.
		switch i {
		case cut:
			x.abort()
			return false
		case stall:
			x.s.block(x.ctx)
			x.gone()
			x.abort()
			return false
		case errAt:
			streamErr()
			return false
		}
		d := b.ChunkDelay
		if i == 0 {
			d = b.FirstTokenDelay
		}
		if i == n {
			if n == 0 && !x.s.wait(x.ctx, d) {
				x.gone()
				return false
			}
			break
		}
		if !x.s.wait(x.ctx, d) {
			x.gone()
			return false
		}
		if b.MalformedAt == i+1 && !malformed() {
			return false
		}
		if !content(i) {
			return false
		}
	}
	if b.MalformedAt > n && !malformed() {
		return false
	}
	return true
}
