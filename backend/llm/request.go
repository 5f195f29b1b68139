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

	body       []byte
	modelStart int // offset of the model value (including its quotes)
	modelEnd   int
}

// BadRequestError is a request FreeLane refuses before routing, with a
// message that says what to fix.
type BadRequestError struct {
	Param   string
	Message string
}

func (e *BadRequestError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *BadRequestError {
	return &BadRequestError{Param: param, Message: fmt.Sprintf(format, args...)}
}

// ParseRequest validates a request body for the given endpoint. It scans the
// body once at the top level and decodes only the fields routing needs.
func ParseRequest(ep Endpoint, body []byte) (*Request, error) {
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
	requiredName := map[Endpoint]string{Chat: "messages", Completions: "prompt", Embeddings: "input"}[ep]
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
	n := len(r.body) - (r.modelEnd - r.modelStart) + len(quoted)
	if inject {
		n += len(usageField)
	}
	out := make([]byte, 0, n)
	start := 0
	if inject {
		// The body starts with '{' possibly after whitespace; the new field
		// goes right after it and always has a field following it (model).
		brace := bytes.IndexByte(r.body, '{') + 1
		out = append(out, r.body[:brace]...)
		out = append(out, usageField...)
		start = brace
	}
	out = append(out, r.body[start:r.modelStart]...)
	out = append(out, quoted...)
	out = append(out, r.body[r.modelEnd:]...)
	return out
}

// Size is the length of the client's body in bytes.
func (r *Request) Size() int { return len(r.body) }
