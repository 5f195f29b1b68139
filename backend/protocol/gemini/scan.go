package gemini

import (
	"bytes"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
)

// A stream relayed to a Gemini client unchanged is classified chunk by
// chunk, and every chunk is a whole GenerateContentResponse: decoding each
// one costs several times relaying it. scanChunk reads the chunks such
// streams are made of (text and thought parts, usage, a finish reason) by
// scanning their bytes, and leaves every other chunk, and any chunk that
// encoding/json could read otherwise or would refuse, to parseResponse.

// The JSON names of the fields of response, candidate, content, part and
// usageMetadata, in the order scanChunk reads them. A member whose key
// matches none of them exactly but one of them without regard to case is
// one encoding/json would read into that field, so the scan gives up.
var (
	responseFields  = []string{"candidates", "usageMetadata", "promptFeedback", "error", "modelVersion", "responseId"}
	candidateFields = []string{"content", "finishReason", "index"}
	contentFields   = []string{"parts", "role"}
	partFields      = []string{"text", "thought", "thoughtSignature", "thought_signature",
		"inlineData", "inline_data", "fileData", "file_data", "functionCall", "function_call", "functionResponse", "function_response"}
	usageFields = []string{"promptTokenCount", "candidatesTokenCount", "totalTokenCount", "thoughtsTokenCount", "cachedContentTokenCount"}
)

// scanChunk is Classify for the common chunks, by scanning: ok is false
// for a chunk it leaves to the decoder. kind is Content when the first
// candidate says something.
func scanChunk(data []byte) (kind llm.EventKind, u *llm.Usage, ok bool) {
	var v [6][]byte
	if !jsonscan.Valid(data) {
		return 0, nil, false
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || !pickFields(data, responseFields, v[:]) {
		return 0, nil, false
	}
	cands, use := v[0], v[1]
	// A blocked prompt and an error chunk are rare and the decoder's.
	if !jsonscan.Null(v[2]) || !jsonscan.Null(v[3]) || !stringOrNull(v[4]) || !stringOrNull(v[5]) {
		return 0, nil, false
	}
	if !jsonscan.Null(use) {
		if u, ok = scanUsage(use); !ok {
			return 0, nil, false
		}
	}
	kind = llm.Held
	if jsonscan.Null(cands) {
		return kind, u, true
	}
	if cands[0] != '[' {
		return 0, nil, false
	}
	first := true
	jsonscan.EachElement(cands, func(s, e int) bool {
		var said bool
		said, ok = scanCandidate(cands[s:e])
		if first && said {
			kind = llm.Content
		}
		first = false
		return ok
	})
	if !ok {
		return 0, nil, false
	}
	return kind, u, true
}

// scanCandidate reads one candidate: whether it says something, and ok
// false where the decoder must judge it (a finish reason of the safety
// filters among them, which may make the chunk an error).
func scanCandidate(c []byte) (said, ok bool) {
	if string(c) == "null" {
		return false, true
	}
	var v [3][]byte
	if c[0] != '{' || !pickFields(c, candidateFields, v[:]) || !jsonscan.Int(v[2]) || !stringOrNull(v[1]) {
		return false, false
	}
	if r := v[1]; !jsonscan.Null(r) && (bytes.IndexByte(r, '\\') >= 0 || blockedReasons[string(r[1:len(r)-1])]) {
		return false, false
	}
	content := v[0]
	if jsonscan.Null(content) {
		return false, true
	}
	var cv [2][]byte
	if content[0] != '{' || !pickFields(content, contentFields, cv[:]) || !stringOrNull(cv[1]) {
		return false, false
	}
	parts := cv[0]
	if jsonscan.Null(parts) {
		return false, true
	}
	if parts[0] != '[' {
		return false, false
	}
	ok = true
	jsonscan.EachElement(parts, func(s, e int) bool {
		var says bool
		says, ok = scanPart(parts[s:e])
		said = said || says
		return ok
	})
	return said, ok
}

// scanPart reads one part of text or thought; any other part (a function
// call, inline data, a file) is the decoder's.
func scanPart(p []byte) (says, ok bool) {
	if string(p) == "null" {
		return false, true
	}
	var v [12][]byte
	if p[0] != '{' || !pickFields(p, partFields, v[:]) {
		return false, false
	}
	for _, m := range v[4:] {
		if !jsonscan.Null(m) {
			return false, false
		}
	}
	text, thought := v[0], v[1]
	if !stringOrNull(text) || !stringOrNull(v[2]) || !stringOrNull(v[3]) {
		return false, false
	}
	if !jsonscan.Null(thought) && string(thought) != "true" && string(thought) != "false" {
		return false, false
	}
	return !jsonscan.Null(text) && len(text) > 2, true
}

// scanUsage reads usageMetadata as usage() reports it.
func scanUsage(use []byte) (*llm.Usage, bool) {
	var v [5][]byte
	if use[0] != '{' || !pickFields(use, usageFields, v[:]) {
		return nil, false
	}
	var n [5]int
	for i, m := range v {
		c, ok := jsonscan.Count(m)
		if !ok {
			return nil, false
		}
		n[i] = c
	}
	m := usageMetadata{PromptTokenCount: n[0], CandidatesTokenCount: n[1], TotalTokenCount: n[2],
		ThoughtsTokenCount: n[3], CachedContentTokenCount: n[4]}
	return m.usage(), true
}

// pickFields is jsonscan.Pick for a struct whose fields have the JSON
// names fields (in vals at their positions): it reports false for a
// repeated field and for a key that is not one of fields but matches one
// without regard to case, or is not ASCII, which encoding/json could read
// into one of them.
func pickFields(obj []byte, fields []string, vals [][]byte) bool {
	clear(vals)
	ok := true
	jsonscan.EachMember(obj, 0, func(key []byte, vs, ve int) bool {
		for i, f := range fields {
			if string(key) == f {
				ok = vals[i] == nil
				vals[i] = obj[vs:ve]
				return ok
			}
		}
		for _, c := range key {
			if c >= 0x80 {
				ok = false
				return false
			}
		}
		for _, f := range fields {
			if asciiEqualFold(key, f) {
				ok = false
				return false
			}
		}
		return true
	})
	return ok
}

// asciiEqualFold reports whether the ASCII key equals f without regard
// to case.
func asciiEqualFold(key []byte, f string) bool {
	if len(key) != len(f) {
		return false
	}
	for i, c := range key {
		if d := f[i]; c != d && c|0x20 != d|0x20 || (c|0x20 < 'a' || c|0x20 > 'z') && c != d {
			return false
		}
	}
	return true
}

// stringOrNull reports whether a member is absent, null or a string.
func stringOrNull(v []byte) bool { return jsonscan.Null(v) || v[0] == '"' }
