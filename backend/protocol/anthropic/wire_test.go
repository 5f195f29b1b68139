package anthropic

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

func TestWireLayout(t *testing.T) {
	if eps := Codec.Endpoints(); len(eps) != 1 || eps[0] != llm.Chat {
		t.Errorf("Endpoints = %v", eps)
	}
	if p := Codec.Path(llm.Chat, "claude-x", true); p != "/messages" {
		t.Errorf("Path = %q", p)
	}
	h := http.Header{}
	Codec.Header(h, "sk-ant-1")
	if h.Get("x-api-key") != "sk-ant-1" || h.Get("anthropic-version") != "2023-06-01" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", h)
	}
	h = http.Header{"Anthropic-Version": {"2024-01-01"}}
	Codec.Header(h, "")
	if _, ok := h["X-Api-Key"]; ok || h.Get("anthropic-version") != "2024-01-01" {
		t.Errorf("keyless headers %v", h)
	}
	if string(Codec.StreamEnd()) != "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n" {
		t.Errorf("StreamEnd = %q", Codec.StreamEnd())
	}
}

func errBody(typ, msg string) []byte {
	return []byte(`{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_011"}`)
}

func TestClassify(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name   string
		status int
		h      http.Header
		body   []byte
		class  llm.Class
		wait   time.Duration
	}{
		{"overloaded", 529, nil, errBody("overloaded_error", "Overloaded"), llm.Transient, 0},
		{"overloaded without a body", 529, nil, []byte("busy"), llm.Transient, 0},
		{"rate limit with retry-after", 429, http.Header{"Retry-After": {"17"}}, errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), llm.RateLimited, 17 * time.Second},
		{"rate limit with reset times", 429, http.Header{
			"Anthropic-Ratelimit-Requests-Reset":      {now.Add(10 * time.Second).Format(time.RFC3339)},
			"Anthropic-Ratelimit-Input-Tokens-Reset":  {now.Add(40 * time.Second).Format(time.RFC3339)},
			"Anthropic-Ratelimit-Output-Tokens-Reset": {now.Add(-time.Minute).Format(time.RFC3339)},
		}, errBody("rate_limit_error", "rate limited"), llm.RateLimited, 40 * time.Second},
		{"authentication", 401, nil, errBody("authentication_error", "invalid x-api-key"), llm.Credential, 0},
		{"permission", 403, nil, errBody("permission_error", "Your API key does not have permission"), llm.Credential, 0},
		{"not found", 404, nil, errBody("not_found_error", "model: claude-9"), llm.Gone, 0},
		{"prompt too long", 400, nil, errBody("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"), llm.TooLong, 0},
		{"credit", 400, nil, errBody("invalid_request_error", "Your credit balance is too low to access the Anthropic API."), llm.Credential, 0},
		{"caller", 400, nil, errBody("invalid_request_error", "messages: roles must alternate"), llm.Caller, 0},
		{"too large", 413, nil, errBody("request_too_large", "Request exceeds the maximum allowed number of bytes."), llm.TooLong, 0},
		{"api error", 500, nil, errBody("api_error", "Internal server error"), llm.Transient, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := llm.ClassifyResponse(c.status, c.h, c.body, now, Dialect.Outbound.RateLimits)
			Codec.Classify(e, c.status, c.h, c.body, now)
			if e.Class != c.class || e.RetryAfter != c.wait || e.Dialect != llm.DialectAnthropic {
				t.Errorf("class %s wait %v dialect %s, want %s %v", e.Class, e.RetryAfter, e.Dialect, c.class, c.wait)
			}
			if info, ok := Codec.DecodeError(c.body); ok && e.Code != info.Type {
				t.Errorf("code %q, want %q", e.Code, info.Type)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	for status, typ := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 502: "api_error",
		503: "overloaded_error", 529: "overloaded_error", 418: "invalid_request_error", 599: "api_error"} {
		body := Codec.EncodeError(protocol.ErrorInfo{Status: status, Message: "m"})
		want := `{"type":"error","error":{"type":"` + typ + `","message":"m"}}`
		if string(body) != want {
			t.Errorf("%d: %s, want %s", status, body, want)
		}
	}
	if body := Codec.EncodeError(protocol.ErrorInfo{Status: 429, Type: "RESOURCE_EXHAUSTED", Message: "m"}); !strings.Contains(string(body), `"rate_limit_error"`) {
		t.Errorf("a foreign type was kept: %s", body)
	}
	body := Codec.EncodeError(protocol.ErrorInfo{Status: 400, Type: "invalid_request_error", Message: "max_tokens: Field required", Param: "max_tokens"})
	info, ok := Codec.DecodeError(body)
	if !ok || info.Status != 400 || info.Type != "invalid_request_error" || info.Message != "max_tokens: Field required" {
		t.Errorf("round trip %+v %v", info, ok)
	}
	for _, b := range []string{``, `{}`, `{"error":null}`, `{"error":"x"}`, `[1]`, `{"type":"message"}`} {
		if _, ok := Codec.DecodeError([]byte(b)); ok {
			t.Errorf("%q decoded as an error", b)
		}
	}
	ev := Codec.EncodeStreamError(protocol.ErrorInfo{Message: "upstream failed"})
	if Codec.EventName(ev.Data) != "error" || string(ev.Data) != `{"type":"error","error":{"type":"api_error","message":"upstream failed"}}` || ev.Kind != llm.Held {
		t.Errorf("stream error %s", ev.Data)
	}
	ev = Codec.EncodeStreamError(protocol.ErrorInfo{Status: 529, Message: "busy"})
	if !strings.Contains(string(ev.Data), `"overloaded_error"`) {
		t.Errorf("stream error %s", ev.Data)
	}
}

func TestCheckAnswer(t *testing.T) {
	for _, c := range []struct {
		name, body string
		sub        llm.Sub
		ok         bool
		prompt     int
	}{
		{"text", `{"type":"message","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"cache_read_input_tokens":4,"output_tokens":1}}`, "", true, 7},
		{"tool_use only", `{"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":{}}],"usage":{"input_tokens":3,"output_tokens":1}}`, "", true, 3},
		{"thinking only", `{"type":"message","content":[{"type":"thinking","thinking":"hmm","signature":"s"}]}`, "", true, 0},
		{"empty content", `{"type":"message","content":[],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":0}}`, llm.SubEmpty, false, 3},
		{"empty text", `{"type":"message","content":[{"type":"text","text":""}]}`, llm.SubEmpty, false, 0},
		{"not JSON", `<html>`, llm.SubMalformed, false, 0},
		{"error in a 200", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, llm.SubNone, false, 0},
		{"quota text", `{"type":"message","content":[{"type":"text","text":"Quota exceeded for this key."}]}`, llm.SubQuota, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := Codec.CheckAnswer(llm.Chat, []byte(c.body))
			if u.PromptTokens != c.prompt {
				t.Errorf("prompt tokens %d, want %d", u.PromptTokens, c.prompt)
			}
			if c.ok {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			var e *llm.Error
			if !errors.As(err, &e) || e.Class != llm.Soft || e.Sub != c.sub {
				t.Errorf("got %v, want a soft error of sub %q", err, c.sub)
			}
		})
	}
}

func TestDecodeResponseRefuses(t *testing.T) {
	for _, b := range []string{`nope`, `{"type":"error","error":{"type":"api_error","message":"x"}}`, `{"content":"x"}`} {
		if _, err := Codec.DecodeResponse([]byte(b)); err == nil {
			t.Errorf("%s decoded", b)
		}
	}
	a, err := Codec.DecodeResponse([]byte(`{"type":"message","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}},{"type":"text","text":"x"}],"stop_reason":"refusal"}`))
	if err != nil || len(a.Parts) != 1 || a.Finish != llm.FinishContentFilter || a.Usage != nil {
		t.Errorf("%+v %v", a, err)
	}
}
