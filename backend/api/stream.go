package api

import (
	"encoding/json"
	"net/http"

	"freelane/backend/llm"
	"freelane/backend/router"
)

// sseSink writes a committed stream to the client as server-sent events.
type sseSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

var (
	dataPrefix = []byte("data: ")
	eventEnd   = []byte("\n\n")
	doneEvent  = []byte("data: [DONE]\n\n")
)

func (s *sseSink) Commit(id string, b *router.Backend, attempts []llm.Attempt) error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-FreeLane-Request-Id", id)
	h.Set("X-FreeLane-Backend", b.Name)
	h.Set("X-FreeLane-Attempts", router.AttemptsHeader(attempts))
	s.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *sseSink) Send(data []byte, flush bool) error {
	// Three writes into the response's own buffer, then one flush: no copy
	// of the event is made.
	if _, err := s.w.Write(dataPrefix); err != nil {
		return err
	}
	if _, err := s.w.Write(data); err != nil {
		return err
	}
	if _, err := s.w.Write(eventEnd); err != nil {
		return err
	}
	if !flush {
		return nil
	}
	return s.rc.Flush()
}

func (s *sseSink) Fail(e *llm.Error) {
	b, _ := json.Marshal(errorBody{Error: errorDetail{
		Message: "the upstream stream failed after it had started, so the answer is incomplete: " + e.Message,
		Type:    "upstream_error",
		Code:    "stream_interrupted",
	}})
	_ = s.Send(b, true)
}

func (s *sseSink) Done() error {
	if _, err := s.w.Write(doneEvent); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *llm.Request) {
	sink := &sseSink{w: w, rc: http.NewResponseController(w)}
	if f := s.o.Router.Stream(r.Context(), req, sink); f != nil {
		s.fail(w, f)
	}
}
