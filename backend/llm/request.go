package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Endpoint names the OpenAI API a request came in on.
type Endpoint string

// The routed endpoints.
const (
	Chat        Endpoint = "chat/completions"
	Completions Endpoint = "completions"
	Embeddings  Endpoint = "embeddings"
)

// Request is a client request in the OpenAI wire format, parsed just enough
// to route it. The body is kept as the client sent it: fields FreeLane does
// not interpret (tools, response_format, image parts, ...) reach the upstream
// byte for byte, and only the model value is replaced per backend.
type Request struct {
	Endpoint Endpoint
	Model    string
	Stream   bool
	// WantsUsage is true when the client itself asked for the final usage
	// chunk of a stream (stream_options.include_usage).
	WantsUsage bool
	// HasStreamOptions is true when the client sent stream_options at all;
	// FreeLane then leaves them alone.
	HasStreamOptions bool
	// MaxTokens is the client's max_tokens (or max_completion_tokens), 0
	// when it set none; budgets use it to estimate what a call may cost.
	MaxTokens int

	body       []byte
	modelStart int // offset of the model value (including its quotes)
	modelEnd   int
	// nullOptions is the span of a "stream_options": null value, which
	// FreeLane replaces when it asks for usage (a field added in front
	// would lose to the later null).
	nullOptStart, nullOptEnd int
}

// MaxModelName is the longest model name FreeLane accepts, in bytes. Real
// names ("provider/model", chain names) are far shorter; the bound keeps a
// hostile name out of the request log, the dashboard and error messages.
const MaxModelName = 256

// BadRequestError is a request FreeLane refuses before routing, with a
// message that says what to fix.
type BadRequestError struct {
	Param   string
	Message string
	// Code is the OpenAI error code to answer with; empty means
	// "invalid_request".
	Code string
}

func (e *BadRequestError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *BadRequestError {
	return &BadRequestError{Param: param, Message: fmt.Sprintf(format, args...)}
}

// ParseRequest validates a request body for the given endpoint. It is on the
// path of every request, so it avoids reflection: json.Valid checks the whole
// body, then a scan of the top level finds the few fields routing needs and
// where the model value sits. Only invalid bodies take the slower decoder,
// which says precisely where they are broken.
func ParseRequest(ep Endpoint, body []byte) (*Request, error) {
	if !json.Valid(body) {
		if _, err := parseDecoder(ep, body); err != nil {
			return nil, err
		}
		return nil, badRequest("", "request body is not valid JSON")
	}
	start := skipSpace(body, 0)
	if body[start] != '{' {
		return nil, badRequest("", "request body must be a JSON object")
	}
	r := &Request{Endpoint: ep, body: body, modelStart: -1}
	requiredName := requiredField[ep]
	var required []byte
	var err error
	eachMember(body, start, func(key []byte, vs, ve int) bool {
		v := body[vs:ve]
		switch string(key) {
		case "model":
			switch v[0] {
			case '"':
				// An escape takes at most 6 bytes per character, so a raw
				// value longer than this cannot unquote to a name within
				// the limit: refuse it without copying it.
				if len(v) > 6*MaxModelName+2 {
					err = modelTooLong(len(v) - 2)
					break
				}
				r.Model = unquote(v)
				r.modelStart, r.modelEnd = vs, ve
				if len(r.Model) > MaxModelName {
					err = modelTooLong(len(r.Model))
				}
			case 'n':
				r.Model, r.modelStart = "", vs
				r.modelEnd = ve
			default:
				err = badRequest("model", "model must be a string")
			}
		case "stream":
			switch string(v) {
			case "true":
				r.Stream = true
			case "false", "null":
				r.Stream = false
			default:
				err = badRequest("stream", "stream must be true or false")
			}
		case "stream_options":
			r.HasStreamOptions, r.WantsUsage = false, false
			r.nullOptStart, r.nullOptEnd = 0, 0
			switch v[0] {
			case 'n':
				r.nullOptStart, r.nullOptEnd = vs, ve
			case '{':
				r.HasStreamOptions = true
				eachMember(v, 0, func(k []byte, s, e int) bool {
					if string(k) == "include_usage" {
						switch string(v[s:e]) {
						case "true":
							r.WantsUsage = true
						case "false", "null":
							r.WantsUsage = false
						default:
							err = badRequest("stream_options", "stream_options.include_usage must be true or false")
						}
					}
					return err == nil
				})
			default:
				err = badRequest("stream_options", "stream_options must be an object")
			}
		case "max_tokens", "max_completion_tokens":
			r.MaxTokens = max(r.MaxTokens, smallInt(v))
		case requiredName:
			required = v
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if r.Model == "" {
		return nil, badRequest("model", "model is required: use \"auto\", a chain name or provider/model")
	}
	if ep == Embeddings && r.Stream {
		return nil, badRequest("stream", "embeddings cannot be streamed")
	}
	if err := checkRequiredFast(ep, requiredName, required); err != nil {
		return nil, err
	}
	return r, nil
}

// modelTooLong refuses a model name of n bytes without repeating it.
func modelTooLong(n int) *BadRequestError {
	e := badRequest("model", "model name is too long (%d bytes); FreeLane accepts model names up to %d bytes", n, MaxModelName)
	e.Code = "model_too_long"
	return e
}

var requiredField = map[Endpoint]string{Chat: "messages", Completions: "prompt", Embeddings: "input"}

// checkRequiredFast checks the endpoint's required field in a valid body.
func checkRequiredFast(ep Endpoint, name string, v []byte) error {
	if len(v) == 0 || v[0] == 'n' {
		return badRequest(name, "%s is required", name)
	}
	if ep != Chat {
		return nil
	}
	if v[0] != '[' {
		return badRequest(name, "messages must be an array of message objects")
	}
	n := 0
	var err error
	eachElement(v, func(es, ee int) bool {
		m := v[es:ee]
		switch m[0] {
		case '{':
		case 'n':
			err = badRequest(fmt.Sprintf("messages[%d].role", n), "messages[%d].role is required", n)
			return false
		default:
			err = badRequest(name, "messages must be an array of message objects: messages[%d] is not an object", n)
			return false
		}
		hasRole := false
		eachMember(m, 0, func(k []byte, s, e int) bool {
			if string(k) == "role" {
				switch {
				case m[s] == '"' && e-s > 2:
					hasRole = true
				case m[s] == '"' || m[s] == 'n':
					hasRole = false
				default:
					err = badRequest(fmt.Sprintf("messages[%d].role", n), "messages[%d].role must be a string", n)
				}
			}
			return err == nil
		})
		if err == nil && !hasRole {
			err = badRequest(fmt.Sprintf("messages[%d].role", n), "messages[%d].role is required", n)
		}
		n++
		return err == nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return badRequest(name, "messages must contain at least one message")
	}
	return nil
}

// parseDecoder is the reflective parser, used to explain invalid bodies.
func parseDecoder(ep Endpoint, body []byte) (*Request, error) {
	r := &Request{Endpoint: ep, body: body, modelStart: -1}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, badRequest("", "request body is not valid JSON: %s", jsonErr(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, badRequest("", "request body must be a JSON object")
	}
	var required json.RawMessage
	requiredName := requiredField[ep]
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, badRequest("", "request body is not valid JSON: %s", jsonErr(err))
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, badRequest(key, "request body is not valid JSON near %q: %s", key, jsonErr(err))
		}
		end := int(dec.InputOffset())
		switch key {
		case "model":
			if err := json.Unmarshal(raw, &r.Model); err != nil {
				return nil, badRequest("model", "model must be a string")
			}
			r.modelStart, r.modelEnd = end-len(raw), end
		case "stream":
			if string(raw) != "null" {
				if err := json.Unmarshal(raw, &r.Stream); err != nil {
					return nil, badRequest("stream", "stream must be true or false")
				}
			}
		case "stream_options":
			var so struct {
				IncludeUsage bool `json:"include_usage"`
			}
			if string(raw) != "null" {
				if err := json.Unmarshal(raw, &so); err != nil {
					return nil, badRequest("stream_options", "stream_options must be an object")
				}
				r.HasStreamOptions = true
				r.WantsUsage = so.IncludeUsage
			}
		case "max_tokens", "max_completion_tokens":
			r.MaxTokens = max(r.MaxTokens, smallInt(raw))
		case requiredName:
			required = raw
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, badRequest("", "request body is not valid JSON: %s", jsonErr(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badRequest("", "request body has data after the JSON object")
	}
	if r.Model == "" {
		return nil, badRequest("model", "model is required: use \"auto\", a chain name or provider/model")
	}
	if ep == Embeddings && r.Stream {
		return nil, badRequest("stream", "embeddings cannot be streamed")
	}
	if err := checkRequired(ep, requiredName, required); err != nil {
		return nil, err
	}
	return r, nil
}

func checkRequired(ep Endpoint, name string, raw json.RawMessage) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return badRequest(name, "%s is required", name)
	}
	if ep != Chat {
		return nil
	}
	if trimmed[0] != '[' {
		return badRequest(name, "messages must be an array of message objects")
	}
	var msgs []struct {
		Role *string `json:"role"`
	}
	if err := json.Unmarshal(trimmed, &msgs); err != nil {
		return badRequest(name, "messages must be an array of message objects: %s", jsonErr(err))
	}
	if len(msgs) == 0 {
		return badRequest(name, "messages must contain at least one message")
	}
	for i, m := range msgs {
		if m.Role == nil || *m.Role == "" {
			return badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role is required", i)
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

// Body returns the request body to send upstream for one backend: the
// client's bytes with the model value replaced. When addUsage is set and
// the client sent no stream_options, stream_options.include_usage is added
// so usage can be accounted for. Nothing else is re-encoded.
func (r *Request) Body(model string, addUsage bool) []byte {
	// json.Marshal of a string cannot fail; it escapes exactly as JSON needs.
	quoted, _ := json.Marshal(model)
	inject := addUsage && r.Stream && !r.HasStreamOptions
	const usageField = `"stream_options":{"include_usage":true},`
	const usageValue = `{"include_usage":true}`
	n := len(r.body) - (r.modelEnd - r.modelStart) + len(quoted) + len(usageField)
	out := make([]byte, 0, n)
	type splice struct {
		start, end int
		with       []byte
	}
	edits := []splice{{r.modelStart, r.modelEnd, quoted}}
	switch {
	case inject && r.nullOptEnd > 0:
		edits = append(edits, splice{r.nullOptStart, r.nullOptEnd, []byte(usageValue)})
	case inject:
		// The new field goes right after the opening brace and always has a
		// field after it (model), so the comma is right.
		brace := bytes.IndexByte(r.body, '{') + 1
		edits = append(edits, splice{brace, brace, []byte(usageField)})
	}
	if len(edits) == 2 && edits[1].start < edits[0].start {
		edits[0], edits[1] = edits[1], edits[0]
	}
	pos := 0
	for _, e := range edits {
		out = append(out, r.body[pos:e.start]...)
		out = append(out, e.with...)
		pos = e.end
	}
	return append(out, r.body[pos:]...)
}

// smallInt reads a non-negative JSON integer without allocating; anything
// else (null, a float, a string, a huge number) is 0, which means "not set"
// to the callers. The upstream, not FreeLane, judges such values.
func smallInt(v []byte) int {
	if len(v) == 0 || len(v) > 9 {
		return 0
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// Raw returns the client's body as sent. The caller must not modify it.
// Token estimation reads the messages from it.
func (r *Request) Raw() []byte { return r.body }

// Size is the length of the client's body in bytes.
func (r *Request) Size() int { return len(r.body) }
