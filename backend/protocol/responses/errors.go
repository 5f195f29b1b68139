package responses

import (
	"net/http"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/openai"
)

// FailState is what a broken stream's closing events must repeat of it:
// the response's id and model, and the next sequence number.
type FailState struct {
	ID      string
	Model   string
	Created int64
	Seq     int
}

// FailureEvents are the events that end a stream broken after it started:
// response.failed, which Codex reads the failure from, and an error event
// with the error object at its top level, which the openai SDKs raise.
// Neither is followed by response.completed.
func FailureEvents(st FailState, e protocol.ErrorInfo) [][]byte {
	code := e.Code
	if code == "" {
		code = "server_error"
	}
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	id := st.ID
	if id == "" {
		id = newID("resp_")
	}
	r := newResponse(id, st.Model, st.Created)
	r.Status, r.Error = "failed", &ResponseError{Code: code, Message: msg}
	failed := marshal(event{Type: evFailed, SequenceNumber: st.Seq, Response: &r})
	info := e
	info.Code, info.Message = code, msg
	if info.Type == "" {
		info.Type = "server_error"
	}
	errEv := marshal(struct {
		Type           string    `json:"type"`
		SequenceNumber int       `json:"sequence_number"`
		Error          wireError `json:"error"`
	}{evError, st.Seq + 1, errorObject(info)})
	return [][]byte{failed, errEv}
}

// wireError is the error object of OpenAI's envelope, which the Responses
// API shares with chat completions. Param and Code are null when unknown,
// as OpenAI writes them.
type wireError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func errorObject(e protocol.ErrorInfo) wireError {
	o := wireError{Message: e.Message, Type: e.Type}
	if o.Message == "" {
		o.Message = http.StatusText(e.Status)
	}
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
		return "insufficient_quota"
	case status >= 400 && status < 500:
		return "invalid_request_error"
	case status == http.StatusServiceUnavailable:
		return "service_unavailable"
	}
	return "server_error"
}

// EncodeError writes OpenAI's {"error":{message,type,param,code}}.
func (codec) EncodeError(e protocol.ErrorInfo) []byte {
	return marshal(struct {
		Error wireError `json:"error"`
	}{errorObject(e)})
}

// DecodeError reads OpenAI's error envelope, which the Responses API
// shares with chat completions, with the chat dialect's reader.
func (codec) DecodeError(body []byte) (protocol.ErrorInfo, bool) {
	return openai.Codec.DecodeError(body)
}

// EncodeStreamError is the response.failed event that ends a broken
// stream. A codec holds no stream's state, so the event has a new id and
// sequence number 0; the API's stream writer sends FailureEvents instead,
// with the stream's own.
func (codec) EncodeStreamError(e protocol.ErrorInfo) llm.Event {
	return llm.Event{Kind: llm.Held, Data: FailureEvents(FailState{}, e)[0]}
}
