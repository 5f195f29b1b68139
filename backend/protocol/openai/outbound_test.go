package openai

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"freelane/backend/llm"
)

// OpenAI's rate-limit headers, as the classifier reads them for the wait
// after a refusal: durations, seconds, or a Unix time in the general
// reset, the longest of them winning.
func TestRateLimitHeaders(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	rate := Dialect.Outbound.RateLimits
	for _, c := range []struct {
		h    map[string]string
		want time.Duration
	}{
		{map[string]string{"x-ratelimit-reset-requests": "1m30s"}, 90 * time.Second},
		{map[string]string{"x-ratelimit-reset-tokens": "250ms"}, 250 * time.Millisecond},
		{map[string]string{"x-ratelimit-reset-requests": "2s", "x-ratelimit-reset-tokens": "1m0.5s"}, time.Minute + 500*time.Millisecond},
		{map[string]string{"x-ratelimit-reset": fmt.Sprint(now.Add(42 * time.Second).Unix())}, 42 * time.Second},
		{map[string]string{"retry-after": "4", "x-ratelimit-reset-tokens": "9s"}, 4 * time.Second},
		{map[string]string{"anthropic-ratelimit-requests-reset": now.Add(time.Minute).Format(time.RFC3339)}, 0},
	} {
		h := http.Header{}
		for k, v := range c.h {
			h.Set(k, v)
		}
		if got := rate.RetryAfter(h, now); got != c.want {
			t.Errorf("%v: RetryAfter = %v, want %v", c.h, got, c.want)
		}
		if e := llm.ClassifyResponse(http.StatusTooManyRequests, h, nil, now, rate); e.RetryAfter != c.want {
			t.Errorf("%v: a 429 waits %v, want %v", c.h, e.RetryAfter, c.want)
		}
	}
	if rate.Requests.Remaining == "" || rate.Tokens.Remaining == "" || rate.Requests.Limit == "" || rate.Tokens.Limit == "" {
		t.Errorf("the limits and what remains of them are not named: %+v", rate)
	}
}
