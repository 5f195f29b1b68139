package protocol

import "freelane/backend/llm"

// AnswerText appends to dst the text an answer generated, in the terms of
// llm.Answer.AppendText (text, reasoning, tool calls' names and
// arguments), read from what its client got in dialect d: output is the
// answer's body or, with stream set, the data of the stream's content
// events as llm.AppendEvent records them. The answer is decoded into the
// neutral model, so the text is the same whichever dialects the client
// and the upstream spoke. What cannot be read adds nothing. It is how the
// quota manager estimates the tokens of an upstream that reported none.
func (r *Registry) AnswerText(dst []byte, d llm.Dialect, stream bool, output []byte) []byte {
	c, ok := r.Codec(d)
	if !ok {
		return dst
	}
	return AnswerText(dst, c, stream, output)
}

// AnswerText is Registry.AnswerText for one dialect's codec.
func AnswerText(dst []byte, c Codec, stream bool, output []byte) []byte {
	if !stream {
		a, err := c.DecodeResponse(output)
		if err != nil || a == nil {
			return dst
		}
		return a.AppendText(dst)
	}
	dec := c.NewStreamDecoder()
	var deltas []llm.Delta
	llm.EachEvent(output, func(data []byte) bool {
		var end bool
		var err error
		// Dialects that name their events name them after the data, which
		// is all that was kept of them.
		deltas, end, err = dec.Decode(deltas[:0], []byte(c.EventName(data)), data)
		if err != nil {
			return true
		}
		for _, d := range deltas {
			dst = d.AppendText(dst)
		}
		return !end
	})
	return dst
}
