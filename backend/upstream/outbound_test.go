package upstream_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/openai"
	"freelane/backend/upstream"
)

// toyWire is the wire of a dialect only this test registers: OpenAI's
// bodies, but its own path and key header.
type toyWire struct{ protocol.Wire }

func (toyWire) Path(llm.Endpoint, string, bool) string { return "/toy/talk" }
func (toyWire) Header(h http.Header, key string)       { h.Set("Toy-Key", key) }

// The client learns everything vendor-specific from the dialect it is
// handed: a dialect registered only in a test registry is called at its
// wire's path with its wire's headers, and a refusal is read for the wait
// in that dialect's own rate-limit headers, not another's.
func TestClientCallsADialectOnlyItsRegistryKnows(t *testing.T) {
	reg := protocol.NewRegistry(protocol.Dialect{Codec: openai.Codec, Kind: "toy", Outbound: protocol.Outbound{
		Wire: toyWire{openai.Codec},
		RateLimits: llm.RateHeaders{
			Requests: llm.RateHeader{Remaining: "Toy-Calls-Left", Reset: "Toy-Calls-Back-In"},
			Format:   llm.ResetWait,
		},
	}})
	d, ok := reg.ByKind("toy")
	if !ok {
		t.Fatal("the toy kind is not registered")
	}
	var path, key string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, key = r.URL.Path, r.Header.Get("Toy-Key")
		w.Header().Set("Toy-Calls-Left", "0")
		w.Header().Set("Toy-Calls-Back-In", "9s")
		// OpenAI's name for the same, which the toy does not speak.
		w.Header().Set("X-Ratelimit-Reset-Requests", "1h")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"slow down"}}`)
	}))
	t.Cleanup(srv.Close)
	c := upstream.New(upstream.Options{Name: "toy", BaseURL: srv.URL + "/v9", APIKey: "toy-key-1", Dialect: d, Codecs: reg,
		HeaderTimeout: fastLimit, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	req, err := openai.ParseRequest(llm.Chat, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), req, "m")
	var le *llm.Error
	if !errors.As(err, &le) || le.Class != llm.RateLimited || le.RetryAfter != 9*time.Second {
		t.Fatalf("err = %v (%+v), want rate limited for the 9s the toy's header says", err, le)
	}
	if path != "/v9/toy/talk" || key != "toy-key-1" {
		t.Errorf("called %s with Toy-Key %q, want /v9/toy/talk with the key", path, key)
	}
}
