package llm

import "encoding/binary"

// This file holds what the token estimate reads: the text an answer
// generated, taken from the neutral model so that it is the same whatever
// dialect the answer was in, and the framing in which the router keeps a
// stream's events until the call is accounted for.

// AppendText appends the text the delta generated, for counting its
// tokens: a piece of the answer's text or of its visible reasoning, a tool
// call's name or a fragment of its arguments. Signatures and redacted
// reasoning are opaque data, not text the model wrote, and add nothing.
func (d Delta) AppendText(dst []byte) []byte {
	switch d.Kind {
	case DeltaText, DeltaReasoning, DeltaToolArgs:
		return append(dst, d.Text...)
	case DeltaToolStart:
		return append(dst, d.Name...)
	}
	return dst
}

// AppendText appends the text the answer generated, in the order of its
// parts and in the same terms as Delta.AppendText: a streamed answer's
// deltas append what the whole answer does.
func (a *Answer) AppendText(dst []byte) []byte {
	for _, p := range a.Parts {
		switch p.Kind {
		case PartText, PartReasoning:
			dst = append(dst, p.Text...)
		case PartToolCall:
			if p.ToolCall != nil {
				dst = append(dst, p.ToolCall.Name...)
				dst = append(dst, p.ToolCall.Arguments...)
			}
		}
	}
	return dst
}

// AppendEvent appends one stream event's data to a record of events (see
// CallUsage.Output), each prefixed with its length, so that the record
// reads back exactly whatever the data holds.
func AppendEvent(dst, data []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(data)))
	return append(dst, data...)
}

// EachEvent calls f with the data of each event of a record made by
// AppendEvent, in order, until f returns false. A record cut short ends
// the walk at the last whole event.
func EachEvent(record []byte, f func(data []byte) bool) {
	for len(record) > 0 {
		n, k := binary.Uvarint(record)
		if k <= 0 || n > uint64(len(record)-k) {
			return
		}
		data := record[k : k+int(n)]
		record = record[k+int(n):]
		if !f(data) {
			return
		}
	}
}
