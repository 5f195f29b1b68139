package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// streamEvent is any event of a Messages API stream.
type streamEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	// Message is message_start's.
	Message *struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage *usage `json:"usage"`
	} `json:"message"`
	ContentBlock *inBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	// Usage is message_delta's: output_tokens, and on newer servers the
	// input counts again.
	Usage *usage       `json:"usage"`
	Error *errorDetail `json:"error"`
}

// parse reads an event; the type in the data is trusted over the SSE
// event name, which only stands in when the data has none.
func parse(name, data []byte) (streamEvent, error) {
	var ev streamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return ev, protocol.ErrMalformed
	}
	if ev.Type == "" {
		ev.Type = string(name)
	}
	if ev.Index < 0 {
		return ev, protocol.ErrMalformed
	}
	return ev, nil
}

// streamError is the *llm.Error of an error event.
func streamError(ev streamEvent, data []byte) *llm.Error {
	t, msg := "api_error", ""
	if ev.Error != nil {
		t, msg = ev.Error.Type, ev.Error.Message
	}
	e := &llm.Error{
		Class:   llm.Transient,
		Status:  http.StatusOK,
		Message: "upstream error mid-stream: " + llm.Truncate(strings.TrimSpace(t+": "+msg), 200),
		Body:    bytes.Clone(data),
		Code:    t,
		Dialect: llm.DialectAnthropic,
	}
	if t == "rate_limit_error" || llm.QuotaText(msg) {
		e.Class = llm.RateLimited
	}
	return e
}

// blockKind is what a content block of a stream holds.
type blockKind uint8

const (
	blockOther blockKind = iota
	blockText
	blockThinking
	blockTool
	blockRedacted
)

// decoder converts one upstream stream.
type decoder struct {
	// start is the input counts of message_start, which message_delta
	// does not always repeat.
	start usage
	// blocks is the kind of each content block by its index, and tools
	// the tool call number of each tool_use block.
	blocks map[int]blockKind
	tools  map[int]int
	ntools int
}

// NewStreamDecoder returns a converter for one Messages API stream.
func (codec) NewStreamDecoder() protocol.StreamDecoder {
	return &decoder{blocks: map[int]blockKind{}, tools: map[int]int{}}
}

// maxBlocks bounds the content blocks one stream may open, so a hostile
// upstream cannot grow the decoder's maps without end.
const maxBlocks = 1 << 16

func (d *decoder) Decode(dst []llm.Delta, name, data []byte) ([]llm.Delta, bool, error) {
	if text, ok := scanTextDelta(data); ok {
		if text != "" {
			dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: text})
		}
		return dst, false, nil
	}
	return d.decodeParsed(dst, name, data)
}

// decodeParsed is Decode for any event, by decoding it.
func (d *decoder) decodeParsed(dst []llm.Delta, name, data []byte) ([]llm.Delta, bool, error) {
	ev, err := parse(name, data)
	if err != nil {
		return dst, false, err
	}
	switch ev.Type {
	case "message_start":
		// The input count is known from the start; reporting it at once
		// keeps it for a stream that breaks before message_delta.
		if ev.Message != nil && ev.Message.Usage != nil {
			d.start = *ev.Message.Usage
			dst = append(dst, llm.Delta{Kind: llm.DeltaUsage, Usage: ev.Message.Usage.neutral()})
		}
	case "content_block_start":
		b := ev.ContentBlock
		if b == nil {
			return dst, false, protocol.ErrMalformed
		}
		if _, seen := d.blocks[ev.Index]; !seen && len(d.blocks) >= maxBlocks {
			return dst, false, protocol.ErrMalformed
		}
		switch b.Type {
		case "text":
			d.blocks[ev.Index] = blockText
			if b.Text != "" {
				dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: b.Text})
			}
		case "thinking":
			d.blocks[ev.Index] = blockThinking
			if b.Thinking != "" || b.Signature != "" {
				dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Text: b.Thinking, Signature: b.Signature})
			}
		case "redacted_thinking":
			d.blocks[ev.Index] = blockThinking
			dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Redacted: b.Data})
		case "tool_use":
			d.blocks[ev.Index] = blockTool
			n := d.ntools
			d.tools[ev.Index] = n
			d.ntools++
			dst = append(dst, llm.Delta{Kind: llm.DeltaToolStart, Index: n, ID: b.ID, Name: b.Name})
			// The input of a start is {} and the arguments follow as
			// deltas; a server that sends the whole input here has no
			// deltas after it.
			if in := compactInput(b.Input); in != "{}" {
				dst = append(dst, llm.Delta{Kind: llm.DeltaToolArgs, Index: n, Text: in})
			}
		default:
			// Server tool calls and their results have no neutral form.
			d.blocks[ev.Index] = blockOther
		}
	case "content_block_delta":
		if ev.Delta == nil {
			return dst, false, protocol.ErrMalformed
		}
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text != "" {
				dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: ev.Delta.Text})
			}
		case "thinking_delta":
			if ev.Delta.Thinking != "" {
				dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Text: ev.Delta.Thinking})
			}
		case "signature_delta":
			if ev.Delta.Signature != "" {
				dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Signature: ev.Delta.Signature})
			}
		case "input_json_delta":
			n, ok := d.tools[ev.Index]
			if ok && ev.Delta.PartialJSON != "" {
				dst = append(dst, llm.Delta{Kind: llm.DeltaToolArgs, Index: n, Text: ev.Delta.PartialJSON})
			}
		}
	case "content_block_stop":
		if n, ok := d.tools[ev.Index]; ok && d.blocks[ev.Index] == blockTool {
			dst = append(dst, llm.Delta{Kind: llm.DeltaToolEnd, Index: n})
			d.blocks[ev.Index] = blockOther
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			dst = append(dst, llm.Delta{Kind: llm.DeltaFinish, Finish: finishReason(ev.Delta.StopReason)})
		}
		if ev.Usage != nil {
			dst = append(dst, llm.Delta{Kind: llm.DeltaUsage, Usage: d.usage(*ev.Usage)})
		}
	case "message_stop":
		return dst, true, nil
	case "error":
		return dst, false, streamError(ev, data)
	}
	// ping and event types added later carry nothing to convert.
	return dst, false, nil
}

// usage is a message_delta's usage with the prompt remembered from
// message_start when the delta does not repeat it.
func (d *decoder) usage(u usage) *llm.Usage {
	if u.prompt() == 0 {
		u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens =
			d.start.InputTokens, d.start.CacheCreationInputTokens, d.start.CacheReadInputTokens
	}
	return u.neutral()
}

// Classify says what an event means for relaying it unchanged.
func (d *decoder) Classify(name, data []byte) (llm.EventKind, *llm.Usage, error) {
	if kind, ok := classifyDelta(data); ok {
		return kind, nil, nil
	}
	return d.classifyParsed(name, data)
}

// classifyParsed is Classify for any event, by decoding it.
func (d *decoder) classifyParsed(name, data []byte) (llm.EventKind, *llm.Usage, error) {
	ev, err := parse(name, data)
	if err != nil {
		return llm.Held, nil, err
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil && ev.Message.Usage != nil {
			d.start = *ev.Message.Usage
			return llm.Held, ev.Message.Usage.neutral(), nil
		}
	case "content_block_start":
		if b := ev.ContentBlock; b != nil {
			switch b.Type {
			case "tool_use":
				return llm.Content, nil, nil
			case "text", "thinking", "redacted_thinking":
				if b.Text != "" || b.Thinking != "" || b.Data != "" {
					return llm.Content, nil, nil
				}
			}
		}
	case "content_block_delta":
		if dl := ev.Delta; dl != nil && (dl.Text != "" || dl.PartialJSON != "" || dl.Thinking != "") {
			return llm.Content, nil, nil
		}
	case "message_delta":
		if ev.Usage != nil {
			return llm.Held, d.usage(*ev.Usage), nil
		}
	case "message_stop":
		return llm.Done, nil, nil
	case "error":
		return llm.Held, nil, streamError(ev, data)
	}
	return llm.Held, nil, nil
}

// encoder writes one Messages API stream for a client. Anthropic streams
// one content block at a time, so the encoder keeps one open and closes it
// when a delta of another kind (or another tool call) comes.
type encoder struct {
	o       protocol.ResponseOptions
	started bool
	ended   bool
	// open is the open block's kind (blockOther when none is open), index
	// its index, tool the tool call it holds.
	open  blockKind
	index int
	tool  int
	// next is the index of the next block to open.
	next int
	// toolBlocks is the block index of each tool call started.
	toolBlocks map[int]int
	finish     llm.FinishReason
	usage      *llm.Usage
	calls      bool
}

// NewStreamEncoder returns a converter that writes one stream.
func (codec) NewStreamEncoder(o protocol.ResponseOptions) protocol.StreamEncoder {
	return &encoder{o: o, toolBlocks: map[int]int{}}
}

// Events' payloads, with the fields Anthropic's own events have.
type (
	messageStartEvent struct {
		Type    string     `json:"type"`
		Message outMessage `json:"message"`
	}
	blockStartEvent struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock any    `json:"content_block"`
	}
	blockDeltaEvent struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta any    `json:"delta"`
	}
	blockStopEvent struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	messageDeltaEvent struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage deltaUsage `json:"usage"`
	}
	// deltaUsage is message_delta's usage: the whole count, since the
	// encoder's message_start goes out before the upstream has said it.
	deltaUsage struct {
		InputTokens              int `json:"input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
		OutputTokens             int `json:"output_tokens"`
	}
	textDelta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	thinkingDelta struct {
		Type     string `json:"type"`
		Thinking string `json:"thinking"`
	}
	signatureDelta struct {
		Type      string `json:"type"`
		Signature string `json:"signature"`
	}
	inputDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
)

// event is one stream event; its payload carries the event's name as its
// type, which is what the client's sink names it by (see EventName).
func event(kind llm.EventKind, payload any) llm.Event {
	return llm.Event{Kind: kind, Data: marshal(payload)}
}

// start writes message_start before the first event.
func (e *encoder) start(dst []llm.Event) []llm.Event {
	if e.started {
		return dst
	}
	e.started = true
	m := outMessage{ID: messageID(e.o.ID), Type: "message", Role: "assistant", Model: e.o.Model, Content: []any{}}
	if e.usage != nil {
		m.Usage = usageOf(*e.usage)
	}
	ev := event(llm.Held, messageStartEvent{"message_start", m})
	if e.usage != nil {
		ev.Usage = e.usage
	}
	return append(dst, ev)
}

// close closes the open block.
func (e *encoder) close(dst []llm.Event) []llm.Event {
	if e.open == blockOther {
		return dst
	}
	e.open = blockOther
	return append(dst, event(llm.Held, blockStopEvent{"content_block_stop", e.index}))
}

// begin opens a new block of kind holding content.
func (e *encoder) begin(dst []llm.Event, kind blockKind, content any, k llm.EventKind) []llm.Event {
	dst = e.close(dst)
	e.open, e.index = kind, e.next
	e.next++
	return append(dst, event(k, blockStartEvent{"content_block_start", e.index, content}))
}

func (e *encoder) delta(kind llm.EventKind, index int, d any) llm.Event {
	return event(kind, blockDeltaEvent{"content_block_delta", index, d})
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
		if e.open != blockText {
			dst = e.begin(dst, blockText, textBlock{Type: "text", Text: ""}, llm.Held)
		}
		dst = append(dst, e.delta(llm.Content, e.index, textDelta{"text_delta", d.Text}))
	case llm.DeltaReasoning:
		dst = e.start(dst)
		if d.Redacted != "" {
			// A redacted block has no deltas: it closes at once.
			dst = e.begin(dst, blockRedacted, redactedBlock{"redacted_thinking", d.Redacted}, llm.Content)
			dst = e.close(dst)
		}
		if d.Text == "" && d.Signature == "" {
			return dst
		}
		if e.open != blockThinking {
			dst = e.begin(dst, blockThinking, thinkingBlock{"thinking", "", ""}, llm.Held)
		}
		if d.Text != "" {
			dst = append(dst, e.delta(llm.Content, e.index, thinkingDelta{"thinking_delta", d.Text}))
		}
		if d.Signature != "" {
			dst = append(dst, e.delta(llm.Held, e.index, signatureDelta{"signature_delta", d.Signature}))
		}
	case llm.DeltaToolStart:
		dst = e.start(dst)
		dst = e.startTool(dst, d.Index, d.ID, d.Name)
	case llm.DeltaToolArgs:
		dst = e.start(dst)
		block, ok := e.toolBlocks[d.Index]
		if !ok {
			// Arguments before their call's start: start it nameless.
			dst = e.startTool(dst, d.Index, "", "")
			block = e.index
		}
		if d.Text == "" {
			return dst
		}
		// Blocks follow one another as in Anthropic's own streams, so a
		// fragment of a call whose block another block has closed
		// already (parallel calls interleaved, which no vendor sends)
		// can only go to that block's index, where clients that
		// finalize a block at its stop will not take it.
		dst = append(dst, e.delta(llm.Content, block, inputDelta{"input_json_delta", d.Text}))
	case llm.DeltaToolEnd:
		if e.open == blockTool && e.tool == d.Index {
			dst = e.close(dst)
		}
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

func (e *encoder) startTool(dst []llm.Event, n int, id, name string) []llm.Event {
	if _, ok := e.toolBlocks[n]; ok {
		return dst // a repeated start of the same call
	}
	e.calls = true
	dst = e.begin(dst, blockTool, toolUseBlock{Type: "tool_use", ID: toolID(id), Name: name, Input: json.RawMessage(`{}`)}, llm.Content)
	e.tool = n
	e.toolBlocks[n] = e.index
	return dst
}

// End closes the open block and writes message_delta with the stop reason
// and the usage; Codec.StreamEnd is the message_stop after it.
func (e *encoder) End(dst []llm.Event) []llm.Event {
	if e.ended {
		return dst
	}
	dst = e.start(dst)
	dst = e.close(dst)
	e.ended = true
	md := messageDeltaEvent{Type: "message_delta"}
	md.Delta.StopReason = stopReason(e.finish, e.calls)
	if e.usage != nil {
		md.Usage = deltaUsage(usageOf(*e.usage))
	}
	ev := event(llm.Held, md)
	ev.Usage = e.usage
	return append(dst, ev)
}

// classifyDelta classifies a content_block_delta, what a stream is mostly
// made of, by scanning its bytes once they are known to be valid JSON:
// decoding each one would cost more than relaying it. ok is false for any
// other event, and for one whose members are not of the types the
// decoder expects, which parse then judges.
func classifyDelta(data []byte) (kind llm.EventKind, ok bool) {
	delta, ok := blockDelta(data)
	if !ok {
		return 0, false
	}
	var v [3][]byte
	if !jsonscan.Pick(delta, classifyKeys, v[:]) {
		return 0, false
	}
	kind = llm.Held
	for _, m := range v {
		switch {
		case m == nil || string(m) == "null":
		case m[0] == '"':
			if len(m) > 2 {
				kind = llm.Content
			}
		default:
			return 0, false
		}
	}
	return kind, true
}

// blockDelta returns the delta of a content_block_delta event, read by
// scanning it once it is known to be valid JSON; ok is false for any other
// event and for one encoding/json could read otherwise (see jsonscan.Pick)
// or would refuse.
func blockDelta(data []byte) (delta []byte, ok bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || !bytes.Contains(data, contentBlockDelta) {
		return nil, false
	}
	var v [3][]byte
	if valid, picked := jsonscan.PickValid(data, eventKeys, v[:]); !valid || !picked {
		return nil, false
	}
	typ, index, delta := v[0], v[1], v[2]
	if !bytes.Equal(typ, contentBlockDelta) || !isUint(index) || len(delta) == 0 || delta[0] != '{' {
		return nil, false
	}
	return delta, true
}

// The members the scans read: of an event, of a delta for classifyDelta,
// and of a text delta.
var (
	eventKeys     = []string{"type", "index", "delta"}
	classifyKeys  = []string{"text", "partial_json", "thinking"}
	textDeltaKeys = []string{"type", "text"}
)

// isUint reports whether a JSON value is a non-negative integer.
func isUint(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// contentBlockDelta is the type of a content_block_delta event, as a JSON
// string.
var contentBlockDelta = []byte(`"content_block_delta"`)

// scanTextDelta reads the text of a text_delta, what a translated stream is
// mostly made of, by scanning the event once it is known to be valid JSON,
// as classifyDelta does and with the same care: ok is false for any other
// event and for one encoding/json could read otherwise, which parse then
// judges.
func scanTextDelta(data []byte) (text string, ok bool) {
	if !bytes.Contains(data, textDeltaType) {
		return "", false
	}
	delta, ok := blockDelta(data)
	if !ok {
		return "", false
	}
	// Other members of a text delta do not matter, but one that folds to
	// a member the decoder reads would be read by encoding/json: Pick
	// refuses those.
	var v [2][]byte
	if !jsonscan.Pick(delta, textDeltaKeys, v[:]) || !bytes.Equal(v[0], textDeltaType) {
		return "", false
	}
	switch lit := v[1]; {
	case lit == nil || string(lit) == "null":
		return "", true
	case lit[0] == '"' && utf8.Valid(lit):
		// encoding/json would put U+FFFD for bytes that are not UTF-8;
		// such a text is left to it.
		return jsonscan.Unquote(lit), true
	}
	return "", false
}

// textDeltaType is the type of a text delta, as a JSON string.
var textDeltaType = []byte(`"text_delta"`)
