package fakeupstream

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

var (
	benchChat   = []byte(`{"model":"bench","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello."}]}`)
	benchStream = []byte(`{"model":"bench","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello."}]}`)
)

// benchServer starts a server with recording off and a client that keeps
// enough idle connections for parallel benchmarks.
func benchServer(b *testing.B) (*Server, *http.Client) {
	s, c := newServer(b)
	s.SetRecording(false)
	return s, c
}

// benchPost sends one request and drains the answer.
func benchPost(b *testing.B, c *http.Client, url string, body []byte) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkChatNonStream measures a non-stream chat completion through a
// real client and a real TCP connection.
func BenchmarkChatNonStream(b *testing.B) {
	s, c := benchServer(b)
	url := s.URL + "/chat/completions"
	b.ReportAllocs()
	for b.Loop() {
		benchPost(b, c, url, benchChat)
	}
}

// BenchmarkChatStream measures a streamed chat completion (role, empty,
// three content, finish and usage chunks and [DONE], each flushed) through a
// real client and a real TCP connection.
func BenchmarkChatStream(b *testing.B) {
	s, c := benchServer(b)
	url := s.URL + "/chat/completions"
	b.ReportAllocs()
	for b.Loop() {
		benchPost(b, c, url, benchStream)
	}
}

// BenchmarkChatNonStreamParallel is BenchmarkChatNonStream from many
// goroutines at once, which shows lock contention in the server.
func BenchmarkChatNonStreamParallel(b *testing.B) {
	s, c := benchServer(b)
	url := s.URL + "/chat/completions"
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchPost(b, c, url, benchChat)
		}
	})
}

// BenchmarkChatStreamParallel is BenchmarkChatStream from many goroutines
// at once.
func BenchmarkChatStreamParallel(b *testing.B) {
	s, c := benchServer(b)
	url := s.URL + "/chat/completions"
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchPost(b, c, url, benchStream)
		}
	})
}

// BenchmarkHandler measures the handler alone, without the network or a
// client, so its allocations are the server's own.
func BenchmarkHandler(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{{"NonStream", benchChat}, {"Stream", benchStream}} {
		b.Run(bc.name, func(b *testing.B) {
			s, _ := benchServer(b)
			rd := bytes.NewReader(nil)
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", rd)
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(bc.body)
				req.ContentLength = int64(len(bc.body))
				clear(w.h)
				s.serve(w, req)
			}
		})
	}
}

// discardWriter is a ResponseWriter that throws the answer away.
type discardWriter struct {
	h http.Header
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Flush()                      {}
