package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"freelane/backend/clock"
	"freelane/backend/store"
)

type bodyRecorder []store.Bodies

func (r *bodyRecorder) RecordBodies(b store.Bodies) { *r = append(*r, b) }

// TestTapBodies: while body logging is off the handler gets the server's
// own writer and nothing is copied; while it is on, the request and the
// answer are kept up to the size and a little more, and only for an
// answer that names its request.
func TestTapBodies(t *testing.T) {
	var rec bodyRecorder
	s := &Server{o: Options{Bodies: &rec, Clock: clock.Real{}}}
	answer := strings.Repeat("a", 10_000)
	var seen http.ResponseWriter
	h := s.tapBodies(func(w http.ResponseWriter, r *http.Request) {
		seen = w
		if t, ok := w.(*bodyTap); ok {
			t.keepRequest([]byte("the request"))
		}
		if r.URL.Path != "/unrouted" {
			w.Header()[headerRequestID] = []string{"req_1"}
		}
		_, _ = w.Write([]byte(answer))
	})
	call := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h(w, httptest.NewRequest(http.MethodPost, path, nil))
		if w.Body.String() != answer {
			t.Fatalf("the client got %d bytes, want the whole answer", w.Body.Len())
		}
		return w
	}

	if w := call("/v1/chat/completions"); seen != w {
		t.Fatal("body logging is off, but the handler's writer was wrapped")
	}
	if len(rec) != 0 {
		t.Fatalf("body logging is off, but %d bodies were kept", len(rec))
	}

	s.SetBodyLogging(100)
	call("/v1/chat/completions")
	call("/unrouted")
	if len(rec) != 1 {
		t.Fatalf("%d bodies kept, want 1 (the refusal names no request)", len(rec))
	}
	b := rec[0]
	if b.RequestID != "req_1" || string(b.Request) != "the request" || b.RequestCut || b.Max != 100 {
		t.Errorf("kept %+v", b)
	}
	if len(b.Answer) != 100+bodyMargin || !b.AnswerCut {
		t.Errorf("kept %d bytes of the answer (cut %v), want %d and cut", len(b.Answer), b.AnswerCut, 100+bodyMargin)
	}
}
