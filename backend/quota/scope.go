package quota

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"freelane/backend/events"
	"freelane/backend/llm"
)

// Limit kinds, as the dashboard names them.
const (
	KindRPM         = "rpm"
	KindRPD         = "rpd"
	KindTPM         = "tpm"
	KindTPD         = "tpd"
	KindConcurrency = "concurrency"
)

// kind indexes the limit kinds inside a scope, so the per-call checks use
// arrays rather than maps keyed by strings.
type kind uint8

const (
	rpm kind = iota
	rpd
	tpm
	tpd
	concurrency
	nKinds
)

var kindNames = [nKinds]string{KindRPM, KindRPD, KindTPM, KindTPD, KindConcurrency}

func (k kind) String() string { return kindNames[k] }

func kindOf(name string) kind {
	for k, n := range kindNames {
		if n == name {
			return kind(k)
		}
	}
	return rpm
}

// warnAt is the fraction of a limit that raises a quota_warning.
const warnAt = 0.8

// learned is what an upstream said about one of its limits.
type learned struct {
	limit     int64
	remaining int64
	resetAt   time.Time
	at        time.Time
	// soft marks what a 429 taught: the breaker already cools the backend
	// down for that time (and may still try it when nothing else is
	// available), so it is shown but does not skip the backend.
	soft bool
}

// scope is the counters of one provider (shared by its models) or one
// backend.
type scope struct {
	name string
	lim  Limits
	// rate names the rate-limit headers of the dialect the scope's
	// provider speaks, which its limits are learned from.
	rate     llm.RateHeaders
	minute   *ring
	day      window
	rolling  *ring // for a rolling 24h rule, created on first use
	inflight int64
	learned  [nKinds]*learned
	// warned and filled hold, per kind, the start of the window in which a
	// warning or exhaustion event was raised, so each is raised once per
	// window.
	warned, filled [nKinds]time.Time
	// In a team: keys names each kind's shared counter, seen is the
	// team's count as last seen, and teamFull is until when the team
	// refused a kind.
	keys     [nKinds]string
	seen     [nKinds]seen
	teamFull [nKinds]time.Time
}

func newScope(name string) *scope {
	return &scope{name: name, minute: newRing(time.Second, 60)}
}

// record counts requests and tokens at t in every window.
func (s *scope) record(t time.Time, req, tok int64) {
	s.minute.add(t, req, tok)
	if s.lim.Reset.Rolling() {
		if s.rolling == nil {
			s.rolling = newRing(time.Minute, 24*60)
		}
		s.rolling.add(t, req, tok)
		return
	}
	s.day.at(s.lim.Reset, t)
	if !t.Before(s.day.start) {
		s.day.req += req
		s.day.tok += tok
	}
}

func (s *scope) admit(now time.Time) {
	s.record(now, 1, 0)
	s.inflight++
}

// unadmit takes back a request counted at admission for a call never made.
func (s *scope) unadmit(at time.Time) {
	s.record(at, -1, 0)
	s.inflight--
}

func (s *scope) settle(now time.Time, tok int64) {
	s.record(now, 0, tok)
	s.inflight--
}

// dayUse returns the day-scale window's counts.
func (s *scope) dayUse(now time.Time) (req, tok int64) {
	if s.lim.Reset.Rolling() {
		if s.rolling == nil {
			return 0, 0
		}
		return s.rolling.sum(now)
	}
	s.day.at(s.lim.Reset, now)
	return s.day.req, s.day.tok
}

// resets returns when a limit of kind k next frees up.
func (s *scope) resets(k kind, now time.Time) time.Time {
	if l := s.learned[k]; l != nil && l.resetAt.After(now) {
		return l.resetAt
	}
	switch k {
	case rpm, tpm:
		if t := s.minute.frees(now); !t.IsZero() {
			return t
		}
		return now.Add(time.Minute)
	case rpd, tpd:
		if s.lim.Reset.Rolling() {
			if s.rolling != nil {
				return s.rolling.frees(now)
			}
			return time.Time{}
		}
		s.day.at(s.lim.Reset, now)
		return s.day.end
	}
	return time.Time{}
}

// use is one limit's state.
type use struct {
	kind    kind
	used    int64
	limit   int64
	resets  time.Time
	start   time.Time // window start, for once-per-window events
	learned bool
	soft    bool
}

// useList is the limits of a scope; a fixed array, so listing them on
// every call does not allocate.
type useList struct {
	n int
	u [nKinds]use
}

func (l *useList) all() []use { return l.u[:l.n] }

// uses lists the configured and learned limits of the scope. resets is
// filled in only with detail, since finding it costs a scan.
func (s *scope) uses(now time.Time, detail bool) useList {
	var out useList
	mreq, mtok := s.minute.sum(now)
	dreq, dtok := s.dayUse(now)
	minuteStart := now.Truncate(time.Minute)
	dayStart := s.day.start
	if s.lim.Reset.Rolling() {
		dayStart = now.Truncate(24 * time.Hour)
	}
	counted := [nKinds]int64{rpm: mreq, rpd: dreq, tpm: mtok, tpd: dtok, concurrency: s.inflight}
	for _, k := range [...]kind{rpd, tpd} {
		// In a team, the day's use is the team's as last seen plus what
		// this instance counted since.
		if sn := s.seen[k]; !sn.start.IsZero() && sn.start.Equal(dayStart) {
			counted[k] = max(counted[k], sn.shared+counted[k]-sn.own)
		}
	}
	limits := [nKinds]int64{rpm: s.lim.RPM, rpd: s.lim.RPD, tpm: s.lim.TPM, tpd: s.lim.TPD, concurrency: s.lim.Concurrency}
	starts := [nKinds]time.Time{rpm: minuteStart, rpd: dayStart, tpm: minuteStart, tpd: dayStart}
	for k := range nKinds {
		u := use{kind: k, used: counted[k], limit: limits[k], start: starts[k]}
		if l := s.learned[k]; l != nil && l.resetAt.After(now) {
			lu := use{kind: k, used: l.limit - l.remaining, limit: l.limit, start: l.at, learned: true, soft: l.soft}
			if lu.limit <= 0 {
				// Only "none left" is known: show it as full.
				lu.used, lu.limit = 1, 1
			}
			// The upstream knows better than our own count.
			if u.limit <= 0 || lu.used*u.limit > u.used*lu.limit || l.remaining <= 0 {
				u = lu
			}
		}
		if u.limit <= 0 {
			continue
		}
		if detail && k != concurrency {
			u.resets = s.resets(k, now)
		}
		out.u[out.n] = u
		out.n++
	}
	return out
}

// full returns why the scope cannot take one more call now, or "".
func (s *scope) full(now time.Time) *llm.Skip {
	l := s.uses(now, false)
	for _, u := range l.all() {
		if u.used < u.limit || u.soft {
			continue
		}
		if u.kind == concurrency {
			// The shaper holds the concurrency limit, with its queue; the
			// count here only shows what is in flight.
			continue
		}
		u.resets = s.resets(u.kind, now)
		if u.learned {
			return quotaSkip(fmt.Sprintf("%s: %s used (the provider says none left), resets %s", s.name, s.noun(u.kind), when(u.resets, now, s.lim.Reset.location())), u.resets)
		}
		return quotaSkip(fmt.Sprintf("%s: %s used, resets %s", s.name, s.noun(u.kind), when(u.resets, now, s.lim.Reset.location())), u.resets)
	}
	return s.teamFullSkip(now)
}

// fullReason is full's sentence, "" when nothing is full.
func (s *scope) fullReason(now time.Time) string {
	if sk := s.full(now); sk != nil {
		return sk.Reason
	}
	return ""
}

// quotaSkip is a backend passed by at a limit until a reset.
func quotaSkip(reason string, until time.Time) *llm.Skip {
	return &llm.Skip{Word: llm.SkipQuota, Class: llm.Quota, Reason: reason, Until: until}
}

// noun names a limit in a message: "daily tokens", "requests per minute".
func (s *scope) noun(k kind) string {
	adj := s.lim.Reset.Adjective()
	switch k {
	case rpm:
		return "requests per minute"
	case tpm:
		return "tokens per minute"
	case rpd:
		return adj + " requests"
	case tpd:
		return adj + " tokens"
	}
	return k.String()
}

// note adds a quota_warning for every limit past warnAt and a
// quota_exhausted for every limit that is full, each once per window.
func (s *scope) note(now time.Time, evs []events.Event) []events.Event {
	l := s.uses(now, false)
	for _, u := range l.all() {
		if u.kind == concurrency || u.soft || float64(u.used) < warnAt*float64(u.limit) {
			continue
		}
		if !s.warned[u.kind].Equal(u.start) {
			s.warned[u.kind] = u.start
			evs = append(evs, events.Event{Time: now, Kind: events.QuotaWarning, Level: events.Warn, Backend: s.name,
				Reason: fmt.Sprintf("%s of %s used", pct(float64(u.used)/float64(u.limit)), s.noun(u.kind))})
		}
		if u.used >= u.limit && !s.filled[u.kind].Equal(u.start) {
			s.filled[u.kind] = u.start
			evs = append(evs, events.Event{Time: now, Kind: events.QuotaExhausted, Level: events.Warn, Backend: s.name,
				Reason: s.fullReason(now), Until: s.resets(u.kind, now)})
		}
	}
	return evs
}

// learn updates what is known from an upstream's rate-limit headers, the
// ones its dialect names (s.rate), and, for a 429, its body. Limits that
// reset within a minute are taken for per-minute limits, longer ones for
// day-scale limits (some vendors send requests per day and tokens per
// minute under the header names others use for per-minute limits).
func (s *scope) learn(now time.Time, h http.Header, e *llm.Error) {
	soft := e != nil
	if h != nil {
		s.learnPair(now, h, s.rate.Requests, s.rate.Format, rpm, rpd, soft)
		s.learnPair(now, h, s.rate.Tokens, s.rate.Format, tpm, tpd, soft)
	}
	if e == nil || e.Status != http.StatusTooManyRequests {
		return
	}
	// A 429 means some limit has nothing left until the reset; the body
	// often says which (Groq: "... on tokens per day (TPD): Limit 500000,
	// Used 499000 ...").
	name, limit, _ := parse429(string(e.Body))
	k := kindOf(name)
	period := quotaPeriod(e)
	if name == "" && (period != "" || e.RetryAfter > time.Minute) {
		k = rpd
	}
	if period == "" && (k == rpd || k == tpd) {
		period = periodDay
	}
	if period == "" {
		if e.RetryAfter > 0 {
			s.learned[k] = &learned{limit: limit, remaining: 0, resetAt: now.Add(e.RetryAfter), at: now, soft: true}
		}
		return
	}
	// A day's or a month's quota used up: nothing is served before it
	// starts over, so the backend is skipped until then rather than
	// retried after each cool-down only to be refused again. The
	// provider's own wait wins when it gave one; otherwise the reset is
	// the scope's rule, or the next UTC midnight or month.
	reset := s.periodEnd(period, now)
	if e.RetryAfter > time.Minute {
		reset = now.Add(e.RetryAfter)
	}
	s.learned[k] = &learned{limit: limit, remaining: 0, resetAt: reset, at: now}
}

// Quota periods a provider's refusal can name.
const (
	periodDay   = "day"
	periodMonth = "month"
)

// quotaPeriod reads from a 429 whether a daily or monthly quota is used
// up ("requests per day", Gemini's "PerDay" quota ids, OpenRouter's
// "free-models-per-day", "monthly limit"), or "" for a short-term limit.
func quotaPeriod(e *llm.Error) string {
	text := strings.ToLower(string(e.Body) + " " + e.Message + " " + e.Code)
	for _, w := range []string{"per month", "permonth", "per-month", "monthly"} {
		if strings.Contains(text, w) {
			return periodMonth
		}
	}
	for _, w := range []string{"per day", "perday", "per-day", "daily", "tomorrow"} {
		if strings.Contains(text, w) {
			return periodDay
		}
	}
	return ""
}

// periodEnd is when a quota of the period that is used up at now starts
// over: the end of the scope's own window when its rule is of that
// period, else the next midnight or first of the month, UTC.
func (s *scope) periodEnd(period string, now time.Time) time.Time {
	r := s.lim.Reset
	if (period == periodDay && r.kind == daily) || (period == periodMonth && r.kind == monthly) {
		_, end := r.Bounds(now)
		return end
	}
	t := now.UTC()
	if period == periodMonth {
		return time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
}

func (s *scope) learnPair(now time.Time, h http.Header, names llm.RateHeader, format llm.ResetFormat, minuteKind, dayKind kind, soft bool) {
	if names.Remaining == "" {
		return
	}
	rv := h.Values(names.Remaining)
	if len(rv) == 0 {
		return
	}
	remaining, err := strconv.ParseInt(strings.TrimSpace(rv[0]), 10, 64)
	if err != nil {
		return
	}
	var limit int64
	if names.Limit != "" {
		if lv := h.Values(names.Limit); len(lv) > 0 {
			limit, _ = strconv.ParseInt(strings.TrimSpace(lv[0]), 10, 64)
		}
	}
	var wait time.Duration
	if names.Reset != "" {
		if xv := h.Values(names.Reset); len(xv) > 0 {
			wait, _ = format.Wait(xv[0], now)
		}
	}
	if wait <= 0 {
		wait = time.Minute
	}
	k := minuteKind
	if wait > time.Minute {
		k = dayKind
	}
	s.learned[k] = &learned{limit: limit, remaining: remaining, resetAt: now.Add(wait), at: now, soft: soft}
}

var limit429 = regexp.MustCompile(`(?i)\((RPM|RPD|TPM|TPD)\)(?:: Limit (\d+), Used (\d+))?`)

func parse429(body string) (kind string, limit, used int64) {
	m := limit429.FindStringSubmatch(llm.ErrorMessage([]byte(body)))
	if m == nil {
		return "", 0, 0
	}
	limit, _ = strconv.ParseInt(m[2], 10, 64)
	used, _ = strconv.ParseInt(m[3], 10, 64)
	return strings.ToLower(m[1]), limit, used
}
