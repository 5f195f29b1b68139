package gemini

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

var (
	_ protocol.Codec = Codec
	_ protocol.Wire  = Codec
)

func TestPath(t *testing.T) {
	for _, c := range []struct {
		model  string
		stream bool
		want   string
	}{
		{"gemini-2.5-flash", false, "/models/gemini-2.5-flash:generateContent"},
		{"gemini-2.5-flash", true, "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"},
		{"models/gemini-2.5-pro", false, "/models/gemini-2.5-pro:generateContent"},
		{"tunedModels/my-model-x1", true, "/tunedModels/my-model-x1:streamGenerateContent?alt=sse"},
		{"odd name/with?chars", false, "/models/odd%20name%2Fwith%3Fchars:generateContent"},
	} {
		if got := Codec.Path(llm.Chat, c.model, c.stream); got != c.want {
			t.Errorf("Path(%q, %v) = %q, want %q", c.model, c.stream, got, c.want)
		}
	}
	if eps := Codec.Endpoints(); len(eps) != 1 || eps[0] != llm.Chat {
		t.Errorf("Endpoints = %v", eps)
	}
}

func TestHeader(t *testing.T) {
	h := http.Header{}
	Codec.Header(h, "")
	if len(h) != 0 {
		t.Errorf("a keyless server got headers %v", h)
	}
	Codec.Header(h, "AIzaKEY")
	if h.Get("x-goog-api-key") != "AIzaKEY" || h.Get("Authorization") != "" {
		t.Errorf("headers %v", h)
	}
}

func googleError(code int, status, msg string, details ...string) string {
	d := ""
	if len(details) > 0 {
		d = `,"details":[` + strings.Join(details, ",") + `]`
	}
	return `{"error":{"code":` + strconv.Itoa(code) + `,"message":"` + msg + `","status":"` + status + `"` + d + `}}`
}

func TestClassify(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	retry := `{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"12.5s"}`
	badKey := `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}`
	for _, c := range []struct {
		name   string
		status int
		header http.Header
		body   string
		class  llm.Class
		code   string
		retry  time.Duration
	}{
		{"rate limit with RetryInfo", 429, nil, googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded", retry), llm.RateLimited, "RESOURCE_EXHAUSTED", 12500 * time.Millisecond},
		{"rate limit with Retry-After", 429, http.Header{"Retry-After": {"20"}}, googleError(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."), llm.RateLimited, "RESOURCE_EXHAUSTED", 20 * time.Second},
		{"rate limit as an array", 429, nil, "[" + googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded", retry) + "]", llm.RateLimited, "RESOURCE_EXHAUSTED", 12500 * time.Millisecond},
		{"bad key", 400, nil, googleError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", badKey), llm.Credential, "INVALID_ARGUMENT", 0},
		{"bad key by message", 400, nil, googleError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."), llm.Credential, "INVALID_ARGUMENT", 0},
		{"expired key", 400, nil, googleError(400, "INVALID_ARGUMENT", "API key expired. Please renew the API key."), llm.Credential, "INVALID_ARGUMENT", 0},
		{"too long", 400, nil, googleError(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."), llm.TooLong, "INVALID_ARGUMENT", 0},
		{"bad request", 400, nil, googleError(400, "INVALID_ARGUMENT", "Invalid JSON payload received. Unknown name \\\"foo\\\": Cannot find field."), llm.Caller, "INVALID_ARGUMENT", 0},
		{"region", 400, nil, googleError(400, "FAILED_PRECONDITION", "User location is not supported for the API use."), llm.Credential, "FAILED_PRECONDITION", 0},
		{"free tier region", 400, nil, googleError(400, "FAILED_PRECONDITION", "Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio."), llm.Credential, "FAILED_PRECONDITION", 0},
		{"precondition", 400, nil, googleError(400, "FAILED_PRECONDITION", "Precondition check failed."), llm.Caller, "FAILED_PRECONDITION", 0},
		{"unauthenticated", 401, nil, googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."), llm.Credential, "UNAUTHENTICATED", 0},
		{"denied", 403, nil, googleError(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."), llm.Credential, "PERMISSION_DENIED", 0},
		{"gone", 404, nil, googleError(404, "NOT_FOUND", "models/gemini-1.0-pro is not found for API version v1beta, or is not supported for generateContent."), llm.Gone, "NOT_FOUND", 0},
		{"internal", 500, nil, googleError(500, "INTERNAL", "An internal error has occurred."), llm.Transient, "INTERNAL", 0},
		{"overloaded", 503, nil, googleError(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), llm.Transient, "UNAVAILABLE", 0},
		{"deadline", 504, nil, googleError(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."), llm.Transient, "DEADLINE_EXCEEDED", 0},
		{"not JSON", 502, nil, "<html>Bad Gateway</html>", llm.Transient, "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := c.header
			if h == nil {
				h = http.Header{}
			}
			e := llm.ClassifyResponse(c.status, h, []byte(c.body), now, Dialect.Outbound.RateLimits)
			Codec.Classify(e, c.status, h, []byte(c.body), now)
			if e.Class != c.class || e.Code != c.code || e.RetryAfter != c.retry || e.Dialect != llm.DialectGemini {
				t.Errorf("class %s code %q retry %s dialect %s, want %s %q %s", e.Class, e.Code, e.RetryAfter, e.Dialect, c.class, c.code, c.retry)
			}
			if c.code != "" && !strings.HasPrefix(e.Message, "HTTP ") {
				t.Errorf("message %q", e.Message)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		in         protocol.ErrorInfo
		status     int
		word       string
		param      string
		wantDetail bool
	}{
		{protocol.ErrorInfo{Status: 429, Message: "slow down"}, 429, "RESOURCE_EXHAUSTED", "", false},
		{protocol.ErrorInfo{Status: 400, Type: "invalid_request_error", Message: "bad", Param: "contents"}, 400, "INVALID_ARGUMENT", "contents", true},
		{protocol.ErrorInfo{Status: 503, Type: "UNAVAILABLE", Message: "busy"}, 503, "UNAVAILABLE", "", false},
		{protocol.ErrorInfo{Status: 401, Message: "who"}, 401, "UNAUTHENTICATED", "", false},
		{protocol.ErrorInfo{Status: 403, Message: "no"}, 403, "PERMISSION_DENIED", "", false},
		{protocol.ErrorInfo{Status: 404, Message: "none"}, 404, "NOT_FOUND", "", false},
		{protocol.ErrorInfo{Status: 504, Message: "late"}, 504, "DEADLINE_EXCEEDED", "", false},
		{protocol.ErrorInfo{Message: "broke"}, 500, "INTERNAL", "", false},
		{protocol.ErrorInfo{Status: 422, Message: "odd"}, 422, "FAILED_PRECONDITION", "", false},
	} {
		body := Codec.EncodeError(c.in)
		got, ok := Codec.DecodeError(body)
		if !ok || got.Status != c.status || got.Type != c.word || got.Message != c.in.Message || got.Param != c.param {
			t.Errorf("%+v: wrote %s, read %+v", c.in, body, got)
		}
		if strings.Contains(string(body), "BadRequest") != c.wantDetail {
			t.Errorf("%+v: details in %s", c.in, body)
		}
	}
	for _, body := range []string{``, `{}`, `{"candidates":[]}`, `not json`, `{"error":null}`, `[]`} {
		if _, ok := Codec.DecodeError([]byte(body)); ok {
			t.Errorf("DecodeError(%q) took it for an error", body)
		}
	}
	ev := Codec.EncodeStreamError(protocol.ErrorInfo{Message: "upstream broke"})
	if ev.Kind != llm.Held || Codec.EventName(ev.Data) != "" || string(ev.Data) != `{"error":{"code":500,"message":"upstream broke","status":"INTERNAL"}}` {
		t.Errorf("stream error %s", ev.Data)
	}
	_, _, err := Codec.NewStreamDecoder().Decode(nil, nil, ev.Data)
	if e, ok := err.(*llm.Error); !ok || e.Class != llm.Transient {
		t.Errorf("our own stream error reads back as %v", err)
	}
	if Codec.StreamEnd() != nil {
		t.Error("StreamEnd is not nil")
	}
}

// The API sends no rate-limit headers: the wait after a refusal is its
// RetryInfo or the standard Retry-After, never another vendor's reset.
func TestNoRateLimitHeaders(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	if Dialect.Outbound.RateLimits.Requests != (llm.RateHeader{}) || Dialect.Outbound.RateLimits.Tokens != (llm.RateHeader{}) {
		t.Errorf("rate-limit headers named: %+v", Dialect.Outbound.RateLimits)
	}
	h := http.Header{"X-Ratelimit-Reset-Requests": {"1h"}}
	e := llm.ClassifyResponse(http.StatusTooManyRequests, h, nil, now, Dialect.Outbound.RateLimits)
	Codec.Classify(e, http.StatusTooManyRequests, h, nil, now)
	if e.Class != llm.RateLimited || e.RetryAfter != 0 {
		t.Errorf("a bare 429: %s, wait %v; want rate limited with no wait", e.Class, e.RetryAfter)
	}
}
