package fakeupstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Helpers for validating Anthropic and Gemini bodies. The real APIs report
// problems by field path and member order, so objects are kept as ordered
// member lists rather than maps.

// member is one member of a JSON object.
type member struct {
	key string
	val json.RawMessage
}

// object is a JSON object's members in the order they appear.
type object []member

// errNotObject is returned for a value that is not a JSON object.
var errNotObject = errors.New("expected a JSON object")

// parseObject splits a JSON object into its members. It fails when raw is
// not exactly one JSON object.
func parseObject(raw []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errNotObject
	}
	o := object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, member{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON object")
	}
	return o, nil
}

// get returns the value of the last member named key, as JSON decoders do
// with repeated keys. A null value counts as absent.
func (o object) get(key string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].key == key {
			if string(o[i].val) == "null" {
				return nil, false
			}
			return o[i].val, true
		}
	}
	return nil, false
}

// asObject parses raw as an object, reporting false when it is not one.
func asObject(raw json.RawMessage) (object, bool) {
	o, err := parseObject(raw)
	return o, err == nil
}

// asArray splits raw into its elements, reporting false when it is not a
// JSON array.
func asArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	if jsonType(raw) != '[' {
		return nil, false
	}
	var a []json.RawMessage
	return a, json.Unmarshal(raw, &a) == nil
}

// asString decodes raw as a string, reporting false when it is not one.
func asString(raw json.RawMessage) (string, bool) {
	var s string
	if jsonType(raw) != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// asNumber decodes raw as a number, reporting false when it is not one.
func asNumber(raw json.RawMessage) (float64, bool) {
	var f float64
	if jsonType(raw) != '0' || json.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	return f, true
}

// asInt decodes raw as a whole number, reporting false when it is not one.
func asInt(raw json.RawMessage) (int64, bool) {
	f, ok := asNumber(raw)
	if !ok || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// jsonType is the first byte that tells a JSON value's type: '{', '[',
// '"', 't', 'f', 'n', or '0' for a number; 0 for nothing.
func jsonType(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[', '"', 't', 'f', 'n':
			return c
		}
		return '0'
	}
	return 0
}
