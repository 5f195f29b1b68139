package llm

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"freelane/backend/jsonscan"
)

// Endpoint names the kind of API a request came in on. The values are
// OpenAI's paths, which the request log and the dashboard show.
type Endpoint string

// The routed endpoints.
const (
	Chat        Endpoint = "chat/completions"
	Completions Endpoint = "completions"
	Embeddings  Endpoint = "embeddings"
)

// MaxModelName is the longest model name FreeLane accepts, in bytes. Real
// names ("provider/model", chain names) are far shorter; the bound keeps a
// hostile name out of the request log, the dashboard and error messages.
const MaxModelName = 256

// BadRequestError is a request FreeLane refuses before routing, with a
// message that says what to fix.
type BadRequestError struct {
	Param   string
	Message string
	// Code is the error code to answer with; empty means
	// "invalid_request".
	Code string
}

func (e *BadRequestError) Error() string { return e.Message }

// BadRequest builds a BadRequestError about param.
func BadRequest(param, format string, args ...any) *BadRequestError {
	return &BadRequestError{Param: param, Message: fmt.Sprintf(format, args...)}
}

// ModelTooLong refuses a model name of n bytes without repeating it.
func ModelTooLong(n int) *BadRequestError {
	e := BadRequest("model", "model name is too long (%d bytes); FreeLane accepts model names up to %d bytes", n, MaxModelName)
	e.Code = "model_too_long"
	return e
}

// ModelValue reads a model name from its JSON string literal v (quotes
// included), refusing one over MaxModelName. An escape takes at most 6
// bytes per character, so a raw value longer than that cannot unquote to
// a name within the limit, and is refused without being copied.
func ModelValue(v []byte) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		return "", BadRequest("model", "model must be a string")
	}
	if len(v) > 6*MaxModelName+2 {
		return "", ModelTooLong(len(v) - 2)
	}
	m := jsonscan.Unquote(v)
	if len(m) > MaxModelName {
		return "", ModelTooLong(len(m))
	}
	return m, nil
}

// StreamValue reads a body's "stream" flag from its JSON value v: true,
// false or null.
func StreamValue(v []byte) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false", "null":
		return false, nil
	}
	return false, BadRequest("stream", "stream must be true or false")
}

// Source is a client's request body in its own dialect, parsed by that
// dialect's package.
type Source interface {
	// Raw is the body as the client sent it. The caller must not modify
	// it.
	Raw() []byte
	// Rewrite returns the body for an upstream of the same dialect: the
	// client's bytes with the model replaced and the edits applied,
	// nothing else re-encoded.
	Rewrite(model string, e Edits) []byte
	// Conversation decodes the whole body into the neutral model, for an
	// upstream of another dialect.
	Conversation() (*Conversation, error)
}

// Edits are the changes an upstream's quirks ask of a request body.
type Edits struct {
	// AddUsage asks a stream for its usage where the client did not say.
	AddUsage bool
	// Drop names top-level parameters the model rejects.
	Drop []string
	// MaxOutput, when not 0, is the most output tokens the model allows;
	// a larger max_tokens is lowered to it.
	MaxOutput int
	// Session is the request's session key (Request.Session), which an
	// OpenAI-style upstream receives as prompt_cache_key so that the
	// turns of one conversation reach the same cache; "" sends none.
	Session string
	// User is the keyed hash of the client's end-user identifier
	// (Request.User), which replaces the client's own in the upstream's
	// user field; "" removes that field.
	User string
}

// CacheMode is what a request's headers ask of the response cache.
type CacheMode uint8

// The cache modes.
const (
	// CacheDefault uses the cache when it is on and the request is
	// deterministic.
	CacheDefault CacheMode = iota
	// CacheBypass neither reads nor writes the cache (Cache-Control:
	// no-store, X-FreeLane-Cache: off).
	CacheBypass
	// CacheRefresh skips reading the cache but stores the new answer
	// (Cache-Control: no-cache).
	CacheRefresh
)

// CacheDirective is the client's word on the response cache, read from
// its request headers.
type CacheDirective struct {
	Mode CacheMode
	// MaxAge, when HasMaxAge, is the oldest a cached answer may be to be
	// served (Cache-Control: max-age).
	MaxAge    time.Duration
	HasMaxAge bool
	// OptIn marks a request the client wants cached although it is not
	// deterministic by its parameters (X-FreeLane-Cache: on).
	OptIn bool
	// Caller is who asks, as the API layer names its callers: the cache
	// keeps each caller's answers apart.
	Caller string
	// Outcome is what the cache did with the request, set by the router
	// before the answer is written, for the X-FreeLane-Cache response
	// header; "" when the cache had no part in it.
	Outcome CacheOutcome
}

// Request is a client request, parsed just enough to route it. The body
// is kept as the client sent it, so an upstream of the client's dialect
// gets it byte for byte with only the model replaced; any other upstream
// gets the neutral Conversation, decoded once when first needed.
type Request struct {
	Endpoint Endpoint
	// Path is the API path the client called, as the dialect's route
	// names it, with the client's own data (a model in the path) left out.
	// Endpoint says what kind of request it is; Path says which API it
	// came in on, for the request log and the usage ledger.
	Path string
	// Dialect is the client's wire format.
	Dialect Dialect
	Model   string
	Stream  bool
	// WantsUsage is true when the client itself asked for the final usage
	// of a stream.
	WantsUsage bool
	// MaxTokens is the client's output limit, 0 when it set none; budgets
	// use it to estimate what a call may cost.
	MaxTokens int
	// Needs are the capabilities a backend must have to serve the request
	// (tools, images, JSON output).
	Needs Caps
	// Wants are capabilities the request would use but can do without
	// (reasoning asked of a chain that may hold models without it): the
	// router tries backends that have them first and never refuses the
	// request for their lack.
	Wants Caps
	// Forward are client headers an upstream of the client's dialect is
	// sent verbatim (Anthropic's version and beta flags), nil for none.
	Forward http.Header
	// Notes say what the parser left out of the request because no
	// backend can serve it (a hosted tool, an item only OpenAI reads), so
	// the routing trace shows it. Nil for none.
	Notes []string
	// Task is the request's task class (default, background, think,
	// long_context or one the configuration names), set before routing
	// from the X-FreeLane-Task header or the configured rules; empty is
	// not yet classified.
	Task string
	// Gear is a per-request gear ("auto" or "manual") from the
	// X-FreeLane-Gear header; empty means the chain's own.
	Gear string
	// Session is the request's session key: a keyed hash (hex) of the
	// session the client named (the X-FreeLane-Session header, or what
	// its dialect carries in the body), "" when it named none. Requests
	// of one session are kept on the backend whose prompt cache is warm.
	// It is never the client's own value.
	Session string
	// User is a keyed hash (hex) of the end-user identifier the client
	// sent (OpenAI's user, Anthropic's metadata.user_id), "" for none:
	// upstreams receive this, never the client's own value.
	User string
	// ClientSession and ClientUser are the raw identifiers the dialect's
	// parser found in the body. The API layer turns them into Session and
	// User and clears them before routing; nothing else may read, log or
	// send them.
	ClientSession, ClientUser string
	// Cache is what the client's headers ask of the response cache.
	Cache CacheDirective

	// promptEst is the estimated prompt tokens, 0 until asked.
	promptEst int

	src Source

	convOnce sync.Once
	conv     *Conversation
	convErr  error
}

// NewRequest wraps a parsed body; the dialect packages call it.
func NewRequest(src Source) *Request { return &Request{src: src} }

// Source returns the parsed body the request wraps.
func (r *Request) Source() Source { return r.src }

// Raw returns the client's body as sent. The caller must not modify it.
// Token estimation reads the messages from it.
func (r *Request) Raw() []byte { return r.src.Raw() }

// Size is the length of the client's body in bytes.
func (r *Request) Size() int { return len(r.src.Raw()) }

// Body returns the body for an upstream of the client's own dialect (see
// Source.Rewrite).
func (r *Request) Body(model string, e Edits) []byte { return r.src.Rewrite(model, e) }

// Conversation returns the request in the neutral model. It is decoded on
// the first call and shared by every later one, which must not modify it.
func (r *Request) Conversation() (*Conversation, error) {
	r.convOnce.Do(func() { r.conv, r.convErr = r.src.Conversation() })
	return r.conv, r.convErr
}

// EstimatedPrompt is the request's prompt tokens as est counts them,
// counted once: the task rules and the router's context check ask the
// same question of the same request, which is served by one goroutine at
// a time.
func (r *Request) EstimatedPrompt(est func(*Request) int) int {
	if r.promptEst == 0 {
		r.promptEst = max(est(r), 1)
	}
	return r.promptEst
}
