// Package toy is a small invented wire format that exists only for tests.
// It shows, by being added to a registry with one line, that everything
// FreeLane knows about a dialect lives in the dialect's own package: a
// toy client and a toy upstream pass the same conformance table as the
// real vendors, relayed and translated, streamed and not.
//
// The format on the wire:
//
//	request  {"model":"m","stream":true,"max":64,"sys":"Be brief.",
//	          "turns":[{"who":"user","say":"hi"},
//	                   {"who":"bot","calls":[{"id":"c1","fn":"f","args":"{}"}]},
//	                   {"who":"tool","to":"c1","fn":"f","say":"42"}],
//	          "tools":[{"fn":"f","about":"...","schema":{...}}]}
//	answer   {"id":"toy-1","model":"m","out":[{"think":"..."},{"say":"Hello"},
//	          {"call":{"id":"c1","fn":"f","args":"{}"}}],"stop":"end","used":{"in":3,"out":2}}
//	stream   data: {"say":"Hel"} / {"think":"..."} / {"call":{"n":0,"id":"c1","fn":"f"}}
//	         / {"args":{"n":0,"more":"{\"x\""}} / {"stop":"end"} / {"used":{"in":3,"out":2}}
//	         and last "data: fin"
//	error    {"oops":{"status":429,"kind":"busy","code":"...","why":"..."}}
//
// Stops are end, max, calls and filter. The caller's key travels in the
// Toy-Key header.
package toy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// Name is the dialect's name in the neutral model.
const Name llm.Dialect = "toy"

// Kind is the provider kind a configuration names for a toy upstream.
const Kind = "toy"

// KeyHeader carries the caller's key, inbound and upstream.
const KeyHeader = "Toy-Key"

// Codec is the dialect, both directions, and its protocol.Wire.
var Codec codec

type codec struct{}

type request struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream,omitempty"`
	Max    int    `json:"max,omitempty"`
	Sys    string `json:"sys,omitempty"`
	Turns  []turn `json:"turns"`
	Tools  []tool `json:"tools,omitempty"`
}

type turn struct {
	Who   string `json:"who"`
	Say   string `json:"say,omitempty"`
	Think string `json:"think,omitempty"`
	Calls []call `json:"calls,omitempty"`
	To    string `json:"to,omitempty"`
	Fn    string `json:"fn,omitempty"`
}

type call struct {
	ID   string `json:"id"`
	Fn   string `json:"fn"`
	Args string `json:"args"`
}

type tool struct {
	Fn     string          `json:"fn"`
	About  string          `json:"about,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

type answer struct {
	ID    string  `json:"id"`
	Model string  `json:"model"`
	Out   []piece `json:"out"`
	Stop  string  `json:"stop"`
	Used  *used   `json:"used,omitempty"`
}

type piece struct {
	Say   string `json:"say,omitempty"`
	Think string `json:"think,omitempty"`
	Call  *call  `json:"call,omitempty"`
}

type used struct {
	In  int `json:"in"`
	Out int `json:"out"`
}

type event struct {
	Say   string     `json:"say,omitempty"`
	Think string     `json:"think,omitempty"`
	Call  *callStart `json:"call,omitempty"`
	Args  *args      `json:"args,omitempty"`
	Stop  string     `json:"stop,omitempty"`
	Used  *used      `json:"used,omitempty"`
	Oops  *oops      `json:"oops,omitempty"`
}

type callStart struct {
	N  int    `json:"n"`
	ID string `json:"id"`
	Fn string `json:"fn"`
}

type args struct {
	N    int    `json:"n"`
	More string `json:"more"`
}

type oops struct {
	Status int    `json:"status"`
	Kind   string `json:"kind,omitempty"`
	Code   string `json:"code,omitempty"`
	Why    string `json:"why"`
}

var stops = map[string]llm.FinishReason{
	"end": llm.FinishStop, "max": llm.FinishLength, "calls": llm.FinishToolCalls, "filter": llm.FinishContentFilter,
}

func stopOf(f llm.FinishReason) string {
	for w, r := range stops {
		if r == f {
			return w
		}
	}
	return "end"
}

func (codec) Dialect() llm.Dialect { return Name }

// ParseRequest reads a toy request; only chat exists in this format.
func (codec) ParseRequest(ep llm.Endpoint, body []byte) (*llm.Request, error) {
	if ep != llm.Chat {
		return nil, llm.BadRequest("", "the toy format has chat only")
	}
	var rq request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rq); err != nil {
		return nil, llm.BadRequest("", "not a toy request: %s", llm.Truncate(err.Error(), 80))
	}
	switch {
	case rq.Model == "":
		return nil, llm.BadRequest("model", "model is required")
	case len(rq.Model) > llm.MaxModelName:
		return nil, llm.ModelTooLong(len(rq.Model))
	case len(rq.Turns) == 0:
		return nil, llm.BadRequest("turns", "turns is required")
	}
	for i, t := range rq.Turns {
		if t.Who != "user" && t.Who != "bot" && t.Who != "tool" {
			return nil, llm.BadRequest(fmt.Sprintf("turns[%d].who", i), "who must be user, bot or tool")
		}
	}
	r := llm.NewRequest(&source{body: body, rq: rq})
	r.Endpoint, r.Dialect, r.Model, r.Stream, r.MaxTokens = ep, Name, rq.Model, rq.Stream, rq.Max
	// Toy streams always end with their usage.
	r.WantsUsage = rq.Stream
	if len(rq.Tools) > 0 {
		r.Needs |= llm.CapTools
	}
	return r, nil
}

// source is a parsed toy request.
type source struct {
	body []byte
	rq   request
}

func (s *source) Raw() []byte { return s.body }

// Rewrite re-encodes the request with the upstream's model and edits. A
// real dialect keeps the caller's bytes; the toy, whose requests are small
// and only seen in tests, re-encodes.
func (s *source) Rewrite(model string, e llm.Edits) []byte {
	rq := s.rq
	rq.Model = model
	if e.MaxOutput > 0 && (rq.Max == 0 || rq.Max > e.MaxOutput) {
		rq.Max = e.MaxOutput
	}
	b, _ := json.Marshal(rq)
	return b
}

func (s *source) Conversation() (*llm.Conversation, error) {
	rq := s.rq
	c := &llm.Conversation{MaxOutput: rq.Max, Stream: rq.Stream, IncludeUsage: rq.Stream}
	if rq.Sys != "" {
		c.System = []llm.Part{{Kind: llm.PartText, Text: rq.Sys}}
	}
	for _, t := range rq.Turns {
		var m llm.Message
		switch t.Who {
		case "user":
			m = llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: t.Say}}}
		case "bot":
			m.Role = llm.RoleAssistant
			if t.Think != "" {
				m.Parts = append(m.Parts, llm.Part{Kind: llm.PartReasoning, Text: t.Think})
			}
			if t.Say != "" {
				m.Parts = append(m.Parts, llm.Part{Kind: llm.PartText, Text: t.Say})
			}
			for _, cl := range t.Calls {
				m.Parts = append(m.Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: cl.ID, Name: cl.Fn, Arguments: cl.Args}})
			}
		case "tool":
			m = llm.Message{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{
				CallID: t.To, Name: t.Fn, Content: []llm.Part{{Kind: llm.PartText, Text: t.Say}}}}}}
		}
		c.Messages = append(c.Messages, m)
	}
	for _, tl := range rq.Tools {
		c.Tools = append(c.Tools, llm.Tool{Name: tl.Fn, Description: tl.About, Parameters: tl.Schema})
	}
	return c, nil
}

// EncodeRequest writes a conversation as a toy request.
func (codec) EncodeRequest(c *llm.Conversation, model string, e llm.Edits) ([]byte, error) {
	rq := request{Model: model, Stream: c.Stream, Max: c.MaxOutput}
	if e.MaxOutput > 0 && (rq.Max == 0 || rq.Max > e.MaxOutput) {
		rq.Max = e.MaxOutput
	}
	var sys []string
	for _, p := range c.System {
		sys = append(sys, p.Text)
	}
	rq.Sys = strings.Join(sys, "\n")
	for _, m := range c.Messages {
		switch m.Role {
		case llm.RoleUser:
			var say []string
			for _, p := range m.Parts {
				if p.Kind == llm.PartText {
					say = append(say, p.Text)
				}
				if p.Kind == llm.PartToolResult && p.ToolResult != nil {
					rq.Turns = append(rq.Turns, resultTurn(p.ToolResult))
				}
			}
			if len(say) > 0 {
				rq.Turns = append(rq.Turns, turn{Who: "user", Say: strings.Join(say, "\n")})
			}
		case llm.RoleAssistant:
			t := turn{Who: "bot"}
			for _, p := range m.Parts {
				switch p.Kind {
				case llm.PartText:
					t.Say += p.Text
				case llm.PartReasoning:
					t.Think += p.Text
				case llm.PartToolCall:
					t.Calls = append(t.Calls, call{ID: p.ToolCall.ID, Fn: p.ToolCall.Name, Args: p.ToolCall.Arguments})
				}
			}
			rq.Turns = append(rq.Turns, t)
		case llm.RoleTool:
			for _, p := range m.Parts {
				if p.ToolResult != nil {
					rq.Turns = append(rq.Turns, resultTurn(p.ToolResult))
				}
			}
		}
	}
	for _, tl := range c.Tools {
		rq.Tools = append(rq.Tools, tool{Fn: tl.Name, About: tl.Description, Schema: tl.Parameters})
	}
	return json.Marshal(rq)
}

func resultTurn(r *llm.ToolResult) turn {
	var say []string
	for _, q := range r.Content {
		say = append(say, q.Text)
	}
	return turn{Who: "tool", To: r.CallID, Fn: r.Name, Say: strings.Join(say, "\n")}
}

// DecodeResponse reads a whole toy answer.
func (codec) DecodeResponse(body []byte) (*llm.Answer, error) {
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("toy: not an answer: %w", err)
	}
	out := &llm.Answer{ID: a.ID, Model: a.Model, Finish: stops[a.Stop]}
	for _, p := range a.Out {
		switch {
		case p.Call != nil:
			out.Parts = append(out.Parts, llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: p.Call.ID, Name: p.Call.Fn, Arguments: p.Call.Args}})
		case p.Think != "":
			out.Parts = append(out.Parts, llm.Part{Kind: llm.PartReasoning, Text: p.Think})
		default:
			out.Parts = append(out.Parts, llm.Part{Kind: llm.PartText, Text: p.Say})
		}
	}
	if a.Used != nil {
		out.Usage = &llm.Usage{PromptTokens: a.Used.In, CompletionTokens: a.Used.Out, TotalTokens: a.Used.In + a.Used.Out}
	}
	return out, nil
}

// EncodeResponse writes a whole toy answer.
func (codec) EncodeResponse(a *llm.Answer, o protocol.ResponseOptions) ([]byte, error) {
	out := answer{ID: "toy-" + o.ID, Model: o.Model, Out: []piece{}, Stop: stopOf(a.Finish)}
	for _, p := range a.Parts {
		switch p.Kind {
		case llm.PartText:
			out.Out = append(out.Out, piece{Say: p.Text})
		case llm.PartReasoning:
			out.Out = append(out.Out, piece{Think: p.Text})
		case llm.PartToolCall:
			out.Out = append(out.Out, piece{Call: &call{ID: p.ToolCall.ID, Fn: p.ToolCall.Name, Args: p.ToolCall.Arguments}})
		}
	}
	if a.Usage != nil {
		out.Used = &used{In: a.Usage.PromptTokens, Out: a.Usage.CompletionTokens}
	}
	return json.Marshal(out)
}

var fin = []byte("fin")

// EventName is empty: toy events are not named.
func (codec) EventName([]byte) string { return "" }

// StreamEnd is the fin line that ends every complete toy stream.
func (codec) StreamEnd() []byte { return []byte("data: fin\n\n") }

// NewStreamDecoder reads one toy stream.
func (codec) NewStreamDecoder() protocol.StreamDecoder { return &decoder{} }

type decoder struct{}

func parseEvent(data []byte) (event, bool, error) {
	if bytes.Equal(bytes.TrimSpace(data), fin) {
		return event{}, true, nil
	}
	var ev event
	if err := json.Unmarshal(data, &ev); err != nil {
		return event{}, false, protocol.ErrMalformed
	}
	if ev.Oops != nil {
		return ev, false, oopsError(ev.Oops, data)
	}
	return ev, false, nil
}

func oopsError(o *oops, data []byte) *llm.Error {
	e := &llm.Error{Class: llm.Transient, Status: http.StatusOK, Code: o.Code, Dialect: Name, Body: bytes.Clone(data),
		Message: "upstream error mid-stream: " + llm.Truncate(o.Why, 200)}
	if o.Kind == "busy" || o.Status == http.StatusTooManyRequests {
		e.Class = llm.RateLimited
	}
	return e
}

func (d *decoder) Decode(dst []llm.Delta, _, data []byte) ([]llm.Delta, bool, error) {
	ev, end, err := parseEvent(data)
	if end || err != nil {
		return dst, end, err
	}
	switch {
	case ev.Say != "":
		dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: ev.Say})
	case ev.Think != "":
		dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Text: ev.Think})
	case ev.Call != nil:
		dst = append(dst, llm.Delta{Kind: llm.DeltaToolStart, Index: ev.Call.N, ID: ev.Call.ID, Name: ev.Call.Fn})
	case ev.Args != nil:
		dst = append(dst, llm.Delta{Kind: llm.DeltaToolArgs, Index: ev.Args.N, Text: ev.Args.More})
	case ev.Stop != "":
		dst = append(dst, llm.Delta{Kind: llm.DeltaFinish, Finish: stops[ev.Stop]})
	}
	if ev.Used != nil {
		dst = append(dst, llm.Delta{Kind: llm.DeltaUsage, Usage: &llm.Usage{PromptTokens: ev.Used.In, CompletionTokens: ev.Used.Out, TotalTokens: ev.Used.In + ev.Used.Out}})
	}
	return dst, false, nil
}

func (d *decoder) Classify(_, data []byte) (llm.EventKind, *llm.Usage, error) {
	ev, end, err := parseEvent(data)
	switch {
	case err != nil:
		return llm.Held, nil, err
	case end:
		return llm.Done, nil, nil
	case ev.Say != "" || ev.Think != "" || ev.Call != nil || ev.Args != nil:
		return llm.Content, nil, nil
	case ev.Used != nil:
		return llm.UsageOnly, &llm.Usage{PromptTokens: ev.Used.In, CompletionTokens: ev.Used.Out, TotalTokens: ev.Used.In + ev.Used.Out}, nil
	}
	return llm.Held, nil, nil
}

// NewStreamEncoder writes one toy stream for a client.
func (codec) NewStreamEncoder(protocol.ResponseOptions) protocol.StreamEncoder { return &encoder{} }

type encoder struct{ finished bool }

func (e *encoder) Encode(dst []llm.Event, d llm.Delta) []llm.Event {
	var ev event
	kind := llm.Content
	switch d.Kind {
	case llm.DeltaText:
		if d.Text == "" {
			return dst
		}
		ev.Say = d.Text
	case llm.DeltaReasoning:
		if d.Text == "" {
			return dst
		}
		ev.Think = d.Text
	case llm.DeltaToolStart:
		ev.Call = &callStart{N: d.Index, ID: d.ID, Fn: d.Name}
	case llm.DeltaToolArgs:
		if d.Text == "" {
			return dst
		}
		ev.Args = &args{N: d.Index, More: d.Text}
	case llm.DeltaFinish:
		if e.finished {
			return dst
		}
		e.finished = true
		ev.Stop, kind = stopOf(d.Finish), llm.Held
	case llm.DeltaUsage:
		if d.Usage == nil {
			return dst
		}
		ev.Used, kind = &used{In: d.Usage.PromptTokens, Out: d.Usage.CompletionTokens}, llm.UsageOnly
		b, _ := json.Marshal(ev)
		return append(dst, llm.Event{Kind: kind, Data: b, Usage: d.Usage})
	default:
		return dst
	}
	b, _ := json.Marshal(ev)
	return append(dst, llm.Event{Kind: kind, Data: b})
}

// End adds the stop when the answer ended without one.
func (e *encoder) End(dst []llm.Event) []llm.Event {
	if e.finished {
		return dst
	}
	e.finished = true
	return append(dst, llm.Event{Kind: llm.Held, Data: []byte(`{"stop":"end"}`)})
}

// DecodeError reads a toy error body.
func (codec) DecodeError(body []byte) (protocol.ErrorInfo, bool) {
	var b struct {
		Oops *oops `json:"oops"`
	}
	if json.Unmarshal(body, &b) != nil || b.Oops == nil {
		return protocol.ErrorInfo{}, false
	}
	return protocol.ErrorInfo{Status: b.Oops.Status, Type: b.Oops.Kind, Code: b.Oops.Code, Message: b.Oops.Why}, true
}

// EncodeError writes a toy error body.
func (codec) EncodeError(e protocol.ErrorInfo) []byte {
	b, _ := json.Marshal(struct {
		Oops oops `json:"oops"`
	}{oops{Status: e.Status, Kind: kindOf(e.Status), Code: e.Code, Why: e.Message}})
	return b
}

func kindOf(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "busy"
	case status >= 500:
		return "broken"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "who"
	}
	return "bad"
}

// EncodeStreamError is the oops event that ends a broken stream.
func (codec) EncodeStreamError(e protocol.ErrorInfo) llm.Event {
	return llm.Event{Kind: llm.Held, Data: Codec.EncodeError(e)}
}

// Endpoints is chat only.
func (codec) Endpoints() []llm.Endpoint { return []llm.Endpoint{llm.Chat} }

// Path is /talk for every call; the body says whether to stream.
func (codec) Path(llm.Endpoint, string, bool) string { return "/talk" }

// Header sends the key in Toy-Key.
func (codec) Header(h http.Header, key string) {
	if key != "" {
		h.Set(KeyHeader, key)
	}
	h.Set("Content-Type", "application/json")
}

// Classify reads an oops body, which the generic rules cannot: its code
// and its words, and a prompt too long for the model.
func (codec) Classify(e *llm.Error, status int, _ http.Header, body []byte, _ time.Time) {
	info, ok := Codec.DecodeError(body)
	if !ok {
		return
	}
	e.Code = info.Code
	if info.Message != "" {
		e.Message = fmt.Sprintf("HTTP %d: %s", status, llm.Truncate(info.Message, 200))
	}
	if status >= 400 && status < 500 && status != http.StatusTooManyRequests && strings.Contains(info.Code, "context_length") {
		e.Class = llm.TooLong
	}
}

// CheckAnswer accepts an answer with something in it and reads its usage.
func (codec) CheckAnswer(_ llm.Endpoint, body []byte) (llm.Usage, error) {
	a, err := Codec.DecodeResponse(body)
	if err != nil {
		return llm.Usage{}, llm.SoftError(llm.SubMalformed, "unparseable answer: %s", llm.Truncate(err.Error(), 80))
	}
	var u llm.Usage
	if a.Usage != nil {
		u = *a.Usage
	}
	if !a.Usable() {
		return u, llm.SoftError(llm.SubEmpty, "empty answer")
	}
	return u, nil
}

// Prefix is where the toy's clients call FreeLane.
const Prefix = "/toy/"

// TalkPath is the toy's one route, on FreeLane and on a toy upstream.
const TalkPath = "/toy/talk"

// inbound is how toy clients call FreeLane: one route, a key header, and
// every request under /toy/ answered in the toy's envelope.
var inbound = &protocol.Inbound{
	Prefixes: []string{Prefix},
	Routes: []protocol.Route{{
		Pattern: "POST " + TalkPath,
		Call:    protocol.Call{Kind: protocol.CallGenerate, Endpoint: llm.Chat},
		Listed:  TalkPath,
	}},
	Claims:     func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, Prefix) },
	KeyHeaders: []protocol.KeyHeader{{Name: KeyHeader}},
}

// Dialect is the toy's registry entry. Its upstreams are called through
// the codec's wire; the toy has no model list and sends no rate-limit
// headers.
var Dialect = protocol.Dialect{Codec: Codec, Inbound: inbound, Kind: Kind, Outbound: protocol.Outbound{Wire: Codec}}
