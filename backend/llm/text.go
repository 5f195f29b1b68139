package llm

import "freelane/backend/jsonscan"

// AppendDeltaText appends the generated text that stream chunks (or a whole
// answer) carry: the string values of content, text, reasoning, refusal
// and tool-call arguments, wherever they sit. data is one JSON value or
// several separated by white space (a stream's events, one per line), each
// valid JSON. It lets the router keep a stream's output for token
// estimation when the upstream reports no usage, without decoding chunks
// into structs.
func AppendDeltaText(dst, data []byte) []byte {
	for i := jsonscan.SkipSpace(data, 0); i < len(data); i = jsonscan.SkipSpace(data, i) {
		end := jsonscan.SkipValue(data, i)
		if end <= i {
			break
		}
		if c := data[i]; c == '{' || c == '[' {
			dst = appendText(dst, data[i:end])
		}
		i = end
	}
	return dst
}

func appendText(dst, v []byte) []byte {
	switch v[0] {
	case '{':
		jsonscan.EachMember(v, 0, func(key []byte, vs, ve int) bool {
			val := v[vs:ve]
			if len(val) == 0 {
				return true
			}
			if val[0] == '"' {
				switch string(key) {
				case "content", "text", "reasoning_content", "reasoning", "refusal", "arguments":
					dst = append(dst, jsonscan.Unquote(val)...)
				}
				return true
			}
			if val[0] == '{' || val[0] == '[' {
				dst = appendText(dst, val)
			}
			return true
		})
	case '[':
		jsonscan.EachElement(v, func(vs, ve int) bool {
			if e := v[vs:ve]; len(e) > 0 && (e[0] == '{' || e[0] == '[') {
				dst = appendText(dst, e)
			}
			return true
		})
	}
	return dst
}
