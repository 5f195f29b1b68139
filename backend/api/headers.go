package api

import "net/http"

// FreeLane's answer headers in canonical form. http.Header.Set would
// canonicalize "X-FreeLane-Request-Id" into a new string on every answer;
// writing the canonical key into the map costs nothing.
const (
	headerRequestID = "X-Freelane-Request-Id"
	headerBackend   = "X-Freelane-Backend"
	headerAttempts  = "X-Freelane-Attempts"
)

// Values every stream's answer carries, shared by all answers: a header
// value is only read once set, and each slice is full, so an Add copies
// it rather than writing into it.
var (
	valueEventStream = []string{"text/event-stream"}
	valueNoCache     = []string{"no-cache"}
	valueNo          = []string{"no"}
	valueJSON        = []string{"application/json"}
)

// setRouted sets the headers that say how a request was routed: its id,
// and the backend that served it with the attempts made, when one did (an
// answer from the response cache called none).
func setRouted(h http.Header, id, backend, attempts string) {
	if backend == "" {
		h[headerRequestID] = []string{id}
		return
	}
	// One array holds the three values; each header's slice is capped so
	// that an Add to one of them copies instead of overwriting the next.
	v := []string{id, backend, attempts}
	h[headerRequestID], h[headerBackend], h[headerAttempts] = v[0:1:1], v[1:2:2], v[2:3:3]
}
