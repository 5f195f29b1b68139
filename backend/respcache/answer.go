package respcache

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/router"
)

// hit is an entry found for a request, written in the client's dialect.
type hit struct {
	e *entry
	c *Cache
}

func (h *hit) Origin() router.CacheOrigin { return h.e.origin }
func (h *hit) Created() time.Time         { return h.e.created }

func (h *hit) options(req *llm.Request, id string) protocol.ResponseOptions {
	return protocol.ResponseOptions{ID: id, Model: cmp.Or(h.e.ans.Model, req.Model), Created: h.c.clock.Now().Unix()}
}

// answer is the entry's answer with the usage it was served with.
func (h *hit) answer() *llm.Answer {
	a := *h.e.ans
	u := h.e.origin.Usage
	a.Usage = &u
	return &a
}

// codec is the dialect req speaks.
func (h *hit) codec(req *llm.Request) (protocol.Codec, error) {
	codec, ok := h.c.codecs.Codec(req.Dialect)
	if !ok {
		return nil, fmt.Errorf("respcache: no dialect %q", req.Dialect)
	}
	return codec, nil
}

func (h *hit) Body(req *llm.Request, id string) ([]byte, error) {
	codec, err := h.codec(req)
	if err != nil {
		return nil, err
	}
	return codec.EncodeResponse(h.answer(), h.options(req, id))
}

func (h *hit) Events(req *llm.Request, id string) ([]llm.Event, error) {
	codec, err := h.codec(req)
	if err != nil {
		return nil, err
	}
	enc := codec.NewStreamEncoder(h.options(req, id))
	var evs []llm.Event
	for _, d := range deltas(h.answer()) {
		evs = enc.Encode(evs, d)
	}
	return enc.End(evs), nil
}

// chunk is the most text one replayed stream event carries: a cached
// answer streams in pieces, as a backend's would.
const chunk = 64

// deltas are a stream of the answer a: its parts in order, the text in
// pieces of at most chunk bytes, then the finish reason and the usage.
func deltas(a *llm.Answer) []llm.Delta {
	var out []llm.Delta
	calls := 0
	for _, p := range a.Parts {
		switch p.Kind {
		case llm.PartText:
			for _, t := range pieces(p.Text) {
				out = append(out, llm.Delta{Kind: llm.DeltaText, Text: t})
			}
		case llm.PartReasoning:
			for _, t := range pieces(p.Text) {
				out = append(out, llm.Delta{Kind: llm.DeltaReasoning, Text: t})
			}
			if p.Redacted != "" {
				out = append(out, llm.Delta{Kind: llm.DeltaReasoning, Redacted: p.Redacted})
			}
			if p.Signature != "" {
				out = append(out, llm.Delta{Kind: llm.DeltaReasoning, Signature: p.Signature})
			}
		case llm.PartToolCall:
			if p.ToolCall == nil {
				continue
			}
			out = append(out, llm.Delta{Kind: llm.DeltaToolStart, Index: calls, ID: p.ToolCall.ID, Name: p.ToolCall.Name})
			for _, t := range pieces(p.ToolCall.Arguments) {
				out = append(out, llm.Delta{Kind: llm.DeltaToolArgs, Index: calls, Text: t})
			}
			out = append(out, llm.Delta{Kind: llm.DeltaToolEnd, Index: calls})
			calls++
		}
	}
	out = append(out, llm.Delta{Kind: llm.DeltaFinish, Finish: a.Finish})
	if a.Usage != nil {
		out = append(out, llm.Delta{Kind: llm.DeltaUsage, Usage: a.Usage})
	}
	return out
}

// pieces cuts s into pieces of at most chunk bytes, never inside a
// character.
func pieces(s string) []string {
	var out []string
	for len(s) > chunk {
		n := chunk
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 {
			n = chunk
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// keeper takes the answer a client got for a request the cache keeps.
type keeper struct {
	c     *Cache
	key   Key
	codec protocol.Codec
	// The stream's answer so far, and whether it can still be kept.
	dec    protocol.StreamDecoder
	buf    []llm.Delta
	b      builder
	broken bool
}

func (k *keeper) Body(body []byte, o router.CacheOrigin) {
	a, err := k.codec.DecodeResponse(body)
	if err != nil || !complete(a) {
		return
	}
	k.c.put(k.key, a, o)
}

func (k *keeper) Event(data []byte) {
	if k.broken {
		return
	}
	if k.dec == nil {
		k.dec = k.codec.NewStreamDecoder()
	}
	var err error
	k.buf, _, err = k.dec.Decode(k.buf[:0], []byte(k.codec.EventName(data)), data)
	if err != nil {
		// An event the client got that its own dialect cannot read back
		// (or an error event) leaves an answer the cache cannot vouch for.
		k.broken = true
		return
	}
	for _, d := range k.buf {
		k.b.add(d)
	}
	if k.b.size > maxEntry {
		k.broken = true
	}
}

func (k *keeper) Done(o router.CacheOrigin) {
	if k.broken || k.dec == nil {
		return
	}
	a := k.b.answer()
	if !complete(a) {
		return
	}
	k.c.put(k.key, a, o)
}

// complete reports whether a is an answer worth serving again: it has
// content and ended by itself (stop, or a tool call) or at the client's
// own output limit, and every tool call in it is whole. A content filter's
// stop is not kept: it may say more about the moment than the question.
func complete(a *llm.Answer) bool {
	if a == nil || !a.Usable() {
		return false
	}
	calls := false
	for _, p := range a.Parts {
		if p.Kind != llm.PartToolCall {
			continue
		}
		calls = true
		tc := p.ToolCall
		if tc == nil || tc.Name == "" || tc.ID == "" || tc.Arguments != "" && !json.Valid([]byte(tc.Arguments)) {
			return false
		}
	}
	switch a.Finish {
	case llm.FinishStop, llm.FinishToolCalls:
		return true
	case llm.FinishLength:
		// Cut at max_tokens, which is part of the key: the same request
		// would be cut the same way. A tool call cut there is not whole.
		return !calls
	}
	return false
}

// builder assembles a streamed answer from its deltas. Text grows in
// byte buffers, one per part, so a long answer of small deltas is not
// copied again with every delta.
type builder struct {
	parts  []llm.Part
	texts  [][]byte // each part's text, or a tool call's arguments
	calls  map[int]int
	finish llm.FinishReason
	size   int
}

func (b *builder) open(p llm.Part) int {
	b.parts = append(b.parts, p)
	b.texts = append(b.texts, nil)
	return len(b.parts) - 1
}

func (b *builder) add(d llm.Delta) {
	b.size += len(d.Text) + len(d.ID) + len(d.Name) + len(d.Signature) + len(d.Redacted)
	last := len(b.parts) - 1
	switch d.Kind {
	case llm.DeltaText:
		if d.Text == "" {
			return
		}
		if last < 0 || b.parts[last].Kind != llm.PartText {
			last = b.open(llm.Part{Kind: llm.PartText})
		}
		b.texts[last] = append(b.texts[last], d.Text...)
	case llm.DeltaReasoning:
		if d.Text == "" && d.Redacted == "" && d.Signature == "" {
			return
		}
		// A signature closes a reasoning part: what comes after it is
		// reasoning of its own.
		if last < 0 || b.parts[last].Kind != llm.PartReasoning || b.parts[last].Signature != "" && (d.Text != "" || d.Redacted != "") {
			last = b.open(llm.Part{Kind: llm.PartReasoning})
		}
		p := &b.parts[last]
		b.texts[last] = append(b.texts[last], d.Text...)
		p.Redacted += d.Redacted
		p.Signature += d.Signature
	case llm.DeltaToolStart:
		if b.calls == nil {
			b.calls = map[int]int{}
		}
		if _, ok := b.calls[d.Index]; ok {
			return
		}
		b.calls[d.Index] = b.open(llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: d.ID, Name: d.Name}})
	case llm.DeltaToolArgs:
		if i, ok := b.calls[d.Index]; ok {
			b.texts[i] = append(b.texts[i], d.Text...)
		}
	case llm.DeltaFinish:
		b.finish = d.Finish
	}
}

func (b *builder) answer() *llm.Answer {
	for i := range b.parts {
		if p := &b.parts[i]; p.Kind == llm.PartToolCall {
			p.ToolCall.Arguments = string(b.texts[i])
		} else {
			p.Text = string(b.texts[i])
		}
	}
	return &llm.Answer{Parts: b.parts, Finish: b.finish}
}
