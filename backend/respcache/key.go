package respcache

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"math"

	"freelane/backend/llm"
)

// Key names one cached answer: the SHA-256 of the canonical encoding of
// a request (see NewKey).
type Key [sha256.Size]byte

// keyVersion starts every encoding, so that a change of the encoding
// below makes new keys instead of matching entries written by the old one.
const keyVersion = "freelane-respcache-1"

// NewKey is the key of a request to ep with the neutral conversation c,
// routed to route, for caller. The encoding is written by hand, every
// field tagged and length-prefixed, numbers in fixed binary form, so
// nothing that is not the question (map order, float formatting, the
// dialect's spelling) can change it, and two different questions cannot
// run together into one. It leaves out what does not change the answer:
// the stream flag (a stream and a plain request share an entry), the
// caller's identifiers (user, session, metadata) and prompt-cache
// breakpoints.
func NewKey(ep llm.Endpoint, c *llm.Conversation, route, caller string) Key {
	e := encoder{h: sha256.New()}
	e.str('V', keyVersion)
	e.str('E', string(ep))
	e.str('R', route)
	e.str('C', caller)
	e.parts('S', c.System)
	e.count('M', len(c.Messages))
	for _, m := range c.Messages {
		e.str('r', string(m.Role))
		e.parts('p', m.Parts)
	}
	e.count('T', len(c.Tools))
	for _, t := range c.Tools {
		e.str('n', t.Name)
		e.str('d', t.Description)
		e.bytes('s', t.Parameters)
		e.flag('x', t.Strict)
	}
	if tc := c.ToolChoice; tc != nil {
		e.str('H', string(tc.Mode))
		e.str('h', tc.Name)
	} else {
		e.absent('H')
	}
	e.int('O', int64(c.MaxOutput))
	e.float('t', c.Temperature)
	e.float('P', c.TopP)
	if c.TopK != nil {
		e.int('K', int64(*c.TopK))
	} else {
		e.absent('K')
	}
	e.count('Z', len(c.Stop))
	for _, s := range c.Stop {
		e.str('z', s)
	}
	if c.Seed != nil {
		e.int('D', *c.Seed)
	} else {
		e.absent('D')
	}
	e.float('q', c.PresencePenalty)
	e.float('f', c.FrequencyPenalty)
	if rf := c.ResponseFormat; rf != nil {
		e.str('F', rf.Type)
		e.str('N', rf.Name)
		e.bytes('J', rf.Schema)
		e.flag('j', rf.Strict)
	} else {
		e.absent('F')
	}
	if rs := c.Reasoning; rs != nil {
		e.str('A', rs.Effort)
		e.int('B', int64(rs.BudgetTokens))
		e.flag('b', rs.Disabled)
	} else {
		e.absent('A')
	}
	if c.ParallelToolCalls != nil {
		e.flag('L', *c.ParallelToolCalls)
	} else {
		e.absent('L')
	}
	var k Key
	e.h.Sum(k[:0])
	return k
}

// encoder writes the canonical encoding straight into the hash: a tag
// byte, then the field's length and bytes, or its fixed-size value.
type encoder struct {
	h   hash.Hash
	buf [binary.MaxVarintLen64 + 1]byte
}

func (e *encoder) head(tag byte, n uint64) {
	e.buf[0] = tag
	l := binary.PutUvarint(e.buf[1:], n)
	e.h.Write(e.buf[:1+l])
}

func (e *encoder) str(tag byte, s string) {
	e.head(tag, uint64(len(s)))
	e.h.Write([]byte(s))
}

func (e *encoder) bytes(tag byte, b []byte) {
	e.head(tag, uint64(len(b)))
	e.h.Write(b)
}

// count starts a list of n items.
func (e *encoder) count(tag byte, n int) { e.head(tag, uint64(n)) }

// absent marks an optional field that is not set, apart from any value.
func (e *encoder) absent(tag byte) {
	e.buf[0], e.buf[1] = tag, 0xff
	e.h.Write(e.buf[:2])
}

func (e *encoder) flag(tag byte, v bool) {
	e.buf[0], e.buf[1] = tag, 0
	if v {
		e.buf[1] = 1
	}
	e.h.Write(e.buf[:2])
}

func (e *encoder) int(tag byte, v int64) {
	e.buf[0] = tag
	binary.BigEndian.PutUint64(e.buf[1:9], uint64(v))
	e.h.Write(e.buf[:9])
}

// float writes an optional number by its bits, so 0.7 is the same key
// however a dialect spelled it.
func (e *encoder) float(tag byte, v *float64) {
	if v == nil {
		e.absent(tag)
		return
	}
	f := *v
	if f == 0 {
		f = 0 // -0 asks the same as 0
	}
	e.buf[0] = tag
	binary.BigEndian.PutUint64(e.buf[1:9], math.Float64bits(f))
	e.h.Write(e.buf[:9])
}

func (e *encoder) parts(tag byte, ps []llm.Part) {
	e.count(tag, len(ps))
	for i := range ps {
		e.part(&ps[i])
	}
}

// part writes every field of a part but its cache breakpoint.
func (e *encoder) part(p *llm.Part) {
	e.str('k', string(p.Kind))
	e.str('t', p.Text)
	e.str('g', p.Signature)
	e.str('e', p.Redacted)
	if im := p.Image; im != nil {
		e.str('I', im.MediaType)
		e.str('i', im.Data)
		e.str('u', im.URL)
		e.str('l', im.Detail)
	} else {
		e.absent('I')
	}
	if tc := p.ToolCall; tc != nil {
		e.str('c', tc.ID)
		e.str('m', tc.Name)
		e.str('a', tc.Arguments)
	} else {
		e.absent('c')
	}
	if tr := p.ToolResult; tr != nil {
		e.str('o', tr.CallID)
		e.str('w', tr.Name)
		e.flag('y', tr.IsError)
		e.parts('v', tr.Content)
	} else {
		e.absent('o')
	}
}
