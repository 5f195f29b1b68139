package protocol

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"freelane/backend/llm"
)

// Inbound is how a dialect's clients call FreeLane: the routes they call,
// how they send their key, how their requests are told from other
// dialects', and the answers FreeLane writes them that are not the
// conversion of a routed answer (model lists, token counts). FreeLane's
// HTTP surface builds its routes, its guard and its error envelopes from
// the Inbound of every registered dialect, and names no dialect itself.
//
// A dialect without clients leaves Dialect.Inbound nil. The least a
// dialect with clients sets is one Route with a Call of kind CallGenerate
// under one of the Prefixes (its own, or one another dialect declares) and
// the KeyHeaders its clients send; its error envelope is its Codec's
// EncodeError. Every other field may be left zero.
type Inbound struct {
	// Prefixes are the path prefixes the dialect's API lives under
	// ("/v1/"). A request under any dialect's prefix passes FreeLane's
	// inference guard first (browser checks, the caller's account, the
	// inbound token), and one no route matches is answered 404 in the
	// dialect that claims it. Every route lies under a prefix of some
	// registered dialect.
	Prefixes []string
	// Routes are what the dialect's clients call.
	Routes []Route
	// Claims reports whether a request comes from a client of this
	// dialect by its path or headers, whatever route it matched or none,
	// so that FreeLane's own refusals (a missing token, an unknown path,
	// a body too large) are written in the envelope the client reads.
	// Dialects are asked in registry order and the first to claim wins; a
	// request none claims belongs to the dialect whose route it matched,
	// and then to the first registered dialect. nil claims nothing beyond
	// the dialect's routes.
	Claims func(r *http.Request) bool
	// KeyHeaders are the request headers the dialect's SDKs send the
	// caller's key in. A key is read from every dialect's headers on every
	// path, in registry order, so a client may use any of them; they are
	// allowed in a CORS preflight and named to a caller refused for its
	// key.
	KeyHeaders []KeyHeader
	// KeyQuery is the query parameter the dialect's SDKs may send the key
	// in ("key"), read only on requests that belong to the dialect (see
	// Claims) and carry no key header.
	KeyQuery string
	// CORSHeaders are the other request headers a web page of this
	// dialect's clients sends, allowed in a CORS preflight.
	CORSHeaders []string
	// Forward are the client's headers sent on, as they came, to
	// upstreams of the same dialect: those that change what the upstream
	// accepts, which only the client knows it wants.
	Forward []string
	// ErrorTypes is set when the error types FreeLane's own refusals name
	// ("invalid_request_error", "service_unavailable", "rate_limit_error")
	// are this dialect's; otherwise they are left out of the ErrorInfo
	// and the codec derives its type from the status.
	ErrorTypes bool
	// BareStreamError writes the event that ends a stream broken after it
	// had started (Codec.EncodeStreamError) as its bare data on a line of
	// its own rather than as a server-sent event, for clients that take a
	// stream's error only in that form.
	BareStreamError bool
	// ChainPrefix is the prefix under which ListModels names every chain
	// as well as by its own name, for clients that keep only models named
	// in their vendor's style; the router routes such a name to its chain.
	ChainPrefix string
	// ListModels writes the body of the dialect's model list. A model
	// list route answers in the shape of the dialect that claims the
	// request, if it has one, and otherwise in its own dialect's.
	ListModels func(m Models) []byte
	// DescribeModel writes the body that describes the model id, or
	// refuses with a *Refusal (404) when no model has that id; it is
	// chosen as ListModels is.
	DescribeModel func(m Models, id string) ([]byte, error)
	// CountTokens writes the answer to a token count of n input tokens;
	// required when a route has a Call of kind CallCountTokens.
	CountTokens func(n int) []byte
}

// KeyHeader is a request header that carries the caller's key.
type KeyHeader struct {
	// Name is the header's name as the dialect's documentation writes it
	// ("x-api-key").
	Name string
	// Scheme is the authorization scheme the value starts with ("Bearer"),
	// which is not part of the key; empty when the value is the key.
	Scheme string
}

// Key reads the key from h. ok is false when the header is missing or
// does not use the scheme; a header that does carries the caller's key,
// even an empty one, and no other header is read.
func (k KeyHeader) Key(h http.Header) (key string, ok bool) {
	v := h.Get(k.Name)
	if k.Scheme == "" {
		return v, v != ""
	}
	n := len(k.Scheme) + 1
	if len(v) > n && v[n-1] == ' ' && strings.EqualFold(v[:n-1], k.Scheme) {
		return strings.TrimSpace(v[n:]), true
	}
	return "", false
}

// String is how the header is named to a caller: "x-api-key", or
// "Authorization: Bearer".
func (k KeyHeader) String() string {
	if k.Scheme == "" {
		return k.Name
	}
	return k.Name + ": " + k.Scheme
}

// Route is one HTTP route of a dialect.
type Route struct {
	// Pattern is the route's http.ServeMux pattern, method first:
	// "POST /v1/chat/completions".
	Pattern string
	// Call is what every request on the route asks for, unless Resolve or
	// Serve is set.
	Call Call
	// Resolve, when set, works out the call from the request's path and
	// query, for a route whose path says more than its pattern does (a
	// model and a method in the path). It runs before the body is read; a
	// *Refusal it returns is written as the answer, and any other error
	// as a 400.
	Resolve func(r *http.Request) (Call, error)
	// Serve, when set, serves the route with the dialect's own handler,
	// for what the kinds of Call do not cover; it uses FreeLane's body
	// limits, router and store through h.
	Serve func(h Host, w http.ResponseWriter, r *http.Request)
	// WhilePaused serves the route while routing is paused. Only a route
	// that routes nothing sets it.
	WhilePaused bool
	// Listed names the route in the answer to a client that calls a path
	// FreeLane does not serve ("/v1/messages"); empty leaves it out.
	Listed string
}

// CallKind is what a call asks of FreeLane.
type CallKind uint8

const (
	// CallGenerate is routed to a backend and answered, whole or
	// streamed.
	CallGenerate CallKind = iota
	// CallCountTokens is answered with an offline estimate of the
	// request's input tokens (Inbound.CountTokens); nothing is routed.
	CallCountTokens
	// CallListModels is answered with the model list (Inbound.ListModels).
	CallListModels
	// CallDescribeModel is answered with one model's entry
	// (Inbound.DescribeModel); the route's pattern names the model's id
	// as the wildcard {model} or {model...}.
	CallDescribeModel
)

// Call is what one request asks for.
type Call struct {
	Kind CallKind
	// Endpoint is the kind of request a CallGenerate is (llm.Chat).
	Endpoint llm.Endpoint
	// Parse reads the body of a CallGenerate or CallCountTokens; nil uses
	// the codec's ParseRequest for Endpoint. A route whose path carries
	// part of the request (the model, whether to stream) sets it.
	Parse func(body []byte) (*llm.Request, error)
	// Path names the call in the usage records as its route does, with
	// the client's own data left out, so that it is always one of a few
	// known strings; empty is the path of the route's pattern.
	Path string
}

// Models are what FreeLane offers, as a dialect's model list shows them.
type Models struct {
	// Chains are the chains' names, in the routing table's order.
	Chains []string
	// Backends are the backends, in the routing table's order.
	Backends []ModelBackend
}

// ModelBackend is one backend as the model lists show it.
type ModelBackend struct {
	// Name is what a request names the backend by ("provider/model").
	Name string
	// Provider is the name of the backend's provider.
	Provider string
	// Context is the backend's context window in tokens; 0 when unknown.
	Context int
}

// Refusal is a request a dialect refuses, answered with Info in its
// envelope.
type Refusal struct {
	Info ErrorInfo
}

func (e *Refusal) Error() string { return e.Info.Message }

// Refuse is a *Refusal of status, code and message about param.
func Refuse(status int, code, msg, param string) error {
	return &Refusal{ErrorInfo{Status: status, Code: code, Message: msg, Param: param}}
}

// RequestError is the answer to a request body that err refuses: the
// Refusal's own, or a 400 with the code and parameter of an
// *llm.BadRequestError.
func RequestError(err error) ErrorInfo {
	var ref *Refusal
	if errors.As(err, &ref) {
		return ref.Info
	}
	info := ErrorInfo{Status: http.StatusBadRequest, Code: "invalid_request", Message: err.Error()}
	var bad *llm.BadRequestError
	if errors.As(err, &bad) {
		info.Code, info.Param = cmp.Or(bad.Code, "invalid_request"), bad.Param
	}
	return info
}

// WriteError writes e as an error body of the codec's dialect.
func WriteError(w http.ResponseWriter, c Codec, e ErrorInfo) {
	b := c.EncodeError(e)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}

// Host is FreeLane's HTTP surface as a dialect's own handler (Route.Serve)
// uses it. Whatever goes wrong in one of its steps it answers itself, in
// the route's dialect, and then reports false.
type Host interface {
	// Body reads the request's body within FreeLane's limits. release
	// gives the body's memory back; call it once the body is not needed.
	Body(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool)
	// Complete routes req for a whole answer, which is not written yet.
	Complete(w http.ResponseWriter, r *http.Request, req *llm.Request) (Answer, bool)
	// Stream routes req for a streamed answer and writes it to the
	// client, each event passing through f first; f may be nil.
	Stream(w http.ResponseWriter, r *http.Request, req *llm.Request, f StreamFilter)
	// Caller names who sent r, for filing what is kept for it: the same
	// for the same caller on every request, never a secret, never empty.
	Caller(r *http.Request) string
	// Answers is where the answers clients continue by id are kept; nil
	// when FreeLane keeps none.
	Answers() AnswerStore
	// Now is the time on FreeLane's clock.
	Now() time.Time
	// NotFound answers a request the route does not serve after all, as a
	// path no route matches is answered.
	NotFound(w http.ResponseWriter, r *http.Request)
}

// Answer is a routed whole answer, not yet written.
type Answer interface {
	// Body is the answer, in the route's dialect.
	Body() []byte
	// Reply writes body, the answer as the dialect edited it, to the
	// client with FreeLane's headers.
	Reply(w http.ResponseWriter, body []byte)
	// ReplyEvents writes the answer as a complete stream of events, each
	// given by its data.
	ReplyEvents(w http.ResponseWriter, events [][]byte)
}

// StreamFilter sees a routed stream on its way to a client.
type StreamFilter interface {
	// Event returns the data to send for one event, named name as the
	// codec's EventName reads it; it may return data itself.
	Event(name string, data []byte) []byte
	// Fail returns the events that end the stream when it breaks after
	// it had started; nil ends it with the codec's EncodeStreamError(e).
	Fail(e ErrorInfo) [][]byte
}

// AnswerStore keeps the answers clients continue by id, each for the
// caller that asked for it.
type AnswerStore interface {
	// Get finds the answer stored under id for owner; found is false for
	// an id stored for another caller. An error has been logged.
	Get(ctx context.Context, id, owner string) (a StoredAnswer, found bool, err error)
	// Put stores a, dated now; it does not block on disk, and a failure
	// is logged, since the answer has reached the client already.
	Put(a StoredAnswer)
	// Redact removes the configured secrets from b, to be kept: an
	// upstream may echo a key into its answer, and a client may paste one
	// into its input. It returns b itself when b holds none.
	Redact(b []byte) []byte
}

// StoredAnswer is an answer as it is kept.
type StoredAnswer struct {
	ID    string
	Owner string
	// Response is the answer as the client got it.
	Response []byte
	// Items is the whole conversation up to and including the answer, in
	// the dialect's form, to continue it from.
	Items []byte
}
