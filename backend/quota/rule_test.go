package quota

import (
	"strings"
	"testing"
	"time"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no tz data for %s: %v", name, err)
	}
	return loc
}

func TestResetRules(t *testing.T) {
	mustLoc(t, "America/New_York")
	mustLoc(t, "Europe/Berlin")
	utc := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, c := range []struct {
		rule, now, start, end string
	}{
		{"", "2026-11-30T12:00:00Z", "2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z"},
		{"daily 00:00 UTC", "2026-11-30T00:00:00Z", "2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z"},
		{"daily 08:00 UTC", "2026-11-30T07:59:59Z", "2026-11-29T08:00:00Z", "2026-11-30T08:00:00Z"},
		{"daily 08:00 UTC", "2026-11-30T08:00:00Z", "2026-11-30T08:00:00Z", "2026-12-01T08:00:00Z"},
		// A zone with daylight saving: the window across the switch to
		// summer time (8 March 2026) lasts 23 hours, 08:00 EST to 08:00 EDT;
		// the next is 24 hours again.
		{"daily 08:00 America/New_York", "2026-03-08T11:00:00Z", "2026-03-07T13:00:00Z", "2026-03-08T12:00:00Z"},
		{"daily 08:00 America/New_York", "2026-03-08T12:00:00Z", "2026-03-08T12:00:00Z", "2026-03-09T12:00:00Z"},
		{"daily 00:00 Europe/Berlin", "2026-10-25T12:00:00Z", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"},
		{"weekly mon 00:00 UTC", "2026-11-30T12:00:00Z", "2026-11-30T00:00:00Z", "2026-12-07T00:00:00Z"},
		{"weekly mon 00:00 UTC", "2026-11-29T23:59:00Z", "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z"},
		{"weekly sunday 18:00 UTC", "2026-12-02T00:00:00Z", "2026-11-29T18:00:00Z", "2026-12-06T18:00:00Z"},
		{"monthly 1 00:00 UTC", "2026-11-30T12:00:00Z", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		{"monthly 15 09:00 UTC", "2026-11-10T00:00:00Z", "2026-10-15T09:00:00Z", "2026-11-15T09:00:00Z"},
		// Day 31 in short months: clamped to the last day.
		{"monthly 31 00:00 UTC", "2026-02-15T00:00:00Z", "2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z"},
		{"monthly 31 00:00 UTC", "2026-03-01T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z"},
		{"monthly 31 00:00 UTC", "2026-04-30T12:00:00Z", "2026-04-30T00:00:00Z", "2026-05-31T00:00:00Z"},
		{"monthly 30 00:00 UTC", "2028-02-29T12:00:00Z", "2028-02-29T00:00:00Z", "2028-03-30T00:00:00Z"},
		{"rolling 24h", "2026-11-30T12:00:00Z", "2026-11-29T12:00:00Z", "2026-11-30T12:00:00Z"},
	} {
		r, err := ParseRule(c.rule)
		if err != nil {
			t.Fatalf("%q: %v", c.rule, err)
		}
		start, end := r.Bounds(utc(c.now))
		if !start.Equal(utc(c.start)) || !end.Equal(utc(c.end)) {
			t.Errorf("%q at %s: [%s, %s), want [%s, %s)", c.rule, c.now, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), c.start, c.end)
		}
	}
}

func TestResetRuleErrors(t *testing.T) {
	for _, bad := range []string{"hourly", "daily 25:00 UTC", "daily 08:00 Mars/Base", "weekly 00:00 UTC", "monthly 32 00:00 UTC", "rolling 12h", "daily 08:00"} {
		_, err := ParseRule(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if !strings.Contains(err.Error(), "rolling 24h") || !strings.Contains(err.Error(), "monthly D HH:MM TZ") {
			t.Errorf("%q: message does not list the accepted forms: %v", bad, err)
		}
	}
	r, _ := ParseRule("weekly Mon 08:30 Europe/Berlin")
	if r.String() != "weekly mon 08:30 Europe/Berlin" {
		t.Errorf("String() = %q", r.String())
	}
}
