package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// statusWords are the google.rpc status words the API answers with, by
// HTTP status.
var statusWords = map[int]string{
	http.StatusBadRequest:          "INVALID_ARGUMENT",
	http.StatusUnauthorized:        "UNAUTHENTICATED",
	http.StatusForbidden:           "PERMISSION_DENIED",
	http.StatusNotFound:            "NOT_FOUND",
	http.StatusConflict:            "ABORTED",
	http.StatusRequestTimeout:      "DEADLINE_EXCEEDED",
	http.StatusTooManyRequests:     "RESOURCE_EXHAUSTED",
	499:                            "CANCELLED",
	http.StatusInternalServerError: "INTERNAL",
	http.StatusNotImplemented:      "UNIMPLEMENTED",
	http.StatusServiceUnavailable:  "UNAVAILABLE",
	http.StatusGatewayTimeout:      "DEADLINE_EXCEEDED",
}

// statusWord is the status word for an HTTP status.
func statusWord(status int) string {
	if w, ok := statusWords[status]; ok {
		return w
	}
	switch {
	case status >= 500:
		return "INTERNAL"
	case status >= 400:
		return "FAILED_PRECONDITION"
	}
	return "UNKNOWN"
}

// isStatusWord reports whether s looks like a google.rpc status word
// (upper case and underscores), as opposed to another dialect's error type.
func isStatusWord(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return true
}

// parseError reads an error body. Besides the usual object, the
// streaming method without alt=sse answers with a JSON array of responses,
// so an array holding one error object is read too.
func parseError(body []byte) *apiError {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var list []errorEnvelope
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return nil
		}
		return list[0].Error
	}
	var env errorEnvelope
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	return env.Error
}

// detail returns the first detail of the given google.rpc type, nil when
// there is none.
func (e *apiError) detail(typ string) *errorDetail {
	for i := range e.Details {
		if e.Details[i].Type == "type.googleapis.com/google.rpc."+typ {
			return &e.Details[i]
		}
	}
	return nil
}

func (codec) DecodeError(body []byte) (protocol.ErrorInfo, bool) {
	e := parseError(body)
	if e == nil || (e.Message == "" && e.Code == 0 && e.Status == "") {
		return protocol.ErrorInfo{}, false
	}
	info := protocol.ErrorInfo{Status: e.Code, Type: e.Status, Message: e.Message}
	if d := e.detail("ErrorInfo"); d != nil {
		info.Code = d.Reason
	}
	if d := e.detail("BadRequest"); d != nil && len(d.FieldViolations) > 0 {
		info.Param = d.FieldViolations[0].Field
	}
	return info, true
}

func (codec) EncodeError(e protocol.ErrorInfo) []byte { return encodeError(e) }

func encodeError(e protocol.ErrorInfo) []byte {
	status := e.Status
	if status < 400 {
		status = http.StatusInternalServerError
	}
	out := apiError{Code: status, Message: e.Message, Status: e.Type}
	if !isStatusWord(out.Status) {
		out.Status = statusWord(status)
	}
	// A refused parameter is said the way Google says it, in a BadRequest
	// detail, so a client's SDK can show which field is wrong.
	if e.Param != "" {
		out.Details = []errorDetail{{
			Type:            "type.googleapis.com/google.rpc.BadRequest",
			FieldViolations: []fieldViolation{{Field: e.Param, Description: e.Message}},
		}}
	}
	b, _ := json.Marshal(errorEnvelope{Error: &out})
	return b
}

// EncodeStreamError is a chunk holding only an error, which is how the API
// itself breaks off a stream. Its status follows e.Status, and is INTERNAL
// when the failure has no HTTP status of its own.
func (codec) EncodeStreamError(e protocol.ErrorInfo) llm.Event {
	return llm.Event{Kind: llm.Held, Data: encodeError(e)}
}

// Classify refines an error answer by its status word, which is more
// precise than the HTTP status: the API answers a bad key, an unsupported
// region and a malformed request all with 400.
func (codec) Classify(e *llm.Error, status int, h http.Header, body []byte, now time.Time) {
	e.Dialect = llm.DialectGemini
	ae := parseError(body)
	if ae == nil {
		if status == http.StatusTooManyRequests {
			e.Code = "RESOURCE_EXHAUSTED"
		}
		return
	}
	word := ae.Status
	if word == "" {
		word = statusWord(status)
	}
	e.Code = word
	if ae.Message != "" {
		e.Message = fmt.Sprintf("HTTP %d: %s", status, llm.Truncate(ae.Message, 200))
	}
	msg := strings.ToLower(ae.Message)
	reason := ""
	if d := ae.detail("ErrorInfo"); d != nil {
		reason = d.Reason
	}
	switch word {
	case "RESOURCE_EXHAUSTED":
		e.Class = llm.RateLimited
		if d := ae.detail("RetryInfo"); d != nil {
			if wait, err := time.ParseDuration(d.RetryDelay); err == nil && wait > 0 {
				e.RetryAfter = min(wait, 24*time.Hour)
			}
		}
		if e.RetryAfter == 0 {
			e.RetryAfter = llm.RetryAfter(h, now)
		}
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		switch {
		case strings.HasPrefix(reason, "API_KEY_") || strings.Contains(msg, "api key not valid") ||
			strings.Contains(msg, "api key expired"):
			e.Class = llm.Credential
		case tooLong(msg):
			e.Class = llm.TooLong
		case strings.Contains(msg, "location is not supported") || strings.Contains(msg, "enable billing"):
			// The account cannot use the API from here or without
			// billing: the user must act on the account, and any other
			// backend can serve the request meanwhile.
			e.Class = llm.Credential
		case e.Class == llm.Gone:
			// llm.ClassifyResponse found the model named as unknown.
		default:
			e.Class = llm.Caller
		}
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		e.Class = llm.Credential
	case "NOT_FOUND":
		e.Class = llm.Gone
	case "INTERNAL", "UNAVAILABLE", "DEADLINE_EXCEEDED", "ABORTED", "UNKNOWN", "CANCELLED":
		e.Class = llm.Transient
	}
}

// tooLong reports whether an error message says the prompt exceeds the
// model's context ("The input token count (1200000) exceeds the maximum
// number of tokens allowed (1048576).").
func tooLong(msg string) bool {
	return strings.Contains(msg, "exceeds the maximum number of tokens") ||
		strings.Contains(msg, "input token count") || strings.Contains(msg, "context length") ||
		strings.Contains(msg, "too many tokens")
}

// streamError is an error chunk of a stream, classified.
func streamError(ae *apiError) *llm.Error { return okError(ae, "upstream error mid-stream: ") }

// okError is an error the API wrote in a 200 answer, classified: a quota
// is a rate limit, anything else a passing failure.
func okError(ae *apiError, prefix string) *llm.Error {
	e := &llm.Error{
		Class:   llm.Transient,
		Status:  http.StatusOK,
		Message: prefix + llm.Truncate(ae.Message, 200),
		Code:    ae.Status,
		Dialect: llm.DialectGemini,
	}
	if ae.Status == "RESOURCE_EXHAUSTED" || ae.Code == http.StatusTooManyRequests || llm.QuotaText(ae.Message) {
		e.Class = llm.RateLimited
		if d := ae.detail("RetryInfo"); d != nil {
			if wait, err := time.ParseDuration(d.RetryDelay); err == nil && wait > 0 {
				e.RetryAfter = min(wait, 24*time.Hour)
			}
		}
	}
	if e.Code == "" {
		e.Code = statusWord(ae.Code)
	}
	return e
}

// blockedReasons are the finish reasons of a candidate the safety filters
// stopped. With no content before them the request itself was refused.
var blockedReasons = map[string]bool{
	"SAFETY": true, "PROHIBITED_CONTENT": true, "BLOCKLIST": true, "SPII": true,
	"RECITATION": true, "IMAGE_SAFETY": true, "IMAGE_PROHIBITED_CONTENT": true,
}

// blockedError is the error for a request Gemini's safety filters refused.
// It is the caller's to fix, so it does not fail over: another backend
// would be asked to write what one vendor judged unsafe. Its body is a
// Gemini error, for a client of this dialect.
func blockedError(reason string) *llm.Error {
	msg := fmt.Sprintf("the request was blocked by Gemini's safety filters (%s)", reason)
	return &llm.Error{
		Class:   llm.Caller,
		Status:  http.StatusBadRequest,
		Message: msg,
		Code:    reason,
		Dialect: llm.DialectGemini,
		Body:    encodeError(protocol.ErrorInfo{Status: http.StatusBadRequest, Message: msg}),
	}
}
