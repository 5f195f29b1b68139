package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// recorder is a reverse proxy that notes every request on its way to a
// server and the start of each answer.
type recorder struct {
	// url is the proxy's address, http://127.0.0.1:PORT without a path,
	// the base URL to give a client.
	url string

	mu  sync.Mutex
	log []inboundRequest
}

// inboundRequest is one request a CLI sent to FreeLane and FreeLane's
// answer's status and headers.
type inboundRequest struct {
	Method string
	// Path is the URL path, RawQuery the query string without '?'.
	Path, RawQuery string
	Header         http.Header
	Body           []byte
	// Status is FreeLane's status code and RespHeader its headers.
	Status     int
	RespHeader http.Header
	// RespBody is the start of FreeLane's answer, up to respKeep bytes:
	// enough for an error's message or a stream's first events.
	RespBody []byte
}

// respKeep is how much of each answer the recording proxy keeps.
const respKeep = 8 << 10

// startRecorder starts a recording proxy in front of base (FreeLane's
// http://127.0.0.1:PORT), stopped when the test ends.
func startRecorder(t *testing.T, base string) *recorder {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		// SetURL also sets the Host header to FreeLane's own, which its
		// DNS-rebinding check wants.
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		// Stream every byte on at once, as the client would get it from
		// FreeLane.
		FlushInterval: -1,
	}
	a := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			a.mu.Lock()
			a.log = append(a.log, inboundRequest{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
				Header: r.Header.Clone(), Body: body, Status: rec.status, RespHeader: w.Header().Clone(), RespBody: rec.kept})
			a.mu.Unlock()
		}()
		proxy.ServeHTTP(rec, r)
	}))
	t.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

// dump writes every request the CLIs sent, and the start of each answer,
// into the directory $FREELANE_AGENTS_DUMP names, if any, one file per
// request under the test's name: the way to see exactly what a CLI sends
// (its tools' names and schemas, side requests, headers).
func (a *recorder) dump(t *testing.T) {
	dir := os.Getenv("FREELANE_AGENTS_DUMP")
	if dir == "" {
		return
	}
	dir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Error(err)
		return
	}
	for i, r := range a.inbound() {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s %s?%s\n", r.Method, r.Path, r.RawQuery)
		_ = r.Header.Write(&b)
		fmt.Fprintf(&b, "\n%s\n\n--- answer %d\n", r.Body, r.Status)
		_ = r.RespHeader.Write(&b)
		fmt.Fprintf(&b, "\n%s\n", r.RespBody)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.txt", i)), b.Bytes(), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// statusRecorder notes the status a handler writes and the start of its
// body, and passes flushes on, so streams are not held back.
type statusRecorder struct {
	http.ResponseWriter
	status int
	kept   []byte
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if room := respKeep - len(s.kept); room > 0 {
		s.kept = append(s.kept, p[:min(room, len(p))]...)
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// inbound is every request the CLIs sent so far, in order.
func (a *recorder) inbound() []inboundRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]inboundRequest(nil), a.log...)
}

// attempts is the X-FreeLane-Attempts header of every answer so far that
// had one, in order: FreeLane's account of which backends it tried and how
// each fared, such as "oai/gpt-1=429; gem/gemini-1=ok".
func (a *recorder) attempts() []string {
	var out []string
	for _, r := range a.inbound() {
		if h := r.RespHeader.Get("X-FreeLane-Attempts"); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// describeInbound lists the CLI's requests one a line (method, path,
// status, attempts, body size) for failure messages and the test log.
func (a *recorder) describeInbound() string {
	var b strings.Builder
	for _, r := range a.inbound() {
		q := ""
		if r.RawQuery != "" {
			q = "?" + r.RawQuery
		}
		fmt.Fprintf(&b, "  %s %s%s -> %d [%s] (%d bytes)\n", r.Method, r.Path, q, r.Status,
			r.RespHeader.Get("X-FreeLane-Attempts"), len(r.Body))
		if r.Status >= 400 {
			fmt.Fprintf(&b, "    %.500s\n", r.RespBody)
		}
	}
	return b.String()
}
