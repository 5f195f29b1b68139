package fakeupstream

import (
	"context"
	"encoding/json"
	"errors"
	"freelane/backend/jsonscan"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartURL(t *testing.T) {
	s, _ := newServer(t)
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || !strings.HasSuffix(s.URL, "/v1") {
		t.Fatalf("URL = %q, want http://127.0.0.1:PORT/v1", s.URL)
	}
}

func TestChatNonStream(t *testing.T) {
	s, c := newServer(t)
	resp := post(t, c, s.URL+"/chat/completions", chatBody(`gpt-"x"`, false))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	got := decode[completion](t, readBody(t, resp))
	if got.Object != "chat.completion" || got.Model != `gpt-"x"` || got.ID == "" || got.Created == 0 {
		t.Errorf("header fields wrong: %+v", got)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message == nil {
		t.Fatalf("choices = %+v", got.Choices)
	}
	ch := got.Choices[0]
	if ch.Message.Role != "assistant" || ch.Message.Content == nil || *ch.Message.Content != `Hello from gpt-"x"` {
		t.Errorf("message = %+v", ch.Message)
	}
	if ch.FinishReason == nil || *ch.FinishReason != "stop" {
		t.Errorf("finish_reason = %v", ch.FinishReason)
	}
	// "What is the weather like?" is 25 characters, about 7 tokens.
	want := usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}
	if got.Usage == nil || *got.Usage != want {
		t.Errorf("usage = %+v, want %+v", got.Usage, want)
	}
}

func TestChatStream(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		t.Run("include_usage="+strconv.FormatBool(includeUsage), func(t *testing.T) {
			s, c := newServer(t)
			s.Set("m", Behavior{Chunks: []string{"one", " two", " three\n\"q\""}})
			body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"abcdefgh"}]`
			if includeUsage {
				body += `,"stream_options":{"include_usage":true}`
			}
			resp := post(t, c, s.URL+"/chat/completions", body+"}")
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q", ct)
			}
			st := readStream(t, resp)
			if st.err != nil || len(st.bad) > 0 {
				t.Fatalf("stream ended with %v, bad events %q", st.err, st.bad)
			}
			// Role chunk first, then the empty-content chunk.
			first := st.chunks[0]
			if first.Object != "chat.completion.chunk" || first.Model != "m" || first.ID == "" {
				t.Errorf("first chunk = %+v", first)
			}
			if d := first.Choices[0].Delta; d == nil || d.Role != "assistant" || d.Content != nil {
				t.Errorf("first delta = %+v, want role only", d)
			}
			if want := `{"index":0,"delta":{"role":"assistant"},"logprobs":null,"finish_reason":null}`; !strings.Contains(st.raw[0], want) {
				t.Errorf("role chunk %s lacks %s", st.raw[0], want)
			}
			if d := st.chunks[1].Choices[0].Delta; d == nil || d.Content == nil || *d.Content != "" {
				t.Errorf("second delta = %+v, want empty content", d)
			}
			if want := []string{"one", " two", " three\n\"q\""}; !slices.Equal(st.contents, want) {
				t.Errorf("contents = %q, want %q", st.contents, want)
			}
			if st.finish != "stop" || !st.done || st.raw[len(st.raw)-1] != "[DONE]" {
				t.Errorf("finish = %q, done = %v, last = %q", st.finish, st.done, st.raw[len(st.raw)-1])
			}
			for _, ch := range st.chunks {
				if ch.ID != first.ID || ch.Created != first.Created {
					t.Errorf("chunk id/created differ: %+v", ch)
				}
			}
			if !includeUsage {
				if st.usage != nil {
					t.Errorf("usage chunk sent without include_usage")
				}
				return
			}
			last := st.chunks[len(st.chunks)-1]
			if last.Choices == nil || len(last.Choices) != 0 || last.Usage == nil {
				t.Fatalf("last chunk = %s, want choices [] and usage", st.raw[len(st.raw)-2])
			}
			if want := (usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}); *last.Usage != want {
				t.Errorf("usage = %+v, want %+v", *last.Usage, want)
			}
			if !strings.Contains(st.raw[2], `"usage":null`) {
				t.Errorf("content chunk %s lacks usage null", st.raw[2])
			}
		})
	}
}

func TestCompletions(t *testing.T) {
	s, c := newServer(t)
	resp := post(t, c, s.URL+"/completions", `{"model":"txt","prompt":"Say hi"}`)
	got := decode[completion](t, readBody(t, resp))
	if got.Object != "text_completion" || got.Model != "txt" || len(got.Choices) != 1 {
		t.Fatalf("answer = %+v", got)
	}
	ch := got.Choices[0]
	if ch.Text == nil || *ch.Text != "Hello from txt" || ch.FinishReason == nil || *ch.FinishReason != "stop" {
		t.Errorf("choice = %+v", ch)
	}
	if got.Usage == nil || got.Usage.PromptTokens != 2 || got.Usage.CompletionTokens != 3 {
		t.Errorf("usage = %+v", got.Usage)
	}

	resp = post(t, c, s.URL+"/completions", `{"model":"txt","prompt":"Say hi","stream":true,"stream_options":{"include_usage":true}}`)
	st := readStream(t, resp)
	if st.err != nil || len(st.bad) > 0 || !st.done {
		t.Fatalf("stream: err %v, bad %q, done %v", st.err, st.bad, st.done)
	}
	if want := []string{"Hello", " from ", "txt"}; !slices.Equal(st.contents, want) {
		t.Errorf("contents = %q, want %q", st.contents, want)
	}
	if st.chunks[0].Object != "text_completion" || st.finish != "stop" || st.usage == nil || st.usage.CompletionTokens != 3 {
		t.Errorf("stream = %+v", st)
	}
}

func TestEmbeddings(t *testing.T) {
	s, c := newServer(t)
	type embeddings struct {
		Object string `json:"object"`
		Data   []struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Model string `json:"model"`
		Usage *usage `json:"usage"`
	}
	get := func(input string) embeddings {
		t.Helper()
		resp := post(t, c, s.URL+"/embeddings", `{"model":"emb","input":`+input+`}`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("input %s: status %d: %s", input, resp.StatusCode, readBody(t, resp))
		}
		return decode[embeddings](t, readBody(t, resp))
	}
	one := get(`"hello world"`)
	if one.Object != "list" || one.Model != "emb" || len(one.Data) != 1 || one.Usage == nil {
		t.Fatalf("answer = %+v", one)
	}
	if v := one.Data[0].Embedding; len(v) != 8 || one.Data[0].Object != "embedding" {
		t.Fatalf("embedding = %+v", one.Data[0])
	}
	many := get(`["hello world","goodbye"]`)
	if len(many.Data) != 2 || many.Data[1].Index != 1 {
		t.Fatalf("answer = %+v", many)
	}
	if !reflect.DeepEqual(many.Data[0].Embedding, one.Data[0].Embedding) {
		t.Errorf("same input, different vectors: %v and %v", many.Data[0].Embedding, one.Data[0].Embedding)
	}
	if reflect.DeepEqual(many.Data[0].Embedding, many.Data[1].Embedding) {
		t.Errorf("different inputs, same vector")
	}
	if tokens := get(`[1,2,3]`); len(tokens.Data) != 1 {
		t.Errorf("token array gave %d vectors, want 1", len(tokens.Data))
	}
	for _, bad := range []string{`[]`, `null`, `42`, `["a",1]`} {
		resp := post(t, c, s.URL+"/embeddings", `{"model":"emb","input":`+bad+`}`)
		readBody(t, resp)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("input %s: status %d, want 400", bad, resp.StatusCode)
		}
	}
}

func TestModels(t *testing.T) {
	s, c := newServer(t)
	s.Set("zeta", Behavior{})
	s.Set("alpha", Behavior{})
	resp, err := c.Get(s.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	type model struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	got := decode[struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}](t, readBody(t, resp))
	var ids []string
	for _, m := range got.Data {
		ids = append(ids, m.ID)
	}
	if got.Object != "list" || !slices.Equal(ids, []string{"fake-model", "alpha", "zeta"}) {
		t.Errorf("models = %+v", got)
	}
}

func TestBadRequests(t *testing.T) {
	s, c := newServer(t)
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/chat/completions", `{"model":`, http.StatusBadRequest},
		{"POST", "/chat/completions", `not json`, http.StatusBadRequest},
		{"POST", "/embeddings", ``, http.StatusBadRequest},
		{"POST", "/completions", `{"model":"m","stream":"yes"}`, http.StatusBadRequest},
		{"POST", "/chat/completions", `{"messages":[]}`, http.StatusBadRequest},
		{"GET", "/chat/completions", ``, http.StatusMethodNotAllowed},
		{"POST", "/nothing", `{}`, http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tc.method, s.URL+tc.path, strings.NewReader(tc.body))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s %q: status %d, want %d", tc.method, tc.path, tc.body, resp.StatusCode, tc.status)
		}
		if e := decode[apiError](t, body); e.Error.Message == "" || e.Error.Type == "" {
			t.Errorf("%s %s: error body %s", tc.method, tc.path, body)
		}
	}
	if n := s.Calls("m"); n != 0 {
		t.Errorf("Calls(m) = %d after invalid requests, want 0", n)
	}
}

func TestStatusAndHeaders(t *testing.T) {
	s, c := newServer(t)
	for _, tc := range []struct {
		name     string
		b        Behavior
		stream   bool
		status   int
		code     string // Expected error code; "-" for null.
		rawBody  string // Expected raw body instead of an error.
		header   string
		hdrValue string
	}{
		{name: "429", b: Behavior{Status: 429, Headers: map[string]string{"Retry-After": "120"}}, status: 429, code: "rate_limit_exceeded", header: "Retry-After", hdrValue: "120"},
		{name: "429 stream", b: Behavior{Status: 429, Headers: map[string]string{"x-ratelimit-reset-requests": "2m"}}, stream: true, status: 429, code: "rate_limit_exceeded", header: "X-Ratelimit-Reset-Requests", hdrValue: "2m"},
		{name: "quota", b: Behavior{Status: 429, Code: "insufficient_quota"}, status: 429, code: "insufficient_quota"},
		{name: "404", b: Behavior{Status: 404}, status: 404, code: "model_not_found"},
		{name: "context", b: Behavior{Status: 400, Code: "context_length_exceeded"}, status: 400, code: "context_length_exceeded"},
		{name: "code only", b: Behavior{Code: "context_length_exceeded"}, status: 400, code: "context_length_exceeded"},
		{name: "400", b: Behavior{Status: 400}, status: 400, code: "-"},
		{name: "401", b: Behavior{Status: 401}, status: 401, code: "invalid_api_key"},
		{name: "503", b: Behavior{Status: 503}, stream: true, status: 503, code: "service_unavailable"},
		{name: "418", b: Behavior{Status: 418}, status: 418, code: "-"},
		{name: "raw error", b: Behavior{Status: 500, Body: "<html>oops</html>", Headers: map[string]string{"Content-Type": "text/html"}}, status: 500, rawBody: "<html>oops</html>", header: "Content-Type", hdrValue: "text/html"},
		{name: "200 not json", b: Behavior{Body: "not json"}, status: 200, rawBody: "not json"},
		{name: "200 error", b: Behavior{Status: 200, Body: `{"error":{"message":"quota exceeded"}}`}, stream: true, status: 200, rawBody: `{"error":{"message":"quota exceeded"}}`},
		{name: "200 headers", b: Behavior{Headers: map[string]string{"x-ratelimit-remaining-requests": "0"}}, status: 200, header: "X-Ratelimit-Remaining-Requests", hdrValue: "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Set("m", tc.b)
			resp := post(t, c, s.URL+"/chat/completions", chatBody("m", tc.stream))
			body := readBody(t, resp)
			if resp.StatusCode != tc.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.header != "" && resp.Header.Get(tc.header) != tc.hdrValue {
				t.Errorf("%s = %q, want %q", tc.header, resp.Header.Get(tc.header), tc.hdrValue)
			}
			switch {
			case tc.rawBody != "":
				if string(body) != tc.rawBody {
					t.Errorf("body = %q, want %q", body, tc.rawBody)
				}
			case tc.code != "":
				e := decode[apiError](t, body)
				code := "-"
				if e.Error.Code != nil {
					code = *e.Error.Code
				}
				if code != tc.code || e.Error.Message == "" || e.Error.Type == "" {
					t.Errorf("error = %s, want code %s", body, tc.code)
				}
			}
		})
	}
	// The default body of a 404 names the model.
	s.Set("gone-model", Behavior{Status: 404})
	body := readBody(t, post(t, c, s.URL+"/completions", `{"model":"gone-model","prompt":"x"}`))
	if !strings.Contains(string(body), "gone-model") {
		t.Errorf("404 body %s does not name the model", body)
	}
	// Behaviours apply to embeddings too.
	s.Set("emb", Behavior{Status: 429})
	resp := post(t, c, s.URL+"/embeddings", `{"model":"emb","input":"x"}`)
	readBody(t, resp)
	if resp.StatusCode != 429 {
		t.Errorf("embeddings status = %d, want 429", resp.StatusCode)
	}
}

func TestReset(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Reset: true}, Behavior{})
	for _, path := range []string{"/chat/completions"} {
		resp, err := tryPost(context.Background(), c, s.URL+path, chatBody("m", false))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("Reset: got status %d, want a transport error", resp.StatusCode)
		}
		if resp != nil {
			t.Errorf("Reset: got a response with the error")
		}
	}
	// The server keeps serving, and the script moved on.
	resp := post(t, c, s.URL+"/chat/completions", chatBody("m", false))
	readBody(t, resp)
	if resp.StatusCode != 200 {
		t.Errorf("after Reset: status %d", resp.StatusCode)
	}
	// Reset also works on streams and on embeddings.
	s.Set("m", Behavior{Reset: true})
	if resp, err := tryPost(context.Background(), c, s.URL+"/embeddings", `{"model":"m","input":"x"}`); err == nil {
		resp.Body.Close()
		t.Errorf("Reset on embeddings: got status %d", resp.StatusCode)
	}
	if resp, err := tryPost(context.Background(), c, s.URL+"/chat/completions", chatBody("m", true)); err == nil {
		resp.Body.Close()
		t.Errorf("Reset on stream: got status %d", resp.StatusCode)
	}
}

func TestHang(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	start := time.Now()
	resp, err := tryPost(ctx, c, s.URL+"/chat/completions", chatBody("m", true))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("Hang: got status %d", resp.StatusCode)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Hang: err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("Hang returned after %v", d)
	}
	eventually(t, "the hung request is marked cancelled", func() bool { return lastCancelled(s) })
}

func TestCloseUnblocksHandlers(t *testing.T) {
	s := Start()
	s.Set("hang", Behavior{Hang: true})
	s.Set("stall", Behavior{StallAfter: 1})
	s.Set("slow", Behavior{HeaderDelay: time.Hour})
	c := &http.Client{}
	errs := make(chan error, 3)
	for _, m := range []string{"hang", "stall", "slow"} {
		go func() {
			resp, err := tryPost(context.Background(), c, s.URL+"/chat/completions", chatBody(m, true))
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	eventually(t, "three requests arrive", func() bool { return len(s.Requests()) == 3 })
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	for range 3 {
		if err := <-errs; err == nil {
			t.Errorf("request finished cleanly after Close")
		}
	}
	for _, r := range s.Requests() {
		if r.Cancelled {
			t.Errorf("request for %s marked cancelled by Close", r.Model)
		}
	}
	s.Close() // A second Close is harmless.
}

func TestHeaderDelay(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{HeaderDelay: 50 * time.Millisecond})
	start := time.Now()
	resp := post(t, c, s.URL+"/chat/completions", chatBody("m", false))
	readBody(t, resp)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("headers after %v, want at least 50ms", d)
	}
	// A client that gives up during the delay is seen as cancelled.
	s.Set("m", Behavior{HeaderDelay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if resp, err := tryPost(ctx, c, s.URL+"/chat/completions", chatBody("m", false)); err == nil {
		resp.Body.Close()
		t.Fatalf("got status %d during an hour's delay", resp.StatusCode)
	}
	eventually(t, "the delayed request is marked cancelled", func() bool { return lastCancelled(s) })
}

func TestFirstTokenDelay(t *testing.T) {
	const delay = 100 * time.Millisecond
	s, c := newServer(t)
	s.Set("m", Behavior{FirstTokenDelay: delay})
	start := time.Now()
	resp := post(t, c, s.URL+"/chat/completions", chatBody("m", true))
	defer resp.Body.Close()
	r := newSSE(resp.Body)
	var st stream
	for range 2 {
		data, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		st.add(data)
	}
	early := time.Now()
	if len(st.contents) != 0 || st.chunks[0].Choices[0].Delta.Role != "assistant" {
		t.Fatalf("first two events %q, want role and empty content", st.raw)
	}
	data, err := r.next()
	if err != nil {
		t.Fatal(err)
	}
	st.add(data)
	late := time.Now()
	if len(st.contents) != 1 {
		t.Fatalf("third event %q is not content", data)
	}
	// Had the headers waited for the delay too, the role chunk and the
	// first content would arrive together.
	if gap := late.Sub(early); gap < delay/2 {
		t.Errorf("first content came %v after the role chunk, want about %v", gap, delay)
	}
	if total := late.Sub(start); total < delay {
		t.Errorf("first content after %v, want at least %v", total, delay)
	}
	for {
		data, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("rest of stream: %v", err)
		}
		st.add(data)
	}
	if !st.done || !slices.Equal(st.contents, []string{"Hello", " from ", "m"}) {
		t.Errorf("stream %q did not finish", st.raw)
	}
}

func TestChunkDelay(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Chunks: []string{"a", "b", "c"}, ChunkDelay: 25 * time.Millisecond})
	st := readStream(t, post(t, c, s.URL+"/chat/completions", chatBody("m", true)))
	if st.elapsed < 50*time.Millisecond || !slices.Equal(st.contents, []string{"a", "b", "c"}) {
		t.Errorf("stream took %v with contents %q, want 50ms+ and a b c", st.elapsed, st.contents)
	}
}

func TestCutAfter(t *testing.T) {
	for _, tc := range []struct {
		cut  int
		want []string
	}{
		{2, []string{"a", "b"}},
		{-1, nil},
		{9, []string{"a", "b", "c"}},
	} {
		t.Run(strconv.Itoa(tc.cut), func(t *testing.T) {
			s, c := newServer(t)
			s.Set("m", Behavior{Chunks: []string{"a", "b", "c"}, CutAfter: tc.cut})
			st := readStream(t, post(t, c, s.URL+"/chat/completions", chatBody("m", true)))
			if !errors.Is(st.err, io.ErrUnexpectedEOF) {
				t.Errorf("stream ended with %v, want unexpected EOF", st.err)
			}
			if !slices.Equal(st.contents, tc.want) || st.done || st.finish != "" {
				t.Errorf("got contents %q, done %v, finish %q", st.contents, st.done, st.finish)
			}
		})
	}
	// On the legacy endpoint too.
	s, c := newServer(t)
	s.Set("m", Behavior{CutAfter: 1})
	st := readStream(t, post(t, c, s.URL+"/completions", `{"model":"m","prompt":"x","stream":true}`))
	if !errors.Is(st.err, io.ErrUnexpectedEOF) || !slices.Equal(st.contents, []string{"Hello"}) {
		t.Errorf("completions: err %v, contents %q", st.err, st.contents)
	}
}

func TestStallAfter(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Chunks: []string{"a", "b", "c"}, StallAfter: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := tryPost(ctx, c, s.URL+"/chat/completions", chatBody("m", true))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := newSSE(resp.Body)
	var st stream
	for len(st.contents) < 2 {
		data, err := r.next()
		if err != nil {
			t.Fatalf("after %q: %v", st.contents, err)
		}
		st.add(data)
	}
	stalled := time.Now()
	time.AfterFunc(40*time.Millisecond, cancel)
	data, err := r.next()
	if err == nil {
		t.Fatalf("got %q after the stall point", data)
	}
	if d := time.Since(stalled); d < 40*time.Millisecond {
		t.Errorf("read ended after %v (%v), want it to block until the client cancels", d, err)
	}
	eventually(t, "the stalled request is marked cancelled", func() bool { return lastCancelled(s) })
}

func TestMalformedAt(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Chunks: []string{"a", "b", "c"}, MalformedAt: 2})
	st := readStream(t, post(t, c, s.URL+"/chat/completions", chatBody("m", true)))
	const bad = `{"choices":[{"delta":{"content": broken`
	if len(st.bad) != 1 || st.bad[0] != bad {
		t.Fatalf("bad events %q, want one %q", st.bad, bad)
	}
	i := slices.Index(st.raw, bad)
	// Events: role, empty content, "a", broken, "b", ...
	if i != 3 || !strings.Contains(st.raw[i+1], `"content":"b"`) {
		t.Errorf("malformed event at %d in %q, want just before b", i, st.raw)
	}
	if !slices.Equal(st.contents, []string{"a", "b", "c"}) || !st.done {
		t.Errorf("contents %q, done %v", st.contents, st.done)
	}
}

func TestNoDone(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{NoDone: true})
	st := readStream(t, post(t, c, s.URL+"/chat/completions", chatBody("m", true)))
	if st.err != nil || st.done || st.finish != "stop" || len(st.contents) != 3 {
		t.Errorf("err %v, done %v, finish %q, contents %q", st.err, st.done, st.finish, st.contents)
	}
}

func TestEmpty(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Empty: true})
	got := decode[completion](t, readBody(t, post(t, c, s.URL+"/chat/completions", chatBody("m", false))))
	m := got.Choices[0].Message
	if m.Content == nil || *m.Content != "" || len(m.ToolCalls) != 0 || got.Usage.CompletionTokens != 0 {
		t.Errorf("non-stream empty answer = %+v, usage %+v", m, got.Usage)
	}
	st := readStream(t, post(t, c, s.URL+"/chat/completions", chatBody("m", true)))
	if st.err != nil || len(st.contents) != 0 || st.args != "" || !st.done || st.finish != "stop" {
		t.Errorf("stream: %+v", st)
	}
	// Role chunk, finish chunk, [DONE].
	if len(st.raw) != 3 {
		t.Errorf("events %q, want role, finish, [DONE]", st.raw)
	}
}

func TestToolCall(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{ToolCall: true})
	got := decode[completion](t, readBody(t, post(t, c, s.URL+"/chat/completions", chatBody("m", false))))
	ch := got.Choices[0]
	if len(ch.Message.ToolCalls) != 1 || *ch.FinishReason != "tool_calls" {
		t.Fatalf("choice = %+v", ch)
	}
	tc := ch.Message.ToolCalls[0]
	if tc.ID == "" || tc.Type != "function" || tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city":"Paris"}` {
		t.Errorf("tool call = %+v", tc)
	}

	st := readStream(t, post(t, c, s.URL+"/chat/completions", chatBody("m", true)))
	if st.err != nil || !st.done || st.finish != "tool_calls" || len(st.contents) != 0 {
		t.Fatalf("stream: %+v", st)
	}
	if st.args != `{"city":"Paris"}` {
		t.Errorf("arguments = %q", st.args)
	}
	var fragments int
	var name, id string
	for _, c := range st.chunks {
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Function.Arguments != "" {
					fragments++
				}
				if tc.Function.Name != "" {
					name, id = tc.Function.Name, tc.ID
				}
			}
		}
	}
	if fragments < 2 || name != "get_weather" || id == "" {
		t.Errorf("fragments %d, name %q, id %q", fragments, name, id)
	}
}

func TestScriptsAdvance(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Status: 429}, Behavior{Status: 503}, Behavior{})
	status := func(model string) int {
		resp := post(t, c, s.URL+"/chat/completions", chatBody(model, false))
		readBody(t, resp)
		return resp.StatusCode
	}
	var got []int
	for range 5 {
		got = append(got, status("m"))
	}
	if want := []int{429, 503, 200, 200, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if n := s.Calls("m"); n != 5 {
		t.Errorf("Calls = %d, want 5", n)
	}
	// Set starts the count again.
	s.Set("m", Behavior{Status: 500}, Behavior{})
	if s.Calls("m") != 0 {
		t.Errorf("Calls after Set = %d", s.Calls("m"))
	}
	if a, b := status("m"), status("m"); a != 500 || b != 200 {
		t.Errorf("after Set: %d %d, want 500 200", a, b)
	}
	// Calls counts every endpoint, and other models follow the default.
	readBody(t, post(t, c, s.URL+"/embeddings", `{"model":"m","input":"x"}`))
	if n := s.Calls("m"); n != 3 {
		t.Errorf("Calls = %d, want 3", n)
	}
	s.SetDefault(Behavior{Status: 502})
	if st := status("other"); st != 502 {
		t.Errorf("default behaviour gave %d, want 502", st)
	}
	// Set without steps drops the script.
	s.Set("m")
	if st := status("m"); st != 502 {
		t.Errorf("unscripted model gave %d, want 502", st)
	}
	s.Reset()
	if s.Calls("other") != 0 || len(s.Requests()) != 0 {
		t.Errorf("Reset left calls %d, requests %d", s.Calls("other"), len(s.Requests()))
	}
}

func TestRequireKey(t *testing.T) {
	s, c := newServer(t)
	s.RequireKey("sk-good")
	for _, tc := range []struct {
		auth   string
		status int
	}{
		{"", 401},
		{"Bearer sk-bad", 401},
		{"sk-good", 401},
		{"Bearer sk-good", 200},
		{"bearer sk-good", 200},
	} {
		var hdr []string
		if tc.auth != "" {
			hdr = []string{"Authorization", tc.auth}
		}
		resp := post(t, c, s.URL+"/chat/completions", chatBody("m", false), hdr...)
		body := readBody(t, resp)
		if resp.StatusCode != tc.status {
			t.Errorf("Authorization %q: status %d, want %d", tc.auth, resp.StatusCode, tc.status)
		}
		if tc.status == 401 {
			if e := decode[apiError](t, body); e.Error.Code == nil || *e.Error.Code != "invalid_api_key" {
				t.Errorf("Authorization %q: body %s", tc.auth, body)
			}
		}
	}
	resp, err := c.Get(s.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != 401 {
		t.Errorf("GET /models without key: %d", resp.StatusCode)
	}
	s.RequireKey("")
	resp = post(t, c, s.URL+"/chat/completions", chatBody("m", false))
	readBody(t, resp)
	if resp.StatusCode != 200 {
		t.Errorf("after RequireKey(\"\"): %d", resp.StatusCode)
	}
}

func TestRequests(t *testing.T) {
	s, c := newServer(t)
	body := chatBody("m", true)
	readStream(t, post(t, c, s.URL+"/chat/completions", body, "Authorization", "Bearer k"))
	readBody(t, post(t, c, s.URL+"/embeddings", `{"model":"e","input":"x"}`))
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests logged, want 2", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" || r.Model != "m" || !r.Stream || string(r.Body) != body || r.Header.Get("Authorization") != "Bearer k" || r.Cancelled {
		t.Errorf("first request = %+v", r)
	}
	if reqs[1].Path != "/v1/embeddings" || reqs[1].Model != "e" || reqs[1].Stream {
		t.Errorf("second request = %+v", reqs[1])
	}
	s.SetRecording(false)
	readBody(t, post(t, c, s.URL+"/chat/completions", chatBody("m", false)))
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests logged with recording off, want 2", n)
	}
	if n := s.Calls("m"); n != 2 {
		t.Errorf("Calls = %d with recording off, want 2", n)
	}
}

func TestLogIsBounded(t *testing.T) {
	s := Start()
	defer s.Close()
	var first ticket
	s.begin(&first, &Request{Path: "first"}, "m", true, nil)
	for i := range maxLog + 4 {
		var tk ticket
		s.begin(&tk, &Request{Path: strconv.Itoa(i)}, "m", true, nil)
		s.end(&tk, i == maxLog+3)
	}
	// The first entry has been overwritten, so marking it changes nothing.
	s.end(&first, true)
	reqs := s.Requests()
	if len(reqs) != maxLog {
		t.Fatalf("log holds %d, want %d", len(reqs), maxLog)
	}
	if reqs[0].Path != "4" || reqs[maxLog-1].Path != strconv.Itoa(maxLog+3) || !reqs[maxLog-1].Cancelled {
		t.Errorf("log runs from %+v to %+v", reqs[0], reqs[maxLog-1])
	}
	for _, r := range reqs[:maxLog-1] {
		if r.Cancelled {
			t.Fatalf("%s wrongly cancelled", r.Path)
		}
	}
	if n := s.Calls("m"); n != maxLog+5 {
		t.Errorf("Calls = %d", n)
	}
}

func TestAppendString(t *testing.T) {
	for _, in := range []string{"", "plain", `q"uote\back`, "nl\n\r\t", "\x00\x1f\x7f", "héllo ✓ 🚀", "bad\xffutf8", "</script>&"} {
		got := jsonscan.AppendString(nil, in)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%q encodes to invalid JSON %s: %v", in, got, err)
			continue
		}
		want, _ := json.Marshal(in)
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("%q round-trips to %q, want %q", in, back, wantBack)
		}
	}
}
