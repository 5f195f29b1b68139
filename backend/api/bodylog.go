package api

import (
	"net/http"
	"time"

	"freelane/backend/store"
)

// BodyLog keeps the bodies of requests and their answers (body logging,
// request_log.bodies). RecordBodies must not block or touch disk: it runs
// on the request path, and the request log's writer stores the bodies.
type BodyLog interface {
	RecordBodies(b store.Bodies)
}

// bodyMargin is how much more than the configured size a tap copies: the
// writer redacts before it cuts, and a secret that straddled the copy's
// end would otherwise leave its start behind. It is longer than any key.
const bodyMargin = 4 << 10

// SetBodyLogging turns body logging on, keeping up to maxBytes of each
// request and answer, or off with 0.
func (s *Server) SetBodyLogging(maxBytes int) {
	s.bodyLog.Store(int64(max(maxBytes, 0)))
}

// BodyLogging is the size body logging keeps of each body, 0 when it is off.
func (s *Server) BodyLogging() int { return int(s.bodyLog.Load()) }

// tapBodies wraps an inference handler so that, while body logging is on,
// the request's body and the answer the client received are kept. While
// it is off the handler runs as it is: nothing is wrapped or copied.
func (s *Server) tapBodies(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		limit := int(s.bodyLog.Load())
		if limit == 0 || s.o.Bodies == nil {
			next(w, r)
			return
		}
		t := &bodyTap{ResponseWriter: w, max: limit + bodyMargin, start: s.o.Clock.Now()}
		next(t, r)
		// Only an answer that names its request can be found again; a
		// refusal before routing has no row in the log.
		id := w.Header()[headerRequestID]
		if len(id) == 0 || id[0] == "" {
			return
		}
		s.o.Bodies.RecordBodies(store.Bodies{RequestID: id[0], Start: t.start, Request: t.req, Answer: t.ans,
			Max: limit, RequestCut: t.reqCut, AnswerCut: t.ansCut})
	}
}

// bodyTap is the response writer of a request whose bodies are kept: it
// copies what is written, up to max bytes, and holds the copy of the
// request's body that requestBody gives it.
type bodyTap struct {
	http.ResponseWriter
	max            int
	req, ans       []byte
	reqCut, ansCut bool
	// start dates the bodies for pruning with the log; it is when the
	// request arrived, within the time its body took to read.
	start time.Time
}

func (t *bodyTap) Write(p []byte) (int, error) {
	if room := t.max - len(t.ans); room > 0 {
		t.ans = append(t.ans, p[:min(len(p), room)]...)
		t.ansCut = t.ansCut || len(p) > room
	} else if len(p) > 0 {
		t.ansCut = true
	}
	return t.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (flushes and
// deadlines) through the tap.
func (t *bodyTap) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// keepRequest copies up to max bytes of the request's body.
func (t *bodyTap) keepRequest(body []byte) {
	t.req = append([]byte(nil), body[:min(len(body), t.max)]...)
	t.reqCut = len(body) > t.max
}
