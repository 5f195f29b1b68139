package sse

import (
	"io"
	"strings"
	"testing"
)

func TestEventBuffered(t *testing.T) {
	cases := []struct {
		name   string
		stream string
		want   bool // after reading the first event
	}{
		{"next event complete", "data: 1\n\ndata: 2\n\n", true},
		{"next event complete CRLF", "data: 1\r\n\r\ndata: 2\r\n\r\n", true},
		{"next event partial", "data: 1\n\ndata: 2", false},
		{"only a comment ahead", "data: 1\n\n: keep-alive\n\n", false},
		{"event name then data", "data: 1\n\nevent: x\ndata: 2\n\n", true},
		{"nothing ahead", "data: 1\n\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A pipe delivers exactly what was written, so the buffer holds
			// the whole test stream after the first read.
			pr, pw := io.Pipe()
			go func() { _, _ = io.Copy(pw, strings.NewReader(tc.stream)) }()
			r := NewReader(pr, 1<<20)
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
			if got := r.EventBuffered(); got != tc.want {
				t.Errorf("EventBuffered = %v, want %v", got, tc.want)
			}
			pw.Close()
		})
	}
}
