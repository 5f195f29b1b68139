package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
)

// source is a Gemini client's generateContent body, scanned just enough to
// route it. The body names no model (the URL does), so an upstream of this
// dialect gets it byte for byte unless its quirks drop a parameter or
// lower maxOutputTokens.
type source struct {
	body   []byte
	stream bool
}

// ParseRequest validates a generateContent body. The model comes from the
// request's URL, so the request it returns has none; the caller sets
// Model, or calls ParseRequestFor.
func ParseRequest(ep llm.Endpoint, body []byte) (*llm.Request, error) {
	return ParseRequestFor(ep, "", false, body)
}

// ParseRequestFor validates a body sent to the URL of model, streamed
// when the client called streamGenerateContent. It is on the path of
// every request, so it scans the body without reflection after json.Valid
// has checked it whole.
func ParseRequestFor(ep llm.Endpoint, model string, stream bool, body []byte) (*llm.Request, error) {
	if ep != llm.Chat {
		return nil, llm.BadRequest("", "the Gemini API is served for generateContent only, not %s", ep)
	}
	if len(model) > llm.MaxModelName {
		return nil, llm.ModelTooLong(len(model))
	}
	if !json.Valid(body) {
		return nil, invalidJSON(body)
	}
	start := jsonscan.SkipSpace(body, 0)
	if body[start] != '{' {
		return nil, llm.BadRequest("", "request body must be a JSON object")
	}
	src := &source{body: body, stream: stream}
	r := llm.NewRequest(src)
	r.Endpoint, r.Dialect, r.Model, r.Stream = ep, llm.DialectGemini, model, stream
	// Gemini streams always end with their usage.
	r.WantsUsage = stream
	var err error
	seen := false
	jsonscan.EachMember(body, start, func(key []byte, vs, ve int) bool {
		v := body[vs:ve]
		switch string(key) {
		case "contents":
			if seen = v[0] != 'n'; seen {
				var needs llm.Caps
				needs, err = checkContents(v)
				r.Needs |= needs
			}
		case "systemInstruction", "system_instruction":
			if v[0] != '{' && v[0] != 'n' {
				err = llm.BadRequest(string(key), "%s must be a Content object: {\"parts\": [{\"text\": \"...\"}]}", key)
			}
		case "tools":
			switch v[0] {
			case '[':
				if hasFunctions(v) {
					r.Needs |= llm.CapTools
				}
			case 'n':
			default:
				err = llm.BadRequest("tools", "tools must be an array of Tool objects")
			}
		case "generationConfig", "generation_config":
			switch v[0] {
			case '{':
				jsonscan.EachMember(v, 0, func(k []byte, s, e int) bool {
					switch string(k) {
					case "maxOutputTokens", "max_output_tokens":
						r.MaxTokens = jsonscan.SmallInt(v[s:e])
					case "responseMimeType", "response_mime_type":
						if string(v[s:e]) == `"application/json"` {
							r.Needs |= llm.CapJSON
						}
					case "thinkingConfig", "thinking_config":
						if thinkingAsked(v[s:e]) {
							r.Wants |= llm.CapReasoning
						}
					}
					return true
				})
			case 'n':
			default:
				err = llm.BadRequest(string(key), "%s must be an object", key)
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !seen {
		return nil, llm.BadRequest("contents", "contents is required: an array of {\"role\": \"user\", \"parts\": [{\"text\": \"...\"}]}")
	}
	return r, nil
}

// thinkingAsked reports whether a thinkingConfig asks the model to
// think: a budget other than 0 (-1 is dynamic), a thinking level, or
// thoughts included.
func thinkingAsked(v []byte) bool {
	if v[0] != '{' {
		return false
	}
	on := false
	jsonscan.EachMember(v, 0, func(k []byte, s, e int) bool {
		val := string(v[s:e])
		switch string(k) {
		case "thinkingBudget", "thinking_budget":
			on = on || (val != "0" && val != "null")
		case "thinkingLevel", "thinking_level":
			on = on || (v[s] == '"' && val != `""`)
		case "includeThoughts", "include_thoughts":
			on = on || val == "true"
		}
		return true
	})
	return on
}

// invalidJSON says where a body json.Valid refused is broken.
func invalidJSON(body []byte) error {
	var v any
	err := json.Unmarshal(body, &v)
	var se *json.SyntaxError
	switch {
	case len(bytes.TrimSpace(body)) == 0:
		return llm.BadRequest("", "request body is empty; it must be a GenerateContentRequest JSON object")
	case errors.As(err, &se):
		return llm.BadRequest("", "request body is not valid JSON: %s (at byte %d)", se.Error(), se.Offset)
	}
	return llm.BadRequest("", "request body is not valid JSON")
}

// checkContents validates contents: a non-empty array of Content objects,
// each with a role of user or model (or none, meaning user) and a
// non-empty array of parts. It reports the capabilities the parts need.
func checkContents(v []byte) (llm.Caps, error) {
	if v[0] != '[' {
		return 0, llm.BadRequest("contents", "contents must be an array of Content objects")
	}
	var needs llm.Caps
	var err error
	n := 0
	jsonscan.EachElement(v, func(cs, ce int) bool {
		c := v[cs:ce]
		i := n
		n++
		if c[0] != '{' {
			err = llm.BadRequest(contentParam(i, ""), "%s must be a Content object: {\"role\": \"user\", \"parts\": [...]}", contentParam(i, ""))
			return false
		}
		hasParts := false
		jsonscan.EachMember(c, 0, func(k []byte, s, e int) bool {
			val := c[s:e]
			switch string(k) {
			case "role":
				switch string(val) {
				case `"user"`, `"model"`, `"function"`, `""`, "null":
				default:
					err = llm.BadRequest(contentParam(i, ".role"), "%s must be \"user\" or \"model\"", contentParam(i, ".role"))
				}
			case "parts":
				if val[0] != '[' {
					err = llm.BadRequest(contentParam(i, ".parts"), "%s must be an array of Part objects", contentParam(i, ".parts"))
					break
				}
				parts := 0
				jsonscan.EachElement(val, func(ps, pe int) bool {
					if val[ps] != '{' {
						err = llm.BadRequest(contentParam(i, ".parts"), "%s[%d] must be a Part object", contentParam(i, ".parts"), parts)
						return false
					}
					needs |= partNeeds(val[ps:pe])
					parts++
					return true
				})
				hasParts = parts > 0
			}
			return err == nil
		})
		if err == nil && !hasParts {
			err = llm.BadRequest(contentParam(i, ".parts"), "%s must hold at least one part, such as {\"text\": \"...\"}", contentParam(i, ".parts"))
		}
		return err == nil
	})
	if err == nil && n == 0 {
		err = llm.BadRequest("contents", "contents must hold at least one Content")
	}
	return needs, err
}

// contentParam names a field of contents[i] in a refusal.
func contentParam(i int, field string) string {
	return fmt.Sprintf("contents[%d]%s", i, field)
}

// partNeeds reports whether a part is an image.
func partNeeds(p []byte) llm.Caps {
	var needs llm.Caps
	jsonscan.EachMember(p, 0, func(k []byte, s, e int) bool {
		switch string(k) {
		case "inlineData", "inline_data", "fileData", "file_data":
			if p[s] != '{' {
				return true
			}
			jsonscan.EachMember(p[s:e], 0, func(mk []byte, ms, me int) bool {
				m := p[s:e][ms:me]
				if (string(mk) == "mimeType" || string(mk) == "mime_type") && bytes.HasPrefix(m, []byte(`"image/`)) {
					needs |= llm.CapVision
				}
				return true
			})
		}
		return true
	})
	return needs
}

// hasFunctions reports whether a tools array declares any function.
func hasFunctions(v []byte) bool {
	found := false
	jsonscan.EachElement(v, func(ts, te int) bool {
		if v[ts] != '{' {
			return true
		}
		jsonscan.EachMember(v[ts:te], 0, func(k []byte, s, e int) bool {
			val := v[ts:te][s:e]
			if (string(k) == "functionDeclarations" || string(k) == "function_declarations") &&
				val[0] == '[' && len(bytes.TrimSpace(val[1:len(val)-1])) > 0 {
				found = true
			}
			return !found
		})
		return !found
	})
	return found
}

// Raw returns the client's body as sent.
func (r *source) Raw() []byte { return r.body }

// dropTop maps the parameter names of llm.Edits.Drop to the top-level
// fields they stand for, dropGen to the fields of generationConfig. A
// name of this dialect's own is dropped as itself.
var (
	dropTop = map[string][]string{
		"tools":       {"tools", "toolConfig", "tool_config"},
		"tool_choice": {"toolConfig", "tool_config"},
	}
	dropGen = map[string][]string{
		"temperature":           {"temperature"},
		"top_p":                 {"topP", "top_p"},
		"top_k":                 {"topK", "top_k"},
		"stop":                  {"stopSequences", "stop_sequences"},
		"seed":                  {"seed"},
		"presence_penalty":      {"presencePenalty", "presence_penalty"},
		"frequency_penalty":     {"frequencyPenalty", "frequency_penalty"},
		"max_tokens":            {"maxOutputTokens", "max_output_tokens"},
		"max_completion_tokens": {"maxOutputTokens", "max_output_tokens"},
		"reasoning_effort":      {"thinkingConfig", "thinking_config"},
		"response_format": {"responseMimeType", "response_mime_type", "responseSchema", "response_schema",
			"responseJsonSchema", "response_json_schema"},
	}
)

func dropped(names []string, table map[string][]string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
		for _, f := range table[n] {
			out[f] = true
		}
	}
	return out
}

// Rewrite returns the body for a Gemini upstream. The model is in the
// URL, so the body is the client's unless e drops a parameter the client
// sent or lowers its maxOutputTokens; then the members are joined again
// from the client's own bytes, the changed ones left out or replaced.
func (r *source) Rewrite(_ string, e llm.Edits) []byte {
	if len(e.Drop) == 0 && e.MaxOutput <= 0 {
		return r.body
	}
	top, gen := dropped(e.Drop, dropTop), dropped(e.Drop, dropGen)
	b := r.body
	changed := false
	out := make([]byte, 0, len(b))
	out = append(out, '{')
	first := true
	jsonscan.MemberSpan(b, jsonscan.SkipSpace(b, 0), func(k []byte, ks, vs, ve int) bool {
		name := string(k)
		v := b[vs:ve]
		switch {
		case top[name]:
			changed = true
			return true
		case (name == "generationConfig" || name == "generation_config") && v[0] == '{':
			nv, ch := editObject(v, gen, e.MaxOutput)
			v, changed = nv, changed || ch
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, b[ks:vs]...)
		out = append(out, v...)
		return true
	})
	if !changed {
		return r.body
	}
	return append(out, '}')
}

// editObject rebuilds generationConfig without the dropped fields and with
// maxOutputTokens at most limit; changed is false when nothing had to go.
func editObject(v []byte, drop map[string]bool, limit int) ([]byte, bool) {
	changed := false
	out := make([]byte, 0, len(v))
	out = append(out, '{')
	first := true
	jsonscan.MemberSpan(v, 0, func(k []byte, ks, vs, ve int) bool {
		name := string(k)
		val := v[vs:ve]
		switch {
		case drop[name]:
			changed = true
			return true
		case (name == "maxOutputTokens" || name == "max_output_tokens") && limit > 0 && tooMany(val, limit):
			val = strconv.AppendInt(nil, int64(limit), 10)
			changed = true
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, v[ks:vs]...)
		out = append(out, val...)
		return true
	})
	if !changed {
		return v, false
	}
	return append(out, '}'), true
}

// tooMany reports whether a maxOutputTokens value is over limit; a value
// too large for SmallInt is too many.
func tooMany(v []byte, limit int) bool {
	if n := jsonscan.SmallInt(v); n > 0 {
		return n > limit
	}
	// Proto JSON allows the integer as a string, and a huge one.
	s := string(bytes.Trim(v, `"`))
	n, err := strconv.ParseFloat(s, 64)
	return err == nil && n > float64(limit)
}
