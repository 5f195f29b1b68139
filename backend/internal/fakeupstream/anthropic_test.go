package fakeupstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// antVersion is the anthropic-version header every request sends.
var antVersion = []string{"anthropic-version", "2023-06-01"}

// antBody is a minimal valid Messages request for model.
func antBody(model string, stream bool) string {
	s := `{"model":` + quote(model) + `,"max_tokens":64,"messages":[{"role":"user","content":"What is the weather like?"}]`
	if stream {
		s += `,"stream":true`
	}
	return s + "}"
}

// antPost sends a Messages request with the version header and extra
// headers.
func antPost(t *testing.T, s *Server, c *http.Client, body string, header ...string) *http.Response {
	t.Helper()
	return postWire(t, c, s.AnthropicURL()+"/messages", body, append(append([]string(nil), antVersion...), header...)...)
}

// antStream is what a client saw of an Anthropic stream.
type antStream struct {
	events  []sseEvent
	names   []string
	text    []string // text_delta pieces.
	partial string   // input_json_delta pieces, joined.
	stop    string   // stop_reason of message_delta.
	output  int      // output_tokens of message_delta.
	bad     []string // Data that did not parse.
	err     error
}

// readAnt reads a whole Anthropic stream and checks that every event's
// data names its type.
func readAnt(t *testing.T, resp *http.Response) antStream {
	t.Helper()
	var st antStream
	st.events, st.err = readAllEvents(resp)
	st.names = eventNames(st.events)
	for _, ev := range st.events {
		var d struct {
			Type  string `json:"type"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := jsonUnmarshal(ev.data, &d); err != nil {
			st.bad = append(st.bad, ev.data)
			continue
		}
		if d.Type != ev.name {
			t.Errorf("event %q carries type %q", ev.name, d.Type)
		}
		switch {
		case d.Delta.Type == "text_delta":
			st.text = append(st.text, d.Delta.Text)
		case d.Delta.Type == "input_json_delta":
			st.partial += d.Delta.PartialJSON
		case ev.name == "message_delta":
			st.stop, st.output = d.Delta.StopReason, d.Usage.OutputTokens
		}
	}
	return st
}

var (
	antTextEvents  = []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	antToolEvents  = []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	antEmptyEvents = []string{"message_start", "ping", "message_delta", "message_stop"}
)

func TestAnthropicURLs(t *testing.T) {
	s, _ := newServer(t)
	if s.AnthropicURL() != s.URL || !strings.HasSuffix(s.AnthropicURL(), "/v1") {
		t.Errorf("AnthropicURL = %q", s.AnthropicURL())
	}
	if want := strings.TrimSuffix(s.URL, "/v1") + "/v1beta"; s.GeminiURL() != want {
		t.Errorf("GeminiURL = %q, want %q", s.GeminiURL(), want)
	}
}

func TestAnthropicNonStream(t *testing.T) {
	s, c := newServer(t)
	resp := antPost(t, s, c, antBody("claude-x", false))
	body := readBody(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(resp.Header.Get("Request-Id"), "req_") {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	golden(t, "anthropic_message.json", body)
	// "What is the weather like?" in its message is 56 bytes of JSON, 14
	// tokens by the fake's estimate.
	want := `{"id":"msg_fake1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello from claude-x"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":14,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}`
	if !jsonEqual(string(body), want) {
		t.Errorf("body = %s\nwant   %s", body, want)
	}
}

func TestAnthropicStream(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Chunks: []string{"one", " two", " \"three\"\n"}})
	resp := antPost(t, s, c, antBody("m", true))
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	raw := readBody(t, resp)
	golden(t, "anthropic_stream.txt", raw)
	s.Set("m", Behavior{Chunks: []string{"one", " two", " \"three\"\n"}})
	st := readAnt(t, antPost(t, s, c, antBody("m", true)))
	if st.err != nil || len(st.bad) > 0 {
		t.Fatalf("stream ended with %v, bad %q", st.err, st.bad)
	}
	if !slices.Equal(st.names, antTextEvents) {
		t.Errorf("events %q, want %q", st.names, antTextEvents)
	}
	if !slices.Equal(st.text, []string{"one", " two", " \"three\"\n"}) || st.stop != "end_turn" || st.output != 3 {
		t.Errorf("text %q, stop %q, output %d", st.text, st.stop, st.output)
	}
	start := mustJSON(t, st.events[0].data)["message"].(map[string]any)
	if content, _ := start["content"].([]any); content == nil || len(content) != 0 || start["stop_reason"] != nil || start["model"] != "m" {
		t.Errorf("message_start = %s", st.events[0].data)
	}
	if u := start["usage"].(map[string]any); u["input_tokens"] == nil {
		t.Errorf("message_start usage = %v", u)
	}
	wantBlock := `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	if !jsonEqual(st.events[1].data, wantBlock) {
		t.Errorf("content_block_start = %s", st.events[1].data)
	}
	if want := `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`; !jsonEqual(st.events[7].data, want) {
		t.Errorf("message_delta = %s", st.events[7].data)
	}
}

func TestAnthropicToolCall(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{ToolCall: true})
	body := readBody(t, antPost(t, s, c, antBody("m", false)))
	want := `{"id":"msg_fake1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_fake1","name":"get_weather","input":{"city":"Paris"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":14,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}`
	if !jsonEqual(string(body), want) {
		t.Errorf("body = %s", body)
	}
	resp := antPost(t, s, c, antBody("m", true))
	raw := readBody(t, resp)
	golden(t, "anthropic_tool_stream.txt", raw)
	st := readAnt(t, antPost(t, s, c, antBody("m", true)))
	if st.err != nil || !slices.Equal(st.names, antToolEvents) {
		t.Fatalf("events %q (%v), want %q", st.names, st.err, antToolEvents)
	}
	if st.partial != `{"city":"Paris"}` || st.stop != "tool_use" || len(st.text) != 0 {
		t.Errorf("partial %q, stop %q, text %q", st.partial, st.stop, st.text)
	}
	block := mustJSON(t, st.events[2].data)["content_block"].(map[string]any)
	if block["type"] != "tool_use" || block["name"] != "get_weather" || !strings.HasPrefix(block["id"].(string), "toolu_") {
		t.Errorf("tool_use block = %v", block)
	}
	if in, ok := block["input"].(map[string]any); !ok || len(in) != 0 {
		t.Errorf("tool_use input = %v, want {}", block["input"])
	}
}

func TestAnthropicEmptyAndBlocked(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Behavior
		stop string
	}{
		{"empty", Behavior{Empty: true}, "end_turn"},
		{"blocked", Behavior{Blocked: "SAFETY", ToolCall: true}, "refusal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newServer(t)
			s.Set("m", tc.b)
			got := mustJSON(t, string(readBody(t, antPost(t, s, c, antBody("m", false)))))
			if content := got["content"].([]any); len(content) != 0 || got["stop_reason"] != tc.stop {
				t.Errorf("answer = %v", got)
			}
			st := readAnt(t, antPost(t, s, c, antBody("m", true)))
			if st.err != nil || !slices.Equal(st.names, antEmptyEvents) || st.stop != tc.stop || st.output != 0 {
				t.Errorf("events %q (%v), stop %q, output %d", st.names, st.err, st.stop, st.output)
			}
		})
	}
}

func TestAnthropicStreamFaults(t *testing.T) {
	chunks := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name  string
		b     Behavior
		names []string
		text  []string
		err   error
	}{
		{"cut after 2", Behavior{CutAfter: 2}, antTextEvents[:5], chunks[:2], io.ErrUnexpectedEOF},
		{"cut before first", Behavior{CutAfter: -1}, antTextEvents[:3], nil, io.ErrUnexpectedEOF},
		{"cut past last", Behavior{CutAfter: 9}, antTextEvents[:6], chunks, io.ErrUnexpectedEOF},
		{"no done", Behavior{NoDone: true}, antTextEvents[:8], chunks, nil},
		{"error after 1", Behavior{ErrorEvent: ErrorOverloaded, ErrorAfter: 1}, []string{"message_start", "content_block_start", "ping", "content_block_delta", "error"}, chunks[:1], nil},
		{"error first", Behavior{ErrorEvent: ErrorRateLimit}, []string{"message_start", "content_block_start", "ping", "error"}, nil, nil},
		{"tool cut after 1", Behavior{ToolCall: true, CutAfter: 1}, antToolEvents[:3], nil, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newServer(t)
			tc.b.Chunks = chunks
			s.Set("m", tc.b)
			st := readAnt(t, antPost(t, s, c, antBody("m", true)))
			if !errors.Is(st.err, tc.err) && st.err != tc.err {
				t.Errorf("stream ended with %v, want %v", st.err, tc.err)
			}
			if !slices.Equal(st.names, tc.names) || !slices.Equal(st.text, tc.text) {
				t.Errorf("events %q text %q, want %q and %q", st.names, st.text, tc.names, tc.text)
			}
		})
	}
}

func TestAnthropicErrorEvent(t *testing.T) {
	for _, tc := range []struct {
		event, typ, msg string
	}{
		{ErrorOverloaded, "overloaded_error", "Overloaded"},
		{ErrorRateLimit, "rate_limit_error", "rate limit"},
		{ErrorServer, "api_error", "Internal server error"},
		{"Custom trouble", "overloaded_error", "Custom trouble"},
	} {
		s, c := newServer(t)
		s.Set("m", Behavior{ErrorEvent: tc.event, ErrorAfter: 2})
		st := readAnt(t, antPost(t, s, c, antBody("m", true)))
		last := st.events[len(st.events)-1]
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := jsonUnmarshal(last.data, &e); err != nil || last.name != "error" || e.Type != "error" || e.Error.Type != tc.typ || !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: last event %q %s", tc.event, last.name, last.data)
		}
		if len(st.text) != 2 || st.err != nil {
			t.Errorf("%s: text %q, err %v", tc.event, st.text, st.err)
		}
	}
}

func TestAnthropicMalformedAt(t *testing.T) {
	for _, tc := range []struct {
		at, index int // index of the broken event in the stream
	}{{2, 4}, {9, 6}} {
		s, c := newServer(t)
		s.Set("m", Behavior{Chunks: []string{"a", "b", "c"}, MalformedAt: tc.at})
		st := readAnt(t, antPost(t, s, c, antBody("m", true)))
		if len(st.bad) != 1 || st.err != nil || !slices.Equal(st.text, []string{"a", "b", "c"}) {
			t.Fatalf("MalformedAt %d: bad %q, err %v, text %q", tc.at, st.bad, st.err, st.text)
		}
		if ev := st.events[tc.index]; ev.name != "content_block_delta" || ev.data != st.bad[0] {
			t.Errorf("MalformedAt %d: event %d is %q %q; events %q", tc.at, tc.index, ev.name, ev.data, st.names)
		}
	}
}

func TestAnthropicFirstTokenDelay(t *testing.T) {
	const delay = 100 * time.Millisecond
	s, c := newServer(t)
	s.Set("m", Behavior{FirstTokenDelay: delay})
	resp := antPost(t, s, c, antBody("m", true))
	defer resp.Body.Close()
	r := newEvents(resp.Body)
	for _, want := range []string{"message_start", "content_block_start", "ping"} {
		ev, err := r.next()
		if err != nil || ev.name != want {
			t.Fatalf("got %q (%v), want %q", ev.name, err, want)
		}
	}
	early := time.Now()
	ev, err := r.next()
	if err != nil || ev.name != "content_block_delta" {
		t.Fatalf("got %q (%v)", ev.name, err)
	}
	if gap := time.Since(early); gap < delay/2 {
		t.Errorf("first delta came %v after the ping, want about %v", gap, delay)
	}
}

func TestAnthropicStallAfter(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{StallAfter: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := tryPost(ctx, c, s.AnthropicURL()+"/messages", antBody("m", true), antVersion...)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := newEvents(resp.Body)
	for range 4 {
		if _, err := r.next(); err != nil {
			t.Fatal(err)
		}
	}
	stalled := time.Now()
	time.AfterFunc(40*time.Millisecond, cancel)
	if ev, err := r.next(); err == nil {
		t.Fatalf("got %q after the stall", ev.name)
	}
	if d := time.Since(stalled); d < 40*time.Millisecond {
		t.Errorf("read ended after %v, want it to block until the client cancels", d)
	}
	eventually(t, "the stalled request is marked cancelled", func() bool { return lastCancelled(s) })
}

func TestAnthropicChunkDelay(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{ChunkDelay: 25 * time.Millisecond})
	start := time.Now()
	st := readAnt(t, antPost(t, s, c, antBody("m", true)))
	if d := time.Since(start); d < 50*time.Millisecond || len(st.text) != 3 {
		t.Errorf("stream took %v with text %q", d, st.text)
	}
}

func TestAnthropicConnectionFaults(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Reset: true})
	if resp, err := tryPost(context.Background(), c, s.AnthropicURL()+"/messages", antBody("m", true), antVersion...); err == nil {
		resp.Body.Close()
		t.Errorf("Reset: got status %d", resp.StatusCode)
	}
	s.Set("m", Behavior{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancel()
	if resp, err := tryPost(ctx, c, s.AnthropicURL()+"/messages", antBody("m", false), antVersion...); err == nil {
		resp.Body.Close()
		t.Errorf("Hang: got status %d", resp.StatusCode)
	}
	eventually(t, "the hung request is marked cancelled", func() bool { return lastCancelled(s) })
	s.Set("m", Behavior{HeaderDelay: 50 * time.Millisecond, Headers: map[string]string{"anthropic-ratelimit-requests-remaining": "0"}})
	start := time.Now()
	resp := antPost(t, s, c, antBody("m", false))
	readBody(t, resp)
	if d := time.Since(start); d < 50*time.Millisecond || resp.Header.Get("Anthropic-Ratelimit-Requests-Remaining") != "0" {
		t.Errorf("HeaderDelay: answer after %v, headers %v", d, resp.Header)
	}
	release := make(chan struct{})
	s.Set("m", Behavior{Hold: release})
	done := make(chan int)
	go func() {
		resp, err := tryPost(context.Background(), c, s.AnthropicURL()+"/messages", antBody("m", false), antVersion...)
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
		t.Errorf("Hold: status %d after release", st)
	}
}

// antErrorBody is the Anthropic error envelope.
type antErrorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func TestAnthropicErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		b      Behavior
		stream bool
		status int
		typ    string
		msg    string
		header string // name=value expected in the answer
	}{
		{name: "429", b: Behavior{Status: 429, RetryDelay: 1500 * time.Millisecond}, status: 429, typ: "rate_limit_error", msg: "rate limit", header: "Retry-After=2"},
		{name: "429 stream", b: Behavior{Status: 429, Headers: map[string]string{"retry-after": "7"}}, stream: true, status: 429, typ: "rate_limit_error", header: "Retry-After=7"},
		{name: "529", b: Behavior{Status: 529}, status: 529, typ: "overloaded_error", msg: "Overloaded"},
		{name: "overloaded code", b: Behavior{Code: "overloaded_error"}, status: 529, typ: "overloaded_error"},
		{name: "context", b: Behavior{Code: "context_length_exceeded"}, status: 400, typ: "invalid_request_error", msg: "prompt is too long: 250000 tokens > 200000 maximum"},
		{name: "credit", b: Behavior{Code: "insufficient_quota"}, status: 400, typ: "invalid_request_error", msg: "credit balance is too low"},
		{name: "401", b: Behavior{Status: 401}, status: 401, typ: "authentication_error", msg: "invalid x-api-key"},
		{name: "403", b: Behavior{Status: 403}, status: 403, typ: "permission_error"},
		{name: "404", b: Behavior{Status: 404}, status: 404, typ: "not_found_error", msg: "model: m"},
		{name: "413", b: Behavior{Status: 413}, status: 413, typ: "request_too_large"},
		{name: "500", b: Behavior{Status: 500}, status: 500, typ: "api_error"},
		{name: "400", b: Behavior{Status: 400}, status: 400, typ: "invalid_request_error"},
		{name: "rate code", b: Behavior{Code: "rate_limit_exceeded"}, status: 429, typ: "rate_limit_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newServer(t)
			s.Set("m", tc.b)
			resp := antPost(t, s, c, antBody("m", tc.stream))
			body := readBody(t, resp)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			e := decode[antErrorBody](t, body)
			if e.Type != "error" || e.Error.Type != tc.typ || !strings.Contains(e.Error.Message, tc.msg) || e.Error.Message == "" || !strings.HasPrefix(e.RequestID, "req_") {
				t.Errorf("body %s, want type %s with %q", body, tc.typ, tc.msg)
			}
			if name, value, ok := strings.Cut(tc.header, "="); ok && resp.Header.Get(name) != value {
				t.Errorf("%s = %q, want %q", name, resp.Header.Get(name), value)
			}
		})
	}
	s, c := newServer(t)
	s.Set("m", Behavior{Status: 529})
	golden(t, "anthropic_error.json", readBody(t, antPost(t, s, c, antBody("m", false))))
	s.Set("m", Behavior{Status: 500, Body: "<html>oops</html>"})
	if b := readBody(t, antPost(t, s, c, antBody("m", false))); string(b) != "<html>oops</html>" {
		t.Errorf("raw Body: %q", b)
	}
	s.Set("m", Behavior{Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	resp := antPost(t, s, c, antBody("m", true))
	if b := readBody(t, resp); resp.StatusCode != 200 || !strings.Contains(string(b), "overloaded_error") {
		t.Errorf("200 Body: %d %q", resp.StatusCode, b)
	}
}

func TestAnthropicKeyAndHeaders(t *testing.T) {
	s, c := newServer(t)
	s.RequireKey("sk-ant")
	url := s.AnthropicURL() + "/messages"
	for _, tc := range []struct {
		name   string
		header []string
		status int
		typ    string
		msg    string
	}{
		{"no key", antVersion, 401, "authentication_error", "x-api-key header is required"},
		{"wrong key", append([]string{"x-api-key", "sk-bad"}, antVersion...), 401, "authentication_error", "invalid x-api-key"},
		{"bearer is not enough", append([]string{"Authorization", "Bearer sk-ant"}, antVersion...), 401, "authentication_error", ""},
		{"no version", []string{"x-api-key", "sk-ant"}, 400, "invalid_request_error", "anthropic-version: header is required"},
		{"good", append([]string{"x-api-key", "sk-ant"}, antVersion...), 200, "", ""},
	} {
		resp := postWire(t, c, url+"?beta=true", antBody("m", false), tc.header...)
		body := readBody(t, resp)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, resp.StatusCode, tc.status, body)
			continue
		}
		if tc.typ == "" {
			continue
		}
		if e := decode[antErrorBody](t, body); e.Error.Type != tc.typ || !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: body %s", tc.name, body)
		}
	}
	if n := s.Calls("m"); n != 5 {
		t.Errorf("Calls = %d, want 5: rejected requests count too", n)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("x-api-key", "sk-ant")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if e := decode[antErrorBody](t, readBody(t, resp)); resp.StatusCode != 405 || e.Type != "error" {
		t.Errorf("GET: %d %+v", resp.StatusCode, e)
	}
	resp = postWire(t, c, url, `not json`, append([]string{"x-api-key", "sk-ant"}, antVersion...)...)
	if e := decode[antErrorBody](t, readBody(t, resp)); resp.StatusCode != 400 || e.Error.Type != "invalid_request_error" {
		t.Errorf("not json: %d %+v", resp.StatusCode, e)
	}
}

func TestAnthropicRequests(t *testing.T) {
	s, c := newServer(t)
	body := antBody("claude-r", true)
	readAnt(t, antPost(t, s, c, body, "x-api-key", "k"))
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/messages" || r.Model != "claude-r" || !r.Stream || string(r.Body) != body || r.Header.Get("x-api-key") != "k" || r.Header.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("request = %+v", r)
	}
}

func TestScriptsAcrossWires(t *testing.T) {
	s, c := newServer(t)
	s.Set("shared", Behavior{Status: 429}, Behavior{Status: 503}, Behavior{})
	statuses := []int{
		func() int {
			r := post(t, c, s.URL+"/chat/completions", chatBody("shared", false))
			readBody(t, r)
			return r.StatusCode
		}(),
		func() int { r := antPost(t, s, c, antBody("shared", false)); readBody(t, r); return r.StatusCode }(),
		func() int {
			r := postWire(t, c, s.GeminiURL()+"/models/shared:generateContent", gemBody)
			readBody(t, r)
			return r.StatusCode
		}(),
	}
	if want := []int{429, 503, 200}; !slices.Equal(statuses, want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
	if n := s.Calls("shared"); n != 3 {
		t.Errorf("Calls = %d, want 3", n)
	}
}

func TestAnthropicOutputTokens(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Chunks: []string{"a", "b", "c", "d", "e"}})
	got := mustJSON(t, string(readBody(t, antPost(t, s, c, antBody("m", false)))))
	if u := got["usage"].(map[string]any); u["output_tokens"] != float64(5) {
		t.Errorf("usage = %v", u)
	}
	if got["content"].([]any)[0].(map[string]any)["text"] != "abcde" {
		t.Errorf("content = %v", got["content"])
	}
	if id := got["id"].(string); !strings.HasPrefix(id, "msg_") {
		t.Errorf("id = %q", id)
	}
}
