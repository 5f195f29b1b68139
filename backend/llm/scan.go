package llm

import (
	"bytes"
	"encoding/json"
)

// These scanners walk JSON that json.Valid has already accepted, so they
// only need to find boundaries, never to report errors.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// eachMember calls fn for every member of the object starting at b[i] ==
// '{', with the key unescaped and the value's span, until fn returns false.
func eachMember(b []byte, i int, fn func(key []byte, vs, ve int) bool) {
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		ke := skipString(b, i)
		key := b[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(unquote(b[i:ke]))
		}
		i = skipSpace(b, ke)
		i = skipSpace(b, i+1) // past ':'
		ve := skipValue(b, i)
		if !fn(key, i, ve) {
			return
		}
		i = skipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}

// eachElement calls fn for every element of the array b (b[0] == '['),
// until fn returns false.
func eachElement(b []byte, fn func(vs, ve int) bool) {
	i := skipSpace(b, 1)
	for i < len(b) && b[i] != ']' {
		ve := skipValue(b, i)
		if !fn(i, ve) {
			return
		}
		i = skipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}

// unquote returns the string value of a valid JSON string literal.
func unquote(lit []byte) string {
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}
