package config

import (
	"strconv"
	"strings"
)

// Problem is one thing wrong with a config file, or one warning about it.
type Problem struct {
	// Line is the 1-based line in the file, 0 if unknown.
	Line int
	// Field is the path of the offending value, such as
	// "providers[1].base_url", "chains[0].backends[2]" or "breaker.failures".
	// It is empty for problems with the file as a whole, like YAML syntax.
	Field string
	// Message says what is wrong and, where useful, how to fix it.
	Message string
	// Warning marks a problem that does not stop the config from loading.
	Warning bool
}

// String formats p as "LINE: FIELD: MESSAGE", with "warning: " after the line for
// warnings. An unknown line or an empty field is left out.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteString(": ")
	}
	if p.Warning {
		b.WriteString("warning: ")
	}
	p.writeTail(&b)
	return b.String()
}

// writeTail writes "FIELD: MESSAGE", or only the message without a field.
func (p Problem) writeTail(b *strings.Builder) {
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
}

// ValidationError is returned when a config file cannot be used. It holds
// every fatal problem found, not only the first, so the user can fix them
// all in one go.
type ValidationError struct {
	// File is the name the config was loaded from.
	File string
	// Problems are the fatal problems, ordered by line.
	Problems []Problem
}

// Error lists one problem per line, each as "FILE:LINE: FIELD: MESSAGE", the
// form editors and terminals recognise as a location.
func (e *ValidationError) Error() string {
	if len(e.Problems) == 0 {
		return e.File + ": invalid config"
	}
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.File)
		if p.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Line))
		}
		if e.File != "" || p.Line > 0 {
			b.WriteString(": ")
		}
		p.writeTail(&b)
	}
	return b.String()
}
