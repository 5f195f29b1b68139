package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"freelane/backend/internal/fakeupstream"
)

// A Gemini stream that breaks after FreeLane committed to it ends with the
// error object on a line of its own, as Google ends one: Google's
// JavaScript SDK takes no other form for an error (an error sent as a data
// event reads as an empty chunk, and the answer as merely cut short), and
// its Go SDK reads it as an APIError.
func TestGeminiStreamErrorIsABareLine(t *testing.T) {
	e := mixedEnv(t)
	e.up.Set("claude-x", fakeupstream.Behavior{CutAfter: 1})
	body := `{"contents":[{"role":"user","parts":[{"text":"Say hello"}]}]}`
	r := e.do(http.MethodPost, "/v1beta/models/mixed:streamGenerateContent?alt=sse", body, nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	text := string(r.body)
	events, last, _ := strings.Cut(text, "\n\n{")
	if !strings.HasPrefix(events, "data: ") || strings.Contains(text, `data: {"error"`) ||
		!strings.HasPrefix(last, `"error":{"code":502,`) || !strings.HasSuffix(last, `"status":"INTERNAL"}}`+"\n") {
		t.Errorf("stream %q", text)
	}

	e.up.Set("claude-x", fakeupstream.Behavior{CutAfter: 1})
	var got string
	var apiErr genai.APIError
	for chunk, err := range geminiClient(t, e, "v1beta").Models.GenerateContentStream(context.Background(), "mixed", genai.Text("Say hello"), nil) {
		if err != nil {
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %T %v after %q", err, err, got)
			}
			break
		}
		got += chunk.Text()
	}
	if apiErr.Code != http.StatusBadGateway || !strings.Contains(apiErr.Message, "incomplete") || got != "Hello" {
		t.Errorf("error %+v after %q", apiErr, got)
	}
}
