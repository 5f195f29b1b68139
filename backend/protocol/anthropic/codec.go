// Package anthropic is Anthropic's Messages API dialect: requests, answers,
// streams and errors, both to and from FreeLane's neutral model, and what an
// upstream client needs to call a server that speaks it (Anthropic itself
// and the vendors that offer an Anthropic-compatible endpoint).
package anthropic

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
)

// Codec is the dialect; it implements protocol.Codec and protocol.Wire.
var Codec codec

type codec struct{}

// Version is the API version FreeLane speaks, sent as anthropic-version.
const Version = "2023-06-01"

// defaultMaxTokens is max_tokens when neither the conversation nor the
// upstream says: Anthropic requires the field, and this is enough for an
// ordinary answer on every Claude model.
const defaultMaxTokens = 4096

func (codec) Dialect() llm.Dialect { return llm.DialectAnthropic }

// Endpoints lists what the Messages API serves: chat only; Anthropic has
// no completions or embeddings endpoint.
func (codec) Endpoints() []llm.Endpoint { return []llm.Endpoint{llm.Chat} }

// Path is the same for streamed and whole answers; the body's stream field
// decides.
func (codec) Path(llm.Endpoint, string, bool) string { return "/messages" }

// Header sets the key and the API version; a version already set (by the
// backend's configuration) is left alone.
func (codec) Header(h http.Header, key string) {
	authorize(h, key)
	h.Set("Content-Type", "application/json")
}

var streamEnd = []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")

// StreamEnd is the message_stop event, which ends every complete stream.
// StreamEnd's full slice expression makes an append copy instead of
// writing into the shared array.
func (codec) StreamEnd() []byte { return streamEnd[:len(streamEnd):len(streamEnd)] }

// EventName is an event's type, which Anthropic also sends as its SSE
// event name ("event: content_block_delta"). Its events put the type
// first, so the scan stops at the first member.
func (codec) EventName(data []byte) string {
	name := ""
	i := jsonscan.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return ""
	}
	jsonscan.EachMember(data, i, func(k []byte, vs, ve int) bool {
		if string(k) != "type" {
			return true
		}
		if v := data[vs:ve]; len(v) > 1 && v[0] == '"' {
			name = eventNames[string(v[1:len(v)-1])]
		}
		return false
	})
	return name
}

// eventNames are the event types of a Messages stream; another type is
// sent without a name, and a client reads it by its type.
var eventNames = map[string]string{
	"message_start": "message_start", "content_block_start": "content_block_start",
	"content_block_delta": "content_block_delta", "content_block_stop": "content_block_stop",
	"message_delta": "message_delta", "message_stop": "message_stop", "ping": "ping", "error": "error",
}

// marshal encodes v as JSON without escaping <, > and &, as Anthropic's
// servers write it, so text reads the same on both sides.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Every value marshalled here is built from plain structs, strings
	// and already valid raw JSON, which cannot fail to encode.
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// newID returns prefix and 24 random hex digits, for an id FreeLane has to
// make up (a message or a tool call whose source had none).
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
