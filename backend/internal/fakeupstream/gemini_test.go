package fakeupstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// gemBody is a minimal valid generateContent request.
const gemBody = `{"contents":[{"role":"user","parts":[{"text":"What is the weather like?"}]}]}`

// gemURL is the URL of model's method (generateContent or
// streamGenerateContent?alt=sse).
func gemURL(s *Server, model, method string) string {
	return s.GeminiURL() + "/models/" + model + ":" + method
}

// gemResponse is a GenerateContentResponse as a client decodes it.
type gemResponse struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         *string `json:"text"`
				FunctionCall *struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
		Index        int    `json:"index"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		TotalTokenCount      int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	ResponseID   string `json:"responseId"`
	Error        *gemErrorObject
}

// gemErrorObject is the inside of Gemini's error envelope.
type gemErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
		Reason     string `json:"reason"`
	} `json:"details"`
}

// gemStream is what a client saw of a Gemini SSE stream.
type gemStream struct {
	raw    []string
	chunks []gemResponse
	bad    []string
	text   []string
	calls  int
	finish string // finishReason of the last chunk that had one.
	err    error
}

// readGem reads a whole SSE stream and checks its framing: data lines
// only, each event ending in CRLF CRLF.
func readGem(t *testing.T, resp *http.Response) gemStream {
	t.Helper()
	var st gemStream
	events, err := readAllEvents(resp)
	st.err = err
	for _, ev := range events {
		if ev.name != "" {
			t.Errorf("Gemini event has a name %q", ev.name)
		}
		st.add(ev.data)
	}
	return st
}

func (st *gemStream) add(data string) {
	st.raw = append(st.raw, data)
	var r struct {
		gemResponse
		Error *gemErrorObject `json:"error"`
	}
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		st.bad = append(st.bad, data)
		return
	}
	r.gemResponse.Error = r.Error
	st.chunks = append(st.chunks, r.gemResponse)
	for _, c := range r.Candidates {
		if c.FinishReason != "" {
			st.finish = c.FinishReason
		}
		for _, p := range c.Content.Parts {
			if p.Text != nil {
				st.text = append(st.text, *p.Text)
			}
			if p.FunctionCall != nil {
				st.calls++
			}
		}
	}
}

func TestGeminiNonStream(t *testing.T) {
	s, c := newServer(t)
	resp := postWire(t, c, gemURL(s, "gemini-x", "generateContent"), gemBody)
	body := readBody(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json; charset=UTF-8" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	golden(t, "gemini_response.json", body)
	want := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello from gemini-x"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":16,"candidatesTokenCount":3,"totalTokenCount":19},"modelVersion":"gemini-x","responseId":"fake1"}`
	if !jsonEqual(string(body), want) {
		t.Errorf("body = %s\nwant   %s", body, want)
	}
}

func TestGeminiModelFromPath(t *testing.T) {
	s, c := newServer(t)
	for _, tc := range []struct{ url, model string }{
		{s.GeminiURL() + "/models/tuned%2Fmodel-1:generateContent", "tuned/model-1"},
		{strings.TrimSuffix(s.URL, "/v1") + "/v1/models/gemini-v1:generateContent", "gemini-v1"},
		{gemURL(s, "gemini-s", "streamGenerateContent") + "?alt=sse", "gemini-s"},
	} {
		resp := postWire(t, c, tc.url, gemBody)
		body := readBody(t, resp)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"modelVersion":`+quote(tc.model)) {
			t.Errorf("%s: %d %s", tc.url, resp.StatusCode, body)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if r := reqs[0]; r.Model != "tuned/model-1" || r.Stream || string(r.Body) != gemBody {
		t.Errorf("request 0 = %+v", r)
	}
	if r := reqs[2]; r.Model != "gemini-s" || !r.Stream || r.Path != "/v1beta/models/gemini-s:streamGenerateContent" {
		t.Errorf("request 2 = %+v", r)
	}
	if s.Calls("tuned/model-1") != 1 {
		t.Errorf("Calls(tuned/model-1) = %d", s.Calls("tuned/model-1"))
	}
}

func TestGeminiStream(t *testing.T) {
	s, c := newServer(t)
	s.Set("g", Behavior{Chunks: []string{"one", " two", " three"}})
	url := gemURL(s, "g", "streamGenerateContent") + "?alt=sse"
	resp := postWire(t, c, url, gemBody)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	raw := readBody(t, resp)
	golden(t, "gemini_stream_sse.txt", raw)
	if n := strings.Count(string(raw), "\r\n\r\n"); n != 3 || !strings.HasSuffix(string(raw), "}\r\n\r\n") {
		t.Errorf("%d CRLF CRLF separators in %q, want 3 and one at the end", n, raw)
	}
	st := readGem(t, postWire(t, c, url, gemBody))
	if st.err != nil || len(st.bad) > 0 || len(st.chunks) != 3 {
		t.Fatalf("stream: err %v, bad %q, %d chunks", st.err, st.bad, len(st.chunks))
	}
	if !slices.Equal(st.text, []string{"one", " two", " three"}) || st.finish != "STOP" {
		t.Errorf("text %q, finish %q", st.text, st.finish)
	}
	for i, ch := range st.chunks {
		last := i == len(st.chunks)-1
		if len(ch.Candidates) != 1 || len(ch.Candidates[0].Content.Parts) != 1 || ch.Candidates[0].Content.Role != "model" || ch.ModelVersion != "g" || ch.ResponseID == "" {
			t.Errorf("chunk %d = %s", i, st.raw[i])
		}
		if (ch.Candidates[0].FinishReason != "") != last {
			t.Errorf("chunk %d finishReason %q", i, ch.Candidates[0].FinishReason)
		}
		if u := ch.UsageMetadata; u == nil || (u.CandidatesTokenCount != 0) != last {
			t.Errorf("chunk %d usage %+v", i, u)
		}
	}
	if u := st.chunks[2].UsageMetadata; u.CandidatesTokenCount != 3 || u.TotalTokenCount != u.PromptTokenCount+3 {
		t.Errorf("final usage %+v", u)
	}
}

func TestGeminiStreamArray(t *testing.T) {
	s, c := newServer(t)
	resp := postWire(t, c, gemURL(s, "g", "streamGenerateContent"), gemBody)
	raw := readBody(t, resp)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=UTF-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	golden(t, "gemini_stream_array.json", raw)
	var chunks []gemResponse
	if err := json.Unmarshal(raw, &chunks); err != nil || len(chunks) != 3 || chunks[2].Candidates[0].FinishReason != "STOP" {
		t.Errorf("array stream %s: %v", raw, err)
	}
	s.Set("g", Behavior{Empty: true})
	raw = readBody(t, postWire(t, c, gemURL(s, "g", "streamGenerateContent"), gemBody))
	if err := json.Unmarshal(raw, &chunks); err != nil || len(chunks) != 1 {
		t.Errorf("empty array stream %s: %v", raw, err)
	}
}

func TestGeminiToolCall(t *testing.T) {
	s, c := newServer(t)
	s.Set("g", Behavior{ToolCall: true})
	body := readBody(t, postWire(t, c, gemURL(s, "g", "generateContent"), gemBody))
	want := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":16,"candidatesTokenCount":1,"totalTokenCount":17},"modelVersion":"g","responseId":"fake1"}`
	if !jsonEqual(string(body), want) {
		t.Errorf("body = %s", body)
	}
	st := readGem(t, postWire(t, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", gemBody))
	if st.err != nil || len(st.chunks) != 1 || st.calls != 1 || st.finish != "STOP" || len(st.text) != 0 {
		t.Errorf("stream %q: err %v", st.raw, st.err)
	}
	if fc := st.chunks[0].Candidates[0].Content.Parts[0].FunctionCall; fc.Name != "get_weather" || fc.Args["city"] != "Paris" {
		t.Errorf("functionCall = %+v", fc)
	}
}

func TestGeminiEmptyAndBlocked(t *testing.T) {
	s, c := newServer(t)
	s.Set("g", Behavior{Empty: true})
	got := decode[gemResponse](t, readBody(t, postWire(t, c, gemURL(s, "g", "generateContent"), gemBody)))
	if len(got.Candidates) != 1 || len(got.Candidates[0].Content.Parts) != 0 || got.Candidates[0].FinishReason != "STOP" {
		t.Errorf("empty = %+v", got)
	}
	st := readGem(t, postWire(t, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", gemBody))
	if st.err != nil || len(st.chunks) != 1 || st.finish != "STOP" || len(st.text) != 0 {
		t.Errorf("empty stream %q", st.raw)
	}

	for _, reason := range []string{"SAFETY", "PROHIBITED_CONTENT"} {
		s.Set("g", Behavior{Blocked: reason})
		resp := postWire(t, c, gemURL(s, "g", "generateContent"), gemBody)
		body := readBody(t, resp)
		got := decode[gemResponse](t, body)
		if resp.StatusCode != 200 || got.Candidates != nil || got.PromptFeedback == nil || got.PromptFeedback.BlockReason != reason || got.UsageMetadata == nil {
			t.Errorf("blocked %s: %d %s", reason, resp.StatusCode, body)
		}
		st := readGem(t, postWire(t, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", gemBody))
		if st.err != nil || len(st.chunks) != 1 || st.chunks[0].PromptFeedback == nil || st.chunks[0].PromptFeedback.BlockReason != reason || st.chunks[0].Candidates != nil {
			t.Errorf("blocked %s stream %q", reason, st.raw)
		}
	}
}

func TestGeminiStreamFaults(t *testing.T) {
	chunks := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name   string
		b      Behavior
		text   []string
		finish string
		err    error
		errEv  string // status of an error chunk at the end
	}{
		{name: "cut after 2", b: Behavior{CutAfter: 2}, text: chunks[:2], err: io.ErrUnexpectedEOF},
		{name: "cut before first", b: Behavior{CutAfter: -1}, err: io.ErrUnexpectedEOF},
		{name: "cut past last", b: Behavior{CutAfter: 5}, text: chunks, finish: "STOP", err: io.ErrUnexpectedEOF},
		{name: "no done", b: Behavior{NoDone: true}, text: chunks},
		{name: "error after 1", b: Behavior{ErrorEvent: ErrorOverloaded, ErrorAfter: 1}, text: chunks[:1], errEv: "UNAVAILABLE"},
		{name: "error past last", b: Behavior{ErrorEvent: ErrorRateLimit, ErrorAfter: 9}, text: chunks[:2], errEv: "RESOURCE_EXHAUSTED"},
		{name: "error server", b: Behavior{ErrorEvent: ErrorServer}, errEv: "INTERNAL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newServer(t)
			tc.b.Chunks = chunks
			s.Set("g", tc.b)
			st := readGem(t, postWire(t, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", gemBody))
			if !errors.Is(st.err, tc.err) && st.err != tc.err {
				t.Errorf("stream ended with %v, want %v", st.err, tc.err)
			}
			if !slices.Equal(st.text, tc.text) || st.finish != tc.finish {
				t.Errorf("text %q finish %q, want %q %q; raw %q", st.text, st.finish, tc.text, tc.finish, st.raw)
			}
			var last *gemErrorObject
			if n := len(st.chunks); n > 0 {
				last = st.chunks[n-1].Error
			}
			switch {
			case tc.errEv == "" && last != nil:
				t.Errorf("unexpected error chunk %+v", last)
			case tc.errEv != "" && (last == nil || last.Status != tc.errEv || last.Code == 0 || last.Message == ""):
				t.Errorf("last chunk error %+v, want status %s", last, tc.errEv)
			}
		})
	}
	// NoDone: the last chunk has no finishReason and no candidate count.
	s, c := newServer(t)
	s.Set("g", Behavior{NoDone: true})
	st := readGem(t, postWire(t, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", gemBody))
	if last := st.chunks[len(st.chunks)-1]; last.UsageMetadata.CandidatesTokenCount != 0 {
		t.Errorf("NoDone last chunk %s", st.raw[len(st.raw)-1])
	}
}

func TestGeminiMalformedAt(t *testing.T) {
	for _, tc := range []struct{ at, index int }{{2, 1}, {9, 3}} {
		s, c := newServer(t)
		s.Set("g", Behavior{Chunks: []string{"a", "b", "c"}, MalformedAt: tc.at})
		st := readGem(t, postWire(t, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", gemBody))
		if len(st.bad) != 1 || st.raw[tc.index] != st.bad[0] || !slices.Equal(st.text, []string{"a", "b", "c"}) {
			t.Errorf("MalformedAt %d: raw %q", tc.at, st.raw)
		}
	}
}

func TestGeminiTimingFaults(t *testing.T) {
	const delay = 100 * time.Millisecond
	s, c := newServer(t)
	s.Set("g", Behavior{FirstTokenDelay: delay})
	start := time.Now()
	resp := postWire(t, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", gemBody)
	headers := time.Since(start)
	st := readGem(t, resp)
	if headers > delay/2 || time.Since(start) < delay || len(st.text) != 3 {
		t.Errorf("headers after %v, stream after %v, text %q", headers, time.Since(start), st.text)
	}

	s.Set("g", Behavior{StallAfter: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := tryPost(ctx, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", gemBody)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := newEvents(resp.Body)
	if _, err := r.next(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(40*time.Millisecond, cancel)
	stalled := time.Now()
	if ev, err := r.next(); err == nil {
		t.Fatalf("got %q after the stall", ev.data)
	}
	if d := time.Since(stalled); d < 40*time.Millisecond {
		t.Errorf("read ended after %v", d)
	}
	eventually(t, "the stalled request is marked cancelled", func() bool { return lastCancelled(s) })

	s.Set("g", Behavior{Reset: true})
	if resp, err := tryPost(context.Background(), c, gemURL(s, "g", "generateContent"), gemBody); err == nil {
		resp.Body.Close()
		t.Errorf("Reset: status %d", resp.StatusCode)
	}
}

func TestGeminiErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		b      Behavior
		status int
		code   string
		msg    string
		detail string // @type suffix of a detail that must be there
		delay  string
	}{
		{name: "429", b: Behavior{Status: 429, RetryDelay: 37 * time.Second}, status: 429, code: "RESOURCE_EXHAUSTED", msg: "Please retry in 37s.", detail: "RetryInfo", delay: "37s"},
		{name: "429 no delay", b: Behavior{Status: 429}, status: 429, code: "RESOURCE_EXHAUSTED", msg: "quota", detail: "QuotaFailure"},
		{name: "quota code", b: Behavior{Code: "insufficient_quota", RetryDelay: 1500 * time.Millisecond}, status: 429, code: "RESOURCE_EXHAUSTED", detail: "RetryInfo", delay: "1.5s"},
		{name: "400", b: Behavior{Status: 400}, status: 400, code: "INVALID_ARGUMENT"},
		{name: "context", b: Behavior{Code: "context_length_exceeded"}, status: 400, code: "INVALID_ARGUMENT", msg: "exceeds the maximum number of tokens"},
		{name: "bad key code", b: Behavior{Code: "invalid_api_key"}, status: 400, code: "INVALID_ARGUMENT", msg: "API key not valid. Please pass a valid API key.", detail: "ErrorInfo"},
		{name: "401", b: Behavior{Status: 401}, status: 401, code: "UNAUTHENTICATED"},
		{name: "403", b: Behavior{Status: 403}, status: 403, code: "PERMISSION_DENIED"},
		{name: "404", b: Behavior{Status: 404}, status: 404, code: "NOT_FOUND", msg: "models/g is not found"},
		{name: "500", b: Behavior{Status: 500}, status: 500, code: "INTERNAL"},
		{name: "503", b: Behavior{Status: 503, RetryDelay: 2 * time.Second}, status: 503, code: "UNAVAILABLE", msg: "overloaded", detail: "RetryInfo", delay: "2s"},
		{name: "status code", b: Behavior{Code: "UNAVAILABLE"}, status: 503, code: "UNAVAILABLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newServer(t)
			s.Set("g", tc.b)
			resp := postWire(t, c, gemURL(s, "g", "generateContent"), gemBody)
			body := readBody(t, resp)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if resp.Header.Get("Retry-After") != "" {
				t.Errorf("Gemini sent Retry-After %q", resp.Header.Get("Retry-After"))
			}
			e := decode[struct{ Error gemErrorObject }](t, body).Error
			if e.Code != tc.status || e.Status != tc.code || e.Message == "" || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("error %s, want %s with %q", body, tc.code, tc.msg)
			}
			if tc.detail == "" {
				return
			}
			found := false
			for _, d := range e.Details {
				if strings.HasSuffix(d.Type, "google.rpc."+tc.detail) {
					found = true
					if tc.delay != "" && d.RetryDelay != tc.delay {
						t.Errorf("retryDelay %q, want %q", d.RetryDelay, tc.delay)
					}
				}
			}
			if !found {
				t.Errorf("no %s detail in %s", tc.detail, body)
			}
		})
	}
	s, c := newServer(t)
	s.Set("g", Behavior{Status: 429, RetryDelay: 37 * time.Second})
	golden(t, "gemini_error_429.json", readBody(t, postWire(t, c, gemURL(s, "g", "generateContent"), gemBody)))
}

func TestGeminiKey(t *testing.T) {
	s, c := newServer(t)
	s.RequireKey("AIza-good")
	url := gemURL(s, "g", "generateContent")
	for _, tc := range []struct {
		name   string
		url    string
		header []string
		status int
		code   string
	}{
		{"missing", url, nil, 403, "PERMISSION_DENIED"},
		{"wrong header", url, []string{"x-goog-api-key", "AIza-bad"}, 400, "INVALID_ARGUMENT"},
		{"wrong query", url + "?key=AIza-bad", nil, 400, "INVALID_ARGUMENT"},
		{"bearer is not a key", url, []string{"Authorization", "Bearer AIza-good"}, 403, "PERMISSION_DENIED"},
		{"header", url, []string{"x-goog-api-key", "AIza-good"}, 200, ""},
		{"query", url + "?key=AIza-good", nil, 200, ""},
	} {
		resp := postWire(t, c, tc.url, gemBody, tc.header...)
		body := readBody(t, resp)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, resp.StatusCode, tc.status, body)
			continue
		}
		if tc.code == "" {
			continue
		}
		if e := decode[struct{ Error gemErrorObject }](t, body).Error; e.Status != tc.code {
			t.Errorf("%s: %s", tc.name, body)
		}
	}
	resp := postWire(t, c, url, gemBody, "x-goog-api-key", "AIza-bad")
	if e := decode[struct{ Error gemErrorObject }](t, readBody(t, resp)).Error; e.Message != "API key not valid. Please pass a valid API key." || len(e.Details) != 1 || e.Details[0].Reason != "API_KEY_INVALID" {
		t.Errorf("wrong key error %+v", e)
	}
}

func TestGeminiBadRequests(t *testing.T) {
	s, c := newServer(t)
	for _, tc := range []struct {
		method, url, body string
		status            int
	}{
		{"POST", gemURL(s, "g", "generateContent"), `not json`, 400},
		{"POST", gemURL(s, "g", "generateContent"), `[1]`, 400},
		{"GET", gemURL(s, "g", "generateContent"), ``, 404},
		{"POST", s.GeminiURL() + "/models/:generateContent", gemBody, 404},
	} {
		req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		e := decode[struct{ Error gemErrorObject }](t, body).Error
		if resp.StatusCode != tc.status || e.Code != tc.status || e.Status == "" {
			t.Errorf("%s %s %q: %d %s", tc.method, tc.url, tc.body, resp.StatusCode, body)
		}
	}
	if n := s.Calls("g"); n != 0 {
		t.Errorf("Calls(g) = %d after unparsable requests", n)
	}
}

func TestGeminiSharedFaults(t *testing.T) {
	s, c := newServer(t)
	url := gemURL(s, "g", "generateContent")
	s.Set("g", Behavior{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancel()
	if resp, err := tryPost(ctx, c, url, gemBody); err == nil {
		resp.Body.Close()
		t.Errorf("Hang: status %d", resp.StatusCode)
	}
	eventually(t, "the hung request is marked cancelled", func() bool { return lastCancelled(s) })

	s.Set("g", Behavior{HeaderDelay: 50 * time.Millisecond, Headers: map[string]string{"X-Test": "yes"}})
	start := time.Now()
	resp := postWire(t, c, url, gemBody)
	readBody(t, resp)
	if d := time.Since(start); d < 50*time.Millisecond || resp.Header.Get("X-Test") != "yes" {
		t.Errorf("HeaderDelay: %v, X-Test %q", d, resp.Header.Get("X-Test"))
	}

	release := make(chan struct{})
	s.Set("g", Behavior{Hold: release})
	done := make(chan int)
	go func() {
		resp, err := tryPost(context.Background(), c, url, gemBody)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	select {
	case <-done:
		t.Fatal("Hold: answered before release")
	case <-time.After(30 * time.Millisecond):
	}
	close(release)
	if st := <-done; st != 200 {
		t.Errorf("Hold: status %d", st)
	}

	s.Set("g", Behavior{Body: `{"candidates":[]}`})
	if b := readBody(t, postWire(t, c, url, gemBody)); string(b) != `{"candidates":[]}` {
		t.Errorf("Body: %q", b)
	}
	s.Set("g", Behavior{Status: 503, Body: "<html>busy</html>"})
	resp = postWire(t, c, url, gemBody)
	if b := readBody(t, resp); resp.StatusCode != 503 || string(b) != "<html>busy</html>" {
		t.Errorf("error Body: %d %q", resp.StatusCode, b)
	}

	s.Set("g", Behavior{ChunkDelay: 25 * time.Millisecond})
	start = time.Now()
	st := readGem(t, postWire(t, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", gemBody))
	if d := time.Since(start); d < 50*time.Millisecond || len(st.text) != 3 {
		t.Errorf("ChunkDelay: %v, text %q", d, st.text)
	}
}

func TestGeminiStreamArrayFaults(t *testing.T) {
	s, c := newServer(t)
	url := gemURL(s, "g", "streamGenerateContent")
	s.Set("g", Behavior{ErrorEvent: ErrorOverloaded, ErrorAfter: 1})
	raw := readBody(t, postWire(t, c, url, gemBody))
	var chunks []map[string]any
	if err := json.Unmarshal(raw, &chunks); err != nil || len(chunks) != 2 || chunks[1]["error"] == nil {
		t.Errorf("error in array stream %s: %v", raw, err)
	}
	s.Set("g", Behavior{CutAfter: 1})
	resp, err := tryPost(context.Background(), c, url, gemBody)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) || !strings.HasPrefix(string(b), "[{") {
		t.Errorf("cut array stream %q: %v", b, err)
	}
}
