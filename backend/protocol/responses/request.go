package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
)

// Limits on a request, beyond the body size the API enforces. They are far
// above what Codex or an SDK sends in a long session and keep a hostile
// body from costing more than its size in work.
const (
	// MaxItems is the most input items a request (with the stored
	// conversation it continues) may hold.
	MaxItems = 50000
	// MaxTools is the most tools a request may declare.
	MaxTools = 1024
	// MaxIDLength is the longest response id accepted.
	MaxIDLength = 128
	// MaxMetadata is the most metadata pairs, as OpenAI allows.
	MaxMetadata = 16
	// MaxMetadataKey and MaxMetadataValue bound each pair, as OpenAI does.
	MaxMetadataKey   = 64
	MaxMetadataValue = 512
)

// Source is a Responses API request body, scanned just enough to route it.
// The whole body is decoded into the neutral model only when a backend
// needs it, which every backend does: no upstream speaks this dialect.
type Source struct {
	body                 []byte
	modelStart, modelEnd int
	input                []byte
	prev                 string
	store                bool
	// history is the conversation of the stored response the request
	// continues, as a JSON array of items, nil when it continues none.
	history []byte
	// trigger is set when the input ends with a compaction_trigger item:
	// Codex's way of asking for the conversation compacted in an ordinary
	// turn.
	trigger bool
	// idents are the members that name the end user (user,
	// safety_identifier), whose value Rewrite replaces.
	idents []jsonscan.Member
}

// ParseRequest validates a Responses API body. As in the other dialects,
// json.Valid checks the whole body and a scan without reflection finds and
// checks the fields routing needs.
func (codec) ParseRequest(ep llm.Endpoint, body []byte) (*llm.Request, error) {
	if ep != llm.Chat {
		return nil, llm.BadRequest("", "the Responses API serves chat only, not %s", ep)
	}
	return parse(body, false)
}

// ParseCompact validates the body of a compaction request
// (/v1/responses/compact): a Responses request whose answer is the
// conversation compacted.
func ParseCompact(body []byte) (*llm.Request, error) { return parse(body, true) }

func parse(body []byte, compact bool) (*llm.Request, error) {
	if !json.Valid(body) {
		return nil, llm.BadRequest("", "request body is not valid JSON: %s", jsonscan.SyntaxError(body))
	}
	start := jsonscan.SkipSpace(body, 0)
	if body[start] != '{' {
		return nil, llm.BadRequest("", "request body must be a JSON object")
	}
	src := &Source{body: body, modelStart: -1, store: true}
	r := llm.NewRequest(src)
	r.Endpoint, r.Dialect = llm.Chat, llm.DialectResponses
	var err error
	var tools, input []byte
	jsonscan.MemberSpan(body, start, func(key []byte, ks, vs, ve int) bool {
		v := body[vs:ve]
		switch string(key) {
		case "model":
			r.Model, err = llm.ModelValue(v)
			src.modelStart, src.modelEnd = vs, ve
		case "input":
			input = v
		case "instructions":
			if v[0] != '"' && !isNull(v) {
				err = llm.BadRequest("instructions", "instructions must be a string")
			}
		case "stream":
			r.Stream, err = llm.StreamValue(v)
		case "store":
			switch string(v) {
			case "true", "null":
			case "false":
				src.store = false
			default:
				err = llm.BadRequest("store", "store must be true or false")
			}
		case "previous_response_id":
			src.prev, err = idValue(v)
		case "max_output_tokens":
			if !isNull(v) {
				r.MaxTokens = jsonscan.SmallInt(v)
				if r.MaxTokens <= 0 {
					err = llm.BadRequest("max_output_tokens", "max_output_tokens must be a positive integer (at most 999999999)")
				}
			}
		case "temperature", "top_p":
			if !isNull(v) && !isNumber(v) {
				err = llm.BadRequest(string(key), "%s must be a number", key)
			}
		case "tools":
			tools = v
		case "tool_choice":
			err = checkToolChoice(v)
		case "text":
			if jsonFormat(v) {
				r.Needs |= llm.CapJSON
			}
		case "reasoning":
			if reasoningAsked(v) {
				r.Wants |= llm.CapReasoning
			}
		case "metadata":
			err = checkMetadata(v)
		case "prompt_cache_key":
			r.ClientSession = llm.IdentifierValue(v)
		case "safety_identifier", "user":
			// safety_identifier took over from user; a body may carry
			// both, and the newer one names the user.
			src.idents = append(src.idents, jsonscan.Member{KeyStart: ks, ValueStart: vs, ValueEnd: ve})
			if id := llm.IdentifierValue(v); id != "" && (r.ClientUser == "" || string(key) == "safety_identifier") {
				r.ClientUser = id
			}
		case "background":
			if string(v) == "true" {
				err = llm.BadRequest("background", "background responses are not supported: FreeLane answers while the client waits; leave background unset")
			}
		case "conversation":
			if !isNull(v) {
				err = llm.BadRequest("conversation", "conversation objects are not supported: FreeLane keeps conversations by previous_response_id; send that, or the whole input")
			}
		case "prompt":
			if !isNull(v) {
				err = llm.BadRequest("prompt", "prompt templates are not supported: FreeLane has no stored prompts; send instructions and input instead")
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if src.modelStart < 0 || r.Model == "" {
		return nil, llm.BadRequest("model", "model is required: use \"auto\", a chain name or provider/model")
	}
	var notes []string
	hasTools, note, err := checkTools(tools)
	if err != nil {
		return nil, err
	}
	if hasTools && !compact {
		r.Needs |= llm.CapTools
	}
	if note != "" && !compact {
		notes = append(notes, note)
	}
	vision, inNotes, last, err := checkInput(input, src.prev != "")
	if err != nil {
		return nil, err
	}
	src.trigger = last == "compaction_trigger" && !compact
	if vision {
		r.Needs |= llm.CapVision
	}
	notes = append(notes, inNotes...)
	src.input = input
	r.Notes = notes
	// Every Responses stream ends with the usage in response.completed.
	r.WantsUsage = r.Stream
	if compact {
		// A compaction is answered whole, and its summary is text.
		r.Stream, r.WantsUsage = false, false
	}
	return r, nil
}

// reasoningAsked reports whether a reasoning object asks for reasoning:
// an effort other than "none".
func reasoningAsked(v []byte) bool {
	if v[0] != '{' {
		return false
	}
	on := false
	jsonscan.EachMember(v, 0, func(k []byte, s, e int) bool {
		if string(k) == "effort" {
			ev := v[s:e]
			on = ev[0] == '"' && string(ev) != `"none"` && string(ev) != `""`
		}
		return true
	})
	return on
}

// SourceOf returns the parsed body of a request of this dialect.
func SourceOf(r *llm.Request) (*Source, bool) {
	s, ok := r.Source().(*Source)
	return s, ok
}

// PreviousResponseID is the stored response the request continues, "" for
// none.
func (s *Source) PreviousResponseID() string { return s.prev }

// Store reports whether the client wants the response stored (true unless
// it sent "store": false, as in OpenAI's API).
func (s *Source) Store() bool { return s.store }

// CompactionTriggered reports whether the request asks for its
// conversation compacted (its input ends with a compaction_trigger item):
// the answer is then one compaction item, as from /v1/responses/compact.
func (s *Source) CompactionTriggered() bool { return s.trigger }

// History is the stored conversation the request continues, nil for none.
func (s *Source) History() []byte { return s.history }

// WithHistory returns r continued from a stored conversation: items, a
// JSON array of items, come before the request's own input. The request's
// instructions are its own, as OpenAI has it: the previous response's are
// not carried over.
func WithHistory(r *llm.Request, items []byte) (*llm.Request, error) {
	s, ok := SourceOf(r)
	if !ok {
		return nil, errors.New("responses: not a Responses API request")
	}
	if len(items) == 0 || items[0] != '[' || !json.Valid(items) {
		return nil, errors.New("responses: the stored conversation is not an array of items")
	}
	n := 0
	jsonscan.EachElement(items, func(int, int) bool { n++; return true })
	m := 0
	if len(s.input) > 0 && s.input[0] == '[' {
		jsonscan.EachElement(s.input, func(int, int) bool { m++; return true })
	}
	if n+m > MaxItems {
		return nil, llm.BadRequest("previous_response_id", "the conversation would hold %d items with the stored one; FreeLane accepts up to %d: compact it or start a new one", n+m, MaxItems)
	}
	cp := *s
	cp.history = items
	out := llm.NewRequest(&cp)
	out.Endpoint, out.Dialect, out.Model, out.Stream = r.Endpoint, r.Dialect, r.Model, r.Stream
	out.WantsUsage, out.MaxTokens, out.Needs, out.Forward, out.Notes = r.WantsUsage, r.MaxTokens, r.Needs, r.Forward, r.Notes
	out.Wants, out.Task, out.Gear = r.Wants, r.Task, r.Gear
	out.Session, out.User, out.ClientSession, out.ClientUser = r.Session, r.User, r.ClientSession, r.ClientUser
	if vision, _, _, err := checkInput(items, true); err == nil && vision {
		out.Needs |= llm.CapVision
	}
	if hasCalls(items) {
		out.Needs |= llm.CapTools
	}
	return out, nil
}

// hasCalls reports whether items hold a function call, which a backend
// can only read back if it has tools.
func hasCalls(items []byte) bool {
	return bytes.Contains(items, []byte(`"function_call"`))
}

// InputItems is the request's own input as a JSON array of items: a string
// input is one user message.
func (s *Source) InputItems() []byte {
	in := bytes.TrimSpace(s.input)
	if len(in) == 0 || isNull(in) {
		return []byte("[]")
	}
	if in[0] == '"' {
		return marshal([]inputMessage{{Type: "message", Role: "user", Content: []textPart{{Type: "input_text", Text: jsonscan.Unquote(in)}}}})
	}
	return in
}

type inputMessage struct {
	Type    string     `json:"type"`
	Role    string     `json:"role"`
	Content []textPart `json:"content"`
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Raw returns the client's body as sent.
func (s *Source) Raw() []byte { return s.body }

// Rewrite returns the client's bytes with the model replaced and the end
// user's identifiers (user, safety_identifier) replaced with e.User, or
// removed when it is empty; prompt_cache_key and the rest keep their
// bytes. No upstream speaks this dialect yet, so the router never sends
// them anywhere; the method is here because every source has it.
func (s *Source) Rewrite(model string, e llm.Edits) []byte {
	splices := []jsonscan.Splice{{Start: s.modelStart, End: s.modelEnd, With: marshal(model)}}
	if len(s.idents) > 0 {
		splices = append(splices, jsonscan.SetValue(s.body, s.idents, e.UserJSON())...)
	}
	return jsonscan.Apply(s.body, splices)
}

func isNull(v []byte) bool { return len(v) == 0 || string(v) == "null" }

func isNumber(v []byte) bool {
	return len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9'))
}

// idValue reads a response id: a string of at most MaxIDLength bytes, or
// null.
func idValue(v []byte) (string, error) {
	if isNull(v) {
		return "", nil
	}
	if v[0] != '"' {
		return "", llm.BadRequest("previous_response_id", "previous_response_id must be a string: the id of an earlier response")
	}
	if len(v) > 6*MaxIDLength+2 {
		return "", llm.BadRequest("previous_response_id", "previous_response_id is too long; response ids have at most %d bytes", MaxIDLength)
	}
	id := jsonscan.Unquote(v)
	if len(id) > MaxIDLength {
		return "", llm.BadRequest("previous_response_id", "previous_response_id is too long; response ids have at most %d bytes", MaxIDLength)
	}
	return id, nil
}

// checkToolChoice accepts "auto", "none", "required" and the object forms.
func checkToolChoice(v []byte) error {
	switch {
	case isNull(v), v[0] == '{':
		return nil
	case v[0] == '"':
		switch string(v) {
		case `"auto"`, `"none"`, `"required"`:
			return nil
		}
	}
	return llm.BadRequest("tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or an object such as {\"type\":\"function\",\"name\":\"...\"}")
}

// jsonFormat reports whether text.format asks for JSON output.
func jsonFormat(v []byte) bool {
	if v[0] != '{' {
		return false
	}
	json := false
	jsonscan.EachMember(v, 0, func(k []byte, s, e int) bool {
		if string(k) != "format" || v[s] != '{' {
			return true
		}
		f := v[s:e]
		jsonscan.EachMember(f, 0, func(k []byte, s, e int) bool {
			if string(k) == "type" {
				t := string(f[s:e])
				json = t == `"json_schema"` || t == `"json_object"`
			}
			return true
		})
		return false
	})
	return json
}

// checkMetadata holds metadata to OpenAI's limits: at most 16 string pairs,
// keys up to 64 bytes and values up to 512.
func checkMetadata(v []byte) error {
	if isNull(v) {
		return nil
	}
	if v[0] != '{' {
		return llm.BadRequest("metadata", "metadata must be an object of string values")
	}
	var err error
	n := 0
	jsonscan.EachMember(v, 0, func(k []byte, s, e int) bool {
		n++
		val := v[s:e]
		switch {
		case n > MaxMetadata:
			err = llm.BadRequest("metadata", "metadata may hold at most %d pairs", MaxMetadata)
		case len(k) > MaxMetadataKey:
			err = llm.BadRequest("metadata", "metadata keys may have at most %d bytes", MaxMetadataKey)
		case val[0] != '"':
			err = llm.BadRequest("metadata", "metadata values must be strings")
		case len(jsonscan.Unquote(val)) > MaxMetadataValue:
			err = llm.BadRequest("metadata", "metadata values may have at most %d bytes", MaxMetadataValue)
		}
		return err == nil
	})
	return err
}

// checkTools validates tools: an array of objects with a type, a function
// tool with a name. Tool types other than "function" are run by OpenAI's
// own servers (web_search, file_search...) or by the client under a
// grammar only OpenAI's models follow (custom, local_shell...); no backend
// can serve them, so they are dropped, and the note names them.
func checkTools(v []byte) (functions bool, note string, err error) {
	if isNull(v) {
		return false, "", nil
	}
	if v[0] != '[' {
		return false, "", llm.BadRequest("tools", "tools must be an array of tool objects")
	}
	n := 0
	var dropped []string
	jsonscan.EachElement(v, func(s, e int) bool {
		t := v[s:e]
		param := fmt.Sprintf("tools[%d]", n)
		n++
		if n > MaxTools {
			err = llm.BadRequest("tools", "a request may declare at most %d tools", MaxTools)
			return false
		}
		if t[0] != '{' {
			err = llm.BadRequest(param, "%s must be an object with a type", param)
			return false
		}
		var typ, name []byte
		jsonscan.EachMember(t, 0, func(k []byte, s, e int) bool {
			switch string(k) {
			case "type":
				typ = t[s:e]
			case "name":
				name = t[s:e]
			}
			return true
		})
		switch {
		case len(typ) < 3 || typ[0] != '"':
			err = llm.BadRequest(param+".type", "%s.type is required: \"function\", or a tool type of OpenAI's", param)
		case string(typ) == `"function"`:
			if len(name) < 3 || name[0] != '"' {
				err = llm.BadRequest(param+".name", "%s.name is required: the function's name", param)
			}
			functions = true
		default:
			if d := llm.Truncate(jsonscan.Unquote(typ), 40); !slices.Contains(dropped, d) && len(dropped) < 8 {
				dropped = append(dropped, d)
			}
		}
		return err == nil
	})
	if len(dropped) > 0 {
		note = "tools dropped (no backend runs them): " + strings.Join(dropped, ", ")
	}
	return functions, note, err
}

// checkInput validates input: a string, or an array of items. It reports
// whether an item holds an image and the type of the last item, and notes
// the items no backend can read, which are left out. Input may be missing
// only when the request continues a stored response.
func checkInput(v []byte, continued bool) (vision bool, notes []string, last string, err error) {
	switch {
	case isNull(v):
		if continued {
			return false, nil, "", nil
		}
		return false, nil, "", llm.BadRequest("input", "input is required: a string, or an array of input items")
	case v[0] == '"':
		return false, nil, "message", nil
	case v[0] != '[':
		return false, nil, "", llm.BadRequest("input", "input must be a string or an array of input items")
	}
	n := 0
	var dropped []string
	jsonscan.EachElement(v, func(s, e int) bool {
		it := v[s:e]
		param := fmt.Sprintf("input[%d]", n)
		n++
		if n > MaxItems {
			err = llm.BadRequest("input", "input may hold at most %d items", MaxItems)
			return false
		}
		if it[0] != '{' {
			err = llm.BadRequest(param, "%s must be an object: a message, function_call or function_call_output item", param)
			return false
		}
		var typ, role, content, callID, output, enc []byte
		jsonscan.EachMember(it, 0, func(k []byte, s, e int) bool {
			switch string(k) {
			case "type":
				typ = it[s:e]
			case "role":
				role = it[s:e]
			case "content":
				content = it[s:e]
			case "call_id":
				callID = it[s:e]
			case "output":
				output = it[s:e]
			case "encrypted_content":
				enc = it[s:e]
			}
			return true
		})
		t := ""
		if len(typ) > 1 && typ[0] == '"' {
			t = jsonscan.Unquote(typ)
		} else if len(typ) > 0 && !isNull(typ) {
			err = llm.BadRequest(param+".type", "%s.type must be a string", param)
			return false
		}
		if t == "" && len(role) > 0 {
			t = "message" // the easy form {"role", "content"}
		}
		last = t
		switch t {
		case "message":
			switch string(role) {
			case `"user"`, `"assistant"`, `"system"`, `"developer"`:
			case "":
				err = llm.BadRequest(param+".role", "%s.role is required: \"user\", \"assistant\", \"system\" or \"developer\"", param)
			default:
				err = llm.BadRequest(param+".role", "%s.role must be \"user\", \"assistant\", \"system\" or \"developer\"", param)
			}
			if err == nil {
				var img bool
				img, err = checkContent(content, param+".content")
				vision = vision || img
			}
		case "function_call_output", "custom_tool_call_output":
			if len(callID) < 2 || callID[0] != '"' {
				err = llm.BadRequest(param+".call_id", "%s.call_id is required: the call_id of the function_call it answers", param)
			} else if isNull(output) {
				err = llm.BadRequest(param+".output", "%s.output is required: a string, or an array of input_text and input_image parts", param)
			} else if output[0] == '[' {
				var img bool
				img, err = checkContent(output, param+".output")
				vision = vision || img
			}
		case "function_call", "custom_tool_call":
			if len(callID) < 2 || callID[0] != '"' {
				err = llm.BadRequest(param+".call_id", "%s.call_id is required", param)
			}
		case "reasoning", "local_shell_call", "local_shell_call_output", "compaction_trigger":
		case "compaction", "compaction_summary":
			if len(enc) < 2 || enc[0] != '"' {
				err = llm.BadRequest(param+".encrypted_content", "%s.encrypted_content is required", param)
			} else if _, ok := summaryOf(jsonscan.Unquote(enc)); !ok {
				dropped = appendOnce(dropped, "compaction items of another server")
			}
		case "item_reference":
			err = llm.BadRequest(param, "%s: item references are not supported; send the items themselves, or previous_response_id", param)
		case "":
			err = llm.BadRequest(param+".type", "%s.type is required: \"message\", \"function_call\", \"function_call_output\"...", param)
		default:
			dropped = appendOnce(dropped, llm.Truncate(t, 40))
		}
		return err == nil
	})
	if len(dropped) > 0 {
		notes = append(notes, "input items left out (no backend reads them): "+strings.Join(dropped, ", "))
	}
	return vision, notes, last, err
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) || len(list) >= 8 {
		return list
	}
	return append(list, s)
}

// checkContent validates a message's content: a string, or an array of
// typed parts. It reports whether a part is an image.
func checkContent(c []byte, param string) (vision bool, err error) {
	switch {
	case isNull(c):
		return false, llm.BadRequest(param, "%s is required: a string or an array of content parts", param)
	case c[0] == '"':
		return false, nil
	case c[0] != '[':
		return false, llm.BadRequest(param, "%s must be a string or an array of content parts", param)
	}
	i := 0
	jsonscan.EachElement(c, func(s, e int) bool {
		p := c[s:e]
		pp := fmt.Sprintf("%s[%d]", param, i)
		i++
		if p[0] != '{' {
			err = llm.BadRequest(pp, "%s must be a content part object with a type", pp)
			return false
		}
		var typ []byte
		jsonscan.EachMember(p, 0, func(k []byte, s, e int) bool {
			if string(k) == "type" {
				typ = p[s:e]
				return false
			}
			return true
		})
		switch string(typ) {
		case `"input_image"`:
			vision = true
		case "", "null":
			err = llm.BadRequest(pp+".type", "%s.type is required: \"input_text\", \"input_image\", \"output_text\"...", pp)
		}
		return err == nil
	})
	return vision, err
}
