package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/router"
	"freelane/backend/store"
)

// ResponseStore keeps the answers clients continue by id (a dialect's
// stored conversations), for later turns and for reading them back. Put
// must not block on disk: it runs on the request path. Get finds an
// answer only for the owner it was stored for (the caller's identity,
// callerIdentity).
type ResponseStore interface {
	Put(r store.StoredResponse) error
	Get(ctx context.Context, id, owner string) (store.StoredResponse, bool, error)
}

// Redactor removes the configured secrets from text FreeLane keeps: an
// upstream may echo a key into its answer, and a client may paste one into
// its input. Bytes returns b itself when it holds none.
type Redactor interface {
	Bytes(b []byte) []byte
}

// host is the server as the handlers of one dialect's own routes
// (protocol.Route.Serve) use it; what it answers, it answers in that
// dialect.
type host struct {
	s *Server
	d protocol.Dialect
}

func (h *host) Body(w http.ResponseWriter, r *http.Request) ([]byte, func(), bool) {
	held, ok := h.s.requestBody(w, r)
	if !ok {
		return nil, nil, false
	}
	return held.data, held.release, true
}

func (h *host) Complete(w http.ResponseWriter, r *http.Request, req *llm.Request) (protocol.Answer, bool) {
	if req.Path == "" {
		req.Path = callPath(r)
	}
	if !h.s.routingHeaders(w, r, h.d, req) {
		return nil, false
	}
	res, f := h.s.o.Router.Complete(r.Context(), req)
	if f != nil {
		h.s.fail(w, h.d.Codec, f)
		return nil, false
	}
	return &answer{res: res, d: h.d, req: req}, true
}

func (h *host) Stream(w http.ResponseWriter, r *http.Request, req *llm.Request, f protocol.StreamFilter) {
	if req.Path == "" {
		req.Path = callPath(r)
	}
	if !h.s.routingHeaders(w, r, h.d, req) {
		return
	}
	h.s.stream(w, r, h.d, req, f)
}

func (h *host) Caller(r *http.Request) string { return h.s.callerIdentity(r) }

func (h *host) Answers() protocol.AnswerStore {
	if h.s.o.Answers == nil {
		return nil
	}
	return answerStore{h.s}
}

func (h *host) Now() time.Time { return h.s.o.Clock.Now() }

func (h *host) NotFound(w http.ResponseWriter, r *http.Request) { h.s.unknownEndpoint(w, r) }

// answer is a routed whole answer a dialect's handler writes.
type answer struct {
	res *router.Result
	d   protocol.Dialect
	req *llm.Request
}

func (a *answer) Body() []byte { return a.res.Response.Body }

func (a *answer) Reply(w http.ResponseWriter, body []byte) { writeAnswer(w, a.req, a.res, body) }

func (a *answer) ReplyEvents(w http.ResponseWriter, events [][]byte) {
	sink := newSink(w, a.d, nil, a.req)
	if err := sink.Commit(a.res.ID, a.res.Backend, a.res.Attempts); err != nil {
		return
	}
	for i, ev := range events {
		if err := sink.Send(ev, i == len(events)-1); err != nil {
			return
		}
	}
	_ = sink.Done()
}

// writeAnswer writes a routed answer to req with FreeLane's headers. An
// answer from the response cache names no backend and no attempts: none
// was called.
func writeAnswer(w http.ResponseWriter, req *llm.Request, res *router.Result, body []byte) {
	h := w.Header()
	h["Content-Type"] = valueJSON
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	if res.Backend != nil {
		setRouted(h, res.ID, res.Backend.Name(), router.AttemptsHeader(res.Attempts))
	} else {
		setRouted(h, res.ID, "", "")
	}
	cacheOutcome(h, req)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// answerStore is the configured ResponseStore and Redactor as a dialect
// keeps its answers in them.
type answerStore struct{ s *Server }

func (a answerStore) Get(ctx context.Context, id, owner string) (protocol.StoredAnswer, bool, error) {
	st, found, err := a.s.o.Answers.Get(ctx, id, owner)
	if err != nil {
		a.s.o.Logger.Error("reading a stored response failed", "err", err)
		return protocol.StoredAnswer{}, false, err
	}
	return protocol.StoredAnswer{ID: st.ID, Owner: st.Owner, Response: st.Response, Items: st.Items}, found, nil
}

func (a answerStore) Put(x protocol.StoredAnswer) {
	err := a.s.o.Answers.Put(store.StoredResponse{ID: x.ID, Owner: x.Owner, Created: a.s.o.Clock.Now(), Response: x.Response, Items: x.Items})
	if err != nil {
		// The answer reached the client; only continuing it by id is lost.
		a.s.o.Logger.Warn("response not stored", "id", x.ID, "err", err)
	}
}

func (a answerStore) Redact(b []byte) []byte {
	if a.s.o.Redactor == nil {
		return b
	}
	return a.s.o.Redactor.Bytes(b)
}
