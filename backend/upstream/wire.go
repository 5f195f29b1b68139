package upstream

import (
	"net/http"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// Wire is what the client needs to know about an upstream's dialect: its
// codec, and how the vendor's HTTP API is laid out. Each dialect package
// provides one.
type Wire interface {
	protocol.Codec
	// Endpoints are the kinds of request the vendor's API serves.
	Endpoints() []llm.Endpoint
	// Path is the request's path below the base URL, with any query, e.g.
	// "/chat/completions" or "/models/gemini-2.5-flash:streamGenerateContent?alt=sse".
	Path(ep llm.Endpoint, model string, stream bool) string
	// Header sets the headers the vendor wants on every request: the key
	// (which may be empty for keyless servers) and any version header.
	Header(h http.Header, key string)
	// Classify refines the classification of an HTTP error answer. e comes
	// from llm.ClassifyResponse and may be changed in place: a vendor's
	// own overload status, an error code in the body that settles the
	// class, a retry delay given in the body.
	Classify(e *llm.Error, status int, h http.Header, body []byte, now time.Time)
	// CheckAnswer decides whether a 200 answer can be relayed unchanged to
	// a client of the same dialect, and reads its usage. An empty or
	// unparseable answer, or an error inside a 200, is a soft *llm.Error.
	CheckAnswer(ep llm.Endpoint, body []byte) (llm.Usage, error)
}
