package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Sentinel causes for the timeouts FreeLane enforces itself. Providers cancel
// an attempt's context with one of these as the cause, so classification can
// tell our own timers apart from the client going away.
var (
	ErrFirstTokenTimeout = errors.New("first token timeout")
	ErrIdleTimeout       = errors.New("idle timeout")
)

// maxRetryAfter caps what an upstream may ask us to wait, so a bogus header
// cannot park a backend for days.
const maxRetryAfter = 24 * time.Hour

// ClassifyResponse turns a non-2xx upstream answer into a classified Error.
// It is the one place where status codes, error bodies and rate-limit headers
// are interpreted; providers of every protocol call it. rate names the
// rate-limit headers of the upstream's dialect, which say how long a
// refused backend should wait when Retry-After does not.
func ClassifyResponse(status int, h http.Header, body []byte, now time.Time, rate RateHeaders) *Error {
	msg := ErrorMessage(body)
	lower := strings.ToLower(msg + " " + errorCode(body))
	e := &Error{Status: status, Body: body, Header: h}
	switch {
	case status == http.StatusTooManyRequests:
		e.Class = RateLimited
		e.RetryAfter = rate.RetryAfter(h, now)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Class = Credential
	case status == http.StatusPaymentRequired:
		// Out of credit: the key works but cannot pay; the user must act,
		// so it is handled like a rejected key.
		e.Class = Credential
	case status == http.StatusNotFound || (status < 500 && mentionsGone(lower)):
		e.Class = Gone
	case status == http.StatusRequestEntityTooLarge && mentionsRateLimit(lower):
		// Groq answers 413 when a request exceeds the free tier's tokens
		// per minute; another provider can serve it, so it is a rate limit.
		e.Class = RateLimited
		e.RetryAfter = rate.RetryAfter(h, now)
	case mentionsContextLength(lower) && status >= 400 && status < 500:
		e.Class = TooLong
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status == 425:
		e.Class = Transient
	case status >= 500:
		e.Class = Transient
	case status >= 400:
		e.Class = Caller
	default:
		// 1xx and 3xx are not answers we can use; treat as the backend's
		// fault rather than the caller's.
		e.Class = Transient
	}
	if msg == "" {
		msg = strings.TrimSpace(http.StatusText(status))
	}
	e.Message = fmt.Sprintf("HTTP %d: %s", status, truncate(msg, 200))
	return e
}

// ClassifyTransport classifies an error from sending the request or reading
// the response. ctx is the attempt's context: when it was cancelled because
// the client went away the class is Cancelled, when one of our own timers
// fired the class is Transient with the timer named.
func ClassifyTransport(ctx context.Context, err error) *Error {
	e := &Error{Err: err, Class: Transient}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrFirstTokenTimeout):
		e.Message = "no first token in time"
		e.Err, e.Sub = cause, SubTimeout
	case errors.Is(cause, ErrIdleTimeout):
		e.Message = "stream went idle"
		e.Err, e.Sub = cause, SubTimeout
	case cause != nil && (errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded)):
		e.Class = Cancelled
		e.Message = "client went away"
	case isDialError(err):
		e.Sub = SubConnect
		e.Message = dialMessage(err)
	case isTimeout(err):
		e.Message = "timed out waiting for response headers"
		e.Sub = SubTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Message = "connection refused"
		e.Sub = SubConnect
	case errors.Is(err, syscall.ECONNRESET):
		e.Message = "connection reset"
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		e.Message = "connection closed unexpectedly"
	default:
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			e.Message = "cannot resolve " + dnsErr.Name
		} else {
			e.Message = truncate(err.Error(), 200)
		}
	}
	return e
}

// isDialError reports whether err happened while connecting, before any
// byte reached the server: the backend (or the network) is unreachable.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

func dialMessage(err error) string {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return "cannot resolve " + dns.Name
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "network unreachable"
	case isTimeout(err):
		return "connect timed out"
	}
	return "cannot connect: " + truncate(err.Error(), 160)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// SoftError builds the error for a 200 answer that carries nothing usable:
// empty content, an unparseable body or an error hidden in a success.
func SoftError(sub Sub, format string, args ...any) *Error {
	return &Error{Class: Soft, Sub: sub, Status: http.StatusOK, Message: fmt.Sprintf(format, args...)}
}

// RetryAfter reads how long an upstream wants us to wait from the headers
// every dialect may send: the standard Retry-After (seconds or an HTTP
// date) and Retry-After-Ms, which OpenAI's and Azure's SDKs honour. It
// returns zero when neither is usable. RateHeaders.RetryAfter also reads a
// dialect's own reset headers.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After"); v != "" {
		if d, ok := parseWait(v, now); ok {
			return d
		}
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return capWait(time.Duration(ms * float64(time.Millisecond)))
		}
	}
	return 0
}

// RateHeaders name the headers in which the upstreams of one dialect
// report their rate limits. Each dialect declares its own, as data (see
// protocol.Outbound): the classifier reads the resets for how long a
// refused backend should wait, and the quota manager learns from all of
// them how much of each limit is left and until when. The zero value is a
// dialect that reports no limits; only the standard retry headers are read
// for it.
type RateHeaders struct {
	// Requests and Tokens are the headers of the limit on requests and of
	// the limit on tokens.
	Requests, Tokens RateHeader
	// Resets are further headers that say when some limit resets (a
	// general one, or limits on input and output tokens apart). They are
	// read only for the wait after a refusal.
	Resets []string
	// Format is how every reset header of the dialect writes its value.
	Format ResetFormat
}

// RateHeader names the headers of one limit: its size, what is left of
// it and when it resets. Names are matched without regard to case; an
// empty name is a header the dialect does not send, and a limit without a
// Remaining header is never learned.
type RateHeader struct {
	Limit, Remaining, Reset string
}

// ResetFormat is how a dialect writes when a limit resets.
type ResetFormat uint8

const (
	// ResetWait is a wait: seconds ("20", "2.5") or a Go duration
	// ("1m30s", "250ms"), as OpenAI and Groq send. It is read as leniently
	// as Retry-After: a number past 1e9 is a Unix time, and HTTP dates and
	// RFC 3339 times are understood too.
	ResetWait ResetFormat = iota
	// ResetTime is the moment of the reset as an RFC 3339 time
	// ("2025-01-02T15:04:05Z"), as Anthropic sends.
	ResetTime
)

// Wait reads one reset value written in f: how long from now until the
// reset, at most a day. ok is false for a value that does not read or a
// reset that has passed.
func (f ResetFormat) Wait(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if f == ResetTime {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil || !t.After(now) {
			return 0, false
		}
		return capWait(t.Sub(now)), true
	}
	return parseWait(v, now)
}

// RetryAfter is how long an upstream of the dialect wants us to wait:
// Retry-After or Retry-After-Ms when it gives one, otherwise the latest of
// the dialect's reset headers, which is the time until every limit it
// names allows another call. It returns zero when no header is usable.
func (r RateHeaders) RetryAfter(h http.Header, now time.Time) time.Duration {
	if d := RetryAfter(h, now); d > 0 {
		return d
	}
	var longest time.Duration
	read := func(name string) {
		if name == "" {
			return
		}
		if v := h.Get(name); v != "" {
			if d, ok := r.Format.Wait(v, now); ok && d > longest {
				longest = d
			}
		}
	}
	read(r.Requests.Reset)
	read(r.Tokens.Reset)
	for _, name := range r.Resets {
		read(name)
	}
	return longest
}

// parseWait understands seconds ("120", "2.5"), Go-style durations ("1m30s",
// "250ms", which OpenAI and Groq send), unix timestamps, HTTP dates and
// RFC 3339 times.
func parseWait(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f <= 0 {
			return 0, false
		}
		// Values this large are absolute unix times, not a number of seconds.
		if f > 1e9 {
			return capWait(time.Unix(int64(f), 0).Sub(now)), true
		}
		return capWait(time.Duration(f * float64(time.Second))), true
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return capWait(d), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return capWait(t.Sub(now)), t.After(now)
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return capWait(t.Sub(now)), t.After(now)
	}
	return 0, false
}

func capWait(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

func mentionsContextLength(s string) bool {
	for _, k := range []string{
		"context_length_exceeded", "context length", "context window", "maximum context",
		"prompt is too long", "too many tokens", "reduce the length", "input is too long",
		"exceeds the context",
	} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

func mentionsGone(s string) bool {
	if !strings.Contains(s, "model") {
		return false
	}
	for _, k := range []string{"model_not_found", "does not exist", "decommissioned", "no longer supported", "unknown model", "model not found"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

func mentionsRateLimit(s string) bool {
	return strings.Contains(s, "rate limit") || strings.Contains(s, "rate_limit") ||
		strings.Contains(s, "tokens per minute") || strings.Contains(s, "requests per minute")
}

// QuotaText reports whether a 200 body's text says the provider's quota ran
// out, which some free tiers answer instead of a 429.
func QuotaText(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "quota exceeded") || strings.Contains(s, "exceeded your current quota") ||
		strings.Contains(s, "rate limit exceeded") || strings.Contains(s, "insufficient_quota")
}

type errorEnvelope struct {
	Error json.RawMessage `json:"error"`
	// Some servers (older vLLM, some proxies) put the message at the top level.
	Message string `json:"message"`
	Detail  string `json:"detail"`
}

type errorObject struct {
	Message string `json:"message"`
	Code    any    `json:"code"`
	Type    string `json:"type"`
}

// ErrorMessage extracts a human message from an upstream error body of any
// common shape ({"error":{"message"}}, {"error":"..."}, {"message"},
// {"detail"}); for a non-JSON body it returns its first line.
func ErrorMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var env errorEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		line, _, _ := bytes.Cut(body, []byte("\n"))
		return string(line)
	}
	if len(env.Error) > 0 {
		var obj errorObject
		if json.Unmarshal(env.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		var s string
		if json.Unmarshal(env.Error, &s) == nil {
			return s
		}
	}
	if env.Message != "" {
		return env.Message
	}
	return env.Detail
}

func errorCode(body []byte) string {
	var env errorEnvelope
	if json.Unmarshal(body, &env) != nil || len(env.Error) == 0 {
		return ""
	}
	var obj errorObject
	if json.Unmarshal(env.Error, &obj) != nil {
		return ""
	}
	code := ""
	if obj.Code != nil {
		code = fmt.Sprint(obj.Code)
	}
	return code + " " + obj.Type
}

// Truncate shortens s to at most n bytes plus an ellipsis, cutting on a
// character boundary, for messages built from upstream text.
func Truncate(s string, n int) string { return truncate(s, n) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a character boundary so the message stays valid UTF-8.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
