// Package tokens estimates token counts offline, for the usage ledger,
// token limits and budgets when an upstream reports no usage. It uses the
// cl100k_base byte-pair encoding from tiktoken-go with the BPE tables
// embedded in the binary (tiktoken-go-loader), so nothing is downloaded at
// run time. Counts are estimates: other model families tokenize differently,
// typically within a few percent for English and code.
package tokens

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"freelane/backend/llm"
)

// Per-message framing that chat models add around each message, as
// OpenAI documents it for its chat models: 3 tokens per message, 1 more
// for a name, and 3 to prime the reply.
const (
	perMessage = 3
	perName    = 1
	perReply   = 3
)

// maxExact is how many bytes of one text are encoded exactly; longer texts
// are encoded in part and extrapolated by bytes, which keeps the cost of an
// estimate bounded however large a prompt or an answer is.
const maxExact = 64 << 10

var (
	once sync.Once
	// enc stays nil if the embedded tables cannot be read, in which case
	// Count falls back to bytes/4.
	enc *tiktoken.Tiktoken
)

func encoder() *tiktoken.Tiktoken {
	once.Do(func() {
		tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
		if e, err := tiktoken.GetEncoding("cl100k_base"); err == nil {
			enc = e
		}
		loaded.Store(true)
	})
	return enc
}

// Warm loads the encoding tables (about 100 ms and 13 MB of heap) now.
func Warm() { encoder() }

// prefetching is set by the first Prefetch, loaded once the tables are
// in (or failed to load).
var prefetching, loaded atomic.Bool

// Loaded reports whether the encoding tables have been loaded.
func Loaded() bool { return loaded.Load() }

// Prefetch starts loading the encoding tables in the background, once. A
// router that has served nothing does not hold them, which is most of its
// idle memory; the first request calls Prefetch, so that an estimate a
// later request needs finds them loaded. The goroutine ends when the
// tables are in.
func Prefetch() {
	if prefetching.Load() || !prefetching.CompareAndSwap(false, true) {
		return
	}
	go encoder()
}

// Count estimates the tokens of text.
func Count(text []byte) int {
	if len(text) == 0 {
		return 0
	}
	e := encoder()
	if e == nil {
		return (len(text) + 3) / 4
	}
	if len(text) <= maxExact {
		return len(e.EncodeOrdinary(string(text)))
	}
	// Cut on a UTF-8 boundary and scale the exact count of the head.
	cut := maxExact
	for cut > 0 && text[cut]&0xC0 == 0x80 {
		cut--
	}
	n := len(e.EncodeOrdinary(string(text[:cut])))
	return int(float64(n) * float64(len(text)) / float64(cut))
}

// message is the part of a chat message that costs prompt tokens.
type message struct {
	Role    string          `json:"role"`
	Name    string          `json:"name"`
	Content json.RawMessage `json:"content"`
	// Tool calls an assistant message made are sent back as prompt.
	ToolCalls json.RawMessage `json:"tool_calls"`
}

type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Prompt estimates the prompt tokens of a request body in OpenAI's
// shapes: for chat, the messages with their framing; for completions, the
// prompt; for embeddings, the input. Parts it cannot count (images, audio)
// count nothing. A chat request of any dialect is estimated from its
// neutral model with Conversation instead.
func Prompt(body []byte) int {
	var req struct {
		Messages []message       `json:"messages"`
		Prompt   json.RawMessage `json:"prompt"`
		Input    json.RawMessage `json:"input"`
		Tools    json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil {
		return Count(body)
	}
	if req.Messages == nil {
		return textTokens(req.Prompt) + textTokens(req.Input)
	}
	n := perReply
	for _, m := range req.Messages {
		n += perMessage + Count([]byte(m.Role)) + contentTokens(m.Content)
		if m.Name != "" {
			n += perName + Count([]byte(m.Name))
		}
		if len(m.ToolCalls) > 0 {
			n += Count(m.ToolCalls)
		}
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		// Tool schemas are rendered into the prompt in a model-specific
		// way; their JSON is a fair stand-in.
		n += Count(req.Tools)
	}
	return n
}

// contentTokens counts a message content: a string or a list of parts.
func contentTokens(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return Count([]byte(s))
	}
	var parts []part
	if json.Unmarshal(raw, &parts) == nil {
		n := 0
		for _, p := range parts {
			n += Count([]byte(p.Text))
		}
		return n
	}
	return 0
}

// textTokens counts a prompt or input: a string, a list of strings, or
// token arrays (counted by length).
func textTokens(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return Count([]byte(s))
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return 0
	}
	n := 0
	for _, item := range list {
		if json.Unmarshal(item, &s) == nil {
			n += Count([]byte(s))
			continue
		}
		var ids []int
		if json.Unmarshal(item, &ids) == nil {
			n += len(ids)
			continue
		}
		// A single token array: each element is one token.
		if len(item) > 0 && item[0] >= '0' && item[0] <= '9' {
			n++
		}
	}
	return n
}

// Conversation estimates the prompt tokens of a chat request from its
// neutral model, so that the estimate is the same whichever dialect the
// request came in: the text of the instructions and of every message
// (tool calls with their names and arguments, tool results with their
// text), the tools' names, descriptions and schemas, and a few tokens of
// framing per message, as OpenAI counts them. Images count nothing.
func Conversation(c *llm.Conversation) int {
	text, framing := conversationText(c)
	return Count(text) + framing
}

// QuickConversation is Conversation at a bounded cost, for decisions on
// the request path (a task's prompt threshold): of a text longer than
// quickSample bytes only a sample spread over it is encoded, and the
// count is scaled by length: close to Conversation (within 10% on prose
// mixed with code) at a fraction of its time.
func QuickConversation(c *llm.Conversation) int {
	text, framing := conversationText(c)
	return Sampled(text, quickSample) + framing
}

// quickSample is how many bytes QuickConversation encodes at most.
const quickSample = 8 << 10

// samplePieces is how many pieces of the text Sampled encodes.
const samplePieces = 8

// Sampled estimates the tokens of text by encoding at most budget bytes
// of it: the whole text when it is that short, else samplePieces pieces
// taken at even steps through it, whose count is scaled by the text's
// length.
func Sampled(text []byte, budget int) int {
	if len(text) <= budget || encoder() == nil {
		return Count(text)
	}
	piece := budget / samplePieces
	sampled, n := 0, 0
	for i := range samplePieces {
		start := i * len(text) / samplePieces
		end := min(start+piece, len(text))
		// Cut on UTF-8 boundaries.
		for start < end && text[start]&0xC0 == 0x80 {
			start++
		}
		for end < len(text) && end > start && text[end]&0xC0 == 0x80 {
			end--
		}
		if start >= end {
			continue
		}
		n += Count(text[start:end])
		sampled += end - start
	}
	if sampled == 0 {
		return (len(text) + 3) / 4
	}
	return int(float64(n) * float64(len(text)) / float64(sampled))
}

// conversationText is the text Conversation counts, and the tokens of
// framing its messages add.
func conversationText(c *llm.Conversation) (text []byte, framing int) {
	add := func(parts []llm.Part) {
		for _, p := range parts {
			text = append(text, p.Text...)
			if p.ToolCall != nil {
				text = append(text, p.ToolCall.Name...)
				text = append(text, p.ToolCall.Arguments...)
			}
			if p.ToolResult != nil {
				for _, q := range p.ToolResult.Content {
					text = append(text, q.Text...)
				}
			}
			text = append(text, '\n')
		}
	}
	add(c.System)
	for _, m := range c.Messages {
		add(m.Parts)
	}
	for _, t := range c.Tools {
		text = append(text, t.Name...)
		text = append(text, t.Description...)
		text = append(text, t.Parameters...)
	}
	// The instructions are a message of their own in OpenAI's count; the
	// role's name is about one token.
	messages := len(c.Messages)
	if len(c.System) > 0 {
		messages++
	}
	return text, (perMessage+1)*messages + perReply
}
