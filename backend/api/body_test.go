package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadBody(t *testing.T) {
	for _, c := range []struct {
		name    string
		body    string
		chunked bool
	}{
		{"empty", "", false},
		{"small", `{"model":"m"}`, false},
		{"large", strings.Repeat("x", 3<<20), false},
		{"chunked small", `{"model":"m"}`, true},
		{"chunked large", strings.Repeat("y", 3<<20), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b byteBudget
			b.max.Store(64 << 20)
			r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
			if c.chunked {
				r.ContentLength = -1
				r.Body = io.NopCloser(struct{ io.Reader }{strings.NewReader(c.body)})
			}
			h, err := readBody(httptest.NewRecorder(), r, 16<<20, &b)
			if err != nil || string(h.data) != c.body {
				t.Fatalf("read %d of %d bytes: %v", len(h.data), len(c.body), err)
			}
			// What the budget holds is the buffer: never more than twice
			// the body, and little for a small one.
			if held := b.used.Load(); held > int64(2*len(c.body)+unknownBodyChunk+1) {
				t.Fatalf("a %d-byte body holds %d bytes of the budget", len(c.body), held)
			}
			h.release()
			if b.used.Load() != 0 {
				t.Fatalf("the budget still holds %d bytes after release", b.used.Load())
			}
		})
	}
}

func TestReadBodyLimits(t *testing.T) {
	var b byteBudget
	b.max.Store(1 << 20)
	big := bytes.Repeat([]byte("z"), 2<<20)
	r := httptest.NewRequest("POST", "/", bytes.NewReader(big))
	var tooBig *http.MaxBytesError
	if _, err := readBody(httptest.NewRecorder(), r, 1<<20, &b); !errors.As(err, &tooBig) {
		t.Fatalf("a 2 MiB body under a 1 MiB limit: %v", err)
	}
	// One body takes the whole budget on its own; a second does not fit.
	r = httptest.NewRequest("POST", "/", bytes.NewReader(big[:900<<10]))
	h, err := readBody(httptest.NewRecorder(), r, 4<<20, &b)
	if err != nil {
		t.Fatal(err)
	}
	r = httptest.NewRequest("POST", "/", bytes.NewReader(big[:300<<10]))
	if _, err := readBody(httptest.NewRecorder(), r, 4<<20, &b); !errors.Is(err, errBodyBudget) {
		t.Fatalf("a body past the budget: %v", err)
	}
	h.release()
	if b.used.Load() != 0 {
		t.Fatalf("the budget holds %d bytes after the failed read and the release", b.used.Load())
	}
	// Alone, a body larger than the budget is still read.
	r = httptest.NewRequest("POST", "/", bytes.NewReader(big))
	if h, err := readBody(httptest.NewRecorder(), r, 4<<20, &b); err != nil {
		t.Fatalf("a lone 2 MiB body with a 1 MiB budget: %v", err)
	} else {
		h.release()
	}
}
