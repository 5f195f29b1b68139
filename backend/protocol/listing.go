package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Helpers for the model-list readers of the dialects: vendors' lists share
// ways of writing capabilities and token counts, and their error answers
// share ways of saying that a key is not valid.

// Capabilities collects the capability names of a ListedModel.
type Capabilities struct{ has []string }

// Add notes a capability ("json", "reasoning", "tools" or "vision").
func (c *Capabilities) Add(name string) {
	if !slices.Contains(c.has, name) {
		c.has = append(c.has, name)
	}
}

// Sorted returns the capabilities noted, sorted; nil when none was.
func (c *Capabilities) Sorted() []string {
	slices.Sort(c.has)
	return c.has
}

// Read adds what a capabilities field states, as an object of
// true-valued or {"supported": true} keys (Mistral, Anthropic) or an
// array of names. It returns false when the object says the model does
// not chat (Mistral's completion_chat: false).
func (c *Capabilities) Read(raw json.RawMessage) (chat bool) {
	chat = true
	if len(raw) == 0 {
		return chat
	}
	var names []string
	if json.Unmarshal(raw, &names) == nil {
		for _, n := range names {
			if capName, ok := capNames[strings.ToLower(n)]; ok {
				c.Add(capName)
			}
		}
		return chat
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return chat
	}
	for k, v := range obj {
		yes, known := truthy(v)
		if !known {
			continue
		}
		k = strings.ToLower(k)
		if k == "completion_chat" && !yes {
			chat = false
		}
		if capName, ok := capNames[k]; ok && yes {
			c.Add(capName)
		}
	}
	return chat
}

// capNames maps the names lists use to ListedModel's capability names.
var capNames = map[string]string{
	"tools": "tools", "tool_use": "tools", "tool_calling": "tools", "function_calling": "tools",
	"vision": "vision", "image_input": "vision", "images": "vision",
	"reasoning": "reasoning", "thinking": "reasoning", "extended_thinking": "reasoning",
	"json": "json", "json_mode": "json", "structured_outputs": "json", "response_format": "json",
}

// truthy reads true/false or {"supported": true/false}.
func truthy(v json.RawMessage) (yes, known bool) {
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b, true
	}
	var o struct {
		Supported *bool `json:"supported"`
	}
	if json.Unmarshal(v, &o) == nil && o.Supported != nil {
		return *o.Supported, true
	}
	return false, false
}

// TokenCount is a token count in a model list, read leniently: a number,
// a numeric string or null; anything else, a negative or an absurd value
// reads as 0 (unknown). One entry's odd field must not lose the list.
type TokenCount int

// maxTokenCount bounds a token count; no model's window comes near it.
const maxTokenCount = 1 << 30

// UnmarshalJSON reads the count, never failing.
func (n *TokenCount) UnmarshalJSON(b []byte) error {
	*n = 0
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > maxTokenCount || math.IsNaN(v) {
		return nil
	}
	*n = TokenCount(v)
	return nil
}

// FirstCount is the first of the counts that is known.
func FirstCount(ns ...TokenCount) TokenCount {
	for _, n := range ns {
		if n > 0 {
			return n
		}
	}
	return 0
}

// SaysKeyInvalid reports whether an error body says the key is not valid:
// Google's ErrorInfo reason API_KEY_INVALID (or another API_KEY_ reason),
// or the words "API key not valid", "API key expired" or "invalid API
// key" in its message. The message is read from the {"error": {"message"}}
// envelope (also inside an array, as Gemini's OpenAI-compatible endpoint
// sends it), a bare {"error": "..."}, {"message"} or {"detail"}, or a
// plain-text body.
func SaysKeyInvalid(body []byte) bool {
	msg, reason := ErrorText(body)
	m := strings.ToLower(msg)
	return strings.HasPrefix(reason, "API_KEY_") || strings.Contains(m, "api key not valid") ||
		strings.Contains(m, "api key expired") || strings.Contains(m, "invalid api key")
}

// ErrorText finds the explanation in an error body: the message of the
// {"error": {"message"}} envelope most vendors share (also inside an
// array, as some OpenAI-compatible endpoints send it) with the first
// ErrorInfo reason beside it, a bare {"error": "..."}, {"message"} or
// {"detail"}, or else the body's text when it is plain text (an HTML error
// page is not read).
func ErrorText(body []byte) (msg, reason string) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil && len(arr) > 0 {
			body = arr[0]
		}
	}
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &env) != nil {
		if !json.Valid(body) && !bytes.ContainsAny(body, "<") {
			// Plain text; an HTML error page is not read.
			return string(body), ""
		}
		return "", ""
	}
	var inner struct {
		Message string `json:"message"`
		Details []struct {
			Reason string `json:"reason"`
		} `json:"details"`
	}
	var s string
	switch {
	case json.Unmarshal(env.Error, &inner) == nil && inner.Message != "":
		for _, d := range inner.Details {
			if d.Reason != "" {
				return inner.Message, d.Reason
			}
		}
		return inner.Message, ""
	case json.Unmarshal(env.Error, &s) == nil && s != "":
		return s, ""
	case env.Message != "":
		return env.Message, ""
	case json.Unmarshal(env.Detail, &s) == nil && s != "":
		return s, ""
	}
	return "", ""
}
