package connect

import (
	"errors"
	"fmt"
	"strings"
)

// mergeDotenv sets vars in a .env file: a line that sets one of them is
// replaced where it stands, the others are added at the end, and every
// other line is kept as it was. Lines that are neither blank, a comment nor
// NAME=value (optionally after export) make the file unreadable, as they
// would to the tool.
func mergeDotenv(path string, old []byte, vars []EnvVar) ([]byte, error) {
	text := string(old)
	nl := "\n"
	if strings.Contains(text, "\r\n") {
		nl = "\r\n"
	}
	lines := strings.SplitAfter(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	want := map[string]string{}
	for _, v := range vars {
		want[v.Name] = v.Value
	}
	done := map[string]bool{}
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		name, quote, err := dotenvName(line)
		if err != nil {
			return nil, &ParseError{File: path, Line: i + 1, Err: err}
		}
		// A quoted value may run over several lines; they all belong to
		// the line that opened it.
		end := i
		if quote != 0 {
			for end < len(lines) && !closes(lines, i, end, quote) {
				end++
			}
			if end == len(lines) {
				return nil, &ParseError{File: path, Line: i + 1, Err: fmt.Errorf("the value opened with %c is never closed", quote)}
			}
		}
		value, ours := want[name]
		switch {
		case name != "" && ours && done[name]:
			// A second line for the same variable: the first one now
			// holds FreeLane's value, so this one goes.
		case name != "" && ours:
			b.WriteString(name + "=" + value + nl)
			done[name] = true
		default:
			for l := i; l <= end; l++ {
				b.WriteString(lines[l])
			}
		}
		i = end
	}
	out := b.String()
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += nl
	}
	for _, v := range vars {
		if !done[v.Name] {
			out += v.Name + "=" + v.Value + nl
		}
	}
	return []byte(out), nil
}

// dotenvName reads a line's variable name, "" for blank lines and comments,
// and the quote its value opens without closing on the same line.
func dotenvName(line string) (name string, open byte, err error) {
	s := strings.TrimSpace(line)
	if s == "" || strings.HasPrefix(s, "#") {
		return "", 0, nil
	}
	s = strings.TrimPrefix(s, "export ")
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return "", 0, errors.New("the line is not NAME=value")
	}
	name = strings.TrimSpace(s[:eq])
	for i, c := range name {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '-')) {
			return "", 0, fmt.Errorf("%q is not a variable name", name)
		}
	}
	v := strings.TrimSpace(s[eq+1:])
	if len(v) > 0 && (v[0] == '"' || v[0] == '\'' || v[0] == '`') {
		if strings.IndexByte(v[1:], v[0]) < 0 {
			return name, v[0], nil
		}
	}
	return name, 0, nil
}

// closes reports whether the value opened on line start with quote is
// closed by line end.
func closes(lines []string, start, end int, quote byte) bool {
	if end == start {
		return false
	}
	return strings.IndexByte(lines[end], quote) >= 0
}
