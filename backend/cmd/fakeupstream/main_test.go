package main

import (
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	b, err := parseSpec("chunks=3,chunk-delay=1s,header-delay=250ms")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Chunks) != 3 || b.Chunks[0] != "Hello" || b.Chunks[2] != " word2" || b.ChunkDelay != time.Second || b.HeaderDelay != 250*time.Millisecond {
		t.Errorf("got %+v", b)
	}
	for _, bad := range []string{"chunks=0", "chunks=x", "chunk-delay=-1s", "header-delay=soon", "speed=3", "chunks"} {
		if _, err := parseSpec(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
