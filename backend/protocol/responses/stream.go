package responses

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// event is one stream event's payload. Each event type sets the fields
// OpenAI's has; the rest are left out.
type event struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *Response       `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	SummaryIndex   *int            `json:"summary_index,omitempty"`
	Item           any             `json:"item,omitempty"`
	Part           any             `json:"part,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	Name           string          `json:"name,omitempty"`
	Logprobs       json.RawMessage `json:"logprobs,omitempty"`
}

var (
	zero          = 0
	emptyLogprobs = json.RawMessage(`[]`)
)

type itemKind uint8

const (
	itemMessage itemKind = iota + 1
	itemReasoning
	itemCall
)

// item is one output item of the stream, open or done.
type item struct {
	kind  itemKind
	id    string
	index int
	text  strings.Builder
	// name and callID are a function call's; sig and red a reasoning
	// item's signature and redacted reasoning; summary is set once its
	// summary part was opened.
	name, callID string
	sig, red     string
	summary      bool
	done         bool
}

// value is the item as output_item.done and response.completed carry it.
func (it *item) value(status string) any {
	switch it.kind {
	case itemMessage:
		content := []outputText{}
		if status == "completed" {
			content = append(content, outputText{Type: "output_text", Text: it.text.String(), Annotations: []any{}, Logprobs: []any{}})
		}
		return messageItem{ID: it.id, Type: "message", Status: status, Role: "assistant", Content: content}
	case itemReasoning:
		r := reasoningItem{ID: it.id, Type: "reasoning", Summary: []summaryText{}}
		if status == "completed" {
			if it.text.Len() > 0 {
				r.Summary = append(r.Summary, summaryText{"summary_text", it.text.String()})
			}
			r.EncryptedContent = seal(it.sig, it.red)
		}
		return r
	}
	args := ""
	if status == "completed" {
		args = orEmptyObject(it.text.String())
	}
	return functionCallItem{ID: it.id, Type: "function_call", Status: status, Arguments: args, CallID: it.callID, Name: it.name}
}

// encoder writes one Responses stream for a client: response.created and
// response.in_progress, then each output item opened, filled with deltas
// and closed, and response.completed with the whole output and the usage.
// Every event carries the next sequence_number.
type encoder struct {
	o       protocol.ResponseOptions
	id      string
	seq     int
	started bool
	ended   bool
	items   []*item
	msg, rs *item
	// tools maps a tool call's index to its item.
	tools  map[int]*item
	finish llm.FinishReason
	usage  *llm.Usage
}

// NewStreamEncoder returns a converter that writes one stream.
func (codec) NewStreamEncoder(o protocol.ResponseOptions) protocol.StreamEncoder {
	return &encoder{o: o, id: ResponseID(o), tools: map[int]*item{}}
}

func (e *encoder) emit(dst []llm.Event, kind llm.EventKind, ev event) []llm.Event {
	ev.SequenceNumber = e.seq
	e.seq++
	return append(dst, llm.Event{Kind: kind, Data: marshal(ev)})
}

func (e *encoder) response(status string) *Response {
	r := newResponse(e.id, e.o.Model, e.o.Created)
	r.Status = status
	return &r
}

func (e *encoder) start(dst []llm.Event) []llm.Event {
	if e.started {
		return dst
	}
	e.started = true
	dst = e.emit(dst, llm.Held, event{Type: evCreated, Response: e.response("in_progress")})
	return e.emit(dst, llm.Held, event{Type: evInProgress, Response: e.response("in_progress")})
}

// open adds an output item and announces it.
func (e *encoder) open(dst []llm.Event, it *item, kind llm.EventKind) []llm.Event {
	it.index = len(e.items)
	e.items = append(e.items, it)
	return e.emit(dst, kind, event{Type: evItemAdded, OutputIndex: &it.index, Item: it.value("in_progress")})
}

// itemDone closes an item.
func (e *encoder) itemDone(dst []llm.Event, it *item) []llm.Event {
	it.done = true
	return e.emit(dst, llm.Held, event{Type: evItemDone, OutputIndex: &it.index, Item: it.value("completed")})
}

func (e *encoder) closeMessage(dst []llm.Event) []llm.Event {
	it := e.msg
	if it == nil {
		return dst
	}
	e.msg = nil
	text := it.text.String()
	dst = e.emit(dst, llm.Held, event{Type: evTextDone, ItemID: it.id, OutputIndex: &it.index, ContentIndex: &zero, Text: &text, Logprobs: emptyLogprobs})
	dst = e.emit(dst, llm.Held, event{Type: evPartDone, ItemID: it.id, OutputIndex: &it.index, ContentIndex: &zero,
		Part: outputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}})
	return e.itemDone(dst, it)
}

func (e *encoder) closeReasoning(dst []llm.Event) []llm.Event {
	it := e.rs
	if it == nil {
		return dst
	}
	e.rs = nil
	if it.summary {
		text := it.text.String()
		dst = e.emit(dst, llm.Held, event{Type: evSummaryDone, ItemID: it.id, OutputIndex: &it.index, SummaryIndex: &zero, Text: &text})
		dst = e.emit(dst, llm.Held, event{Type: evSummaryPartDone, ItemID: it.id, OutputIndex: &it.index, SummaryIndex: &zero,
			Part: summaryText{"summary_text", text}})
	}
	return e.itemDone(dst, it)
}

func (e *encoder) closeCall(dst []llm.Event, n int) []llm.Event {
	it, ok := e.tools[n]
	if !ok || it.done {
		return dst
	}
	args := orEmptyObject(it.text.String())
	dst = e.emit(dst, llm.Held, event{Type: evArgsDone, ItemID: it.id, OutputIndex: &it.index, Arguments: &args, Name: it.name})
	return e.itemDone(dst, it)
}

// delta appends a delta event, written by hand: these are most of a
// stream's events, and the encoder's cost is theirs.
func (e *encoder) delta(dst []llm.Event, typ string, it *item, index string, text string) []llm.Event {
	b := make([]byte, 0, 100+len(typ)+len(it.id)+len(index)+len(text))
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = strconv.AppendInt(b, int64(e.seq), 10)
	b = append(b, `,"item_id":"`...)
	b = append(b, it.id...)
	b = append(b, `","output_index":`...)
	b = strconv.AppendInt(b, int64(it.index), 10)
	b = append(b, index...)
	b = append(b, `,"delta":`...)
	b = jsonscan.AppendString(b, text)
	if typ == evTextDelta {
		b = append(b, `,"logprobs":[]`...)
	}
	b = append(b, '}')
	e.seq++
	return append(dst, llm.Event{Kind: llm.Content, Data: b})
}

func (e *encoder) Encode(dst []llm.Event, d llm.Delta) []llm.Event {
	if e.ended {
		return dst
	}
	switch d.Kind {
	case llm.DeltaText:
		if d.Text == "" {
			return dst
		}
		dst = e.start(dst)
		dst = e.closeReasoning(dst)
		if e.msg == nil {
			e.msg = &item{kind: itemMessage, id: newID("msg_")}
			dst = e.open(dst, e.msg, llm.Held)
			dst = e.emit(dst, llm.Held, event{Type: evPartAdded, ItemID: e.msg.id, OutputIndex: &e.msg.index, ContentIndex: &zero,
				Part: outputText{Type: "output_text", Text: "", Annotations: []any{}, Logprobs: []any{}}})
		}
		e.msg.text.WriteString(d.Text)
		dst = e.delta(dst, evTextDelta, e.msg, `,"content_index":0`, d.Text)
	case llm.DeltaReasoning:
		if d.Text == "" && d.Signature == "" && d.Redacted == "" {
			return dst
		}
		dst = e.start(dst)
		dst = e.closeMessage(dst)
		if e.rs == nil {
			e.rs = &item{kind: itemReasoning, id: newID("rs_")}
			kind := llm.Held
			if d.Redacted != "" {
				kind = llm.Content
			}
			dst = e.open(dst, e.rs, kind)
		}
		e.rs.sig += d.Signature
		e.rs.red += d.Redacted
		if d.Text != "" {
			if !e.rs.summary {
				e.rs.summary = true
				dst = e.emit(dst, llm.Held, event{Type: evSummaryPartAdded, ItemID: e.rs.id, OutputIndex: &e.rs.index, SummaryIndex: &zero,
					Part: summaryText{"summary_text", ""}})
			}
			e.rs.text.WriteString(d.Text)
			dst = e.delta(dst, evSummaryDelta, e.rs, `,"summary_index":0`, d.Text)
		}
	case llm.DeltaToolStart:
		dst = e.start(dst)
		dst = e.startCall(dst, d.Index, d.ID, d.Name)
	case llm.DeltaToolArgs:
		dst = e.start(dst)
		it, ok := e.tools[d.Index]
		if !ok || it.done {
			// Arguments before their call's start: start it nameless.
			dst = e.startCall(dst, d.Index, "", "")
			it = e.tools[d.Index]
		}
		if d.Text == "" || it.done {
			return dst
		}
		it.text.WriteString(d.Text)
		dst = e.delta(dst, evArgsDelta, it, "", d.Text)
	case llm.DeltaToolEnd:
		dst = e.closeCall(dst, d.Index)
	case llm.DeltaFinish:
		e.finish = d.Finish
	case llm.DeltaUsage:
		if d.Usage != nil {
			u := *d.Usage
			e.usage = &u
		}
	}
	return dst
}

func (e *encoder) startCall(dst []llm.Event, n int, id, name string) []llm.Event {
	if _, ok := e.tools[n]; ok {
		return dst // a repeated start of the same call
	}
	dst = e.closeMessage(dst)
	dst = e.closeReasoning(dst)
	it := &item{kind: itemCall, id: newID("fc_"), name: name, callID: callID(id)}
	e.tools[n] = it
	return e.open(dst, it, llm.Content)
}

// End closes the open items and writes response.completed, or
// response.incomplete for an answer cut short, with the whole output and
// the usage.
func (e *encoder) End(dst []llm.Event) []llm.Event {
	if e.ended {
		return dst
	}
	dst = e.start(dst)
	dst = e.closeMessage(dst)
	dst = e.closeReasoning(dst)
	calls := make([]int, 0, len(e.tools))
	for n := range e.tools {
		calls = append(calls, n)
	}
	slices.Sort(calls)
	for _, n := range calls {
		dst = e.closeCall(dst, n)
	}
	e.ended = true
	r := e.response("completed")
	for _, it := range e.items {
		r.Output = append(r.Output, it.value("completed"))
	}
	r.finish(e.finish, e.usage)
	typ := evCompleted
	if r.Status == "incomplete" {
		typ = evIncomplete
	}
	dst = e.emit(dst, llm.Held, event{Type: typ, Response: r})
	dst[len(dst)-1].Usage = e.usage
	return dst
}
