package fakeupstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Shapes of the OpenAI wire format, decoded the way a client would.

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type toolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type msg struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	ToolCalls []toolCall `json:"tool_calls"`
}

type choice struct {
	Index        int     `json:"index"`
	Message      *msg    `json:"message"`
	Delta        *msg    `json:"delta"`
	Text         *string `json:"text"`
	FinishReason *string `json:"finish_reason"`
}

type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage"`
}

type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// newServer starts a server that the test closes when it ends.
func newServer(t testing.TB) (*Server, *http.Client) {
	t.Helper()
	s := Start()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		s.Close()
	})
	return s, &http.Client{Transport: tr}
}

// post sends a JSON body and fails the test on a transport error.
func post(t *testing.T, c *http.Client, url, body string, header ...string) *http.Response {
	t.Helper()
	resp, err := tryPost(context.Background(), c, url, body, header...)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

// tryPost sends a JSON body; header holds name, value pairs.
func tryPost(ctx context.Context, c *http.Client, url, body string, header ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.Do(req)
}

// readBody reads and closes the body.
func readBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return b
}

// decode parses JSON and fails the test if it does not parse.
func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %q: %v", b, err)
	}
	return v
}

// chatBody is a chat request for model.
func chatBody(model string, stream bool) string {
	s := `{"model":` + quote(model) + `,"messages":[{"role":"user","content":"What is the weather like?"}]`
	if stream {
		s += `,"stream":true`
	}
	return s + "}"
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sseReader reads the data payloads of a server-sent event stream.
type sseReader struct {
	r *bufio.Reader
}

func newSSE(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(r)} }

// next returns the payload of the next event, without "data: ".
func (s *sseReader) next() (string, error) {
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line != "" {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return "", errors.New("not a data line: " + line)
		}
		return data, nil
	}
}

// stream is everything a client saw of a stream.
type stream struct {
	raw      []string     // Every payload, [DONE] included.
	chunks   []completion // Payloads that parsed.
	bad      []string     // Payloads that did not parse.
	contents []string     // Non-empty content (or text) deltas, in order.
	args     string       // Tool-call arguments, concatenated.
	finish   string       // The last finish_reason seen.
	usage    *usage       // From the usage chunk.
	done     bool         // [DONE] was seen.
	err      error        // How the stream ended; nil for a clean EOF.
	elapsed  time.Duration
}

// readStream reads a whole stream and closes the body.
func readStream(t *testing.T, resp *http.Response) stream {
	t.Helper()
	defer resp.Body.Close()
	start := time.Now()
	var st stream
	r := newSSE(resp.Body)
	for {
		data, err := r.next()
		if err != nil {
			if err != io.EOF {
				st.err = err
			}
			break
		}
		st.add(data)
	}
	st.elapsed = time.Since(start)
	return st
}

// add records one payload.
func (st *stream) add(data string) {
	st.raw = append(st.raw, data)
	if data == "[DONE]" {
		st.done = true
		return
	}
	var c completion
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		st.bad = append(st.bad, data)
		return
	}
	st.chunks = append(st.chunks, c)
	if c.Usage != nil {
		st.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.FinishReason != nil {
			st.finish = *ch.FinishReason
		}
		if ch.Text != nil && *ch.Text != "" {
			st.contents = append(st.contents, *ch.Text)
		}
		if ch.Delta == nil {
			continue
		}
		if ch.Delta.Content != nil && *ch.Delta.Content != "" {
			st.contents = append(st.contents, *ch.Delta.Content)
		}
		for _, tc := range ch.Delta.ToolCalls {
			st.args += tc.Function.Arguments
		}
	}
}

// eventually polls cond until it holds or two seconds have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lastCancelled reports whether the last logged request was cancelled.
func lastCancelled(s *Server) bool {
	reqs := s.Requests()
	return len(reqs) > 0 && reqs[len(reqs)-1].Cancelled
}
