package anthropic

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// StatusOverloaded is Anthropic's own status for a server too busy to
// answer.
const StatusOverloaded = 529

// errorTypes maps an HTTP status to Anthropic's error type.
var errorTypes = map[int]string{
	http.StatusBadRequest:            "invalid_request_error",
	http.StatusUnauthorized:          "authentication_error",
	http.StatusPaymentRequired:       "billing_error",
	http.StatusForbidden:             "permission_error",
	http.StatusNotFound:              "not_found_error",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusTooManyRequests:       "rate_limit_error",
	http.StatusInternalServerError:   "api_error",
	http.StatusBadGateway:            "api_error",
	http.StatusServiceUnavailable:    "overloaded_error",
	http.StatusGatewayTimeout:        "timeout_error",
	StatusOverloaded:                 "overloaded_error",
}

// errorStatuses is the way back, for an error body read without its
// status.
var errorStatuses = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      StatusOverloaded,
}

// errorType is the type for an error of status: the known ones from the
// table, the rest by class of status.
func errorType(status int) string {
	if t, ok := errorTypes[status]; ok {
		return t
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

type errorBody struct {
	Type  string      `json:"type"`
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// DecodeError reads {"type":"error","error":{"type","message"}}.
func (codec) DecodeError(body []byte) (protocol.ErrorInfo, bool) {
	var b struct {
		Type  string           `json:"type"`
		Error *json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil || b.Error == nil {
		return protocol.ErrorInfo{}, false
	}
	var d errorDetail
	if json.Unmarshal(*b.Error, &d) != nil || (d.Type == "" && d.Message == "") {
		return protocol.ErrorInfo{}, false
	}
	return protocol.ErrorInfo{Status: errorStatuses[d.Type], Type: d.Type, Message: d.Message}, true
}

// EncodeError writes the error envelope; the type comes from the status
// when the error has none of its own.
func (codec) EncodeError(e protocol.ErrorInfo) []byte {
	return marshal(envelope(e))
}

func envelope(e protocol.ErrorInfo) errorBody {
	// A type of another dialect ("RESOURCE_EXHAUSTED") would mean
	// nothing to an Anthropic client.
	t := e.Type
	if _, ok := errorStatuses[t]; !ok {
		t = errorType(e.Status)
	}
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return errorBody{Type: "error", Error: errorDetail{Type: t, Message: msg}}
}

// EncodeStreamError is the error event that ends a broken stream, as
// Anthropic sends it when it fails mid-answer.
func (codec) EncodeStreamError(e protocol.ErrorInfo) llm.Event {
	if e.Type == "" && (e.Status == 0 || e.Status == http.StatusOK) {
		e.Type = "api_error"
	}
	return llm.Event{Kind: llm.Held, Data: marshal(envelope(e))}
}

// Classify settles the class of an error answer from Anthropic's error
// type, which says more than the status.
func (codec) Classify(e *llm.Error, status int, h http.Header, body []byte, now time.Time) {
	e.Dialect = llm.DialectAnthropic
	info, _ := Codec.DecodeError(body)
	e.Code = info.Type
	lower := strings.ToLower(info.Message)
	switch {
	case status == StatusOverloaded || info.Type == "overloaded_error":
		e.Class = llm.Transient
	case status == http.StatusTooManyRequests || info.Type == "rate_limit_error":
		e.Class = llm.RateLimited
		e.RetryAfter = rateLimits.RetryAfter(h, now)
	case info.Type == "authentication_error" || info.Type == "permission_error" || info.Type == "billing_error":
		e.Class = llm.Credential
	case info.Type == "not_found_error":
		e.Class = llm.Gone
	case info.Type == "request_too_large":
		e.Class = llm.TooLong
	case info.Type == "invalid_request_error":
		switch {
		case strings.Contains(lower, "prompt is too long") || strings.Contains(lower, "context window") ||
			strings.Contains(lower, "context length") || strings.Contains(lower, "too many tokens"):
			e.Class = llm.TooLong
		case strings.Contains(lower, "credit balance"):
			// "Your credit balance is too low": the key works but cannot
			// pay, which the user must fix, as with a rejected key.
			e.Class = llm.Credential
		default:
			e.Class = llm.Caller
		}
	case info.Type == "api_error" || info.Type == "timeout_error":
		e.Class = llm.Transient
	}
}
