package breaker_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/breaker"
	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
)

var t0 = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

const (
	prov = "groq"
	be   = "groq/llama-3.3-70b"
)

func fail(c llm.Class) *llm.Error {
	return &llm.Error{Class: c, Status: 503, Message: "HTTP 503: " + string(c)}
}

func limited(d time.Duration) *llm.Error {
	return &llm.Error{Class: llm.RateLimited, Status: 429, Message: "HTTP 429: slow down", RetryAfter: d}
}

// unavailable returns the reason a backend is skipped, or "" when allowed.
func unavailable(t *testing.T, s *breaker.Set, provider, backend string) (breaker.Reason, time.Time) {
	t.Helper()
	err := s.Allow(provider, backend)
	if err == nil {
		return "", time.Time{}
	}
	var u *breaker.Unavailable
	if !errors.As(err, &u) {
		t.Fatalf("Allow error %T %v is not an *Unavailable", err, err)
	}
	return u.Reason, u.Until
}

func expect(t *testing.T, s *breaker.Set, provider, backend string, reason breaker.Reason, until time.Time) {
	t.Helper()
	r, u := unavailable(t, s, provider, backend)
	if r != reason {
		t.Fatalf("Allow(%s) reason = %q, want %q", backend, r, reason)
	}
	if reason != "" && !u.Equal(until) {
		t.Fatalf("Allow(%s) until = %v, want %v", backend, u, until)
	}
}

func newSet(s breaker.Settings) (*breaker.Set, *clocktest.Clock) {
	clock := clocktest.New(t0)
	return breaker.New(s, clock), clock
}

func TestUnknownBackendIsAllowed(t *testing.T) {
	s, _ := newSet(breaker.Settings{})
	expect(t, s, prov, be, "", time.Time{})
	s.Report(prov, be, nil)
	expect(t, s, prov, be, "", time.Time{})
	// The zero Set works with the wall clock.
	if err := breaker.New(breaker.Settings{}, nil).Allow(prov, be); err != nil {
		t.Fatalf("Allow on a fresh set with the system clock: %v", err)
	}
}

func TestConsecutiveFailuresOpen(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings breaker.Settings
		failures int
		open     time.Duration
		classes  []llm.Class
	}{
		{"defaults transient", breaker.Settings{}, 2, 30 * time.Second, []llm.Class{llm.Transient, llm.Transient}},
		{"defaults soft", breaker.Settings{}, 2, 30 * time.Second, []llm.Class{llm.Soft, llm.Soft}},
		{"defaults mixed", breaker.Settings{}, 2, 30 * time.Second, []llm.Class{llm.Soft, llm.Transient}},
		{"custom", breaker.Settings{Failures: 3, Open: 45 * time.Second}, 3, 45 * time.Second, []llm.Class{llm.Transient, llm.Soft, llm.Transient}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clock := newSet(tc.settings)
			for i, c := range tc.classes {
				expect(t, s, prov, be, "", time.Time{})
				clock.Advance(time.Second)
				s.Report(prov, be, fail(c))
				if i < len(tc.classes)-1 {
					expect(t, s, prov, be, "", time.Time{})
				}
			}
			openedAt := clock.Now()
			until := openedAt.Add(tc.open)
			expect(t, s, prov, be, breaker.Open, until)

			var u *breaker.Unavailable
			errors.As(s.Allow(prov, be), &u)
			if u.RateLimited() {
				t.Error("an open breaker reports RateLimited")
			}
			if !strings.Contains(u.Detail, fmt.Sprintf("%d failures in a row", tc.failures)) || !strings.Contains(u.Detail, "HTTP 503") {
				t.Errorf("Detail = %q, want the count and the last failure", u.Detail)
			}
			if !strings.HasPrefix(u.Error(), "open until ") || !strings.Contains(u.Error(), u.Detail) {
				t.Errorf("Error() = %q", u.Error())
			}
			// Other backends, also of the same provider, are not affected.
			expect(t, s, prov, "groq/other", "", time.Time{})

			clock.Advance(tc.open - time.Nanosecond)
			expect(t, s, prov, be, breaker.Open, until)
			clock.Advance(time.Nanosecond)
			expect(t, s, prov, be, "", time.Time{})

			// Tripping starts the count afresh: one more failure after the
			// open time does not trip it again, a full run does.
			for i := 0; i < tc.failures-1; i++ {
				s.Report(prov, be, fail(llm.Transient))
				expect(t, s, prov, be, "", time.Time{})
			}
			s.Report(prov, be, fail(llm.Transient))
			expect(t, s, prov, be, breaker.Open, clock.Now().Add(tc.open))
		})
	}
}

func TestSuccessResetsFailures(t *testing.T) {
	s, clock := newSet(breaker.Settings{})
	for range 10 {
		s.Report(prov, be, fail(llm.Transient))
		clock.Advance(time.Second)
		s.Report(prov, be, nil)
		expect(t, s, prov, be, "", time.Time{})
	}
	s.Report(prov, be, fail(llm.Soft))
	s.Report(prov, be, fail(llm.Soft))
	expect(t, s, prov, be, breaker.Open, clock.Now().Add(30*time.Second))
}

func TestFailuresOfOtherClassesDoNotOpen(t *testing.T) {
	s, _ := newSet(breaker.Settings{})
	for range 5 {
		for _, c := range []llm.Class{llm.Caller, llm.TooLong, llm.Cancelled} {
			s.Report(prov, be, fail(c))
		}
	}
	expect(t, s, prov, be, "", time.Time{})
	// Nor do they count towards the next transient failure.
	s.Report(prov, be, fail(llm.Transient))
	s.Report(prov, be, fail(llm.Caller))
	expect(t, s, prov, be, "", time.Time{})
}

func TestRateLimitCoolsDown(t *testing.T) {
	t.Run("retry-after", func(t *testing.T) {
		s, clock := newSet(breaker.Settings{})
		s.Report(prov, be, limited(17*time.Second))
		until := t0.Add(17 * time.Second)
		expect(t, s, prov, be, breaker.CoolingOff, until)
		var u *breaker.Unavailable
		if !errors.As(s.Allow(prov, be), &u) || !u.RateLimited() {
			t.Fatal("a cooling backend does not report RateLimited")
		}
		if u.Detail != "HTTP 429: slow down" {
			t.Errorf("Detail = %q, want the upstream message", u.Detail)
		}
		if !strings.HasPrefix(u.Error(), "cooling until ") {
			t.Errorf("Error() = %q", u.Error())
		}
		expect(t, s, prov, "groq/other", "", time.Time{})
		clock.Advance(17*time.Second - time.Nanosecond)
		expect(t, s, prov, be, breaker.CoolingOff, until)
		clock.Advance(time.Nanosecond)
		expect(t, s, prov, be, "", time.Time{})
	})
	for _, tc := range []struct {
		name     string
		settings breaker.Settings
		want     time.Duration
	}{
		{"default cooldown", breaker.Settings{}, 60 * time.Second},
		{"configured cooldown", breaker.Settings{RateLimitCooldown: 5 * time.Minute}, 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clock := newSet(tc.settings)
			s.Report(prov, be, limited(0))
			expect(t, s, prov, be, breaker.CoolingOff, t0.Add(tc.want))
			clock.Advance(tc.want - time.Nanosecond)
			expect(t, s, prov, be, breaker.CoolingOff, t0.Add(tc.want))
			clock.Advance(time.Nanosecond)
			expect(t, s, prov, be, "", time.Time{})
		})
	}
	t.Run("a later 429 sets a new cooldown", func(t *testing.T) {
		s, clock := newSet(breaker.Settings{})
		s.Report(prov, be, limited(time.Minute))
		clock.Advance(10 * time.Second)
		s.Report(prov, be, limited(5*time.Second))
		expect(t, s, prov, be, breaker.CoolingOff, t0.Add(15*time.Second))
	})
}

func TestRateLimitsNeverOpenTheBreaker(t *testing.T) {
	s, clock := newSet(breaker.Settings{})
	for i := range 50 {
		s.Report(prov, be, limited(time.Second))
		if r, _ := unavailable(t, s, prov, be); r != breaker.CoolingOff {
			t.Fatalf("after %d rate limits reason = %q, want cooling", i+1, r)
		}
		clock.Advance(time.Second)
		expect(t, s, prov, be, "", time.Time{})
	}
	// Interleaved with successes and single failures: still never open.
	for range 20 {
		s.Report(prov, be, limited(0))
		s.Report(prov, be, nil)
		s.Report(prov, be, fail(llm.Transient))
		s.Report(prov, be, limited(time.Second))
		s.Report(prov, be, nil)
		if r, _ := unavailable(t, s, prov, be); r == breaker.Open {
			t.Fatal("interleaved rate limits opened the breaker")
		}
	}
}

func TestOpenWinsOverCooling(t *testing.T) {
	s, clock := newSet(breaker.Settings{})
	s.Report(prov, be, limited(5*time.Minute))
	s.Report(prov, be, fail(llm.Transient))
	s.Report(prov, be, fail(llm.Transient))
	expect(t, s, prov, be, breaker.Open, t0.Add(30*time.Second))
	clock.Advance(30 * time.Second)
	expect(t, s, prov, be, breaker.CoolingOff, t0.Add(5*time.Minute))
}

func TestCredentialDisablesTheProvider(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings breaker.Settings
		want     time.Duration
	}{
		{"default", breaker.Settings{}, time.Hour},
		{"configured", breaker.Settings{CredentialCooldown: 10 * time.Minute}, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clock := newSet(tc.settings)
			s.Report("groq", "groq/a", &llm.Error{Class: llm.Credential, Status: 401, Message: "HTTP 401: Invalid API Key"})
			until := t0.Add(tc.want)
			for _, b := range []string{"groq/a", "groq/b", "groq/never-seen"} {
				expect(t, s, "groq", b, breaker.KeyOff, until)
			}
			var u *breaker.Unavailable
			errors.As(s.Allow("groq", "groq/b"), &u)
			if u.RateLimited() || u.Detail != "HTTP 401: Invalid API Key" {
				t.Errorf("Unavailable = %+v", u)
			}
			// Another provider serving a model of the same name is fine.
			expect(t, s, "cerebras", "cerebras/a", "", time.Time{})
			// Successes elsewhere do not re-enable the key.
			s.Report("groq", "groq/b", nil)
			expect(t, s, "groq", "groq/b", breaker.KeyOff, until)

			clock.Advance(tc.want - time.Nanosecond)
			expect(t, s, "groq", "groq/a", breaker.KeyOff, until)
			clock.Advance(time.Nanosecond)
			for _, b := range []string{"groq/a", "groq/b"} {
				expect(t, s, "groq", b, "", time.Time{})
			}
		})
	}
}

func TestGoneRetiresTheBackend(t *testing.T) {
	s, clock := newSet(breaker.Settings{GoneCooldown: 2 * time.Hour})
	s.Report(prov, be, &llm.Error{Class: llm.Gone, Status: 404, Message: "HTTP 404: model decommissioned"})
	until := t0.Add(2 * time.Hour)
	expect(t, s, prov, be, breaker.Retired, until)
	expect(t, s, prov, "groq/other", "", time.Time{})
	var u *breaker.Unavailable
	errors.As(s.Allow(prov, be), &u)
	if u.RateLimited() || !strings.Contains(u.Detail, "decommissioned") {
		t.Errorf("Unavailable = %+v", u)
	}
	// Retired wins over an open breaker and a cooldown.
	s.Report(prov, be, fail(llm.Transient))
	s.Report(prov, be, fail(llm.Transient))
	s.Report(prov, be, limited(time.Minute))
	expect(t, s, prov, be, breaker.Retired, until)
	clock.Advance(2 * time.Hour)
	expect(t, s, prov, be, "", time.Time{})

	// A success (a passing probe) restores a retired backend at once.
	s.Report(prov, be, &llm.Error{Class: llm.Gone, Status: 404})
	expect(t, s, prov, be, breaker.Retired, clock.Now().Add(2*time.Hour))
	s.Report(prov, be, nil)
	expect(t, s, prov, be, "", time.Time{})
}

func TestGoneDefaultCooldown(t *testing.T) {
	s, _ := newSet(breaker.Settings{})
	s.Report(prov, be, &llm.Error{Class: llm.Gone, Status: 404})
	expect(t, s, prov, be, breaker.Retired, t0.Add(time.Hour))
}

func TestConcurrentAllowReport(t *testing.T) {
	s, clock := newSet(breaker.Settings{})
	classes := []*llm.Error{nil, fail(llm.Transient), fail(llm.Soft), limited(time.Second), limited(0),
		{Class: llm.Credential}, {Class: llm.Gone}, {Class: llm.Caller}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				p := fmt.Sprintf("p%d", (g+i)%3)
				b := fmt.Sprintf("%s/m%d", p, i%5)
				if err := s.Allow(p, b); err != nil {
					var u *breaker.Unavailable
					if !errors.As(err, &u) {
						t.Errorf("Allow error %T", err)
						return
					}
				}
				s.Report(p, b, classes[(g*7+i)%len(classes)])
				if i%100 == 0 {
					clock.Advance(time.Second)
				}
			}
		})
	}
	wg.Wait()
	// Once every cooldown has passed, everything is allowed again.
	clock.Advance(2 * time.Hour)
	for p := range 3 {
		for m := range 5 {
			b := fmt.Sprintf("p%d/m%d", p, m)
			if err := s.Allow(fmt.Sprintf("p%d", p), b); err != nil {
				t.Errorf("%s still unavailable after every cooldown: %v", b, err)
			}
		}
	}
}
