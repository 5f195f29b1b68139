package sse

import (
	"io"
	"strings"
	"testing"
)

// TestLargeEventsKeepOneBuffer: a long first data line becomes the event's
// buffer without a second copy, further lines still join it, and neither
// buffer outlives the event.
func TestLargeEventsKeepOneBuffer(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	in := "data: " + big + "\n\n" +
		"data: " + big + "\ndata: tail\n\n" +
		"data: small\n\n"
	r := NewReader(strings.NewReader(in), 4<<20)
	for i, want := range []string{big, big + "\ntail", "small"} {
		ev, err := r.Next()
		if err != nil || string(ev.Data) != want {
			t.Fatalf("event %d: %d bytes, %v", i, len(ev.Data), err)
		}
	}
	if cap(r.data) > 1<<20 || cap(r.line) > 1<<20 {
		t.Fatalf("after a small event the reader still holds %d + %d bytes", cap(r.data), cap(r.line))
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if cap(r.data) > keepBuffer || cap(r.line) > keepBuffer {
		t.Fatalf("the reader keeps %d + %d bytes after the large events", cap(r.data), cap(r.line))
	}
}
