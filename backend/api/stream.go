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
	// bare writes the error that ends a broken stream as bare data
	// (Inbound.BareStreamError).
	bare bool
	// filter, when set, is the dialect's own edit of every event.
	filter protocol.StreamFilter
	// req is the request answered, whose cache outcome the headers say;
	// nil for none.
	req *llm.Request
}

// newSink is the stream writer for a client of dialect d.
func newSink(w http.ResponseWriter, d protocol.Dialect, f protocol.StreamFilter, req *llm.Request) *sseSink {
	return &sseSink{w: w, rc: http.NewResponseController(w), codec: d.Codec, bare: d.Inbound.BareStreamError, filter: f, req: req}
}

var (
	eventPrefix = []byte("event: ")
	dataPrefix  = []byte("data: ")
	lineEnd     = []byte("\n")
	eventEnd    = []byte("\n\n")
)

func (s *sseSink) Commit(id string, b *router.Backend, attempts []llm.Attempt) error {
	h := s.w.Header()
	h["Content-Type"] = valueEventStream
	h["Cache-Control"] = valueNoCache
	h["X-Accel-Buffering"] = valueNo
	if b != nil {
		setRouted(h, id, b.Name(), router.AttemptsHeader(attempts))
	} else {
		// A stream from the response cache called no backend.
		setRouted(h, id, "", "")
	}
	cacheOutcome(h, s.req)
	s.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *sseSink) Send(data []byte, flush bool) error {
	name := s.codec.EventName(data)
	if s.filter != nil {
		data = s.filter.Event(name, data)
	}
	return s.sendNamed(name, data, flush)
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
	info := protocol.ErrorInfo{
		Status:  http.StatusBadGateway,
		Type:    "upstream_error",
		Code:    "stream_interrupted",
		Message: "the upstream stream failed after it had started, so the answer is incomplete: " + e.Message,
	}
	if s.filter != nil {
		if evs := s.filter.Fail(info); evs != nil {
			for i, ev := range evs {
				if err := s.sendNamed(s.codec.EventName(ev), ev, i == len(evs)-1); err != nil {
					return
				}
			}
			return
		}
	}
	ev := s.codec.EncodeStreamError(info)
	if s.bare {
		_, _ = s.w.Write(ev.Data)
		_, _ = s.w.Write(lineEnd)
		_ = s.rc.Flush()
		return
	}
	_ = s.sendNamed(s.codec.EventName(ev.Data), ev.Data, true)
}

func (s *sseSink) Done() error {
	if end := s.codec.StreamEnd(); end != nil {
		if _, err := s.w.Write(end); err != nil {
			return err
		}
	}
	return s.rc.Flush()
}

// stream routes a streamed request and writes it to a client of dialect
// d, each event through f when it is set.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, d protocol.Dialect, req *llm.Request, f protocol.StreamFilter) {
	if fl := s.o.Router.Stream(r.Context(), req, newSink(w, d, f, req)); fl != nil {
		s.fail(w, d.Codec, fl)
	}
}
