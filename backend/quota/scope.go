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
	name     string
	lim      Limits
	minute   *ring
	day      window
	rolling  *ring // for a rolling 24h rule, created on first use
	inflight int64
	learned  map[string]*learned
	// noted holds, per kind and event, the start of the window in which a
	// warning or exhaustion event was raised, so each is raised once per
	// window.
	noted map[string]time.Time
}

func newScope(name string) *scope {
	return &scope{name: name, minute: newRing(time.Second, 60), learned: map[string]*learned{}, noted: map[string]time.Time{}}
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

// dayUse returns the day-scale window's counts and when it resets.
func (s *scope) dayUse(now time.Time) (req, tok int64, resets time.Time) {
	if s.lim.Reset.Rolling() {
		if s.rolling == nil {
			return 0, 0, time.Time{}
		}
		return s.rolling.sum(now)
	}
	s.day.at(s.lim.Reset, now)
	return s.day.req, s.day.tok, s.day.end
}

// use is one limit's state.
type use struct {
	kind    string
	used    int64
	limit   int64
	resets  time.Time
	start   time.Time // window start, for once-per-window events
	learned bool
	soft    bool
}

// uses lists the configured and learned limits of the scope.
func (s *scope) uses(now time.Time) []use {
	var out []use
	mreq, mtok, mfree := s.minute.sum(now)
	dreq, dtok, dreset := s.dayUse(now)
	minuteStart := now.Truncate(time.Minute)
	dayStart := s.day.start
	if s.lim.Reset.Rolling() {
		dayStart = now.Truncate(24 * time.Hour)
	}
	if mfree.IsZero() {
		mfree = now.Add(time.Minute)
	}
	add := func(kind string, used, limit int64, resets, start time.Time) {
		if limit > 0 {
			out = append(out, use{kind: kind, used: used, limit: limit, resets: resets, start: start})
		}
	}
	add(KindRPM, mreq, s.lim.RPM, mfree, minuteStart)
	add(KindRPD, dreq, s.lim.RPD, dreset, dayStart)
	add(KindTPM, mtok, s.lim.TPM, mfree, minuteStart)
	add(KindTPD, dtok, s.lim.TPD, dreset, dayStart)
	add(KindConcurrency, s.inflight, s.lim.Concurrency, time.Time{}, time.Time{})
	for _, kind := range []string{KindRPM, KindRPD, KindTPM, KindTPD} {
		l := s.learned[kind]
		if l == nil || !l.resetAt.After(now) {
			continue
		}
		u := use{kind: kind, used: l.limit - l.remaining, limit: l.limit, resets: l.resetAt, start: l.at, learned: true, soft: l.soft}
		if u.limit <= 0 {
			// Only "none left" is known: show it as full.
			u.used, u.limit = 1, 1
		}
		replaced := false
		for i := range out {
			if out[i].kind == kind {
				// The upstream knows better than our own count.
				if u.used*out[i].limit > out[i].used*u.limit || l.remaining <= 0 {
					out[i] = u
				}
				replaced = true
			}
		}
		if !replaced {
			out = append(out, u)
		}
	}
	return out
}

// full returns why the scope cannot take one more call now, or "".
func (s *scope) full(now time.Time) string {
	for _, u := range s.uses(now) {
		if u.used < u.limit || u.soft {
			continue
		}
		if u.learned {
			return fmt.Sprintf("%s: %s used (the provider says none left), resets %s", s.name, s.noun(u.kind), when(u.resets, now, s.lim.Reset.location()))
		}
		if u.kind == KindConcurrency {
			return fmt.Sprintf("%s: %d requests already in flight (concurrency limit)", s.name, u.used)
		}
		return fmt.Sprintf("%s: %s used, resets %s", s.name, s.noun(u.kind), when(u.resets, now, s.lim.Reset.location()))
	}
	return ""
}

// noun names a limit in a message: "daily tokens", "requests per minute".
func (s *scope) noun(kind string) string {
	adj := s.lim.Reset.Adjective()
	switch kind {
	case KindRPM:
		return "requests per minute"
	case KindTPM:
		return "tokens per minute"
	case KindRPD:
		return adj + " requests"
	case KindTPD:
		return adj + " tokens"
	}
	return kind
}

// warn adds a quota_warning for every limit past warnAt, once per window.
func (s *scope) warn(now time.Time, evs []events.Event) []events.Event {
	for _, u := range s.uses(now) {
		if u.kind == KindConcurrency || float64(u.used) < warnAt*float64(u.limit) {
			continue
		}
		key := "warn:" + u.kind
		if s.noted[key].Equal(u.start) {
			continue
		}
		s.noted[key] = u.start
		evs = append(evs, events.Event{Time: now, Kind: events.QuotaWarning, Level: events.Warn, Backend: s.name,
			Reason: fmt.Sprintf("%s of %s used", pct(float64(u.used)/float64(u.limit)), s.noun(u.kind))})
	}
	return evs
}

// exhaustedEvent adds a quota_exhausted event for a limit that is full,
// once per window.
func (s *scope) exhaustedEvent(now time.Time, evs []events.Event) []events.Event {
	for _, u := range s.uses(now) {
		if u.used < u.limit || u.kind == KindConcurrency || u.soft {
			continue
		}
		key := "full:" + u.kind
		if s.noted[key].Equal(u.start) {
			continue
		}
		s.noted[key] = u.start
		evs = append(evs, events.Event{Time: now, Kind: events.QuotaExhausted, Level: events.Warn, Backend: s.name,
			Reason: s.full(now), Until: u.resets})
	}
	return evs
}

// Rate-limit header names, canonical so lookups need no conversion.
const (
	hLimitReq  = "X-Ratelimit-Limit-Requests"
	hLimitTok  = "X-Ratelimit-Limit-Tokens"
	hRemainReq = "X-Ratelimit-Remaining-Requests"
	hRemainTok = "X-Ratelimit-Remaining-Tokens"
	hResetReq  = "X-Ratelimit-Reset-Requests"
	hResetTok  = "X-Ratelimit-Reset-Tokens"
)

// learn updates what is known from an upstream's rate-limit headers and,
// for a 429, its body. Limits that reset within a minute are taken for
// per-minute limits, longer ones for day-scale limits (Groq sends requests
// per day and tokens per minute under the same header names OpenAI uses
// for per-minute limits).
func (s *scope) learn(now time.Time, h http.Header, e *llm.Error) {
	soft := e != nil
	if h != nil {
		s.learnPair(now, h, hLimitReq, hRemainReq, hResetReq, KindRPM, KindRPD, soft)
		s.learnPair(now, h, hLimitTok, hRemainTok, hResetTok, KindTPM, KindTPD, soft)
	}
	if e == nil || e.Status != http.StatusTooManyRequests || e.RetryAfter <= 0 {
		return
	}
	// A 429 means some limit has nothing left until the reset; the body
	// often says which (Groq: "... on tokens per day (TPD): Limit 500000,
	// Used 499000 ...").
	kind, limit, _ := parse429(string(e.Body))
	if kind == "" {
		kind = KindRPM
		if e.RetryAfter > time.Minute {
			kind = KindRPD
		}
	}
	l := &learned{limit: limit, remaining: 0, resetAt: now.Add(e.RetryAfter), at: now, soft: true}
	s.learned[kind] = l
}

func (s *scope) learnPair(now time.Time, h http.Header, limitH, remainH, resetH, minuteKind, dayKind string, soft bool) {
	rv, ok := h[remainH]
	if !ok || len(rv) == 0 {
		return
	}
	remaining, err := strconv.ParseInt(strings.TrimSpace(rv[0]), 10, 64)
	if err != nil {
		return
	}
	var limit int64
	if lv := h[limitH]; len(lv) > 0 {
		limit, _ = strconv.ParseInt(strings.TrimSpace(lv[0]), 10, 64)
	}
	var wait time.Duration
	if xv := h[resetH]; len(xv) > 0 {
		wait = llm.RetryAfter(http.Header{"Retry-After": xv}, now)
	}
	if wait <= 0 {
		wait = time.Minute
	}
	kind := minuteKind
	if wait > time.Minute {
		kind = dayKind
	}
	s.learned[kind] = &learned{limit: limit, remaining: remaining, resetAt: now.Add(wait), at: now, soft: soft}
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
