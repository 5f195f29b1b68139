package upstream_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol/gemini"
	"freelane/backend/upstream"
)

// Google ends a stream that fails mid-answer with the error object on a
// line of its own, without "data:". The stream must end in that error,
// for clients of every dialect, not as an answer that merely stopped.
func TestGeminiBareStreamErrorLine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Partial "}]},"index":0}]}`+"\r\n\r\n")
		_, _ = io.WriteString(w, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`+"\n")
	}))
	t.Cleanup(srv.Close)
	c := upstream.New(upstream.Options{Name: "g", BaseURL: srv.URL + "/v1beta", APIKey: "AIza-x", Dialect: gemini.Dialect, Codecs: codecs,
		HeaderTimeout: fastLimit, FirstTokenTimeout: fastLimit, IdleTimeout: fastLimit,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, client := range []llm.Dialect{llm.DialectGemini, llm.DialectOpenAI} {
		rq := requests[client]
		req, err := rq.codec.ParseRequest(llm.Chat, []byte(rq.stream))
		if err != nil {
			t.Fatal(err)
		}
		req.Model, req.Stream = "gemini-x", true
		st, err := c.Stream(context.Background(), req, "gemini-x")
		if err != nil {
			t.Fatal(err)
		}
		var content bool
		for {
			ev, err := st.Next()
			if err != nil {
				var le *llm.Error
				if !errors.As(err, &le) || le.Class != llm.Transient {
					t.Errorf("%s: stream ended with %v, want the upstream's transient error", client, err)
				}
				break
			}
			if ev.Kind == llm.Done {
				t.Errorf("%s: the stream ended as a complete answer", client)
				break
			}
			content = content || ev.Kind == llm.Content
		}
		st.Close()
		if !content {
			t.Errorf("%s: the text before the error was lost", client)
		}
	}
}
