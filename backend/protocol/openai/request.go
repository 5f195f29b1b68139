package openai

import (
	"slices"
	"strconv"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
)

// source is an OpenAI request body, scanned just enough to route it and to
// rewrite it for an OpenAI upstream without re-encoding it: fields
// FreeLane does not interpret (tools, response_format, image parts, ...)
// reach the upstream byte for byte.
type source struct {
	ep     llm.Endpoint
	body   []byte
	stream bool
	// maxTokens is the larger of max_tokens and max_completion_tokens.
	maxTokens int
	// hasStreamOptions is true when the client sent stream_options at
	// all; FreeLane then leaves them alone.
	hasStreamOptions bool
	modelStart       int // offset of the model value (including its quotes)
	modelEnd         int
	// nullOptions is the span of a "stream_options": null value, which
	// FreeLane replaces when it asks for usage (a field added in front
	// would lose to the later null).
	nullOptStart, nullOptEnd int
	// idents are the members that name the end user (user,
	// safety_identifier), whose value Rewrite replaces with FreeLane's
	// pseudonym.
	idents []jsonscan.Member
	// hasCacheKey is true when the client sent its own prompt_cache_key,
	// which then goes upstream as it is.
	hasCacheKey bool
}

// ParseRequest validates a request body for the given endpoint. It is on the
// path of every request, so it avoids reflection: json.Valid checks the whole
// body, then a scan of the top level finds the few fields routing needs and
// where the model value sits. Only invalid bodies take the slower decoder,
// which says precisely where they are broken.
func ParseRequest(ep llm.Endpoint, body []byte) (*llm.Request, error) {
	if !json.Valid(body) {
		if err := explainInvalid(ep, body); err != nil {
			return nil, err
		}
		return nil, llm.BadRequest("", "request body is not valid JSON")
	}
	start := jsonscan.SkipSpace(body, 0)
	if body[start] != '{' {
		return nil, llm.BadRequest("", "request body must be a JSON object")
	}
	src := &source{ep: ep, body: body, modelStart: -1}
	r := llm.NewRequest(src)
	r.Endpoint, r.Dialect = ep, llm.DialectOpenAI
	requiredName := requiredField[ep]
	var required []byte
	var err error
	jsonscan.MemberSpan(body, start, func(key []byte, ks, vs, ve int) bool {
		v := body[vs:ve]
		switch string(key) {
		case "model":
			switch v[0] {
			case '"':
				r.Model, err = llm.ModelValue(v)
				src.modelStart, src.modelEnd = vs, ve
			case 'n':
				r.Model, src.modelStart = "", vs
				src.modelEnd = ve
			default:
				err = llm.BadRequest("model", "model must be a string")
			}
		case "stream":
			r.Stream, err = llm.StreamValue(v)
		case "stream_options":
			src.hasStreamOptions, r.WantsUsage = false, false
			src.nullOptStart, src.nullOptEnd = 0, 0
			switch v[0] {
			case 'n':
				src.nullOptStart, src.nullOptEnd = vs, ve
			case '{':
				src.hasStreamOptions = true
				jsonscan.EachMember(v, 0, func(k []byte, s, e int) bool {
					if string(k) == "include_usage" {
						switch string(v[s:e]) {
						case "true":
							r.WantsUsage = true
						case "false", "null":
							r.WantsUsage = false
						default:
							err = llm.BadRequest("stream_options", "stream_options.include_usage must be true or false")
						}
					}
					return err == nil
				})
			default:
				err = llm.BadRequest("stream_options", "stream_options must be an object")
			}
		case "max_tokens", "max_completion_tokens":
			r.MaxTokens = max(r.MaxTokens, jsonscan.SmallInt(v))
		case "tools", "functions":
			if v[0] == '[' && len(bytes.TrimSpace(v[1:len(v)-1])) > 0 {
				r.Needs |= llm.CapTools
			}
		case "reasoning_effort":
			if effortAsked(v) {
				r.Wants |= llm.CapReasoning
			}
		case "reasoning":
			// OpenRouter's unified form: {"effort": ...}, {"max_tokens":
			// N} or {"enabled": true}.
			if reasoningAsked(v) {
				r.Wants |= llm.CapReasoning
			}
		case "response_format":
			if bytes.Contains(v, jsonObject) || bytes.Contains(v, jsonSchema) {
				r.Needs |= llm.CapJSON
			}
		case "prompt_cache_key":
			src.hasCacheKey = true
			r.ClientSession = llm.IdentifierValue(v)
		case "user", "safety_identifier":
			src.idents = append(src.idents, jsonscan.Member{KeyStart: ks, ValueStart: vs, ValueEnd: ve})
			if r.ClientUser == "" {
				r.ClientUser = llm.IdentifierValue(v)
			}
		case requiredName:
			required = v
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if r.Model == "" {
		return nil, llm.BadRequest("model", "model is required: use \"auto\", a chain name or provider/model")
	}
	if ep == llm.Embeddings && r.Stream {
		return nil, llm.BadRequest("stream", "embeddings cannot be streamed")
	}
	images, err := checkRequiredFast(ep, requiredName, required)
	if err != nil {
		return nil, err
	}
	src.stream, src.maxTokens = r.Stream, r.MaxTokens
	if images {
		r.Needs |= llm.CapVision
	}
	return r, nil
}

// effortAsked reports whether a reasoning effort value asks for
// reasoning: any string but "none".
func effortAsked(v []byte) bool { return v[0] == '"' && string(v) != `"none"` && string(v) != `""` }

// reasoningAsked reports whether a reasoning object asks for reasoning:
// an effort other than none, a token budget, or enabled, unless it says
// enabled: false.
func reasoningAsked(v []byte) bool {
	if v[0] != '{' {
		return false
	}
	on, off := false, false
	jsonscan.EachMember(v, 0, func(k []byte, s, e int) bool {
		switch string(k) {
		case "effort":
			on = on || effortAsked(v[s:e])
		case "max_tokens":
			on = on || jsonscan.SmallInt(v[s:e]) > 0
		case "enabled":
			on = on || string(v[s:e]) == "true"
			off = string(v[s:e]) == "false"
		}
		return true
	})
	return on && !off
}

var (
	jsonObject = []byte(`"json_object"`)
	jsonSchema = []byte(`"json_schema"`)
	imageURL   = []byte(`"image_url"`)
)

var requiredField = map[llm.Endpoint]string{llm.Chat: "messages", llm.Completions: "prompt", llm.Embeddings: "input"}

// checkRequiredFast checks the endpoint's required field in a valid body,
// and reports whether a chat's messages hold an image. Only content given
// as parts is searched, for the key every image part has; a text part that
// merely quotes the word has it escaped inside a string, which is rare and
// only costs the backends that declare no vision.
func checkRequiredFast(ep llm.Endpoint, name string, v []byte) (images bool, err error) {
	if len(v) == 0 || v[0] == 'n' {
		return false, llm.BadRequest(name, "%s is required", name)
	}
	if ep != llm.Chat {
		return false, nil
	}
	if v[0] != '[' {
		return false, llm.BadRequest(name, "messages must be an array of message objects")
	}
	n := 0
	jsonscan.EachElement(v, func(es, ee int) bool {
		m := v[es:ee]
		switch m[0] {
		case '{':
		case 'n':
			err = llm.BadRequest(fmt.Sprintf("messages[%d].role", n), "messages[%d].role is required", n)
			return false
		default:
			err = llm.BadRequest(name, "messages must be an array of message objects: messages[%d] is not an object", n)
			return false
		}
		hasRole := false
		jsonscan.EachMember(m, 0, func(k []byte, s, e int) bool {
			if !images && m[s] == '[' && string(k) == "content" {
				images = bytes.Contains(m[s:e], imageURL)
			}
			if string(k) == "role" {
				switch {
				case m[s] == '"' && e-s > 2:
					hasRole = true
				case m[s] == '"' || m[s] == 'n':
					hasRole = false
				default:
					err = llm.BadRequest(fmt.Sprintf("messages[%d].role", n), "messages[%d].role must be a string", n)
				}
			}
			return err == nil
		})
		if err == nil && !hasRole {
			err = llm.BadRequest(fmt.Sprintf("messages[%d].role", n), "messages[%d].role is required", n)
		}
		n++
		return err == nil
	})
	if err != nil {
		return false, err
	}
	if n == 0 {
		return false, llm.BadRequest(name, "messages must contain at least one message")
	}
	return images, nil
}

// explainInvalid runs the reflective decoder over a body json.Valid refused,
// to say precisely what is wrong with it.
func explainInvalid(ep llm.Endpoint, body []byte) error {
	var model string
	var stream bool
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return llm.BadRequest("", "request body is not valid JSON: %s", jsonErr(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return llm.BadRequest("", "request body must be a JSON object")
	}
	var required json.RawMessage
	requiredName := requiredField[ep]
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return llm.BadRequest("", "request body is not valid JSON: %s", jsonErr(err))
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return llm.BadRequest(key, "request body is not valid JSON near %q: %s", key, jsonErr(err))
		}
		switch key {
		case "model":
			if err := json.Unmarshal(raw, &model); err != nil {
				return llm.BadRequest("model", "model must be a string")
			}
		case "stream":
			if string(raw) != "null" {
				if err := json.Unmarshal(raw, &stream); err != nil {
					return llm.BadRequest("stream", "stream must be true or false")
				}
			}
		case "stream_options":
			var so struct {
				IncludeUsage *bool `json:"include_usage"`
			}
			if string(raw) != "null" {
				if err := json.Unmarshal(raw, &so); err != nil {
					return llm.BadRequest("stream_options", "stream_options must be an object")
				}
			}
		case requiredName:
			required = raw
		}
	}
	if _, err := dec.Token(); err != nil {
		return llm.BadRequest("", "request body is not valid JSON: %s", jsonErr(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return llm.BadRequest("", "request body has data after the JSON object")
	}
	if model == "" {
		return llm.BadRequest("model", "model is required: use \"auto\", a chain name or provider/model")
	}
	if ep == llm.Embeddings && stream {
		return llm.BadRequest("stream", "embeddings cannot be streamed")
	}
	return checkRequired(ep, requiredName, required)
}

func checkRequired(ep llm.Endpoint, name string, raw json.RawMessage) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return llm.BadRequest(name, "%s is required", name)
	}
	if ep != llm.Chat {
		return nil
	}
	if trimmed[0] != '[' {
		return llm.BadRequest(name, "messages must be an array of message objects")
	}
	var msgs []struct {
		Role *string `json:"role"`
	}
	if err := json.Unmarshal(trimmed, &msgs); err != nil {
		return llm.BadRequest(name, "messages must be an array of message objects: %s", jsonErr(err))
	}
	if len(msgs) == 0 {
		return llm.BadRequest(name, "messages must contain at least one message")
	}
	for i, m := range msgs {
		if m.Role == nil || *m.Role == "" {
			return llm.BadRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role is required", i)
		}
	}
	return nil
}

func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s has the wrong type (%s)", te.Field, te.Value)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return err.Error()
}

// Raw returns the client's body as sent.
func (r *source) Raw() []byte { return r.body }

// The stream_options member Rewrite adds so that a stream reports its
// usage, whole or as the value of a null one; splices only read them.
var (
	usageField = []byte(`"stream_options":{"include_usage":true},`)
	usageValue = []byte(`{"include_usage":true}`)
)

// Rewrite returns the request body to send upstream for one backend: the
// client's bytes with the model value replaced, and the end user's
// identifiers (user, safety_identifier) replaced with e.User, or removed
// when it is empty. A client that sent no prompt_cache_key of its own gets
// e.Session as one, so the turns of a session it named otherwise (the
// X-FreeLane-Session header) reach the same cache. When e.AddUsage is set and the client sent no
// stream_options, stream_options.include_usage is added so usage can be
// accounted for. Nothing else is re-encoded (prompt_cache_key, tools and
// messages keep their bytes, so the vendor's prompt cache sees the
// client's prefix) unless the upstream's quirks drop a parameter or lower
// max_tokens; then the top level is joined again from the client's own
// member bytes.
func (r *source) Rewrite(model string, e llm.Edits) []byte {
	quoted := jsonscan.AppendString(make([]byte, 0, len(model)+2), model)
	if (len(e.Drop) > 0 || e.MaxOutput > 0) && r.touched(e) {
		return r.edited(quoted, e)
	}
	inject := e.AddUsage && r.stream && !r.hasStreamOptions && !slices.Contains(e.Drop, "stream_options")
	splices := make([]jsonscan.Splice, 1, 4)
	splices[0] = jsonscan.Splice{Start: r.modelStart, End: r.modelEnd, With: quoted}
	switch {
	case inject && r.nullOptEnd > 0:
		splices = append(splices, jsonscan.Splice{Start: r.nullOptStart, End: r.nullOptEnd, With: usageValue})
	case inject:
		// The new field goes right after the opening brace and always has a
		// field after it (model), so the comma is right.
		brace := bytes.IndexByte(r.body, '{') + 1
		splices = append(splices, jsonscan.Splice{Start: brace, End: brace, With: usageField})
	}
	if r.addsCacheKey(e) {
		// Like the usage field, it goes right after the opening brace,
		// with a field after it.
		brace := bytes.IndexByte(r.body, '{') + 1
		with := append(append([]byte(`"prompt_cache_key":`), jsonscan.AppendString(nil, e.Session)...), ',')
		splices = append(splices, jsonscan.Splice{Start: brace, End: brace, With: with})
	}
	if len(r.idents) > 0 {
		splices = append(splices, jsonscan.SetValue(r.body, r.idents, e.UserJSON())...)
	}
	return jsonscan.Apply(r.body, splices)
}

// addsCacheKey reports whether the body gets e.Session as its
// prompt_cache_key: the client sent none and the upstream takes one.
func (r *source) addsCacheKey(e llm.Edits) bool {
	return e.Session != "" && !r.hasCacheKey && r.ep == llm.Chat && !slices.Contains(e.Drop, "prompt_cache_key")
}

// touched reports whether the edits change anything in the body: a
// dropped parameter it has, or a max_tokens over the limit. Most bodies
// have neither, and keep their bytes.
func (r *source) touched(e llm.Edits) bool {
	if e.MaxOutput > 0 && r.maxTokens > e.MaxOutput {
		return true
	}
	found := false
	jsonscan.EachMember(r.body, jsonscan.SkipSpace(r.body, 0), func(k []byte, _, _ int) bool {
		found = slices.Contains(e.Drop, string(k))
		return !found
	})
	return found
}

// edited rebuilds the top level member by member: dropped members left
// out, the model and an over-large max_tokens replaced, and usage asked
// for as Rewrite would. Member values are the client's bytes.
func (r *source) edited(quoted []byte, e llm.Edits) []byte {
	b := r.body
	out := make([]byte, 0, len(b)+64)
	out = append(out, '{')
	first := true
	member := func(key, value []byte) {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, key...)
		out = append(out, ':')
		out = append(out, value...)
	}
	stream, hasOptions := false, false
	drop := func(k string) bool { return slices.Contains(e.Drop, k) }
	jsonscan.MemberSpan(b, jsonscan.SkipSpace(b, 0), func(k []byte, ks, vs, ve int) bool {
		key := bytes.TrimSpace(b[ks:vs])
		key = bytes.TrimSuffix(key, []byte(":"))
		key = bytes.TrimSpace(key)
		v := b[vs:ve]
		switch name := string(k); {
		case drop(name):
			return true
		case name == "model":
			v = quoted
		case name == "user" || name == "safety_identifier":
			if e.User == "" {
				return true
			}
			v = e.UserJSON()
		case name == "stream":
			stream = string(v) == "true"
		case name == "stream_options":
			hasOptions = v[0] == '{'
			if !hasOptions {
				return true // null: replaced below when usage is wanted
			}
		case (name == "max_tokens" || name == "max_completion_tokens") && e.MaxOutput > 0 &&
			jsonscan.SmallInt(v) > e.MaxOutput:
			v = strconv.AppendInt(nil, int64(e.MaxOutput), 10)
		}
		member(key, v)
		return true
	})
	if e.AddUsage && stream && !hasOptions && !drop("stream_options") {
		member([]byte(`"stream_options"`), []byte(`{"include_usage":true}`))
	}
	if r.addsCacheKey(e) {
		member([]byte(`"prompt_cache_key"`), jsonscan.AppendString(nil, e.Session))
	}
	return append(out, '}')
}
