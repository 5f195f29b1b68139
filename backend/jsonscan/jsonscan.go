// Package jsonscan walks JSON that json.Valid has already accepted, finding
// the boundaries of values without decoding them, and writes JSON strings
// without reflection. The request hot path
// uses it to read the few fields routing needs, and to splice a body,
// without the cost of reflection.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
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

// SkipValue returns the index just past the value starting at b[i].
func SkipValue(b []byte, i int) int {
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

// EachMember calls fn for every member of the object starting at b[i] ==
// '{', with the key unescaped and the value's span, until fn returns false.
func EachMember(b []byte, i int, fn func(key []byte, vs, ve int) bool) {
	MemberSpan(b, i, func(key []byte, _, vs, ve int) bool { return fn(key, vs, ve) })
}

// MemberSpan is EachMember that also reports where each member starts (its
// key's opening quote), so a member can be cut out of the object.
func MemberSpan(b []byte, i int, fn func(key []byte, ks, vs, ve int) bool) {
	i = SkipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		ks := i
		ke := skipString(b, i)
		key := b[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(Unquote(b[i:ke]))
		}
		i = SkipSpace(b, ke)
		i = SkipSpace(b, i+1)
		ve := SkipValue(b, i)
		if !fn(key, ks, i, ve) {
			return
		}
		i = SkipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
}

// EachElement calls fn for every element of the array b (b[0] == '['),
// until fn returns false.
func EachElement(b []byte, fn func(vs, ve int) bool) {
	i := SkipSpace(b, 1)
	for i < len(b) && b[i] != ']' {
		ve := SkipValue(b, i)
		if !fn(i, ve) {
			return
		}
		i = SkipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
}

// Unquote returns the string value of a valid JSON string literal, as
// encoding/json reads it: invalid UTF-8 becomes U+FFFD.
func Unquote(lit []byte) string {
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// Null reports whether a member's value, as Pick gives it, is absent or
// null.
func Null(v []byte) bool { return v == nil || string(v) == "null" }

// Int reports whether a member's value is absent, null or an integer
// that encoding/json reads into an int (at most 18 digits, so it fits).
func Int(v []byte) bool {
	if Null(v) {
		return true
	}
	digits := bytes.TrimPrefix(v, []byte("-"))
	if len(digits) == 0 || len(digits) > 18 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Count reads a token count as encoding/json reads it into an int, for
// the plain non-negative integers vendors send: absent or null is 0, and
// ok is false for anything else (a negative, a float, a string, more than
// nine digits), which the caller leaves to encoding/json.
func Count(v []byte) (n int, ok bool) {
	if Null(v) || string(v) == "0" {
		return 0, true
	}
	n = SmallInt(v)
	return n, n > 0
}

// SmallInt reads a non-negative JSON integer of at most nine digits
// without allocating; anything else (null, a float, a string, a huge
// number) is 0, which callers take as "not set".
func SmallInt(v []byte) int {
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

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, exactly as encoding/json
// writes it without HTML escaping: invalid UTF-8 becomes U+FFFD. Encoders
// on the hot path use it to build answers without reflection.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = AppendStringBody(b, s)
	return append(b, '"')
}

// AppendStringBody is AppendString without the quotes, for a string built
// from several pieces.
func AppendStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			// Line and paragraph separators end a line in JavaScript.
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}

// FoldFree reports whether a member's key has no upper-case letter and no
// byte outside ASCII, so that no other key of a Go struct matches it:
// encoding/json matches keys case-insensitively, with Unicode folding. A
// scanner that reads members by their exact keys must leave an object
// with any other key to encoding/json, or it could read it otherwise.
func FoldFree(key []byte) bool {
	for _, c := range key {
		if c >= 0x80 || (c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Pick finds the members of the object b (valid JSON, b[0] == '{') whose
// keys are keys, putting each one's value in vals at the key's position,
// nil for an absent one. It reports false, for the caller to leave the
// object to encoding/json, where that could read it otherwise: a picked
// key that repeats (encoding/json merges such members) or another key
// that is not FoldFree (encoding/json could match it to a picked one).
func Pick(b []byte, keys []string, vals [][]byte) bool {
	clear(vals)
	ok := true
	EachMember(b, 0, func(key []byte, vs, ve int) bool {
		for i, k := range keys {
			if string(key) == k {
				ok = vals[i] == nil
				vals[i] = b[vs:ve]
				return ok
			}
		}
		ok = FoldFree(key)
		return ok
	})
	return ok
}
