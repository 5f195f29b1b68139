// Package sse reads server-sent event streams as LLM APIs send them.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrEventTooLarge is returned when one event exceeds the reader's limit,
// which protects the router from an upstream that never ends a line.
var ErrEventTooLarge = errors.New("sse: event too large")

// Event is one dispatched server-sent event. Data is the data lines joined
// by "\n". Both slices are only valid until the next call to Next.
type Event struct {
	Name []byte
	Data []byte
}

// Reader splits a byte stream into events. Comment lines (keep-alives such
// as ": OPENROUTER PROCESSING"), id and retry fields are skipped.
type Reader struct {
	br    *bufio.Reader
	max   int
	line  []byte
	data  []byte
	name  []byte
	fresh bool // data holds at least one data line of the pending event
}

// keepBuffer is the largest line or event buffer a Reader keeps between
// events. A larger one, grown for one large event, is let go at the next
// call, so a stream holds memory for its current event only.
const keepBuffer = 64 << 10

// bufferSize is a Reader's read buffer. An event longer than it is put
// together line by line in the Reader's own buffers, so it bounds nothing
// but how much is read at once; a relay holds one per open stream.
const bufferSize = 4 << 10

// buffers holds the read buffers of released Readers: a stream that ends
// gives its buffer to the next one instead of leaving it to the garbage
// collector, which a router relaying thousands of streams would keep busy.
var buffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufferSize) }}

// NewReader returns a Reader over r that refuses events larger than max bytes.
func NewReader(r io.Reader, max int) *Reader {
	br := buffers.Get().(*bufio.Reader)
	br.Reset(r)
	return &Reader{br: br, max: max}
}

// Release gives the Reader's read buffer back for another Reader. Neither
// the Reader nor the events it returned may be used after it; a second
// call does nothing.
func (r *Reader) Release() {
	if r.br == nil {
		return
	}
	r.br.Reset(nil)
	buffers.Put(r.br)
	r.br = nil
}

// Next returns the next event with data. At the end of the input it returns
// io.EOF, after dispatching a final event that lacked its blank line (some
// servers end the stream right after the last data line). Other read errors,
// including io.ErrUnexpectedEOF from a cut connection, are returned as they
// are.
func (r *Reader) Next() (Event, error) {
	if cap(r.data) > keepBuffer {
		r.data = nil
	}
	if cap(r.line) > keepBuffer {
		r.line = nil
	}
	r.data = r.data[:0]
	r.name = r.name[:0]
	r.fresh = false
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && r.fresh {
				return Event{Name: r.name, Data: r.data}, nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if r.fresh {
				return Event{Name: r.name, Data: r.data}, nil
			}
			r.name = r.name[:0]
			continue
		}
		if line[0] == ':' {
			continue
		}
		if line[0] == '{' && !r.fresh {
			// A bare JSON object on a line of its own is an event by
			// itself: Google sends a stream's mid-answer error this way,
			// with no "data:" field, and so do some OpenAI-compatible
			// servers. Read as a field it would be dropped, and the
			// failure mistaken for an answer that just ended.
			r.data = append(r.data[:0], line...)
			if len(r.data) > r.max {
				return Event{}, fmt.Errorf("%w (over %d bytes)", ErrEventTooLarge, r.max)
			}
			return Event{Name: r.name, Data: r.data}, nil
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "data":
			switch {
			case r.fresh:
				r.data = append(r.data, '\n')
				r.data = append(r.data, value...)
			case len(value) > keepBuffer:
				// A long first data line is already a copy in r.line (the
				// line is a prefix of it): make that buffer the event's
				// instead of copying the value again, so one event costs
				// one buffer.
				n := copy(r.line, value)
				r.data, r.line = r.line[:n], r.data[:0]
			default:
				r.data = append(r.data, value...)
			}
			r.fresh = true
			if len(r.data) > r.max {
				return Event{}, fmt.Errorf("%w (over %d bytes)", ErrEventTooLarge, r.max)
			}
		case "event":
			r.name = append(r.name[:0], value...)
		}
	}
}

// EventBuffered reports whether the next data event is already complete in
// the buffer, so the next call to Next will not wait for the network. A
// caller forwarding events can then hold off flushing and send a burst in
// one write. It errs on the side of false: a comment block or a partial
// event ahead means false, and the caller flushes now.
func (r *Reader) EventBuffered() bool {
	n := r.br.Buffered()
	if n == 0 {
		return false
	}
	buf, _ := r.br.Peek(n)
	end := bytes.Index(buf, []byte("\n\n"))
	if crlf := bytes.Index(buf, []byte("\r\n\r\n")); crlf >= 0 && (end < 0 || crlf < end) {
		end = crlf
	}
	if end < 0 {
		return false
	}
	block := buf[:end]
	return bytes.HasPrefix(block, []byte("data:")) || bytes.Contains(block, []byte("\ndata:"))
}

// readLine returns one line without its terminator (LF or CRLF). A final
// line without a terminator is returned before io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if need := len(r.line) + len(chunk); need > cap(r.line) {
			// Double rather than let append grow a large slice by a
			// quarter at a time, which would allocate five times the
			// line on the way to a long one.
			// No line longer than the limit plus one read is kept, so the
			// buffer never needs more than that.
			grown := make([]byte, len(r.line), max(need, min(2*cap(r.line), r.max+64+r.br.Size())))
			copy(grown, r.line)
			r.line = grown
		}
		r.line = append(r.line, chunk...)
		if len(r.line) > r.max+64 {
			return nil, fmt.Errorf("%w (line over %d bytes)", ErrEventTooLarge, r.max)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(r.line) > 0 {
				// Dispatch the unterminated last line now; the next call
				// sees io.EOF.
				return bytes.TrimRight(r.line, "\r"), nil
			}
			return nil, err
		}
		line := r.line[:len(r.line)-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		return line, nil
	}
}
