package upstream_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol/openai"
	"freelane/backend/redact"
	"freelane/backend/upstream"
)

// canned answers every request with the same status and body.
type canned struct {
	status int
	body   []byte
}

func (c canned) RoundTrip(r *http.Request) (*http.Response, error) {
	_ = r.Body.Close()
	return &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)), Request: r}, nil
}

var okBody = []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` +
	strings.Repeat("word ", 200) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":200,"total_tokens":205}}`)

// ownKey is the benchmarks' client's key.
const ownKey = "sk-own-key-0123456789"

// twenty secrets, more than most configurations hold, and the client's
// own, as the gateway's shared Redactor holds every provider's.
func secrets() *redact.Redactor {
	s := []redact.Secret{redact.Key(ownKey)}
	for i := range 20 {
		s = append(s, redact.Key(strings.Repeat(string(rune('a'+i)), 4)+"-key-0123456789abcdef"))
	}
	return redact.New(s...)
}

func bench(b *testing.B, status int, body []byte, red upstream.Redactor) {
	req, err := openai.ParseRequest(llm.Chat, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	c := upstream.New(upstream.Options{Name: "p", BaseURL: "http://upstream.invalid/v1", APIKey: ownKey,
		Dialect: openai.Dialect, Transport: canned{status, body}, Redactor: red})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = c.Complete(ctx, req, "m")
	}
}

// The successful answer is scanned once; with no copy of a secret in it
// the scan allocates nothing.
func BenchmarkCompleteOKNoSecrets(b *testing.B)     { bench(b, 200, okBody, redact.New()) }
func BenchmarkCompleteOKTwentySecrets(b *testing.B) { bench(b, 200, okBody, secrets()) }

// An error answer pays for the redaction.
func BenchmarkCompleteErrorTwentySecrets(b *testing.B) {
	bench(b, 400, []byte(`{"error":{"message":"Invalid value for temperature: 7 is greater than the maximum of 2","type":"invalid_request_error","param":"temperature"}}`), secrets())
}
