package fakeupstream

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Tests of the Behavior fields added with the Anthropic and Gemini wires,
// on the OpenAI wire.

func TestOpenAIBlocked(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Blocked: "SAFETY", ToolCall: true})
	got := decode[completion](t, readBody(t, post(t, c, s.URL+"/chat/completions", chatBody("m", false))))
	ch := got.Choices[0]
	if ch.Message.Content == nil || *ch.Message.Content != "" || len(ch.Message.ToolCalls) != 0 || *ch.FinishReason != "content_filter" {
		t.Errorf("choice = %+v, finish %v", ch.Message, *ch.FinishReason)
	}
	st := readStream(t, post(t, c, s.URL+"/chat/completions", chatBody("m", true)))
	if st.err != nil || !st.done || st.finish != "content_filter" || len(st.contents) != 0 || st.args != "" || len(st.raw) != 3 {
		t.Errorf("stream %q", st.raw)
	}
	got = decode[completion](t, readBody(t, post(t, c, s.URL+"/completions", `{"model":"m","prompt":"x"}`)))
	if ch := got.Choices[0]; *ch.Text != "" || *ch.FinishReason != "content_filter" {
		t.Errorf("completion = %+v", ch)
	}
	st = readStream(t, post(t, c, s.URL+"/completions", `{"model":"m","prompt":"x","stream":true}`))
	if st.finish != "content_filter" || len(st.contents) != 0 || !st.done {
		t.Errorf("completion stream %q", st.raw)
	}
}

func TestOpenAIErrorEvent(t *testing.T) {
	for _, tc := range []struct {
		event, typ, code, msg string
		after                 int
		contents              []string
	}{
		{ErrorOverloaded, "server_error", "service_unavailable", "overloaded", 2, []string{"Hello", " from "}},
		{ErrorRateLimit, "requests", "rate_limit_exceeded", "Rate limit reached", 0, nil},
		{ErrorServer, "server_error", "server_error", "The server had an error", 9, []string{"Hello", " from ", "m"}},
		{"Upstream exploded", "server_error", "service_unavailable", "Upstream exploded", 1, []string{"Hello"}},
	} {
		s, c := newServer(t)
		s.Set("m", Behavior{ErrorEvent: tc.event, ErrorAfter: tc.after})
		st := readStream(t, post(t, c, s.URL+"/chat/completions", chatBody("m", true)))
		if st.err != nil || st.done || st.finish != "" || !slices.Equal(st.contents, tc.contents) {
			t.Errorf("%s: err %v, done %v, finish %q, contents %q", tc.event, st.err, st.done, st.finish, st.contents)
		}
		last := st.raw[len(st.raw)-1]
		e := decode[apiError](t, []byte(last))
		if e.Error.Type != tc.typ || e.Error.Code == nil || *e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: last event %s", tc.event, last)
		}
	}
}

func TestOpenAIRetryDelay(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", Behavior{Status: 429, RetryDelay: 20 * time.Second})
	resp := post(t, c, s.URL+"/chat/completions", chatBody("m", false))
	readBody(t, resp)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "20" {
		t.Errorf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	s.Set("m", Behavior{Status: 429, RetryDelay: time.Second, Headers: map[string]string{"Retry-After": "99"}})
	resp = post(t, c, s.URL+"/chat/completions", chatBody("m", false))
	readBody(t, resp)
	if resp.Header.Get("Retry-After") != "99" {
		t.Errorf("scripted header lost: Retry-After %q", resp.Header.Get("Retry-After"))
	}
	// A success ignores RetryDelay.
	s.Set("m", Behavior{RetryDelay: time.Second})
	resp = post(t, c, s.URL+"/chat/completions", chatBody("m", false))
	readBody(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Retry-After") != "" {
		t.Errorf("success: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
