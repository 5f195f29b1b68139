// Package protocol converts between FreeLane's neutral model of a
// conversation (package llm) and the wire formats clients and upstreams
// speak. Each dialect is one package under this one, holding both
// directions: requests, answers, streams and errors, decoded into the
// neutral types and encoded from them. This package names what a dialect
// provides and finds the one a client or an upstream speaks.
package protocol

import (
	"errors"

	"freelane/backend/llm"
)

// Codec is one dialect, both directions. Its methods are pure: they hold
// no state between calls, and the stream converters they return hold only
// the state of one stream.
type Codec interface {
	Dialect() llm.Dialect

	// ParseRequest validates a client's body for ep and returns it ready
	// to route; it refuses a bad body with an *llm.BadRequestError.
	ParseRequest(ep llm.Endpoint, body []byte) (*llm.Request, error)
	// EncodeRequest writes c as a request body of this dialect for the
	// upstream model, with the upstream's edits applied.
	EncodeRequest(c *llm.Conversation, model string, e llm.Edits) ([]byte, error)

	// DecodeResponse reads a complete answer of this dialect.
	DecodeResponse(body []byte) (*llm.Answer, error)
	// EncodeResponse writes a complete answer in this dialect.
	EncodeResponse(a *llm.Answer, o ResponseOptions) ([]byte, error)

	// NewStreamDecoder returns a converter for one upstream stream of
	// this dialect.
	NewStreamDecoder() StreamDecoder
	// NewStreamEncoder returns a converter that writes one stream of this
	// dialect for a client.
	NewStreamEncoder(o ResponseOptions) StreamEncoder
	// EventName is the server-sent event name a stream event of this
	// dialect goes out with, read from its data ("" for dialects that do
	// not name events).
	EventName(data []byte) string
	// StreamEnd is what ends a complete stream of this dialect on the
	// wire, written after the last event (OpenAI's "data: [DONE]"); nil
	// when the dialect has no end marker. Every stream gets the same bytes:
	// callers must not modify them.
	StreamEnd() []byte

	// DecodeError reads an error body of this dialect; ok is false when
	// the body is not one.
	DecodeError(body []byte) (e ErrorInfo, ok bool)
	// EncodeError writes an error body of this dialect.
	EncodeError(e ErrorInfo) []byte
	// EncodeStreamError is the event that ends a stream broken after it
	// had started.
	EncodeStreamError(e ErrorInfo) llm.Event
}

// ResponseOptions are what an answer written for a client says about
// itself.
type ResponseOptions struct {
	// ID is the answer's id; encoders make one from it in the dialect's
	// style when the dialect has a prefix ("chatcmpl-", "msg_").
	ID string
	// Model is the model name the client sees.
	Model string
	// Created is the answer's time in Unix seconds.
	Created int64
}

// ErrorInfo is an error in no particular dialect.
type ErrorInfo struct {
	// Status is the HTTP status.
	Status int
	// Type is the dialect's error type or status word as decoded
	// ("invalid_request_error", "overloaded_error", "RESOURCE_EXHAUSTED");
	// encoders derive their own from Status and Code when it is empty.
	Type string
	// Code is a machine-readable code ("model_not_found"); optional.
	Code    string
	Message string
	// Param names the offending request field, where known.
	Param string
}

// StreamDecoder converts one upstream stream, event by event.
type StreamDecoder interface {
	// Decode reads one server-sent event (its name, which may be empty,
	// and its data) and appends the deltas it carries to dst. end is set
	// by the event that ends the answer (OpenAI's [DONE], Anthropic's
	// message_stop). An error event returns an *llm.Error, classified; an
	// event that cannot be parsed returns ErrMalformed, and the caller
	// drops it.
	Decode(dst []llm.Delta, name, data []byte) (out []llm.Delta, end bool, err error)
	// Classify is Decode for relaying an event unchanged to a client of
	// the same dialect: it says what the event means for the stream rule
	// and what usage it reports, without building deltas where the
	// dialect allows a cheaper look. Kind Done marks the end of the answer.
	Classify(name, data []byte) (kind llm.EventKind, usage *llm.Usage, err error)
}

// StreamEncoder writes one stream for a client.
type StreamEncoder interface {
	// Encode appends the client events for d to dst, each with its Kind
	// for the stream rule: Content for events that carry content, Held for
	// the rest, UsageOnly for a usage report the client may not want.
	Encode(dst []llm.Event, d llm.Delta) []llm.Event
	// End appends the events that close a complete answer, without the
	// dialect's end marker (see Codec.StreamEnd).
	End(dst []llm.Event) []llm.Event
}

// ErrMalformed is a stream event that could not be parsed.
var ErrMalformed = errors.New("malformed stream event")
