package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"freelane/backend/dialects"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/internal/toy"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/anthropic"
	"freelane/backend/protocol/gemini"
	"freelane/backend/protocol/openai"
	"freelane/backend/upstream"
)

// The conformance suite: one table of upstream behaviours, run against the
// fake vendor of every dialect, both for clients of another dialect
// (answers translated) and for clients of the upstream's own (answers
// relayed). Every adapter must give the same class, sub-class and stream
// shape for the same behaviour: that is what lets the router fail over
// between dialects without knowing them. A new adapter is done when it
// passes this table.

// codecs are every dialect FreeLane speaks and the test-only toy dialect,
// added with this one line: each is run as a client of every upstream
// dialect, and as an upstream for every client.
var codecs = protocol.NewRegistry(append(dialects.Registry().Dialects(), toy.Dialect)...)

// fakes are where each upstream dialect is served: the fake vendor speaks
// the real ones, and the toy bridge puts the toy format in front of the
// fake vendor's OpenAI API, so its scripted behaviours apply to the toy.
type fakes struct {
	vendor *fakeupstream.Server
	toy    string
}

func (f fakes) url(kind string) string {
	switch kind {
	case "anthropic":
		return f.vendor.AnthropicURL()
	case "gemini":
		return f.vendor.GeminiURL()
	case toy.Kind:
		return f.toy
	}
	return f.vendor.URL
}

// requests are the same chat in each client dialect.
var requests = map[llm.Dialect]struct {
	codec  protocol.Codec
	body   string
	stream string
}{
	llm.DialectOpenAI: {openai.Codec,
		`{"model":"m","max_tokens":64,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello"}]}`,
		`{"model":"m","stream":true,"max_tokens":64,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello"}]}`},
	llm.DialectAnthropic: {anthropic.Codec,
		`{"model":"m","max_tokens":64,"system":"Be brief.","messages":[{"role":"user","content":"Say hello"}]}`,
		`{"model":"m","stream":true,"max_tokens":64,"system":"Be brief.","messages":[{"role":"user","content":"Say hello"}]}`},
	llm.DialectGemini: {gemini.Codec,
		`{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"Say hello"}]}],"generationConfig":{"maxOutputTokens":64}}`,
		`{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"Say hello"}]}],"generationConfig":{"maxOutputTokens":64}}`},
}

// neutralChat is the same chat in the neutral model.
var neutralChat = llm.Conversation{
	System:    []llm.Part{{Kind: llm.PartText, Text: "Be brief."}},
	Messages:  []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "Say hello"}}}},
	MaxOutput: 64,
}

// outcome is what one call came to, in words common to every dialect.
type outcome struct {
	class llm.Class
	sub   llm.Sub
	// shape is the stream's event kinds with held events left out and runs
	// of content events folded into one: "content done", "content error".
	shape string
	// retry is the retry delay the upstream asked for, rounded to seconds.
	retry time.Duration
}

func (o outcome) String() string {
	s := fmt.Sprintf("class=%s", o.class)
	if o.sub != "" {
		s += " sub=" + string(o.sub)
	}
	if o.shape != "" {
		s += " shape=" + o.shape
	}
	if o.retry != 0 {
		s += " retry=" + o.retry.String()
	}
	return s
}

const (
	fastLimit = 400 * time.Millisecond
	slow      = 1500 * time.Millisecond
)

type behaviour struct {
	name   string
	b      fakeupstream.Behavior
	stream outcome // for a streaming request
	plain  outcome // for a non-streaming request
}

var table = []behaviour{
	{"answers", fakeupstream.Behavior{},
		outcome{class: llm.OK, shape: "content done"}, outcome{class: llm.OK}},
	{"calls a tool", fakeupstream.Behavior{ToolCall: true},
		outcome{class: llm.OK, shape: "content done"}, outcome{class: llm.OK}},
	{"429 with Retry-After", fakeupstream.Behavior{Status: 429, Headers: map[string]string{"Retry-After": "7"}},
		outcome{class: llm.RateLimited, retry: 7 * time.Second}, outcome{class: llm.RateLimited, retry: 7 * time.Second}},
	{"500", fakeupstream.Behavior{Status: 500},
		outcome{class: llm.Transient}, outcome{class: llm.Transient}},
	{"503", fakeupstream.Behavior{Status: 503},
		outcome{class: llm.Transient}, outcome{class: llm.Transient}},
	{"529 overloaded", fakeupstream.Behavior{Status: 529},
		outcome{class: llm.Transient}, outcome{class: llm.Transient}},
	{"401 bad key", fakeupstream.Behavior{Status: 401},
		outcome{class: llm.Credential}, outcome{class: llm.Credential}},
	{"403 forbidden", fakeupstream.Behavior{Status: 403},
		outcome{class: llm.Credential}, outcome{class: llm.Credential}},
	{"404 model gone", fakeupstream.Behavior{Status: 404},
		outcome{class: llm.Gone}, outcome{class: llm.Gone}},
	{"prompt too long", fakeupstream.Behavior{Code: "context_length_exceeded"},
		outcome{class: llm.TooLong}, outcome{class: llm.TooLong}},
	{"400 caller error", fakeupstream.Behavior{Status: 400},
		outcome{class: llm.Caller}, outcome{class: llm.Caller}},
	{"connection reset", fakeupstream.Behavior{Reset: true},
		outcome{class: llm.Transient}, outcome{class: llm.Transient}},
	{"no answer", fakeupstream.Behavior{Hang: true},
		outcome{class: llm.Transient, sub: llm.SubTimeout}, outcome{class: llm.Transient, sub: llm.SubTimeout}},
	{"slow first token", fakeupstream.Behavior{FirstTokenDelay: slow},
		outcome{class: llm.Transient, sub: llm.SubTimeout, shape: "error"}, outcome{class: llm.OK}},
	{"cut after the first chunk", fakeupstream.Behavior{CutAfter: 1},
		outcome{class: llm.Transient, shape: "content error"}, outcome{class: llm.OK}},
	{"stalls after the first chunk", fakeupstream.Behavior{StallAfter: 1},
		outcome{class: llm.Transient, sub: llm.SubTimeout, shape: "content error"}, outcome{class: llm.OK}},
	{"malformed event", fakeupstream.Behavior{MalformedAt: 2},
		outcome{class: llm.OK, shape: "content done"}, outcome{class: llm.OK}},
	{"no end marker", fakeupstream.Behavior{NoDone: true},
		outcome{class: llm.OK, shape: "content done"}, outcome{class: llm.OK}},
	{"empty answer", fakeupstream.Behavior{Empty: true},
		outcome{class: llm.OK, shape: "done"}, outcome{class: llm.Soft, sub: llm.SubEmpty}},
	{"overloaded mid-stream", fakeupstream.Behavior{ErrorEvent: fakeupstream.ErrorOverloaded, ErrorAfter: 1},
		outcome{class: llm.Transient, shape: "content error"}, outcome{class: llm.OK}},
	{"rate limited mid-stream", fakeupstream.Behavior{ErrorEvent: fakeupstream.ErrorRateLimit, ErrorAfter: 1},
		outcome{class: llm.RateLimited, shape: "content error"}, outcome{class: llm.OK}},
	{"error before content", fakeupstream.Behavior{ErrorEvent: fakeupstream.ErrorServer, ErrorAfter: 0},
		outcome{class: llm.Transient, shape: "error"}, outcome{class: llm.OK}},
}

func TestConformance(t *testing.T) {
	srv := fakeupstream.Start()
	t.Cleanup(srv.Close)
	srv.RequireKey("sk-conformance")
	bridge := httptest.NewServer(toy.Bridge(srv.URL, nil))
	t.Cleanup(bridge.Close)
	at := fakes{vendor: srv, toy: bridge.URL}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, up := range codecs.Dialects() {
		if up.Kind == "" {
			continue
		}
		c := upstream.New(upstream.Options{
			Name: "p", BaseURL: at.url(up.Kind), APIKey: "sk-conformance", Dialect: up, Codecs: codecs,
			HeaderTimeout: fastLimit, FirstTokenTimeout: fastLimit, IdleTimeout: fastLimit,
			StreamUsage: true, Logger: quiet,
		})
		for _, cd := range codecs.Dialects() {
			client := cd.Name()
			mode := "translated"
			if client == up.Name() {
				mode = "relayed"
			}
			for _, row := range table {
				for _, stream := range []bool{true, false} {
					want := row.plain
					if stream {
						want = row.stream
					}
					name := fmt.Sprintf("%s/%s from %s/%s/stream=%v", up.Name(), mode, client, row.name, stream)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						model := strings.NewReplacer("/", "-", " ", "-", "=", "-").Replace(name)
						srv.Set(model, row.b)
						got := call(t, c, client, model, stream)
						if got.class != want.class || got.sub != want.sub || got.shape != want.shape ||
							got.retry.Round(time.Second) != want.retry {
							t.Fatalf("got  %s\nwant %s", got, want)
						}
					})
				}
			}
		}
	}
}

// call sends the chat in the client's dialect and sums up what came back.
func call(t *testing.T, c *upstream.Client, client llm.Dialect, model string, stream bool) outcome {
	t.Helper()
	rq, ok := requests[client]
	if !ok {
		// A dialect without a hand-written request gets the same chat
		// written by its own encoder.
		codec, _ := codecs.Codec(client)
		rq.codec = codec
		chat := neutralChat
		b, err := codec.EncodeRequest(&chat, "m", llm.Edits{})
		if err != nil {
			t.Fatal(err)
		}
		chat.Stream = true
		sb, err := codec.EncodeRequest(&chat, "m", llm.Edits{})
		if err != nil {
			t.Fatal(err)
		}
		rq.body, rq.stream = string(b), string(sb)
	}
	body := rq.body
	if stream {
		body = rq.stream
	}
	req, err := rq.codec.ParseRequest(llm.Chat, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Model, req.Stream = model, stream
	ctx := context.Background()
	if !stream {
		resp, err := c.Complete(ctx, req, model)
		if err != nil {
			return errOutcome(t, err, "")
		}
		// The answer must be one the client's own codec reads.
		if _, err := rq.codec.DecodeResponse(resp.Body); err != nil {
			t.Fatalf("the answer is not a %s answer: %v\n%s", client, err, resp.Body)
		}
		return outcome{class: llm.OK}
	}
	st, err := c.Stream(ctx, req, model)
	if err != nil {
		return errOutcome(t, err, "")
	}
	defer st.Close()
	var shape []string
	add := func(s string) {
		if len(shape) == 0 || shape[len(shape)-1] != s {
			shape = append(shape, s)
		}
	}
	dec := rq.codec.NewStreamDecoder()
	tail := false
	for {
		ev, err := st.Next()
		if err != nil {
			add("error")
			return errOutcome(t, err, strings.Join(shape, " "))
		}
		// The events a stream ends with are marked, and only those: once
		// one is, every later one is, and a Responses client's
		// response.completed always is.
		if tail && !ev.Tail && ev.Kind != llm.Done {
			t.Fatalf("event %s follows the stream's closing events unmarked", ev.Data)
		}
		tail = tail || ev.Tail
		if bytes.Contains(ev.Data, []byte(`"type":"response.completed"`)) && !ev.Tail {
			t.Fatalf("response.completed is not marked as the stream's end: %s", ev.Data)
		}
		switch ev.Kind {
		case llm.Content:
			add("content")
		case llm.Done:
			add("done")
			return outcome{class: llm.OK, shape: strings.Join(shape, " ")}
		}
		// Every event must be one the client's own decoder reads.
		if _, _, err := dec.Decode(nil, []byte(rq.codec.EventName(ev.Data)), ev.Data); err != nil && !errors.Is(err, protocol.ErrMalformed) {
			t.Fatalf("event %s: %v", ev.Data, err)
		} else if err != nil {
			t.Fatalf("a malformed event reached the client: %s", ev.Data)
		}
	}
}

func errOutcome(t *testing.T, err error, shape string) outcome {
	t.Helper()
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Fatalf("unclassified error %T: %v", err, err)
	}
	return outcome{class: le.Class, sub: le.Sub, shape: shape, retry: le.RetryAfter}
}
