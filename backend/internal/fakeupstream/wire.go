package fakeupstream

import (
	"cmp"
	"encoding/json"
	"freelane/backend/jsonscan"
	"math"
	"net/http"
	"strconv"
)

// The JSON of OpenAI answers is assembled by hand into pooled buffers: it is
// a fixed shape, and encoding/json would allocate on every chunk.

// evKind is a kind of stream event.
type evKind uint8

const (
	evRole    evKind = iota // Chat: the role-only chunk.
	evBlank                 // Chat: the chunk with empty content.
	evContent               // A content chunk, or a tool-call chunk.
	evFinish                // The chunk carrying finish_reason.
)

// The tool call a ToolCall answer makes unless Behavior.ToolName names
// another, and the fragments its arguments are streamed in.
const (
	toolName = "get_weather"
	toolArgs = `{"city":"Paris"}`
)

var toolFragments = [2]string{`{"city":`, `"Paris"}`}

// tool returns the name and the JSON arguments of the answer's tool call.
func (x *exchange) tool() (name, args string) {
	if x.t.b.ToolName == "" {
		return toolName, toolArgs
	}
	return x.t.b.ToolName, cmp.Or(x.t.b.ToolArgs, "{}")
}

// toolFragment returns the i-th (0-based) of the two pieces the call's
// arguments are streamed in. Arguments are text to the client until they
// are whole, so any cut is a valid stream; the fixed call keeps the cut a
// client would see from OpenAI.
func (x *exchange) toolFragment(i int) string {
	if x.t.b.ToolName == "" {
		return toolFragments[i]
	}
	_, args := x.tool()
	if i == 0 {
		return args[:len(args)/2]
	}
	return args[len(args)/2:]
}

// Malformed events, cut off in the middle of a JSON value.
const (
	malformedChat = "data: {\"choices\":[{\"delta\":{\"content\": broken\n\n"
	malformedText = "data: {\"choices\":[{\"text\": broken\n\n"
)

// chunks returns the content pieces of the answer.
func (x *exchange) chunks() []string {
	if c := x.t.b.Chunks; len(c) > 0 {
		return c
	}
	x.defChunks = [3]string{"Hello", " from ", x.req.Model}
	return x.defChunks[:]
}

// toolCall reports whether the answer is a tool call. It applies to chat
// completions and the Anthropic and Gemini wires, not to legacy
// completions.
func (x *exchange) toolCall() bool {
	return x.kind != kindText && x.t.b.ToolCall && !x.t.b.Empty && x.t.b.Blocked == ""
}

// noContent reports whether the answer has no content: an empty or a
// blocked answer.
func (x *exchange) noContent() bool {
	return x.t.b.Empty || x.t.b.Blocked != ""
}

// contentEvents is the number of content events the answer has: the chunks,
// the tool-call events (three, or one on Gemini), or none for an empty or
// blocked answer.
func (x *exchange) contentEvents() int {
	switch {
	case x.noContent():
		return 0
	case x.toolCall():
		if x.kind.gemini() {
			return 1
		}
		return 1 + len(toolFragments)
	}
	return len(x.chunks())
}

// appendHead appends the fields every answer object starts with, up to and
// including the comma before "choices".
func (x *exchange) appendHead(b []byte, object string) []byte {
	if x.kind == kindChat {
		b = append(b, `{"id":"chatcmpl-fake`...)
	} else {
		b = append(b, `{"id":"cmpl-fake`...)
	}
	b = strconv.AppendUint(b, x.id, 10)
	b = append(b, `","object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, x.created, 10)
	b = append(b, `,"model":`...)
	b = jsonscan.AppendString(b, x.req.Model)
	if x.kind == kindChat {
		b = append(b, `,"system_fingerprint":"fp_fake"`...)
	}
	return append(b, ',')
}

// appendUsage appends the "usage" member.
func (x *exchange) appendUsage(b []byte, completion int) []byte {
	if x.t.b.NoUsage {
		return append(b, `"usage":null`...)
	}
	read, _ := x.t.prefixTokens(x.promptTokens, false)
	cached := x.t.b.CachedTokens + read
	prompt := x.promptTokens + x.t.b.CachedTokens
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	if cached > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(cached), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendCompletion appends a whole non-stream answer.
func (x *exchange) appendCompletion(b []byte) []byte {
	bh := &x.t.b
	n := x.contentEvents()
	if x.kind == kindText {
		b = x.appendHead(b, "text_completion")
		b = append(b, `"choices":[{"text":"`...)
		if !x.noContent() {
			for _, c := range x.chunks() {
				b = jsonscan.AppendStringBody(b, c)
			}
		}
		if bh.Blocked != "" {
			b = append(b, `","index":0,"logprobs":null,"finish_reason":"content_filter"}],`...)
		} else {
			b = append(b, `","index":0,"logprobs":null,"finish_reason":"stop"}],`...)
		}
		b = x.appendUsage(b, n)
		return append(b, '}')
	}
	b = x.appendHead(b, "chat.completion")
	b = append(b, `"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	reason := "stop"
	switch {
	case bh.Blocked != "":
		reason = "content_filter"
		b = append(b, `""`...)
	case bh.Empty:
		b = append(b, `""`...)
	case x.toolCall():
		reason = "tool_calls"
		b = append(b, `null,"tool_calls":[{"id":"call_fake`...)
		b = strconv.AppendUint(b, x.id, 10)
		name, args := x.tool()
		b = append(b, `","type":"function","function":{"name":`...)
		b = jsonscan.AppendString(b, name)
		b = append(b, `,"arguments":`...)
		b = jsonscan.AppendString(b, args)
		b = append(b, `}}]`...)
	default:
		b = append(b, '"')
		for _, c := range x.chunks() {
			b = jsonscan.AppendStringBody(b, c)
		}
		b = append(b, '"')
	}
	b = append(b, `,"refusal":null},"logprobs":null,"finish_reason":"`...)
	b = append(b, reason...)
	b = append(b, `"}],`...)
	b = x.appendUsage(b, n)
	return append(b, '}')
}

// appendChunkPrefix appends what every stream chunk starts with, including
// the "data: " of the event, up to and including `"choices":[`.
func (x *exchange) appendChunkPrefix(b []byte) []byte {
	b = append(b, "data: "...)
	if x.kind == kindChat {
		b = x.appendHead(b, "chat.completion.chunk")
	} else {
		b = x.appendHead(b, "text_completion")
	}
	return append(b, `"choices":[`...)
}

// event writes one stream chunk. i is the index of a content event.
func (x *exchange) event(ev evKind, i int) bool {
	b := append(x.out[:0], x.prefix...)
	if x.kind == kindText {
		b = append(b, `{"text":`...)
		switch {
		case ev == evContent:
			b = jsonscan.AppendString(b, x.chunks()[i])
			b = append(b, `,"index":0,"logprobs":null,"finish_reason":null}`...)
		case x.t.b.Blocked != "":
			b = append(b, `"","index":0,"logprobs":null,"finish_reason":"content_filter"}`...)
		default:
			b = append(b, `"","index":0,"logprobs":null,"finish_reason":"stop"}`...)
		}
	} else {
		switch ev {
		case evRole:
			b = append(b, `{"index":0,"delta":{"role":"assistant"},"logprobs":null,"finish_reason":null}`...)
		case evBlank:
			b = append(b, `{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":null}`...)
		case evContent:
			switch {
			case !x.toolCall():
				b = append(b, `{"index":0,"delta":{"content":`...)
				b = jsonscan.AppendString(b, x.chunks()[i])
				b = append(b, `},"logprobs":null,"finish_reason":null}`...)
			case i == 0:
				b = append(b, `{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_fake`...)
				b = strconv.AppendUint(b, x.id, 10)
				name, _ := x.tool()
				b = append(b, `","type":"function","function":{"name":`...)
				b = jsonscan.AppendString(b, name)
				b = append(b, `,"arguments":""}}]},"logprobs":null,"finish_reason":null}`...)
			default:
				b = append(b, `{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`...)
				b = jsonscan.AppendString(b, x.toolFragment(i-1))
				b = append(b, `}}]},"logprobs":null,"finish_reason":null}`...)
			}
		case evFinish:
			switch {
			case x.toolCall():
				b = append(b, `{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}`...)
			case x.t.b.Blocked != "":
				b = append(b, `{"index":0,"delta":{},"logprobs":null,"finish_reason":"content_filter"}`...)
			default:
				b = append(b, `{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}`...)
			}
		}
	}
	b = append(b, ']')
	if x.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	b = append(b, "}\n\n"...)
	return x.send(b)
}

// appendUsageChunk appends the final chunk of a stream that asked for
// usage: no choices and a usage object.
func (x *exchange) appendUsageChunk(b []byte) []byte {
	b = append(b, x.prefix...)
	b = append(b, "],"...)
	b = x.appendUsage(b, x.contentEvents())
	return append(b, "}\n\n"...)
}

// streamError writes the scripted in-stream error chunk.
func (x *exchange) streamError() bool {
	status, msg := streamErrorKind(x.t.b.ErrorEvent)
	m, typ, code := describeError(status, "", x.req.Model)
	if msg != "" {
		m = msg
	}
	b := append(x.out[:0], "data: "...)
	b = appendError(b, m, typ, code)
	return x.send(append(b, "\n\n"...))
}

// streamErrorKind maps a Behavior.ErrorEvent value to the HTTP status whose
// error it stands for and, for a value that is not one of the named kinds,
// the message to use.
func streamErrorKind(ev string) (status int, msg string) {
	switch ev {
	case ErrorOverloaded:
		return http.StatusServiceUnavailable, ""
	case ErrorRateLimit:
		return http.StatusTooManyRequests, ""
	case ErrorServer:
		return http.StatusInternalServerError, ""
	}
	return http.StatusServiceUnavailable, ev
}

// malformed writes the broken event.
func (x *exchange) malformed() bool {
	if x.kind == kindText {
		return x.send(append(x.out[:0], malformedText...))
	}
	return x.send(append(x.out[:0], malformedChat...))
}

// appendEmbeddings appends an embeddings answer with one vector per item.
func (x *exchange) appendEmbeddings(b []byte, items []json.RawMessage) []byte {
	b = append(b, `{"object":"list","data":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":[`...)
		v := vector(it)
		for j, f := range v {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
		}
		b = append(b, "]}"...)
	}
	b = append(b, `],"model":`...)
	b = jsonscan.AppendString(b, x.req.Model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(x.promptTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(x.promptTokens), 10)
	return append(b, "}}"...)
}

// vector derives a deterministic unit vector of length 8 from an input
// item: equal inputs give equal vectors, different inputs almost surely
// different ones.
func vector(item []byte) [8]float32 {
	// FNV-1a of the item seeds the generator.
	state := uint64(14695981039346656037)
	for _, c := range item {
		state ^= uint64(c)
		state *= 1099511628211
	}
	var v [8]float64
	norm := 0.0
	for i := range v {
		// splitmix64 step.
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		v[i] = float64(int64(z)) / math.MaxInt64
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	var out [8]float32
	for i := range v {
		out[i] = float32(v[i] / norm)
	}
	return out
}

// appendModels appends the GET /models answer.
func appendModels(b []byte, ids []string) []byte {
	b = append(b, `{"object":"list","data":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsonscan.AppendString(b, id)
		b = append(b, `,"object":"model","created":1700000000,"owned_by":"fakeupstream"}`...)
	}
	return append(b, "]}"...)
}

// appendError appends {"error":{...}}; an empty code is written as null.
func appendError(b []byte, msg, typ, code string) []byte {
	b = append(b, `{"error":{"message":`...)
	b = jsonscan.AppendString(b, msg)
	b = append(b, `,"type":`...)
	b = jsonscan.AppendString(b, typ)
	b = append(b, `,"param":null,"code":`...)
	if code == "" {
		b = append(b, "null"...)
	} else {
		b = jsonscan.AppendString(b, code)
	}
	return append(b, "}}"...)
}

// statusForCode is the status OpenAI answers an error code with.
func statusForCode(code string) int {
	switch code {
	case "invalid_api_key":
		return http.StatusUnauthorized
	case "model_not_found":
		return http.StatusNotFound
	case "rate_limit_exceeded", "insufficient_quota":
		return http.StatusTooManyRequests
	}
	return http.StatusBadRequest
}

// describeError returns the message, type and code of the default error body
// for a status and an optional code, worded as OpenAI words them.
func describeError(status int, code, model string) (msg, typ, outCode string) {
	switch code {
	case "context_length_exceeded":
		return "This model's maximum context length is 8192 tokens. However, your messages resulted in 12000 tokens. Please reduce the length of the messages.", "invalid_request_error", code
	case "invalid_api_key":
		return "Incorrect API key provided. You can find your API key in your account settings.", "invalid_request_error", code
	case "model_not_found":
		return "The model `" + model + "` does not exist or you do not have access to it.", "invalid_request_error", code
	case "rate_limit_exceeded":
		return "Rate limit reached for " + model + " on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.", "requests", code
	case "insufficient_quota":
		return "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", code
	}
	msg, typ, outCode = statusError(status, model)
	if code != "" {
		outCode = code
	}
	return msg, typ, outCode
}

// statusError is the default error for a status when no code says more.
func statusError(status int, model string) (msg, typ, code string) {
	switch status {
	case http.StatusBadRequest:
		return "Invalid request.", "invalid_request_error", ""
	case http.StatusUnauthorized:
		return describeError(status, "invalid_api_key", model)
	case http.StatusPaymentRequired:
		return "Payment required: the account has no credits left.", "billing_error", "payment_required"
	case http.StatusForbidden:
		return "You are not allowed to use this model from this region.", "permission_error", "permission_denied"
	case http.StatusNotFound:
		return describeError(status, "model_not_found", model)
	case http.StatusRequestTimeout:
		return "Request timed out.", "timeout", "timeout"
	case http.StatusRequestEntityTooLarge:
		return "Request too large.", "invalid_request_error", "request_too_large"
	case http.StatusTooManyRequests:
		return describeError(status, "rate_limit_exceeded", model)
	case http.StatusInternalServerError:
		return "The server had an error while processing your request. Sorry about that!", "server_error", "server_error"
	case http.StatusBadGateway:
		return "Bad gateway.", "server_error", "bad_gateway"
	case http.StatusServiceUnavailable:
		return "The engine is currently overloaded, please try again later.", "server_error", "service_unavailable"
	case http.StatusGatewayTimeout:
		return "Gateway timeout.", "server_error", "gateway_timeout"
	}
	text := http.StatusText(status)
	if text == "" {
		text = "Status " + strconv.Itoa(status)
	}
	switch {
	case status >= 500:
		return text, "server_error", ""
	case status >= 400:
		return text, "invalid_request_error", ""
	}
	return text, "error", ""
}
