package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// wireError is OpenAI's error object. Code is a string at OpenAI and a
// number at some compatible servers; Param is a string or null.
type wireError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Param   json.RawMessage `json:"param"`
}

// DecodeError reads an error body: OpenAI's {"error":{...}}, and the
// {"error":"text"} and {"message":"text"} that some servers answer, and
// the one-element array of errors Gemini's OpenAI endpoint sends. Status
// is left 0: the body does not say it.
func (codec) DecodeError(body []byte) (protocol.ErrorInfo, bool) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return protocol.ErrorInfo{}, false
		}
		body = list[0]
	}
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &env) != nil {
		return protocol.ErrorInfo{}, false
	}
	if !isNull(env.Error) {
		if env.Error[0] == '"' {
			var s string
			_ = json.Unmarshal(env.Error, &s)
			return protocol.ErrorInfo{Message: s, Type: env.Type, Code: scalar(env.Code)}, s != ""
		}
		var w wireError
		if json.Unmarshal(env.Error, &w) != nil {
			return protocol.ErrorInfo{}, false
		}
		info := protocol.ErrorInfo{Message: w.Message, Type: w.Type, Code: scalar(w.Code), Param: scalar(w.Param)}
		return info, info.Message != "" || info.Type != "" || info.Code != ""
	}
	if env.Message != "" {
		return protocol.ErrorInfo{Message: env.Message, Type: env.Type, Code: scalar(env.Code)}, true
	}
	return protocol.ErrorInfo{}, false
}

// scalar reads a string or a number as text; anything else is empty.
func scalar(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	if _, err := strconv.ParseFloat(string(raw), 64); err == nil {
		return string(raw)
	}
	return ""
}

// outError is the error object FreeLane writes. Code and Param are null
// when unknown, as OpenAI writes them.
type outError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// EncodeError writes e as OpenAI's error body.
func (codec) EncodeError(e protocol.ErrorInfo) []byte {
	b, _ := marshal(struct {
		Error outError `json:"error"`
	}{errorObject(e)})
	return b
}

// EncodeStreamError is the chunk that ends a broken stream: an error
// object where a chunk would be, which the OpenAI SDKs raise.
func (codec) EncodeStreamError(e protocol.ErrorInfo) llm.Event {
	o := errorObject(e)
	b, _ := marshal(struct {
		Error streamErrorObject `json:"error"`
	}{streamErrorObject{o.Message, o.Type, o.Code}})
	return llm.Event{Kind: llm.Held, Data: b}
}

// streamErrorObject is the error of a broken stream, which names no
// parameter.
type streamErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    *string `json:"code"`
}

func errorObject(e protocol.ErrorInfo) outError {
	o := outError{Message: e.Message, Type: e.Type}
	if o.Type == "" {
		o.Type = errorType(e.Status)
	}
	if e.Param != "" {
		o.Param = &e.Param
	}
	if e.Code != "" {
		o.Code = &e.Code
	}
	return o
}

// errorType is OpenAI's error type for an HTTP status.
func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "authentication_error"
	case status == http.StatusPaymentRequired:
		// A budget or a provider's credit is spent; OpenAI says so for
		// an account out of credit.
		return "insufficient_quota"
	case status >= 400 && status < 500:
		return "invalid_request_error"
	case status == http.StatusServiceUnavailable:
		return "service_unavailable"
	}
	return "upstream_error"
}
