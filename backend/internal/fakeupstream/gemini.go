package fakeupstream

import (
	"freelane/backend/jsonscan"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Gemini wire: POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent, also under /v1/.

var ctGeminiJSON = []string{"application/json; charset=UTF-8"}

// Gemini path pieces.
const (
	geminiGenerate = ":generateContent"
	geminiStream   = ":streamGenerateContent"
)

// malformedGemini is a broken stream chunk, cut off in the middle of a
// JSON value; it is framed like the other chunks.
const malformedGemini = `{"candidates":[{"content":{"role":"model","parts":[{"text": broken`

// gemRequest is what the server keeps of a Gemini request.
type gemRequest struct {
	body        object
	promptChars int
	sse         bool // The stream is server-sent events, not a JSON array.
	sent        int  // Array elements written so far.
	// cacheTokens are the tokens of the cachedContent the request names.
	cacheTokens int
}

// geminiRoute maps a Gemini path to its endpoint, or kindUnknown.
func geminiRoute(path string) kind {
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	if !ok {
		if rest, ok = strings.CutPrefix(path, "/v1/models/"); !ok {
			return kindUnknown
		}
	}
	switch {
	case strings.HasSuffix(rest, geminiGenerate):
		return kindGenerate
	case strings.HasSuffix(rest, geminiStream):
		return kindStreamGenerate
	}
	return kindUnknown
}

// geminiModel returns the model named in a Gemini path. The path is the
// decoded one, so an escaped slash in the model is a slash here.
func geminiModel(path string) string {
	i := strings.Index(path, "/models/")
	j := strings.LastIndexByte(path, ':')
	if i < 0 || j < i+len("/models/") {
		return ""
	}
	return path[i+len("/models/") : j]
}

// parseGemini splits a Gemini body into its members. It fails only when
// the body is not a JSON object.
func parseGemini(in []byte) (*gemRequest, error) {
	body, err := parseObject(in)
	if err != nil {
		return nil, err
	}
	g := &gemRequest{body: body}
	for _, k := range []string{"contents", "systemInstruction", "system_instruction"} {
		if v, ok := body.get(k); ok {
			g.promptChars += len(v)
		}
	}
	return g, nil
}

// admitGemini checks the key, the method and the body of a Gemini request
// and answers the first problem it finds. It reports whether the request
// may go on to its scripted answer.
func (x *exchange) admitGemini(r *http.Request, allowed bool, parseErr error) bool {
	key := r.Header.Get("X-Goog-Api-Key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	switch {
	case x.t.key != "" && key == "":
		x.geminiError(http.StatusForbidden, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.", "", nil)
	case x.t.key != "" && key != x.t.key:
		x.geminiKeyInvalid(nil)
	case !allowed:
		x.geminiError(http.StatusNotFound, "Method not found.", "", nil)
	case x.req.Model == "":
		x.geminiError(http.StatusNotFound, "Requested entity was not found.", "", nil)
	case parseErr != nil:
		x.geminiError(http.StatusBadRequest, "Invalid JSON payload received. "+parseErr.Error(), "", nil)
	default:
		field, msg := validateGemini(x.gem.body)
		if msg == "" {
			return true
		}
		x.geminiError(http.StatusBadRequest, msg, field, nil)
	}
	return false
}

// geminiStatus is the google.rpc status name Google pairs with an HTTP
// status.
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable, statusOverloaded:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// geminiStatusCodes are the google.rpc status names, as Behavior.Code
// values, with the HTTP status of each.
var geminiStatusCodes = map[string]int{
	"INVALID_ARGUMENT":    http.StatusBadRequest,
	"FAILED_PRECONDITION": http.StatusBadRequest,
	"UNAUTHENTICATED":     http.StatusUnauthorized,
	"PERMISSION_DENIED":   http.StatusForbidden,
	"NOT_FOUND":           http.StatusNotFound,
	"RESOURCE_EXHAUSTED":  http.StatusTooManyRequests,
	"INTERNAL":            http.StatusInternalServerError,
	"UNAVAILABLE":         http.StatusServiceUnavailable,
	"DEADLINE_EXCEEDED":   http.StatusGatewayTimeout,
}

// geminiStatusForCode is the status Gemini answers an error code with. The
// code is a google.rpc status name or one of the OpenAI codes
// Behavior.Code documents.
func geminiStatusForCode(code string) int {
	if st, ok := geminiStatusCodes[code]; ok {
		return st
	}
	switch code {
	case "model_not_found":
		return http.StatusNotFound
	case "rate_limit_exceeded", "insufficient_quota":
		return http.StatusTooManyRequests
	}
	// Gemini reports a bad key, like a too long prompt, as a 400.
	return http.StatusBadRequest
}

// geminiScriptedError writes the default Gemini error for a scripted status
// and Code.
func (x *exchange) geminiScriptedError(status int) {
	b := &x.t.b
	switch b.Code {
	case "invalid_api_key", "API_KEY_INVALID":
		x.geminiKeyInvalid(b.Headers)
		return
	case "context_length_exceeded":
		x.geminiError(status, "The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).", "", b.Headers)
		return
	}
	msg := ""
	switch status {
	case http.StatusBadRequest:
		msg = "Request contains an invalid argument."
	case http.StatusUnauthorized:
		msg = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
	case http.StatusForbidden:
		msg = "The caller does not have permission"
	case http.StatusNotFound:
		msg = "models/" + x.req.Model + " is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."
	case http.StatusTooManyRequests:
		msg = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
		if b.RetryDelay > 0 {
			msg += "\nPlease retry in " + geminiDuration(b.RetryDelay) + "."
		}
	case http.StatusServiceUnavailable, statusOverloaded:
		msg = "The model is overloaded. Please try again later."
	case http.StatusGatewayTimeout:
		msg = "The request timed out. Please try again."
	default:
		if status >= 500 {
			msg = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
		} else {
			msg = http.StatusText(status)
		}
	}
	x.geminiError(status, msg, "", b.Headers)
}

// geminiKeyInvalid writes the 400 the real API answers a wrong key with.
func (x *exchange) geminiKeyInvalid(headers map[string]string) {
	x.geminiErrorDetails(http.StatusBadRequest, "API key not valid. Please pass a valid API key.", headers, func(b []byte) []byte {
		return append(b, `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}`...)
	})
}

// geminiError writes {"error":{"code":..,"message":..,"status":..}}. A
// field names the offending field in a google.rpc.BadRequest detail; a 429
// with a scripted RetryDelay carries it in a google.rpc.RetryInfo detail.
func (x *exchange) geminiError(status int, msg, field string, headers map[string]string) {
	var details func([]byte) []byte
	switch {
	case field != "":
		details = func(b []byte) []byte {
			b = append(b, `{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":`...)
			b = jsonscan.AppendString(b, field)
			b = append(b, `,"description":`...)
			b = jsonscan.AppendString(b, msg)
			return append(b, "}]}"...)
		}
	case status == http.StatusTooManyRequests:
		details = x.appendQuotaDetails
	case x.t.b.RetryDelay > 0 && status >= 500:
		details = x.appendRetryInfo
	}
	x.geminiErrorDetails(status, msg, headers, details)
}

// appendQuotaDetails appends the details of a quota error.
func (x *exchange) appendQuotaDetails(b []byte) []byte {
	b = append(b, `{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":`...)
	b = jsonscan.AppendString(b, x.req.Model)
	b = append(b, `},"quotaValue":"10"}]},{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]}`...)
	if x.t.b.RetryDelay > 0 {
		b = append(b, ',')
		b = x.appendRetryInfo(b)
	}
	return b
}

// appendRetryInfo appends a google.rpc.RetryInfo detail with the scripted
// delay.
func (x *exchange) appendRetryInfo(b []byte) []byte {
	b = append(b, `{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"`...)
	b = append(b, geminiDuration(x.t.b.RetryDelay)...)
	return append(b, `"}`...)
}

// geminiDuration formats d as a google.protobuf.Duration in JSON: seconds
// with a fraction when needed, and "s".
func geminiDuration(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// geminiErrorDetails writes a Gemini error whose details, when not nil,
// are appended by details.
func (x *exchange) geminiErrorDetails(status int, msg string, headers map[string]string, details func([]byte) []byte) {
	h := x.w.Header()
	h["Content-Type"] = ctGeminiJSON
	setHeaders(h, headers)
	x.w.WriteHeader(status)
	x.out = x.appendGeminiError(x.out[:0], status, msg, details)
	_, _ = x.w.Write(x.out)
}

// appendGeminiError appends a Gemini error object.
func (x *exchange) appendGeminiError(b []byte, status int, msg string, details func([]byte) []byte) []byte {
	b = append(b, `{"error":{"code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"message":`...)
	b = jsonscan.AppendString(b, msg)
	b = append(b, `,"status":"`...)
	b = append(b, geminiStatus(status)...)
	b = append(b, '"')
	if details != nil {
		b = append(b, `,"details":[`...)
		b = details(b)
		b = append(b, ']')
	}
	return append(b, "}}"...)
}

// appendGeminiUsage appends the usageMetadata member. Zero counts are left
// out, as proto3 JSON leaves them out.
func (x *exchange) appendGeminiUsage(b []byte, out int) []byte {
	if x.t.b.NoUsage {
		return append(b, `"usageMetadata":null`...)
	}
	read, _ := x.t.prefixTokens(x.promptTokens, false)
	cached := x.t.b.CachedTokens + read + x.gem.cacheTokens
	prompt := x.promptTokens + x.t.b.CachedTokens
	b = append(b, `"usageMetadata":{"promptTokenCount":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	if out > 0 {
		b = append(b, `,"candidatesTokenCount":`...)
		b = strconv.AppendInt(b, int64(out), 10)
	}
	b = append(b, `,"totalTokenCount":`...)
	b = strconv.AppendInt(b, int64(prompt+out), 10)
	if cached > 0 {
		b = append(b, `,"cachedContentTokenCount":`...)
		b = strconv.AppendInt(b, int64(cached), 10)
	}
	return append(b, '}')
}

// appendGeminiTail appends the members every response ends with.
func (x *exchange) appendGeminiTail(b []byte) []byte {
	b = append(b, `,"modelVersion":`...)
	b = jsonscan.AppendString(b, x.req.Model)
	b = append(b, `,"responseId":"fake`...)
	b = strconv.AppendUint(b, x.id, 10)
	return append(b, `"}`...)
}

// appendGeminiBlocked appends a response whose prompt was blocked.
func (x *exchange) appendGeminiBlocked(b []byte) []byte {
	reason := x.t.b.Blocked
	b = append(b, `{"promptFeedback":{"blockReason":`...)
	b = jsonscan.AppendString(b, reason)
	if reason == "SAFETY" {
		b = append(b, `,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]`...)
	}
	b = append(b, "},"...)
	b = x.appendGeminiUsage(b, 0)
	return x.appendGeminiTail(b)
}

// appendGeminiResponse appends a response with one candidate. parts
// appends the parts (nothing for none); finish adds finishReason and the
// whole usage, otherwise the usage has the prompt only, as in the middle of
// a stream.
func (x *exchange) appendGeminiResponse(b []byte, parts func([]byte) []byte, finish bool) []byte {
	b = append(b, `{"candidates":[{"content":{"role":"model"`...)
	if parts != nil {
		b = append(b, `,"parts":[`...)
		b = parts(b)
		b = append(b, ']')
	}
	b = append(b, '}')
	if finish {
		b = append(b, `,"finishReason":"STOP"`...)
	}
	b = append(b, `,"index":0}],`...)
	if finish {
		b = x.appendGeminiUsage(b, x.contentEvents())
	} else {
		b = x.appendGeminiUsage(b, 0)
	}
	return x.appendGeminiTail(b)
}

// appendFunctionCall appends the functionCall part.
func (x *exchange) appendFunctionCall(b []byte) []byte {
	name, args := x.tool()
	b = append(b, `{"functionCall":{"name":`...)
	b = jsonscan.AppendString(b, name)
	b = append(b, `,"args":`...)
	b = append(b, args...)
	return append(b, "}}"...)
}

// geminiAnswer writes a response, or a stream of them.
func (x *exchange) geminiAnswer() {
	if x.req.Stream {
		x.geminiStream()
		return
	}
	h := x.w.Header()
	h["Content-Type"] = ctGeminiJSON
	setHeaders(h, x.t.b.Headers)
	var b []byte
	switch {
	case x.t.b.Blocked != "":
		b = x.appendGeminiBlocked(x.out[:0])
	case x.t.b.Empty:
		b = x.appendGeminiResponse(x.out[:0], nil, true)
	case x.toolCall():
		b = x.appendGeminiResponse(x.out[:0], x.appendFunctionCall, true)
	default:
		b = x.appendGeminiResponse(x.out[:0], func(b []byte) []byte {
			b = append(b, `{"text":"`...)
			for _, c := range x.chunks() {
				b = jsonscan.AppendStringBody(b, c)
			}
			return append(b, `"}`...)
		}, true)
	}
	x.out = b
	if _, err := x.w.Write(x.out); err != nil {
		x.gone()
	}
}

// geminiStream writes a stream and applies the stream faults. Each chunk
// is a whole response with one part; the last carries finishReason and the
// usage, and nothing follows it.
func (x *exchange) geminiStream() {
	b := &x.t.b
	h := x.w.Header()
	if x.gem.sse {
		h["Content-Type"] = ctSSE
	} else {
		h["Content-Type"] = ctGeminiJSON
	}
	h["Cache-Control"] = noCache
	setHeaders(h, b.Headers)
	x.w.WriteHeader(http.StatusOK)
	if !x.flush() {
		return
	}
	n := x.contentEvents()
	// The last chunk carries the finish, so an error "before the finish"
	// comes before the last chunk.
	if !x.drive(n, max(n-1, 0), x.geminiContent, x.geminiMalformed, x.geminiStreamError) {
		return
	}
	switch {
	case b.Blocked != "":
		if !x.geminiChunk(x.appendGeminiBlocked(x.out[:0])) {
			return
		}
	case n == 0:
		if !x.geminiChunk(x.appendGeminiResponse(x.out[:0], nil, !b.NoDone)) {
			return
		}
	}
	x.geminiEnd()
}

// geminiContent writes content chunk i; the last one finishes the answer
// unless NoDone is set.
func (x *exchange) geminiContent(i int) bool {
	finish := i == x.contentEvents()-1 && !x.t.b.NoDone
	if x.toolCall() {
		return x.geminiChunk(x.appendGeminiResponse(x.out[:0], x.appendFunctionCall, finish))
	}
	return x.geminiChunk(x.appendGeminiResponse(x.out[:0], func(b []byte) []byte {
		b = append(b, `{"text":`...)
		b = jsonscan.AppendString(b, x.chunks()[i])
		return append(b, '}')
	}, finish))
}

// geminiMalformed writes the broken chunk.
func (x *exchange) geminiMalformed() bool {
	return x.geminiChunk(append(x.out[:0], malformedGemini...))
}

// geminiStreamError writes the scripted error chunk and ends the stream.
func (x *exchange) geminiStreamError() bool {
	status, msg := streamErrorKind(x.t.b.ErrorEvent)
	if msg == "" {
		switch status {
		case http.StatusTooManyRequests:
			msg = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
		case http.StatusInternalServerError:
			msg = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
		default:
			msg = "The model is overloaded. Please try again later."
		}
	}
	if !x.geminiChunk(x.appendGeminiError(x.out[:0], status, msg, nil)) {
		return false
	}
	return x.geminiEnd()
}

// geminiChunk frames one response as a server-sent event, or as the next
// element of the JSON array, and sends it. The data is in x.out's buffer,
// so it is framed in a second pass.
func (x *exchange) geminiChunk(data []byte) bool {
	var frame []byte
	switch {
	case x.gem.sse:
		frame = append(make([]byte, 0, len(data)+10), "data: "...)
		frame = append(frame, data...)
		frame = append(frame, "\r\n\r\n"...)
	case x.gem.sent == 0:
		frame = append(append(make([]byte, 0, len(data)+1), '['), data...)
	default:
		frame = append(append(make([]byte, 0, len(data)+3), ",\r\n"...), data...)
	}
	x.gem.sent++
	ok := x.send(frame)
	// Keep the pooled buffer, which may have grown, rather than the frame.
	x.out = data[:0]
	return ok
}

// geminiEnd closes the JSON array of a stream without alt=sse. An SSE
// stream has no end marker.
func (x *exchange) geminiEnd() bool {
	if x.gem.sse {
		return true
	}
	if x.gem.sent == 0 {
		return x.send(append(x.out[:0], "[]"...))
	}
	return x.send(append(x.out[:0], ']'))
}
