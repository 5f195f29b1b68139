package connect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// object is a JSON object that keeps its keys in the order the file had
// them and every value byte for byte, so a merge changes only the keys it
// sets.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func newObject() *object { return &object{vals: map[string]json.RawMessage{}} }

// parseObject reads a JSON object; an empty or blank file is an empty one.
func parseObject(path string, b []byte) (*object, error) {
	o := newObject()
	if len(bytes.TrimSpace(b)) == 0 {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	fail := func(err error) (*object, error) {
		var se *json.SyntaxError
		line := 0
		if errors.As(err, &se) {
			line = lineOf(b, se.Offset)
		} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			line = lineOf(b, int64(len(b)))
			err = errors.New("the JSON ends too early")
		} else {
			line = lineOf(b, dec.InputOffset())
		}
		return nil, &ParseError{File: path, Line: line, Err: err}
	}
	tok, err := dec.Token()
	if err != nil {
		return fail(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, &ParseError{File: path, Line: lineOf(b, dec.InputOffset()), Err: errors.New("the file is not a JSON object")}
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		key, ok := tok.(string)
		if !ok {
			return fail(fmt.Errorf("expected a key, found %v", tok))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fail(err)
		}
		o.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return fail(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("more JSON after the object")
		}
		return fail(err)
	}
	return o, nil
}

func (o *object) get(key string) (json.RawMessage, bool) {
	v, ok := o.vals[key]
	return v, ok
}

func (o *object) set(key string, v json.RawMessage) {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

func (o *object) setString(key, s string) { o.set(key, mustMarshal(s)) }

func (o *object) setObject(key string, v *object) { o.set(key, v.compact()) }

func (o *object) del(key string) {
	if _, ok := o.vals[key]; !ok {
		return
	}
	delete(o.vals, key)
	for i, k := range o.keys {
		if k == key {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

// child returns the object under key, or a new one when the key is absent;
// a value of another kind is an error, since merging would lose it.
func (o *object) child(path, key string) (*object, error) {
	v, ok := o.get(key)
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return newObject(), nil
	}
	c, err := parseObject(path, v)
	if err != nil {
		return nil, &ParseError{File: path, Err: fmt.Errorf("%q is not a JSON object", key)}
	}
	return c, nil
}

func (o *object) compact() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustMarshal(k))
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// bytes is the object indented by two spaces, as the tools' own files are.
func (o *object) bytes() []byte {
	var b bytes.Buffer
	// The values came from a decoder or from mustMarshal, so they are
	// valid JSON and Indent cannot fail.
	if err := json.Indent(&b, o.compact(), "", "  "); err != nil {
		panic(err)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

func mustMarshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// mergeClaude sets FreeLane's variables in the env block of Claude Code's
// settings.json.
func mergeClaude(path string, old []byte, o Options) ([]byte, error) {
	root, err := parseObject(path, old)
	if err != nil {
		return nil, err
	}
	env, err := root.child(path, "env")
	if err != nil {
		return nil, err
	}
	env.setString("ANTHROPIC_BASE_URL", o.Base)
	if o.TokenRequired {
		// A key in the file would win over the token exported in the
		// shell.
		env.del("ANTHROPIC_AUTH_TOKEN")
	} else {
		env.setString("ANTHROPIC_AUTH_TOKEN", PlaceholderKey)
	}
	for _, v := range claudeModelVars {
		env.setString(v, o.Model)
	}
	root.setObject("env", env)
	return root.bytes(), nil
}

// mergeGeminiSettings sets Gemini CLI's sign-in method to an API key, the
// kind FreeLane takes; without it a run with no terminal to ask on stops.
func mergeGeminiSettings(path string, old []byte, _ Options) ([]byte, error) {
	root, err := parseObject(path, old)
	if err != nil {
		return nil, err
	}
	security, err := root.child(path, "security")
	if err != nil {
		return nil, err
	}
	auth, err := security.child(path, "auth")
	if err != nil {
		return nil, err
	}
	auth.setString("selectedType", "gemini-api-key")
	security.setObject("auth", auth)
	root.setObject("security", security)
	return root.bytes(), nil
}

// mergeOpencode sets FreeLane's provider entry and makes it opencode's
// default model.
func mergeOpencode(path string, old []byte, o Options) ([]byte, error) {
	root, err := parseObject(path, old)
	if err != nil {
		return nil, err
	}
	if _, ok := root.get("$schema"); !ok && len(root.keys) == 0 {
		root.setString("$schema", "https://opencode.ai/config.json")
	}
	providers, err := root.child(path, "provider")
	if err != nil {
		return nil, err
	}
	entry := newObject()
	entry.setString("npm", "@ai-sdk/openai-compatible")
	entry.setString("name", "FreeLane")
	opts := newObject()
	opts.setString("baseURL", o.Base+"/v1")
	opts.setString("apiKey", opencodeKey(o))
	entry.setObject("options", opts)
	model := newObject()
	model.setString("name", "FreeLane "+o.Model)
	models := newObject()
	models.setObject(o.Model, model)
	entry.setObject("models", models)
	root.setString("model", opencodeProvider+"/"+o.Model)
	providers.setObject(opencodeProvider, entry)
	root.setObject("provider", providers)
	return root.bytes(), nil
}
