package jsonscan

import "bytes"

// Valid reports whether b is one JSON value with optional white space
// around it, exactly as json.Valid does, in one pass and without
// allocating for nesting up to 64 levels. Stream relays check every
// event with it, so it must cost little more than reading the bytes:
// encoding/json's scanner calls a state function per byte.
func Valid(b []byte) bool {
	i := valueEnd(b, SkipSpace(b, 0), 0)
	return i >= 0 && SkipSpace(b, i) == len(b)
}

// valueEnd returns the index just past the valid JSON value starting at
// b[i], or -1 when none does. depth is how many containers around b[i]
// are open, which counts towards maxDepth.
func valueEnd(b []byte, i, depth int) int {
	var small [64]byte
	// stack holds, per open container, '{' or '['.
	stack := small[:0]
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if stack = append(stack, c); depth+len(stack) > maxDepth {
				return -1
			}
			i = SkipSpace(b, i+1)
			// '}' and ']' come two after '{' and '[' in ASCII.
			if i < len(b) && b[i] == c+2 {
				i++
				stack = stack[:len(stack)-1]
				break
			}
			// An object's member: key, colon, then its value.
			if c == '{' {
				if i = key(b, i); i < 0 {
					return -1
				}
			}
			continue
		case c == '"':
			if i = stringEnd(b, i); i < 0 {
				return -1
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if i = numberEnd(b, i); i < 0 {
				return -1
			}
		case c == 't':
			if i = literalEnd(b, i, "true"); i < 0 {
				return -1
			}
		case c == 'f':
			if i = literalEnd(b, i, "false"); i < 0 {
				return -1
			}
		case c == 'n':
			if i = literalEnd(b, i, "null"); i < 0 {
				return -1
			}
		default:
			return -1
		}
		// A value ended: close containers or go on to the next element.
		for len(stack) > 0 {
			if i = SkipSpace(b, i); i >= len(b) {
				return -1
			}
			top := stack[len(stack)-1]
			switch b[i] {
			case ',':
				i = SkipSpace(b, i+1)
				if top == '{' {
					if i = key(b, i); i < 0 {
						return -1
					}
				}
			case '}':
				if top != '{' {
					return -1
				}
				i++
				stack = stack[:len(stack)-1]
				continue
			case ']':
				if top != '[' {
					return -1
				}
				i++
				stack = stack[:len(stack)-1]
				continue
			default:
				return -1
			}
			break
		}
		if len(stack) == 0 {
			return i
		}
	}
}

// PickValid is Pick for b not known to be valid, in the same pass as the
// check: valid reports whether b is one JSON value with optional white
// space around it, as Valid does, and picked is Pick's result when b is
// valid and an object (false for any other value, and whenever valid is
// false). A relay that checks every event and then reads a few of its
// members reads the bytes once instead of twice.
func PickValid(b []byte, keys []string, vals [][]byte) (valid, picked bool) {
	clear(vals)
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return Valid(b), false
	}
	picked = true
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		valid = SkipSpace(b, i+1) == len(b)
		return valid, valid
	}
	for {
		ks := i
		if i = key(b, i); i < 0 {
			return false, false
		}
		vs := i
		if i = valueEnd(b, vs, 1); i < 0 {
			return false, false
		}
		if picked {
			picked = pickMember(b, ks, vs, i, keys, vals)
		}
		if i = SkipSpace(b, i); i >= len(b) {
			return false, false
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
			continue
		case '}':
			if SkipSpace(b, i+1) != len(b) {
				return false, false
			}
			return true, picked
		}
		return false, false
	}
}

// pickMember is one step of Pick for the member whose key's literal
// starts at b[ks] and whose value is b[vs:ve]: it reports false where Pick
// does.
func pickMember(b []byte, ks, vs, ve int, keys []string, vals [][]byte) bool {
	ke := skipString(b, ks)
	key := b[ks+1 : ke-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		key = []byte(Unquote(b[ks:ke]))
	}
	for i, k := range keys {
		if string(key) == k {
			if vals[i] != nil {
				return false
			}
			vals[i] = b[vs:ve]
			return true
		}
	}
	return FoldFree(key)
}

// maxDepth is the deepest nesting json.Valid accepts.
const maxDepth = 10000

// key reads an object member's key and its colon from b[i], returning
// where the member's value starts (after white space), or -1.
func key(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = stringEnd(b, i); i < 0 {
		return -1
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return SkipSpace(b, i+1)
}

// stringEnd returns the index just past the string literal at b[i] == '"',
// or -1 when it is not a valid one: unterminated, a control character, or
// a bad escape.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// numberEnd returns the index just past the number at b[i], or -1 when it
// is not one JSON allows: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return -1
		}
	}
	return i
}

// literalEnd returns the index just past lit at b[i], or -1.
func literalEnd(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}
