package jsonscan

// Valid reports whether b is one JSON value with optional white space
// around it, exactly as json.Valid does, in one pass and without
// allocating for nesting up to 64 levels. Stream relays check every
// event with it, so it must cost little more than reading the bytes:
// encoding/json's scanner calls a state function per byte.
func Valid(b []byte) bool {
	var small [64]byte
	// stack holds, per open container, '{' or '['.
	stack := small[:0]
	i := SkipSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if stack = append(stack, c); len(stack) > maxDepth {
				return false
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
					return false
				}
			}
			continue
		case c == '"':
			if i = stringEnd(b, i); i < 0 {
				return false
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if i = numberEnd(b, i); i < 0 {
				return false
			}
		case c == 't':
			if i = literalEnd(b, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = literalEnd(b, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = literalEnd(b, i, "null"); i < 0 {
				return false
			}
		default:
			return false
		}
		// A value ended: close containers or go on to the next element.
		for {
			i = SkipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			switch b[i] {
			case ',':
				i = SkipSpace(b, i+1)
				if top == '{' {
					if i = key(b, i); i < 0 {
						return false
					}
				}
			case '}':
				if top != '{' {
					return false
				}
				i++
				stack = stack[:len(stack)-1]
				continue
			case ']':
				if top != '[' {
					return false
				}
				i++
				stack = stack[:len(stack)-1]
				continue
			default:
				return false
			}
			break
		}
	}
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
