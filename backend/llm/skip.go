package llm

import (
	"strings"
	"time"
)

// SkipWord is the one-word reason a backend was passed by, as the
// X-FreeLane-Attempts header writes it ("skip(open)") and the dashboard
// reads it.
type SkipWord string

// The skip words. The breaker's give the state that kept the backend out;
// the quota manager's say a limit or a budget did.
const (
	SkipOpen        SkipWord = "open"
	SkipHalfOpen    SkipWord = "half_open"
	SkipCooling     SkipWord = "cooling"
	SkipKeyDisabled SkipWord = "key_disabled"
	SkipRetired     SkipWord = "retired"
	SkipQuota       SkipWord = "quota"
	SkipTooLong     SkipWord = "too_long"
	// SkipUnsupported is a backend that cannot serve the request: not its
	// endpoint, a capability it lacks, or a request its dialect cannot say.
	SkipUnsupported SkipWord = "unsupported"
	// SkipBusy is a backend whose concurrency limit stayed full for the
	// whole queue wait; SkipPaced one whose requests-per-minute pacing
	// would have made the request wait longer than that.
	SkipBusy  SkipWord = "busy"
	SkipPaced SkipWord = "paced"
)

// Skip is why the router passed a backend by without calling it. The
// breaker and the quota manager build it where they decide, so the header,
// the request log, the dashboard and the log line all show the same
// decision rather than each parsing a message.
type Skip struct {
	Word SkipWord
	// Class is how the skip counts when the router chooses the status of a
	// request nothing served: rate_limited and quota skips make a 429.
	Class Class
	// Until is when the backend may serve again; zero when that depends on
	// another request, a probe or nothing known.
	Until time.Time
	// Reason is the sentence shown to people.
	Reason string
	// Budget marks a money budget's refusal (Word is then SkipQuota);
	// Blocked a budget whose action is block, which turns a request nothing
	// free could serve into HTTP 402.
	Budget, Blocked bool
	// Err is the decision's own error, for errors.As.
	Err error
}

func (s *Skip) Error() string { return s.Reason }

// Unwrap exposes the error the skip was made from.
func (s *Skip) Unwrap() error { return s.Err }

// Note writes the skip into an attempt.
func (s *Skip) Note(a *Attempt) {
	a.Skipped, a.Class, a.Reason, a.Skip, a.Budget = true, s.Class, s.Reason, s.Word, s.Budget
	if !s.Until.IsZero() {
		u := s.Until
		a.Until = &u
	}
}

// SkipWord is the attempt's skip word. Attempts stored before skips carried
// their word have only the reason, whose first word was the skip word then.
func (a *Attempt) SkipWord() SkipWord {
	if a.Skip != "" {
		return a.Skip
	}
	if a.Class == TooLong || a.Class == Quota {
		return SkipWord(a.Class)
	}
	word, _, _ := strings.Cut(a.Reason, " ")
	return SkipWord(word)
}
