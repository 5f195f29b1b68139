package protocol

import (
	"context"
	"net/http"
	"time"

	"freelane/backend/llm"
)

// Outbound is how FreeLane calls the upstreams that speak a dialect: the
// layout of the vendor's HTTP API, how its list of models is read, and the
// headers in which it reports its rate limits. The generic machinery
// (package upstream's client, package modellist's reader, the classifier
// and the quota manager) does the HTTP, bounds what it reads, refuses
// redirects and redacts secrets the same way for every dialect; it learns
// what is particular to a vendor only from these parts.
//
// A dialect that upstreams speak (Dialect.Kind set) needs a Wire; the
// registry refuses one without. The list reader, the rate-limit headers
// and the preparation step are optional: a dialect may have none. The zero Outbound is
// a dialect only clients speak.
type Outbound struct {
	// Wire lays out requests to the vendor's API and reads its answers;
	// nil for a dialect no upstream speaks.
	Wire Wire
	// Models reads the vendor's list of models, which is how a pasted key
	// is tried and how added and withdrawn models are found; nil when the
	// vendor has no list (keys are then tried with one small request).
	Models ModelList
	// RateLimits name the headers in which the vendor reports its rate
	// limits, read for the wait after a refusal and for the limits the
	// quota manager learns; the zero value when it sends none.
	RateLimits llm.RateHeaders
	// NewPreparer makes the state of the dialect's optional preparation
	// step for one provider (see Preparer); nil for a dialect that has
	// none. A provider turns the step on in its configuration
	// (explicit_cache), which is refused for the dialects without it.
	NewPreparer func() Preparer
}

// Preparer is an optional step a dialect may take before a translated
// request is sent to its upstream: an extra call that sets up something
// the request then refers to, such as a vendor's explicit prompt cache
// that holds the request's long prefix. The upstream client does the HTTP
// for it (Caller), so a Preparer holds no connection and reads no clock of
// its own. Its methods are safe for concurrent use.
type Preparer interface {
	// Prepare returns the body to send instead of the dialect's encoding
	// of p.Conv, and ok true; ok false has the client encode and send the
	// plain request. Every failure of the extra call comes to the plain
	// request (which the Preparer may write itself, when it has most of
	// it at hand), so a preparation never costs the request.
	Prepare(ctx context.Context, p Preparation) (Prepared, bool)
}

// Preparation is what a Preparer is given for one request.
type Preparation struct {
	// Conv is the request in the neutral model; Model the upstream's model
	// id and Edits the request edits, as EncodeRequest takes them.
	Conv  *llm.Conversation
	Model string
	Edits llm.Edits
	// Scope names the upstream and the key the request is sent with, as
	// a hash: what a vendor sets up belongs to one key's project, so state
	// kept for one scope is never used for another.
	Scope string
	// TTL is the provider's prompt-cache lifetime; 0 is the dialect's
	// default.
	TTL time.Duration
	// Now is the time of the request, by the client's clock.
	Now time.Time
	// Call does the extra call.
	Call Caller
}

// Prepared is a prepared request.
type Prepared struct {
	// Body is the request body to send.
	Body []byte
	// Stale, when not nil, reports whether an error answer to Body says
	// that what was set up is gone (expired or deleted). The Preparer
	// then forgets it, and the client sends the plain request once.
	Stale func(status int, body []byte) bool
}

// Caller does one extra call to a provider on a Preparer's behalf: a POST
// of the JSON body to path below the base URL, with the key and the
// provider's headers, bounded in time and size. It returns the answer's
// status and body (redacted) whatever the status; err is a failure to get
// an answer at all.
type Caller func(ctx context.Context, path string, body []byte) (status int, answer []byte, err error)

// Wire is what the upstream client needs to know about a vendor's HTTP
// API beyond the dialect's codec: which requests it serves, where they go,
// which headers they carry and how its error answers and 200 answers are
// judged. Its methods are pure and safe for concurrent use. The codec
// value of a dialect package usually implements it too.
type Wire interface {
	// Endpoints are the kinds of request the vendor's API serves.
	Endpoints() []llm.Endpoint
	// Path is the request's path below the base URL, with any query the
	// request needs (some vendors name the model, or whether to stream,
	// in the path rather than the body).
	Path(ep llm.Endpoint, model string, stream bool) string
	// Header sets the headers the vendor wants on every request: the key
	// (which may be empty for keyless servers) and any version header.
	// The provider's configured headers are set after it, and win.
	Header(h http.Header, key string)
	// Classify refines the classification of an HTTP error answer. e comes
	// from llm.ClassifyResponse, given the dialect's RateLimits, and may
	// be changed in place: a vendor's own overload status, an error code
	// in the body that settles the class, a retry delay given in the body.
	Classify(e *llm.Error, status int, h http.Header, body []byte, now time.Time)
	// CheckAnswer decides whether a 200 answer can be relayed unchanged to
	// a client of the same dialect, and reads its usage. An empty or
	// unparseable answer, or an error inside a 200, is a soft *llm.Error.
	CheckAnswer(ep llm.Endpoint, body []byte) (llm.Usage, error)
}

// ModelList reads a vendor's list of models. Package modellist does the
// HTTP around it, the same for every dialect: a GET with the provider's
// configured headers and Accept: application/json, a bounded body, no
// redirects followed, a key never quoted back, HTTP 401 and 403 taken as
// a refused key and 404 and 405 as no list, pages followed only on the
// base URL's scheme and host, and limits on pages and entries. The
// dialect says where the list is, how the request carries the key, how a
// page reads and what else refuses a key. Its methods are pure and safe
// for concurrent use.
type ModelList interface {
	// Path is the list's path below the provider's base URL, with the
	// query of its first page: "/models", or "/models?limit=1000".
	Path() string
	// Header sets the key on a list request, when there is one (local
	// servers need none), and any version header the vendor wants. h holds
	// the provider's configured headers already.
	Header(h http.Header, key string)
	// ReadPage reads one page of the list: its entries, and where the
	// next page is. An error means the answer is no model list at all; an
	// entry that cannot be read is not an error (see ModelPage).
	ReadPage(body []byte) (ModelPage, error)
	// RefusesKey reports whether an error answer other than HTTP 401 and
	// 403, which always refuse the key, says that the key is refused (a
	// vendor may answer a bad key with 400).
	RefusesKey(status int, body []byte) bool
}

// ModelPage is one page of a model list.
type ModelPage struct {
	// Models hold one entry per model the page lists, in its order. An
	// entry that could not be read, or that names a model the vendor no
	// longer serves, is the zero ListedModel: it counts against the
	// list's limits and is skipped.
	Models []ListedModel
	// Next is the address of the next page, resolved against this page's
	// URL: a link the vendor gave, or a query ("?after_id=x&limit=1000").
	// It is empty on the last page. A next page on another scheme or host,
	// or at this page's own URL again, ends the list.
	Next string
}

// ListedModel is one model as a vendor's list describes it, in no
// particular dialect. Fields the list does not give are zero.
type ListedModel struct {
	// ID is the name requests use, without any resource prefix the list
	// writes it with.
	ID string
	// Name is the display name when the list gives one.
	Name string
	// Context is the context window in tokens, 0 when unknown.
	Context int
	// MaxOutput is the longest answer in tokens, 0 when unknown.
	MaxOutput int
	// Priced reports that the list gives the model's prompt and completion
	// prices.
	Priced bool
	// Free reports a priced model that costs nothing to use (not merely a
	// price of zero for now).
	Free bool
	// Price is the prompt and completion price in USD per million tokens,
	// set when Priced.
	Price struct{ Input, Output float64 }
	// Capabilities is the sorted subset of "json", "reasoning", "tools"
	// and "vision" the list states. A capability the list does not mention
	// is unknown, not absent.
	Capabilities []string
	// Chat reports that the model answers chat requests, as far as the
	// list tells (an embedding or image model does not).
	Chat bool
}
