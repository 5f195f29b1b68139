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
	"freelane/backend/upstream"
)

type sseCanned struct{ body []byte }

func (c sseCanned) RoundTrip(r *http.Request) (*http.Response, error) {
	_ = r.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: -1, Request: r}, nil
}

var sseBody = func() []byte {
	var b strings.Builder
	b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
	for range 50 {
		b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token\"}}]}\n\n")
	}
	b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	b.WriteString("data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":50,\"total_tokens\":59}}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}()

func BenchmarkStreamRelay(b *testing.B) { benchRelay(b, nil) }

// Every event is scanned for the twenty secrets before it is relayed.
func BenchmarkStreamRelayTwentySecrets(b *testing.B) { benchRelay(b, secrets()) }

func benchRelay(b *testing.B, red upstream.Redactor) {
	req, err := openai.ParseRequest(llm.Chat, []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	c := upstream.New(upstream.Options{Name: "p", BaseURL: "http://upstream.invalid/v1", Dialect: openai.Dialect, Transport: sseCanned{sseBody}, StreamUsage: true,
		APIKey: ownKey, Redactor: red})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		st, err := c.Stream(ctx, req, "m")
		if err != nil {
			b.Fatal(err)
		}
		for {
			ev, err := st.Next()
			if err != nil {
				b.Fatal(err)
			}
			if ev.Kind == llm.Done {
				break
			}
		}
		st.Close()
	}
}
