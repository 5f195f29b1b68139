package llm

import "net/http"

// EventKind says what a stream event means for the stream rule.
type EventKind uint8

// Event kinds, from the router's point of view.
const (
	// Held events carry no content the user would see (role-only or empty
	// deltas, a finish chunk without content). Before the stream commits
	// they are held back; afterwards they are forwarded.
	Held EventKind = iota
	// Content events carry text, reasoning or a tool-call delta. The first
	// one commits the stream to its backend.
	Content
	// UsageOnly is the final usage chunk (empty choices). It is forwarded
	// only when the client asked for usage.
	UsageOnly
	// Done is the end of a complete answer (OpenAI's [DONE], Anthropic's
	// message_stop, or a clean end of the connection); Data is nil, and
	// the client's sink writes whatever its dialect ends a stream with.
	Done
)

// Event is one server-sent event of a stream, in the client's dialect.
// When the upstream speaks that dialect too, Data is the JSON payload
// exactly as the upstream sent it, without the "data: " prefix; otherwise
// it is the upstream's event converted. Dialects that name their events
// on the wire (Anthropic's "event: content_block_delta") name them after
// the data, so the event carries no name of its own and stays as small as
// the hot path wants it (see protocol.Codec.EventName). Data is only valid
// until the next call to Next.
type Event struct {
	Kind  EventKind
	Data  []byte
	Usage *Usage
	// More is set when the next event is already buffered, so a writer can
	// batch this one with it instead of flushing now.
	More bool
	// Tail is set on the events a translated stream ends with, made once
	// the upstream's stream was over (a Responses client's
	// response.completed, say): with them the client holds the whole
	// answer, so a router that must store a request before its client
	// sees it answered holds them back with the end of the stream.
	Tail bool
}

// EventStream is an upstream streaming response. Next returns the next event
// that is worth forwarding; malformed events are dropped inside (and logged)
// so Next never hands out garbage. At a clean end of stream Next returns an
// Event of kind Done, also when the upstream omitted [DONE]. Errors are
// *Error values, classified.
type EventStream interface {
	Header() http.Header
	Next() (Event, error)
	Close() error
}

// Response is a complete non-streaming upstream answer, in the client's
// dialect. Body is passed to the client unchanged.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Usage  Usage
}
