package respcache

import (
	"cmp"
	"encoding/json"
	"time"
	"unicode/utf8"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/router"
)

// hit is an entry found for a request, written in the client's dialect.
type hit struct {
	e     *entry
	c     *Cache
	codec protocol.Codec
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

func (h *hit) Body(req *llm.Request, id string) ([]byte, error) {
	return h.codec.EncodeResponse(h.answer(), h.options(req, id))
}

func (h *hit) Events(req *llm.Request, id string) ([]llm.Event, error) {
	enc := h.codec.NewStreamEncoder(h.options(req, id))
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

// builder assembles a streamed answer from its deltas.
type builder struct {
	parts  []llm.Part
	calls  map[int]int // tool call index -> part
	finish llm.FinishReason
	size   int
}

func (b *builder) add(d llm.Delta) {
	b.size += len(d.Text) + len(d.ID) + len(d.Name) + len(d.Signature) + len(d.Redacted)
	switch d.Kind {
	case llm.DeltaText:
		if d.Text == "" {
			return
		}
		if n := len(b.parts); n > 0 && b.parts[n-1].Kind == llm.PartText {
			b.parts[n-1].Text += d.Text
			return
		}
		b.parts = append(b.parts, llm.Part{Kind: llm.PartText, Text: d.Text})
	case llm.DeltaReasoning:
		n := len(b.parts)
		if n == 0 || b.parts[n-1].Kind != llm.PartReasoning || b.parts[n-1].Signature != "" && (d.Text != "" || d.Redacted != "") {
			if d.Text == "" && d.Redacted == "" && d.Signature == "" {
				return
			}
			b.parts = append(b.parts, llm.Part{Kind: llm.PartReasoning})
			n++
		}
		p := &b.parts[n-1]
		p.Text += d.Text
		p.Redacted += d.Redacted
		p.Signature += d.Signature
	case llm.DeltaToolStart:
		if b.calls == nil {
			b.calls = map[int]int{}
		}
		if _, ok := b.calls[d.Index]; ok {
			return
		}
		b.calls[d.Index] = len(b.parts)
		b.parts = append(b.parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: d.ID, Name: d.Name}})
	case llm.DeltaToolArgs:
		if i, ok := b.calls[d.Index]; ok {
			b.parts[i].ToolCall.Arguments += d.Text
		}
	case llm.DeltaFinish:
		b.finish = d.Finish
	}
}

func (b *builder) answer() *llm.Answer {
	return &llm.Answer{Parts: b.parts, Finish: b.finish}
}
