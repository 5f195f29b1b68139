package quota

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ruleKind is how a day-scale window resets.
type ruleKind uint8

const (
	daily ruleKind = iota
	rolling
	weekly
	monthly
)

// Rule says when the day-scale limits (rpd, tpd) of a backend start over:
// at a time of day in a zone, every week, every month, or continuously over
// the last 24 hours. The zero Rule is "daily 00:00 UTC".
type Rule struct {
	kind         ruleKind
	hour, minute int
	weekday      time.Weekday
	day          int // 1..31 for monthly; clamped to the month's length
	loc          *time.Location
}

// ResetForms lists the accepted reset strings, for error messages.
const ResetForms = `"daily HH:MM TZ", "rolling 24h", "weekly DAY HH:MM TZ" (DAY is mon..sun) or "monthly D HH:MM TZ" (D is 1..31), where TZ is UTC or an IANA zone such as Europe/Berlin`

// DefaultReset is the rule used when none is configured.
const DefaultReset = "daily 00:00 UTC"

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// ParseRule reads a reset rule. An empty string is DefaultReset.
func ParseRule(s string) (Rule, error) {
	f := strings.Fields(strings.TrimSpace(s))
	if len(f) == 0 {
		return Rule{loc: time.UTC}, nil
	}
	bad := func(why string) (Rule, error) {
		return Rule{}, fmt.Errorf("reset %q is not understood (%s); use one of %s", s, why, ResetForms)
	}
	r := Rule{loc: time.UTC}
	var rest []string
	switch strings.ToLower(f[0]) {
	case "rolling":
		if len(f) != 2 || strings.ToLower(f[1]) != "24h" {
			return bad("only a rolling 24h window is supported")
		}
		r.kind = rolling
		return r, nil
	case "daily":
		r.kind, rest = daily, f[1:]
	case "weekly":
		if len(f) < 2 {
			return bad("weekly needs a day such as mon")
		}
		wd, ok := weekdays[strings.ToLower(f[1])[:min(3, len(f[1]))]]
		if !ok {
			return bad(fmt.Sprintf("%q is not a day of the week", f[1]))
		}
		r.kind, r.weekday, rest = weekly, wd, f[2:]
	case "monthly":
		if len(f) < 2 {
			return bad("monthly needs a day of the month such as 1")
		}
		d, err := strconv.Atoi(f[1])
		if err != nil || d < 1 || d > 31 {
			return bad(fmt.Sprintf("%q is not a day of the month from 1 to 31", f[1]))
		}
		r.kind, r.day, rest = monthly, d, f[2:]
	default:
		return bad(fmt.Sprintf("%q is not daily, rolling, weekly or monthly", f[0]))
	}
	if len(rest) != 2 {
		return bad("give the time and the zone, e.g. 00:00 UTC")
	}
	t, err := time.Parse("15:04", rest[0])
	if err != nil {
		return bad(fmt.Sprintf("%q is not a time like 08:00", rest[0]))
	}
	r.hour, r.minute = t.Hour(), t.Minute()
	if loc, err := time.LoadLocation(rest[1]); err != nil || strings.EqualFold(rest[1], "local") {
		return bad(fmt.Sprintf("%q is not a time zone; use UTC or an IANA name such as America/New_York", rest[1]))
	} else {
		r.loc = loc
	}
	return r, nil
}

// Rolling reports whether the rule is a rolling 24-hour window.
func (r Rule) Rolling() bool { return r.kind == rolling }

func (r Rule) location() *time.Location {
	if r.loc == nil {
		return time.UTC
	}
	return r.loc
}

// Bounds returns the calendar window [start, end) containing now. For a
// rolling rule it is the 24 hours up to now.
func (r Rule) Bounds(now time.Time) (start, end time.Time) {
	loc := r.location()
	t := now.In(loc)
	at := func(y int, m time.Month, d int) time.Time {
		return time.Date(y, m, d, r.hour, r.minute, 0, 0, loc)
	}
	switch r.kind {
	case rolling:
		return now.Add(-24 * time.Hour), now
	case weekly:
		back := (int(t.Weekday()) - int(r.weekday) + 7) % 7
		start = at(t.Year(), t.Month(), t.Day()-back)
		if start.After(now) {
			start = at(t.Year(), t.Month(), t.Day()-back-7)
		}
		return start, at(start.Year(), start.Month(), start.Day()+7)
	case monthly:
		start = r.monthStart(t.Year(), t.Month())
		if start.After(now) {
			start = r.monthStart(t.Year(), t.Month()-1)
		}
		s := start.In(loc)
		return start, r.monthStart(s.Year(), s.Month()+1)
	default:
		start = at(t.Year(), t.Month(), t.Day())
		if start.After(now) {
			start = at(t.Year(), t.Month(), t.Day()-1)
		}
		s := start.In(loc)
		return start, at(s.Year(), s.Month(), s.Day()+1)
	}
}

// monthStart is the rule's day in month m of year y, clamped to the last
// day of a shorter month ("monthly 31" resets on 30 April and 28 February).
func (r Rule) monthStart(y int, m time.Month) time.Time {
	first := time.Date(y, m, 1, 0, 0, 0, 0, r.location())
	last := first.AddDate(0, 1, -1).Day()
	return time.Date(first.Year(), first.Month(), min(r.day, last), r.hour, r.minute, 0, 0, r.location())
}

// Adjective names the window in messages: "daily", "24-hour", "weekly",
// "monthly".
func (r Rule) Adjective() string {
	switch r.kind {
	case rolling:
		return "24-hour"
	case weekly:
		return "weekly"
	case monthly:
		return "monthly"
	}
	return "daily"
}

// String renders the rule in the form ParseRule reads.
func (r Rule) String() string {
	hm := fmt.Sprintf("%02d:%02d %s", r.hour, r.minute, r.location())
	switch r.kind {
	case rolling:
		return "rolling 24h"
	case weekly:
		return fmt.Sprintf("weekly %s %s", strings.ToLower(r.weekday.String()[:3]), hm)
	case monthly:
		return fmt.Sprintf("monthly %d %s", r.day, hm)
	}
	return "daily " + hm
}

// when renders a reset time for a message: "08:00 UTC" within a day,
// otherwise with the date.
func when(t, now time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	lt := t.In(loc)
	switch d := t.Sub(now); {
	case d < 2*time.Minute:
		return "in " + d.Round(time.Second).String()
	case d < 24*time.Hour:
		return lt.Format("15:04 MST")
	}
	return lt.Format("Mon 2 Jan 15:04 MST")
}
