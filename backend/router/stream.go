package router

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"

	"freelane/backend/llm"
)

// streamOne runs one streaming attempt. Until the first content or tool-call
// delta it holds every event back and may return an error, letting the loop
// fail over. From that delta on the stream is committed to this backend:
// whatever happens next is written to the client and errCommitted returned.
func (r *Router) streamOne(ctx context.Context, req *llm.Request, b *Backend, a *attempt, sink Sink) error {
	t0 := r.clock.Now()
	hold := r.holdsEnd()
	st, err := b.Up.Stream(ctx, req, b.ID.Model)
	if err != nil {
		return err
	}
	defer st.Close()
	a.header = st.Header()

	// Held events are copied: an event's Data is only valid until Next.
	var held [][]byte
	for {
		ev, err := st.Next()
		if err != nil {
			return err
		}
		switch ev.Kind {
		case llm.Held:
			if ev.Usage != nil {
				a.usage = ev.Usage
			}
			held = append(held, append([]byte(nil), ev.Data...))
			continue
		case llm.UsageOnly:
			a.usage = ev.Usage
			if req.WantsUsage {
				held = append(held, append([]byte(nil), ev.Data...))
			}
			continue
		case llm.Done:
			// Finished without a single content delta: an empty answer,
			// which another backend may well do better.
			return llm.SoftError(llm.SubEmpty, "empty answer (stream ended before any content)")
		}
		// First content: commit. The header shows this attempt as the one
		// serving.
		a.keep(ev.Data)
		a.TTFT = r.clock.Since(t0)
		a.Class = llm.OK
		a.committed, a.sink = true, sink
		if ev.Usage != nil {
			a.usage = ev.Usage
		}
		if err := sink.Commit(a.trace.ID, b, append(a.trace.Attempts, a.Attempt)); err != nil {
			a.late = &llm.Error{Class: llm.Cancelled, Message: "client went away"}
			return errCommitted
		}
		for _, h := range held {
			if err := sink.Send(h, false); err != nil {
				a.late = &llm.Error{Class: llm.Cancelled, Message: "client went away"}
				return errCommitted
			}
		}
		if err := sink.Send(ev.Data, !ev.More); err != nil {
			a.late = &llm.Error{Class: llm.Cancelled, Message: "client went away"}
			return errCommitted
		}
		break
	}

	for {
		ev, err := st.Next()
		if err != nil {
			le := classify(ctx, err)
			a.late = le
			if le.Class != llm.Cancelled {
				r.log.Warn("stream failed after commit", "backend", b.name, "class", le.Class, "reason", le.Message)
				sink.Fail(le)
			}
			return errCommitted
		}
		if ev.Usage != nil {
			a.usage = ev.Usage
		}
		if ev.Kind == llm.Content && !a.usage.CountsCompletion() {
			a.keep(ev.Data)
		}
		switch ev.Kind {
		case llm.UsageOnly:
			if !req.WantsUsage {
				continue
			}
		case llm.Done:
			if hold {
				a.ended = true
				return errCommitted
			}
			if err := sink.Done(); err != nil {
				a.late = &llm.Error{Class: llm.Cancelled, Message: "client went away"}
			}
			return errCommitted
		}
		if hold && ev.Tail {
			// The answer is whole with these; they go out with the end.
			a.tail = append(a.tail, bytes.Clone(ev.Data))
			continue
		}
		if err := sink.Send(ev.Data, !ev.More); err != nil {
			a.late = &llm.Error{Class: llm.Cancelled, Message: "client went away"}
			return errCommitted
		}
	}
}

// endStream writes a stream's end that was held back while its trace was
// stored: the tail events, then the dialect's end. A client gone by now
// has nothing left to be told.
func endStream(sink Sink, tail [][]byte) {
	for _, ev := range tail {
		if sink.Send(ev, false) != nil {
			return
		}
	}
	_ = sink.Done()
}

// maxKeep bounds the stream events kept for token estimation: a longer
// answer is estimated from its first events, scaled by its bytes. Every
// open stream holds what it keeps, so the bound is what a sample needs,
// not what an answer may grow to. The first event is kept whatever its
// size, up to maxKeepFirst, so that there is always a sample.
const (
	maxKeep      = 4 << 10
	maxKeepFirst = 1 << 20
)

// keep saves a content event for estimating the answer's tokens in case the
// upstream reports none; the quota manager decodes the events in the
// client's dialect when the call is accounted for. Held events carry no
// text (and the end events of some dialects repeat all of it), so only
// content events are kept.
func (a *attempt) keep(data []byte) {
	a.contentEvents++
	a.contentBytes += len(data)
	// binary.MaxVarintLen64 covers the length AppendEvent writes first, so
	// that a record within the bound fits the pooled buffer.
	if !a.keepOutput || (a.keptBytes > 0 && len(a.output)+binary.MaxVarintLen64+len(data) > maxKeep) || len(data) > maxKeepFirst {
		return
	}
	a.keptBytes += len(data)
	if !a.kept {
		a.kept = true
		a.output = (*keptBuffers.Get().(*[]byte))[:0]
	}
	a.output = llm.AppendEvent(a.output, data)
}

// keptBuffers holds the buffers streams kept their events in, once their
// calls are accounted for: every stream needs one, and growing a new one
// each time is most of what relaying a stream allocates.
var keptBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// maxPooledKeep is the largest kept buffer given back: one grown for a
// long answer is left to the garbage collector rather than held.
const maxPooledKeep = 64 << 10

// releaseKept gives the kept buffer back; output must not be read after.
func (a *attempt) releaseKept() {
	if !a.kept {
		return
	}
	if cap(a.output) <= maxPooledKeep {
		b := a.output[:0]
		keptBuffers.Put(&b)
	}
	a.output, a.kept = nil, false
}
