// Package responses is OpenAI's Responses API dialect (/v1/responses), as
// Codex CLI and the openai SDKs speak it: requests parsed into FreeLane's
// neutral model, and answers, streams and errors written from it, for
// clients; and the same the other way (see upstream.go), which no provider
// kind uses yet.
package responses

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// Codec is the dialect; it implements protocol.Codec.
var Codec codec

type codec struct{}

func (codec) Dialect() llm.Dialect { return llm.DialectResponses }

// StreamEnd is nil: a Responses stream ends with its response.completed
// event, and no marker follows it.
func (codec) StreamEnd() []byte { return nil }

// EventName is the event's type, which the Responses API also sends as
// the SSE event name. FreeLane's events put the type first, so the scan
// stops at the first member.
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
		if v := data[vs:ve]; len(v) > 2 && v[0] == '"' && bytes.IndexByte(v[1:len(v)-1], '\\') < 0 {
			name = eventName(v[1 : len(v)-1])
		}
		return false
	})
	return name
}

// eventName keeps the names of events this package writes, without
// allocating for them; anything else goes without a name.
func eventName(t []byte) string {
	if n, ok := eventNames[string(t)]; ok {
		return n
	}
	return ""
}

var eventNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{
		evCreated, evInProgress, evCompleted, evIncomplete, evFailed, evError,
		evItemAdded, evItemDone, evPartAdded, evPartDone, evTextDelta, evTextDone,
		evArgsDelta, evArgsDone, evSummaryPartAdded, evSummaryPartDone,
		evSummaryDelta, evSummaryDone,
	} {
		m[n] = n
	}
	return m
}()

// The event types of a Responses stream.
const (
	evCreated          = "response.created"
	evInProgress       = "response.in_progress"
	evCompleted        = "response.completed"
	evIncomplete       = "response.incomplete"
	evFailed           = "response.failed"
	evError            = "error"
	evItemAdded        = "response.output_item.added"
	evItemDone         = "response.output_item.done"
	evPartAdded        = "response.content_part.added"
	evPartDone         = "response.content_part.done"
	evTextDelta        = "response.output_text.delta"
	evTextDone         = "response.output_text.done"
	evArgsDelta        = "response.function_call_arguments.delta"
	evArgsDone         = "response.function_call_arguments.done"
	evSummaryPartAdded = "response.reasoning_summary_part.added"
	evSummaryPartDone  = "response.reasoning_summary_part.done"
	evSummaryDelta     = "response.reasoning_summary_text.delta"
	evSummaryDone      = "response.reasoning_summary_text.done"
)

// marshal encodes v as JSON without escaping <, > and &, as OpenAI's
// servers write it.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Every value marshalled here is built from plain structs, strings
	// and already valid raw JSON, which cannot fail to encode.
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// newID returns prefix and 32 random hex digits.
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// ResponseID is the id of an answer written for o: always a new one.
// o.ID comes from the upstream's answer when one is translated, and an
// upstream's id is never used: stored responses are found by their id, and
// an upstream may give every answer the same one. The API layer replaces
// it in turn with the id it minted for the request (SetID, SetEventID).
func ResponseID(protocol.ResponseOptions) string { return NewResponseID() }
