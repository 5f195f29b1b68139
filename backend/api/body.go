package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// Request bodies are the one input a client can make FreeLane hold in
// memory, so reading them is bounded three ways: each body by the size
// limit (max_body_mb), its arrival by a read deadline (body_read_timeout),
// and all bodies held at once by a byte budget (max_inflight_body_mb).

// firstBodyChunk is the buffer a body of unknown or large length starts
// with. Smaller bodies with a Content-Length are read into one allocation
// of their size; larger ones grow with what actually arrives, so a client
// that announces a large body and sends nothing costs no more than this.
const firstBodyChunk = 256 << 10

// unknownBodyChunk is the first buffer of a body sent without a
// Content-Length (chunked), which may be small.
const unknownBodyChunk = 32 << 10

// errBodyBudget is returned while reading a body when the bodies already
// held use up the in-flight budget.
var errBodyBudget = errors.New("too many request bytes in flight")

// byteBudget counts the bytes of request bodies held at once. It is a
// weighted semaphore that never waits: a request that does not fit is
// refused at once, which tells the client to come back rather than holding
// its connection.
type byteBudget struct {
	max  atomic.Int64
	used atomic.Int64
}

// take reserves n more bytes for a body that already holds own. It fails
// when they do not fit, except when no other body holds any: one body up to
// the size limit is always accepted on its own, so a budget smaller than
// max_body_mb cannot refuse every large request.
func (b *byteBudget) take(n, own int64) bool {
	for {
		used := b.used.Load()
		if used > own && used+n > b.max.Load() {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (b *byteBudget) give(n int64) { b.used.Add(-n) }

// heldBody is a body read into memory and the budget it holds until the
// request is over.
type heldBody struct {
	data   []byte
	budget *byteBudget
	held   int64
}

// grow extends the buffer to hold at least want bytes, within the budget.
func (h *heldBody) grow(want int) error {
	c := cap(h.data)
	if want <= c {
		return nil
	}
	extra := int64(want - c)
	if !h.budget.take(extra, h.held) {
		return errBodyBudget
	}
	h.held += extra
	buf := make([]byte, len(h.data), want)
	copy(buf, h.data)
	h.data = buf
	return nil
}

// release gives the body's bytes back to the budget.
func (h *heldBody) release() {
	h.budget.give(h.held)
	h.held, h.data = 0, nil
}

// readBody reads the whole body within the size limit and the budget. The
// buffer grows as bytes arrive, doubling up to the announced length, so
// memory follows what the client has sent. On error the budget is given
// back; otherwise the caller releases it when the request is over.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, budget *byteBudget) (*heldBody, error) {
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	rd := http.MaxBytesReader(w, r.Body, limit)
	h := &heldBody{budget: budget}
	// A body of unknown length starts small and doubles; one with a
	// Content-Length gets a buffer of its size (plus a byte that notices a
	// longer body) when that is small, else starts at firstBodyChunk.
	first := unknownBodyChunk
	switch {
	case r.ContentLength >= 0 && r.ContentLength <= firstBodyChunk:
		first = int(r.ContentLength) + 1
	case r.ContentLength > firstBodyChunk:
		first = firstBodyChunk
	}
	if err := h.grow(first); err != nil {
		return nil, err
	}
	for {
		if len(h.data) == cap(h.data) {
			next := 2 * cap(h.data)
			if r.ContentLength > 0 {
				next = min(next, int(r.ContentLength)+1)
			}
			if err := h.grow(next); err != nil {
				h.release()
				return nil, err
			}
		}
		n, err := rd.Read(h.data[len(h.data):cap(h.data)])
		h.data = h.data[:len(h.data)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			h.release()
			return nil, err
		}
	}
	if r.ContentLength > 0 && int64(len(h.data)) > r.ContentLength {
		// Content-Length is authoritative in HTTP/1.1; the server stops
		// at it, so this only guards a misbehaving transport.
		h.release()
		return nil, errors.New("body longer than its Content-Length")
	}
	return h, nil
}

// bodyReadError answers a failed body read with what the client can do
// about it.
func (s *Server) bodyReadError(w http.ResponseWriter, r *http.Request, err error, limit int64, timeout time.Duration) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		s.v1Error(w, r, http.StatusBadRequest, "invalid_request_error", "request_too_large",
			fmt.Sprintf("request body is larger than the %d MiB limit (max_body_mb in the config)", limit>>20), "")
	case errors.Is(err, errBodyBudget):
		w.Header().Set("Retry-After", "1")
		s.v1Error(w, r, http.StatusServiceUnavailable, "service_unavailable", "server_busy",
			fmt.Sprintf("FreeLane is holding %d MiB of request bodies, its limit (requests.max_inflight_body_mb in the config); retry in a moment", s.budget.max.Load()>>20), "")
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The connection cannot carry another request after a cut body,
		// so the server closes it after this answer.
		s.v1Error(w, r, http.StatusRequestTimeout, "invalid_request_error", "body_timeout",
			fmt.Sprintf("the request body did not arrive within %s (requests.body_read_timeout in the config)", timeout), "")
	default:
		s.v1Error(w, r, http.StatusBadRequest, "invalid_request_error", "unreadable_body", "could not read the request body: "+err.Error(), "")
	}
}
