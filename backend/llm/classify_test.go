package llm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"freelane/backend/llm"
)

var now = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// Rate-limit header tables as dialects declare them: one whose resets are
// waits, one whose resets are times.
var (
	waits = llm.RateHeaders{
		Requests: llm.RateHeader{Limit: "X-Ratelimit-Limit-Requests", Remaining: "X-Ratelimit-Remaining-Requests", Reset: "X-Ratelimit-Reset-Requests"},
		Tokens:   llm.RateHeader{Limit: "X-Ratelimit-Limit-Tokens", Remaining: "X-Ratelimit-Remaining-Tokens", Reset: "X-Ratelimit-Reset-Tokens"},
		Resets:   []string{"X-Ratelimit-Reset"},
		Format:   llm.ResetWait,
	}
	times = llm.RateHeaders{
		Requests: llm.RateHeader{Reset: "Anthropic-Ratelimit-Requests-Reset"},
		Tokens:   llm.RateHeader{Reset: "Anthropic-Ratelimit-Tokens-Reset"},
		Resets:   []string{"anthropic-ratelimit-output-tokens-reset"},
		Format:   llm.ResetTime,
	}
)

func openAIError(msg, typ, code string) string {
	return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":%q}}`, msg, typ, code)
}

func TestClassifyResponse(t *testing.T) {
	groq413 := openAIError("Request too large for model `llama-3.3-70b-versatile` in organization `org_01` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Requested 13905, please reduce your message size and try again.", "tokens", "rate_limit_exceeded")
	tests := []struct {
		name   string
		status int
		h      http.Header
		body   string
		class  llm.Class
		retry  time.Duration
		msg    string // exact Message; empty: not checked
	}{
		// Rate limits and how long to wait.
		{"429 retry-after seconds", 429, hdr("Retry-After", "7"), openAIError("Rate limit reached", "requests", "rate_limit_exceeded"),
			llm.RateLimited, 7 * time.Second, "HTTP 429: Rate limit reached"},
		{"429 retry-after fractional seconds", 429, hdr("Retry-After", "2.5"), "", llm.RateLimited, 2500 * time.Millisecond, "HTTP 429: Too Many Requests"},
		{"429 retry-after http date", 429, hdr("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat)), "", llm.RateLimited, 90 * time.Second, ""},
		{"429 retry-after date in the past", 429, hdr("Retry-After", now.Add(-time.Minute).Format(http.TimeFormat)), "", llm.RateLimited, 0, ""},
		{"429 retry-after garbage falls back to reset header", 429, hdr("Retry-After", "soon", "X-Ratelimit-Reset-Requests", "3s"), "", llm.RateLimited, 3 * time.Second, ""},
		{"429 reset-requests go duration", 429, hdr("x-ratelimit-reset-requests", "1m30s"), "", llm.RateLimited, 90 * time.Second, ""},
		{"429 reset-tokens millis", 429, hdr("x-ratelimit-reset-tokens", "250ms"), "", llm.RateLimited, 250 * time.Millisecond, ""},
		{"429 both reset headers take the longer", 429, hdr("x-ratelimit-reset-requests", "2s", "x-ratelimit-reset-tokens", "1m0.5s"), "", llm.RateLimited, time.Minute + 500*time.Millisecond, ""},
		{"429 both reset headers take the longer, other way", 429, hdr("x-ratelimit-reset-requests", "6m0s", "x-ratelimit-reset-tokens", "20ms"), "", llm.RateLimited, 6 * time.Minute, ""},
		{"429 retry-after-ms", 429, hdr("retry-after-ms", "1500"), "", llm.RateLimited, 1500 * time.Millisecond, ""},
		{"429 retry-after wins over reset headers", 429, hdr("Retry-After", "4", "x-ratelimit-reset-tokens", "9s"), "", llm.RateLimited, 4 * time.Second, ""},
		{"429 unix timestamp reset", 429, hdr("X-Ratelimit-Reset", fmt.Sprint(now.Add(42*time.Second).Unix())), "", llm.RateLimited, 42 * time.Second, ""},
		{"429 absurd retry-after is capped at 24h", 429, hdr("Retry-After", "99999999"), "", llm.RateLimited, 24 * time.Hour, ""},
		{"429 no header", 429, nil, "", llm.RateLimited, 0, "HTTP 429: Too Many Requests"},

		// Keys and credit.
		{"401", 401, nil, openAIError("Incorrect API key provided: sk-***", "invalid_request_error", "invalid_api_key"), llm.Credential, 0, "HTTP 401: Incorrect API key provided: sk-***"},
		{"403", 403, nil, `{"error":{"message":"Forbidden","code":403}}`, llm.Credential, 0, "HTTP 403: Forbidden"},
		{"402", 402, nil, `{"error":{"message":"Insufficient credits","code":402}}`, llm.Credential, 0, "HTTP 402: Insufficient credits"},
		{"401 even with retry-after is not a rate limit", 401, hdr("Retry-After", "5"), "", llm.Credential, 0, ""},

		// Withdrawn models.
		{"404", 404, nil, openAIError("The model `gpt-5` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"), llm.Gone, 0, ""},
		{"404 plain", 404, nil, "", llm.Gone, 0, "HTTP 404: Not Found"},
		{"400 decommissioned", 400, nil, openAIError("The model `x` has been decommissioned and is no longer supported.", "invalid_request_error", "model_decommissioned"), llm.Gone, 0,
			"HTTP 400: The model `x` has been decommissioned and is no longer supported."},
		{"400 model does not exist", 400, nil, openAIError("The model `foo` does not exist", "invalid_request_error", ""), llm.Gone, 0, ""},

		// Prompts too long for the model.
		{"400 context_length_exceeded code", 400, nil, openAIError("Please shorten your prompt.", "invalid_request_error", "context_length_exceeded"), llm.TooLong, 0, "HTTP 400: Please shorten your prompt."},
		{"400 maximum context length text", 400, nil, openAIError("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", "invalid_request_error", ""), llm.TooLong, 0, ""},
		{"400 maximum context length top-level message", 400, nil, `{"object":"error","message":"This model's maximum context length is 4096 tokens.","code":400}`, llm.TooLong, 0, ""},

		// The caller's own mistakes.
		{"400 other", 400, nil, openAIError("Invalid value for 'temperature': must be <= 2.", "invalid_request_error", "invalid_value"), llm.Caller, 0, "HTTP 400: Invalid value for 'temperature': must be <= 2."},
		{"400 parameter does not exist stays caller", 400, nil, openAIError("parameter foo does not exist", "invalid_request_error", ""), llm.Caller, 0, "HTTP 400: parameter foo does not exist"},
		{"400 tool does not exist stays caller", 400, nil, `{"detail":"tool 'search' does not exist"}`, llm.Caller, 0, "HTTP 400: tool 'search' does not exist"},
		{"422", 422, nil, `{"detail":"field required: messages"}`, llm.Caller, 0, "HTTP 422: field required: messages"},
		{"413 plain", 413, nil, "", llm.Caller, 0, "HTTP 413: Request Entity Too Large"},
		{"413 body too big", 413, nil, openAIError("Request body too large, max 10MB", "invalid_request_error", ""), llm.Caller, 0, ""},

		// Groq's tokens-per-minute 413 is a rate limit another backend can serve.
		{"413 groq TPM", 413, nil, groq413, llm.RateLimited, 0, ""},
		{"413 groq TPM with retry-after", 413, hdr("Retry-After", "12"), groq413, llm.RateLimited, 12 * time.Second, ""},

		// The backend's fault, worth another backend.
		{"408", 408, nil, "", llm.Transient, 0, "HTTP 408: Request Timeout"},
		{"409", 409, nil, "", llm.Transient, 0, "HTTP 409: Conflict"},
		{"425", 425, nil, "", llm.Transient, 0, "HTTP 425: Too Early"},
		{"500", 500, nil, `{"message":"Internal error"}`, llm.Transient, 0, "HTTP 500: Internal error"},
		{"502 non-JSON body first line", 502, nil, "upstream connect error or disconnect/reset before headers\nreset reason: overflow", llm.Transient, 0,
			"HTTP 502: upstream connect error or disconnect/reset before headers"},
		{"503 openai shaped", 503, nil, openAIError("The engine is currently overloaded, please try again later", "server_error", ""), llm.Transient, 0,
			"HTTP 503: The engine is currently overloaded, please try again later"},
		{"503 model not found text is not gone on a 5xx", 503, nil, openAIError("model not found on this replica", "server_error", ""), llm.Transient, 0, ""},
		{"504 detail", 504, nil, `{"detail":"Gateway Timeout"}`, llm.Transient, 0, "HTTP 504: Gateway Timeout"},
		{"529 overloaded", 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, llm.Transient, 0, "HTTP 529: Overloaded"},
		{"500 error as a string", 500, nil, `{"error":"boom"}`, llm.Transient, 0, "HTTP 500: boom"},
		{"500 empty error object", 500, nil, `{"error":{}}`, llm.Transient, 0, "HTTP 500: Internal Server Error"},
		{"500 json array body", 500, nil, `[{"error":{"code":500,"message":"x"}}]`, llm.Transient, 0, `HTTP 500: [{"error":{"code":500,"message":"x"}}]`},
		{"500 whitespace body", 500, nil, " \n\t ", llm.Transient, 0, "HTTP 500: Internal Server Error"},
		{"302 is not an answer", 302, nil, "", llm.Transient, 0, "HTTP 302: Found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			h := tc.h
			if h == nil {
				h = http.Header{}
			}
			e := llm.ClassifyResponse(tc.status, h, body, now, waits)
			if e.Class != tc.class {
				t.Errorf("class = %s, want %s (message %q)", e.Class, tc.class, e.Message)
			}
			if e.RetryAfter != tc.retry {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tc.retry)
			}
			if e.Status != tc.status {
				t.Errorf("Status = %d, want %d", e.Status, tc.status)
			}
			if tc.msg != "" && e.Message != tc.msg {
				t.Errorf("Message = %q, want %q", e.Message, tc.msg)
			}
			if prefix := fmt.Sprintf("HTTP %d: ", tc.status); !strings.HasPrefix(e.Message, prefix) {
				t.Errorf("Message %q does not start with %q", e.Message, prefix)
			}
			if string(e.Body) != tc.body {
				t.Errorf("Body = %q, want the upstream body unchanged", e.Body)
			}
			if e.Err != nil {
				t.Errorf("Err = %v, want nil for an HTTP answer", e.Err)
			}
			if got, want := e.Error(), string(tc.class)+": "+e.Message; got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
		})
	}
}

func TestClassifyResponseTruncatesLongMessages(t *testing.T) {
	for _, word := range []string{"x", "é", "模型过载", "🙂"} {
		msg := strings.Repeat(word, 400)
		e := llm.ClassifyResponse(503, http.Header{}, []byte(openAIError(msg, "server_error", "")), now, waits)
		rest := strings.TrimPrefix(e.Message, "HTTP 503: ")
		if !strings.HasSuffix(rest, "…") {
			t.Errorf("%q: long message not marked as truncated: %q", word, rest)
		}
		rest = strings.TrimSuffix(rest, "…")
		if len(rest) > 200 || len(rest) < 190 {
			t.Errorf("%q: truncated to %d bytes, want at most 200 and not much less", word, len(rest))
		}
		if !utf8.ValidString(e.Message) {
			t.Errorf("%q: truncation split a character: %q", word, e.Message)
		}
		if !strings.HasPrefix(msg, rest) {
			t.Errorf("%q: truncated message is not a prefix of the original", word)
		}
	}
}

func TestClassifyResponseClassesFailOver(t *testing.T) {
	for _, tc := range []struct {
		c    llm.Class
		want bool
	}{
		{llm.RateLimited, true}, {llm.Transient, true}, {llm.Soft, true}, {llm.Credential, true},
		{llm.Gone, true}, {llm.TooLong, true}, {llm.Caller, false}, {llm.Cancelled, false}, {llm.OK, false},
	} {
		if got := tc.c.FailsOver(); got != tc.want {
			t.Errorf("%s.FailsOver() = %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestRetryAfterHeaderNamesAreCaseInsensitive(t *testing.T) {
	// Headers arrive canonicalised by net/http, but providers build them by
	// hand in tests and proxies; Header.Get handles both.
	h := http.Header{}
	h.Set("X-RATELIMIT-RESET-TOKENS", "5s")
	if got := waits.RetryAfter(h, now); got != 5*time.Second {
		t.Fatalf("RetryAfter = %v, want 5s", got)
	}
	if got := waits.RetryAfter(http.Header{}, now); got != 0 {
		t.Fatalf("RetryAfter without headers = %v, want 0", got)
	}
}

// The reset headers read are the dialect's own, in the dialect's format:
// a table that names no header reads only the standard ones, and another
// dialect's headers mean nothing.
func TestRetryAfterReadsTheDialectsTable(t *testing.T) {
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	for _, tc := range []struct {
		name string
		rate llm.RateHeaders
		h    http.Header
		want time.Duration
	}{
		{"times: requests reset", times, hdr("Anthropic-Ratelimit-Requests-Reset", at(10*time.Second)), 10 * time.Second},
		{"times: the latest reset", times, hdr("Anthropic-Ratelimit-Tokens-Reset", at(10*time.Second), "Anthropic-Ratelimit-Output-Tokens-Reset", at(40*time.Second)), 40 * time.Second},
		{"times: a reset passed is no wait", times, hdr("Anthropic-Ratelimit-Requests-Reset", at(-time.Minute)), 0},
		{"times: a wait is not a time", times, hdr("Anthropic-Ratelimit-Requests-Reset", "30s"), 0},
		{"times: capped at a day", times, hdr("Anthropic-Ratelimit-Requests-Reset", at(72*time.Hour)), 24 * time.Hour},
		{"times: retry-after still wins", times, hdr("Retry-After", "3", "Anthropic-Ratelimit-Requests-Reset", at(time.Minute)), 3 * time.Second},
		{"times: retry-after-ms", times, hdr("Retry-After-Ms", "1500"), 1500 * time.Millisecond},
		{"times: another dialect's header", times, hdr("X-Ratelimit-Reset-Requests", "20s"), 0},
		{"waits: another dialect's header", waits, hdr("Anthropic-Ratelimit-Requests-Reset", at(10*time.Second)), 0},
		{"waits: a general reset", waits, hdr("X-Ratelimit-Reset", "12"), 12 * time.Second},
		{"none: only retry-after", llm.RateHeaders{}, hdr("X-Ratelimit-Reset-Requests", "20s", "Retry-After", "5"), 5 * time.Second},
		{"none: no reset header", llm.RateHeaders{}, hdr("X-Ratelimit-Reset-Requests", "20s"), 0},
	} {
		if got := tc.rate.RetryAfter(tc.h, now); got != tc.want {
			t.Errorf("%s: RetryAfter = %v, want %v", tc.name, got, tc.want)
		}
		e := llm.ClassifyResponse(http.StatusTooManyRequests, tc.h, nil, now, tc.rate)
		if e.RetryAfter != tc.want {
			t.Errorf("%s: a 429's RetryAfter = %v, want %v", tc.name, e.RetryAfter, tc.want)
		}
	}
}

func TestClassifyTransport(t *testing.T) {
	t.Run("first token timeout", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(llm.ErrFirstTokenTimeout)
		e := llm.ClassifyTransport(ctx, context.Canceled)
		if e.Class != llm.Transient || e.Message != "no first token in time" {
			t.Fatalf("got %s %q, want transient \"no first token in time\"", e.Class, e.Message)
		}
		if !errors.Is(e, llm.ErrFirstTokenTimeout) {
			t.Errorf("error does not unwrap to ErrFirstTokenTimeout: %v", e.Err)
		}
		if e.Status != 0 || e.Body != nil {
			t.Errorf("transport error has Status %d Body %q, want none", e.Status, e.Body)
		}
	})
	t.Run("idle timeout", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(llm.ErrIdleTimeout)
		e := llm.ClassifyTransport(ctx, fmt.Errorf("read body: %w", context.Canceled))
		if e.Class != llm.Transient || e.Message != "stream went idle" {
			t.Fatalf("got %s %q, want transient \"stream went idle\"", e.Class, e.Message)
		}
		if !errors.Is(e, llm.ErrIdleTimeout) {
			t.Errorf("error does not unwrap to ErrIdleTimeout: %v", e.Err)
		}
	})
	t.Run("parent cancelled is the client going away", func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := context.WithCancelCause(parent)
		defer cancel(nil)
		cancelParent()
		e := llm.ClassifyTransport(ctx, context.Canceled)
		if e.Class != llm.Cancelled || e.Message != "client went away" {
			t.Fatalf("got %s %q, want cancelled \"client went away\"", e.Class, e.Message)
		}
		if e.Class.FailsOver() {
			t.Error("a cancelled request must not fail over")
		}
	})
	t.Run("our own timer wins over the parent", func(t *testing.T) {
		// The attempt's timer fired first; the client leaving afterwards
		// does not change what happened to the attempt.
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := context.WithCancelCause(parent)
		cancel(llm.ErrIdleTimeout)
		cancelParent()
		if e := llm.ClassifyTransport(ctx, context.Canceled); e.Class != llm.Transient {
			t.Fatalf("class = %s, want transient", e.Class)
		}
	})
	t.Run("connection refused on a closed port", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		_, derr := net.Dial("tcp", addr)
		if derr == nil {
			t.Skip("port was reused before the dial")
		}
		e := llm.ClassifyTransport(context.Background(), derr)
		if e.Class != llm.Transient || e.Message != "connection refused" {
			t.Fatalf("dial: got %s %q, want transient \"connection refused\" (err %v)", e.Class, e.Message, derr)
		}
		// The same through net/http, as providers see it (*url.Error).
		_, herr := http.Get("http://" + addr + "/v1/chat/completions")
		if herr == nil {
			t.Skip("port was reused before the request")
		}
		e = llm.ClassifyTransport(context.Background(), herr)
		if e.Class != llm.Transient || e.Message != "connection refused" {
			t.Fatalf("http: got %s %q, want transient \"connection refused\" (err %v)", e.Class, e.Message, herr)
		}
		if !errors.Is(e, syscall.ECONNREFUSED) {
			t.Error("error does not unwrap to ECONNREFUSED")
		}
	})
	t.Run("net timeout", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A deadline in the past makes the read time out at once.
		_ = c.SetReadDeadline(time.Unix(1, 0))
		_, rerr := c.Read(make([]byte, 1))
		var ne net.Error
		if !errors.As(rerr, &ne) || !ne.Timeout() {
			t.Fatalf("read error %v is not a net timeout", rerr)
		}
		e := llm.ClassifyTransport(context.Background(), rerr)
		if e.Class != llm.Transient || !strings.Contains(e.Message, "timed out") {
			t.Fatalf("got %s %q, want transient timeout", e.Class, e.Message)
		}
	})
	for _, tc := range []struct {
		name string
		err  error
		msg  string
	}{
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: &osSyscallError{syscall.ECONNRESET}}, "connection reset"},
		{"unexpected EOF", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), "connection closed unexpectedly"},
		{"EOF", io.EOF, "connection closed unexpectedly"},
		{"dns", &net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}, "cannot resolve api.example.invalid"},
		{"other", errors.New("tls: handshake failure"), "tls: handshake failure"},
		{"other long", errors.New(strings.Repeat("e", 300)), strings.Repeat("e", 200) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := llm.ClassifyTransport(context.Background(), tc.err)
			if e.Class != llm.Transient || e.Message != tc.msg {
				t.Fatalf("got %s %q, want transient %q", e.Class, e.Message, tc.msg)
			}
			if !errors.Is(e, tc.err) {
				t.Error("classified error does not unwrap to the transport error")
			}
		})
	}
}

// osSyscallError wraps an errno the way the net package does.
type osSyscallError struct{ errno syscall.Errno }

func (e *osSyscallError) Error() string { return "read: " + e.errno.Error() }
func (e *osSyscallError) Unwrap() error { return e.errno }

func TestSoftErrorAndQuotaText(t *testing.T) {
	e := llm.SoftError(llm.SubEmpty, "empty answer from %s", "groq")
	if e.Class != llm.Soft || e.Sub != llm.SubEmpty || e.Status != http.StatusOK || e.Message != "empty answer from groq" {
		t.Fatalf("SoftError = %+v", e)
	}
	for s, want := range map[string]bool{
		"You exceeded your current quota, please check your plan": true,
		"Quota exceeded for metric generate_content":              true,
		"insufficient_quota":                       true,
		"Rate limit exceeded: free-models-per-day": true,
		"Hello! How can I help?":                   false,
	} {
		if got := llm.QuotaText(s); got != want {
			t.Errorf("QuotaText(%q) = %v, want %v", s, got, want)
		}
	}
}

var allClasses = map[llm.Class]bool{
	llm.RateLimited: true, llm.Transient: true, llm.Soft: true, llm.Credential: true,
	llm.Gone: true, llm.TooLong: true, llm.Caller: true, llm.Cancelled: true,
}

var retryHeaders = []string{
	"Retry-After", "Retry-After-Ms", "X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens",
	"X-Ratelimit-Reset", "Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Tokens-Reset",
	"Anthropic-Ratelimit-Output-Tokens-Reset",
}

func FuzzClassifyResponse(f *testing.F) {
	f.Add(429, "7", []byte(openAIError("Rate limit reached", "requests", "rate_limit_exceeded")))
	f.Add(429, "1m30s", []byte(""))
	f.Add(429, "Wed, 21 Oct 2015 07:28:00 GMT", []byte(""))
	f.Add(429, "1e300", []byte(""))
	f.Add(429, "-5", []byte(""))
	f.Add(429, "NaN", []byte("{"))
	f.Add(429, "Inf", []byte("null"))
	f.Add(413, "2026-01-01T00:00:00Z", []byte(openAIError("tokens per minute", "tokens", "rate_limit_exceeded")))
	f.Add(400, "", []byte(openAIError("maximum context length", "", "context_length_exceeded")))
	f.Add(400, "", []byte(`{"error":{"message":"The model `+"`x`"+` has been decommissioned","code":null}}`))
	f.Add(500, "", []byte(`{"error":{"code":123,"message":["not","a","string"]}}`))
	f.Add(503, "", []byte("<html>\r\n<body>503</body></html>"))
	f.Add(599, "", []byte(strings.Repeat("模", 100)))
	f.Add(100, "", []byte(`{"detail":{"loc":["body"]}}`))
	f.Fuzz(func(t *testing.T, status int, hv string, body []byte) {
		if status < 0 {
			status = -(status + 1)
		}
		status = 100 + status%500
		h := http.Header{}
		for _, name := range retryHeaders {
			h[name] = []string{hv}
		}
		e := llm.ClassifyResponse(status, h, body, now, waits)
		if e == nil {
			t.Fatal("nil error")
		}
		if !allClasses[e.Class] {
			t.Fatalf("class %q is not one of the failure classes", e.Class)
		}
		if e.RetryAfter < 0 || e.RetryAfter > 24*time.Hour {
			t.Fatalf("RetryAfter %v outside [0, 24h] for header %q", e.RetryAfter, hv)
		}
		if e.Status != status {
			t.Fatalf("Status = %d, want %d", e.Status, status)
		}
		if !strings.HasPrefix(e.Message, fmt.Sprintf("HTTP %d: ", status)) {
			t.Fatalf("Message %q lacks the status prefix", e.Message)
		}
		if utf8.Valid(body) && !utf8.ValidString(e.Message) {
			t.Fatalf("Message %q is not valid UTF-8 although the body is", e.Message)
		}
		for _, rate := range []llm.RateHeaders{waits, times, {}} {
			if d := rate.RetryAfter(h, now); d < 0 || d > 24*time.Hour {
				t.Fatalf("RetryAfter(%q) = %v outside [0, 24h]", hv, d)
			}
		}
	})
}
