// Package logtest holds what tests need to read a logger's output while
// the code under test writes to it from its own goroutines.
package logtest

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a log destination that is safe for concurrent writers and
// can be read at any time. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Count is how many times sub occurs in what was written.
func (l *Buffer) Count(sub string) int { return strings.Count(l.String(), sub) }
