package api

import (
	"io"
	"net/http"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/router"
)

// sseSink writes a committed stream to the client as server-sent events,
// framed and ended as the client's dialect wants.
type sseSink struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	codec protocol.Codec
}

var (
	eventPrefix = []byte("event: ")
	dataPrefix  = []byte("data: ")
	lineEnd     = []byte("\n")
	eventEnd    = []byte("\n\n")
)

func (s *sseSink) Commit(id string, b *router.Backend, attempts []llm.Attempt) error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-FreeLane-Request-Id", id)
	h.Set("X-FreeLane-Backend", b.Name())
	h.Set("X-FreeLane-Attempts", router.AttemptsHeader(attempts))
	s.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *sseSink) Send(data []byte, flush bool) error {
	return s.sendNamed(s.codec.EventName(data), data, flush)
}

// sendNamed is Send for an event whose name the caller has read already.
func (s *sseSink) sendNamed(name string, data []byte, flush bool) error {
	// A few writes into the response's own buffer, then one flush: no
	// copy of the event is made.
	if name != "" {
		if _, err := s.w.Write(eventPrefix); err != nil {
			return err
		}
		if _, err := io.WriteString(s.w, name); err != nil {
			return err
		}
		if _, err := s.w.Write(lineEnd); err != nil {
			return err
		}
	}
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
	ev := s.codec.EncodeStreamError(protocol.ErrorInfo{
		Status:  http.StatusBadGateway,
		Type:    "upstream_error",
		Code:    "stream_interrupted",
		Message: "the upstream stream failed after it had started, so the answer is incomplete: " + e.Message,
	})
	if s.codec.Dialect() == llm.DialectGemini {
		// Google ends a failed stream with the bare error object on a line
		// of its own, not as an event, and that is the only form Google's
		// JavaScript SDK (and so Gemini CLI) takes for an error; its Go and
		// Python SDKs read it too.
		_, _ = s.w.Write(ev.Data)
		_, _ = s.w.Write(lineEnd)
		_ = s.rc.Flush()
		return
	}
	_ = s.Send(ev.Data, true)
}

func (s *sseSink) Done() error {
	if end := s.codec.StreamEnd(); end != nil {
		if _, err := s.w.Write(end); err != nil {
			return err
		}
	}
	return s.rc.Flush()
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, codec protocol.Codec, req *llm.Request) {
	sink := &sseSink{w: w, rc: http.NewResponseController(w), codec: codec}
	if f := s.o.Router.Stream(r.Context(), req, sink); f != nil {
		s.fail(w, codec, f)
	}
}
