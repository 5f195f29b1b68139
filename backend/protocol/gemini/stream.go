package gemini

import (
	"encoding/json"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// A stream (streamGenerateContent?alt=sse) is a series of data events,
// each a whole GenerateContentResponse holding the parts written since the
// last one. There is no end event: the chunk with the finish reason and
// the final usage is the last, and the connection closes after it.

func (codec) NewStreamDecoder() protocol.StreamDecoder { return &decoder{} }

type decoder struct {
	calls   int     // function calls seen so far
	ids     callIDs // ids for calls that come without one
	content bool    // anything said so far
}

func (d *decoder) Decode(dst []llm.Delta, _, data []byte) ([]llm.Delta, bool, error) {
	r, err := parseResponse(data)
	if err != nil {
		return dst, false, protocol.ErrMalformed
	}
	if r.Error != nil {
		return dst, false, streamError(r.Error)
	}
	if err := d.checkBlocked(r); err != nil {
		return dst, false, err
	}
	if len(r.Candidates) > 0 {
		c := r.Candidates[0]
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				dst = d.part(dst, p)
			}
		}
		if c.FinishReason != "" {
			dst = append(dst, llm.Delta{Kind: llm.DeltaFinish, Finish: finish(c.FinishReason, d.calls > 0)})
		}
	}
	if u := r.UsageMetadata.usage(); u != nil {
		dst = append(dst, llm.Delta{Kind: llm.DeltaUsage, Usage: u})
	}
	return dst, false, nil
}

// checkBlocked returns the caller error of a stream the safety filters
// stopped before it said anything.
func (d *decoder) checkBlocked(r *response) error {
	if len(r.Candidates) > 0 && hasContent(r.Candidates[0].Content) {
		d.content = true
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		return blockedError(r.PromptFeedback.BlockReason)
	}
	// A filter that stops an answer half way keeps what was said: the
	// stream ends with a content-filter finish instead.
	if reason := r.blocked(); reason != "" && !d.content {
		return blockedError(reason)
	}
	return nil
}

func (d *decoder) part(dst []llm.Delta, p part) []llm.Delta {
	if p.ThoughtSignature != "" && !p.Thought {
		dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Signature: p.ThoughtSignature})
	}
	switch {
	case p.FunctionCall != nil:
		i := d.calls
		d.calls++
		dst = append(dst,
			llm.Delta{Kind: llm.DeltaToolStart, Index: i, ID: d.ids.next(p.FunctionCall.ID), Name: p.FunctionCall.Name},
			llm.Delta{Kind: llm.DeltaToolArgs, Index: i, Text: args(p.FunctionCall.Args)},
			llm.Delta{Kind: llm.DeltaToolEnd, Index: i})
	case p.Thought:
		text := ""
		if p.Text != nil {
			text = *p.Text
		}
		if text != "" || p.ThoughtSignature != "" {
			dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Text: text, Signature: p.ThoughtSignature})
		}
	case p.Text != nil && *p.Text != "":
		dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: *p.Text})
	}
	return dst
}

// Classify reads a chunk for relaying it unchanged: Content when it says
// something, Held otherwise. A stream never reports Done, since its end is
// the end of the connection.
func (d *decoder) Classify(_, data []byte) (llm.EventKind, *llm.Usage, error) {
	if kind, u, ok := scanChunk(data); ok {
		// As checkBlocked records: a filter that stops the answer later
		// keeps what was said.
		if kind == llm.Content {
			d.content = true
		}
		return kind, u, nil
	}
	return d.classifyDecoded(data)
}

// classifyDecoded is Classify by decoding the chunk.
func (d *decoder) classifyDecoded(data []byte) (llm.EventKind, *llm.Usage, error) {
	r, err := parseResponse(data)
	if err != nil {
		return llm.Held, nil, protocol.ErrMalformed
	}
	if r.Error != nil {
		return llm.Held, nil, streamError(r.Error)
	}
	if err := d.checkBlocked(r); err != nil {
		return llm.Held, nil, err
	}
	kind := llm.Held
	if len(r.Candidates) > 0 && hasContent(r.Candidates[0].Content) {
		kind = llm.Content
	}
	return kind, r.UsageMetadata.usage(), nil
}

func (codec) NewStreamEncoder(o protocol.ResponseOptions) protocol.StreamEncoder {
	return &encoder{opts: o, calls: map[int]*pendingCall{}}
}

// encoder writes a stream. Text and thoughts go out as they come; a
// function call is buffered until it ends, since the API sends each call
// whole in one part with its arguments as an object. The finish reason and
// the usage go out together in a last chunk once both are known, or at
// End.
type encoder struct {
	opts      protocol.ResponseOptions
	calls     map[int]*pendingCall
	order     []int // indexes of the buffered calls, in the order they started
	signature string
	finish    llm.FinishReason
	usage     *llm.Usage
	// finished is set once the chunk with the finish reason is out.
	finished bool
}

type pendingCall struct {
	id, name string
	args     []byte
}

// chunk is one event: the parts, and the finish reason and usage when set.
func (e *encoder) chunk(dst []llm.Event, kind llm.EventKind, parts []part, finishReason string, u *llm.Usage) []llm.Event {
	c := candidate{FinishReason: finishReason}
	if len(parts) > 0 || finishReason != "" {
		if parts == nil {
			parts = []part{}
		}
		c.Content = &content{Role: "model", Parts: parts}
	}
	r := response{Candidates: []candidate{c}, UsageMetadata: usageOf(u), ModelVersion: e.opts.Model, ResponseID: e.opts.ID}
	if c.Content == nil {
		r.Candidates = nil
	}
	b, _ := json.Marshal(r)
	return append(dst, llm.Event{Kind: kind, Data: b, Usage: u})
}

// signed hands a pending thought signature to the part going out.
func (e *encoder) signed(p part) part {
	if e.signature != "" && p.ThoughtSignature == "" {
		p.ThoughtSignature, e.signature = e.signature, ""
	}
	return p
}

func (e *encoder) Encode(dst []llm.Event, d llm.Delta) []llm.Event {
	switch d.Kind {
	case llm.DeltaText:
		if d.Text != "" {
			t := d.Text
			dst = e.chunk(dst, llm.Content, []part{e.signed(part{Text: &t})}, "", nil)
		}
	case llm.DeltaReasoning:
		if d.Signature != "" && validSignature(d.Signature) {
			e.signature = d.Signature
		}
		if d.Text != "" {
			t := d.Text
			dst = e.chunk(dst, llm.Content, []part{e.signed(part{Text: &t, Thought: true})}, "", nil)
		}
	case llm.DeltaToolStart:
		if _, ok := e.calls[d.Index]; !ok {
			e.order = append(e.order, d.Index)
		}
		e.calls[d.Index] = &pendingCall{id: d.ID, name: d.Name}
	case llm.DeltaToolArgs:
		if c, ok := e.calls[d.Index]; ok {
			c.args = append(c.args, d.Text...)
		}
	case llm.DeltaToolEnd:
		dst = e.flushCall(dst, d.Index)
	case llm.DeltaFinish:
		// The chunk waits for the usage, which comes after the finish
		// in every dialect that sends both, or for End.
		e.finish = d.Finish
	case llm.DeltaUsage:
		if d.Usage == nil {
			break
		}
		u := *d.Usage
		e.usage = &u
		switch {
		case e.finished:
			// A late usage report goes out on its own.
			dst = e.chunk(dst, llm.Held, nil, "", e.usage)
		case e.finish != "":
			dst = e.final(dst)
		}
	}
	return dst
}

// flushCall writes buffered call i as one functionCall part.
func (e *encoder) flushCall(dst []llm.Event, i int) []llm.Event {
	c, ok := e.calls[i]
	if !ok {
		return dst
	}
	delete(e.calls, i)
	for k, idx := range e.order {
		if idx == i {
			e.order = append(e.order[:k], e.order[k+1:]...)
			break
		}
	}
	p := e.signed(part{FunctionCall: &functionCall{ID: c.id, Name: c.name, Args: objectArgs(string(c.args))}})
	return e.chunk(dst, llm.Content, []part{p}, "", nil)
}

// final writes the chunk with the finish reason and usage.
func (e *encoder) final(dst []llm.Event) []llm.Event {
	for len(e.order) > 0 {
		dst = e.flushCall(dst, e.order[0])
	}
	// The part is an empty text, as the API sends when it has nothing
	// left to say but the finish, and carries a pending signature.
	empty := ""
	parts := []part{{Text: &empty, ThoughtSignature: e.signature}}
	e.signature = ""
	f := e.finish
	if f == "" {
		f = llm.FinishStop
	}
	e.finished = true
	return e.chunk(dst, llm.Held, parts, finishWord(f), e.usage)
}

func (e *encoder) End(dst []llm.Event) []llm.Event {
	for len(e.order) > 0 {
		dst = e.flushCall(dst, e.order[0])
	}
	if !e.finished {
		dst = e.final(dst)
	}
	return dst
}
