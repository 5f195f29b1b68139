// Package llm holds the neutral types every other FreeLane package speaks:
// failure classes, upstream errors and the trace of a routed request. It
// imports nothing from the rest of the project so providers, the router, the
// store and the API can all depend on it without depending on each other.
package llm

import (
	"fmt"
	"net/http"
	"time"
)

// Class is the failure class of one attempt against one backend. The router
// acts on the class alone, so every upstream protocol maps its errors onto
// these values in one place (see Classify).
type Class string

// The failure classes. OK is the class of a successful attempt.
const (
	OK          Class = "ok"
	RateLimited Class = "rate_limited"
	Transient   Class = "transient"
	Soft        Class = "soft"
	Credential  Class = "credential"
	Gone        Class = "gone"
	TooLong     Class = "too_long"
	Caller      Class = "caller"
	Cancelled   Class = "cancelled"
	// Quota marks a backend passed over because one of its configured or
	// learned limits (or a money budget) is used up until a reset.
	Quota Class = "quota"
)

// FailsOver reports whether a failure of this class moves the request to the
// next backend. Caller errors go straight back to the client and cancelled
// requests stop.
func (c Class) FailsOver() bool {
	switch c {
	case RateLimited, Transient, Soft, Credential, Gone, TooLong, Quota:
		return true
	}
	return false
}

// Sub narrows a class where the difference matters for a backend's health
// score: a timeout and an empty answer are both failures, but not equally
// damning, so they lower the score by different amounts.
type Sub string

// Sub-classes.
const (
	SubNone      Sub = ""
	SubTimeout   Sub = "timeout"   // header, first-token or idle timeout
	SubConnect   Sub = "connect"   // could not connect at all (refused, DNS, unreachable)
	SubEmpty     Sub = "empty"     // a 200 with nothing in it
	SubMalformed Sub = "malformed" // a 200 that could not be parsed
	SubQuota     Sub = "quota"     // a 200 saying the quota is used up
)

// Error is a failed attempt against one backend, already classified. Message
// is safe to show to the user: it never contains a key or prompt text.
type Error struct {
	Class  Class
	Sub    Sub
	Status int // upstream HTTP status, 0 for transport failures
	// Message is a short human reason, e.g. "HTTP 503: overloaded" or
	// "first token timeout after 20s".
	Message string
	// RetryAfter is how long the upstream asked us to wait (Retry-After or a
	// rate-limit reset header); zero when it did not say.
	RetryAfter time.Duration
	// Body is the upstream's error body, kept so a caller error can be
	// returned unchanged to a client of the same dialect. Nil for
	// transport failures.
	Body []byte
	// Err is the underlying transport error, if any.
	Err error
	// Code is the vendor's own error code or type, e.g.
	// "context_length_exceeded", "overloaded_error" or "RESOURCE_EXHAUSTED".
	Code string
	// Dialect is the wire format of Body.
	Dialect Dialect
	// Header is the upstream's response header of an HTTP error answer
	// (nil for transport failures), kept so rate-limit headers can update
	// what is known about the backend's quota. It is the response's own
	// map, not a copy.
	Header http.Header
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Class, e.Message)
}

// Unwrap exposes the transport error for errors.Is/As.
func (e *Error) Unwrap() error { return e.Err }

// Usage is the token accounting an upstream reported, in no particular
// dialect. PromptTokens counts every input token, whether the vendor read
// it from a prompt cache, wrote it to one or neither; a dialect that counts
// cached input apart from its input count adds the cache counts in when
// its usage is decoded and takes them out when it is encoded.
// CacheReadTokens and CacheWriteTokens are the parts of PromptTokens read
// from and written to the cache, kept for pricing them apart; the request
// log does not store them yet.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// CountsCompletion reports whether u counts the answer's tokens. A usage
// that counts only the prompt, as some dialects' stream events do until
// the last, or no usage at all (u nil) leaves them to be estimated from
// the answer.
func (u *Usage) CountsCompletion() bool { return u != nil && u.CompletionTokens > 0 }

// Uncached is the part of the prompt neither read from nor written to a
// cache: the input count of dialects that count cached input apart.
func (u Usage) Uncached() int {
	return max(u.PromptTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
}

// CallUsage is what one call to a backend used, as far as the router saw
// it; quotas and budgets account for it once the call has ended.
type CallUsage struct {
	// Usage is the upstream's usage report, nil when it sent none.
	Usage *Usage
	// Output is what the client got, in its own dialect, for estimating
	// the tokens the upstream did not report: the answer's body or, for a
	// stream, the data of its content events recorded by AppendEvent. It
	// is only valid while being accounted.
	Output []byte
	// ContentEvents and ContentBytes are how many content events a
	// stream relayed and the bytes of their data, and KeptBytes how many
	// of those bytes Output holds: a stream keeps only its first events,
	// and the estimate from them is scaled by ContentBytes/KeptBytes.
	// When Output is empty because the stream kept nothing (its backend
	// has been reporting usage), an unreported completion is estimated at
	// a token per event, about what streams send.
	ContentEvents, ContentBytes, KeptBytes int
	// Header is the upstream's response header (of an error answer too),
	// nil if none arrived.
	Header http.Header
	// Err is the call's failure, nil on success.
	Err *Error
	// Attempt receives the tokens and cost.
	Attempt *Attempt
}

// Attempt is one try of one backend while serving a request.
type Attempt struct {
	Backend string `json:"backend"` // provider/model
	// Dialect is the wire format the backend was spoken to in.
	Dialect Dialect       `json:"dialect,omitempty"`
	Class   Class         `json:"class"`
	Status  int           `json:"status,omitempty"`
	Latency time.Duration `json:"latency_ns"`
	// TTFT is the time to the first content delta, streams only.
	TTFT   time.Duration `json:"ttft_ns,omitempty"`
	Reason string        `json:"reason,omitempty"`
	// Skipped is set when the router passed the backend by without calling
	// it (cooling down, retired, key disabled, a limit or a budget); Reason
	// says why in words, Skip in one, Until until when, and Budget marks a
	// budget's refusal.
	Skipped bool       `json:"skipped,omitempty"`
	Skip    SkipWord   `json:"skip,omitempty"`
	Until   *time.Time `json:"until,omitempty"`
	Budget  bool       `json:"budget,omitempty"`
	// Tokens and cost of a call that was made: from the upstream's usage
	// block, or estimated offline when it sent none (Estimated). Cost is in
	// the user's currency, from the model's configured price.
	PromptTokens     int     `json:"prompt_tokens,omitempty"`
	CompletionTokens int     `json:"completion_tokens,omitempty"`
	Cost             float64 `json:"cost,omitempty"`
	Estimated        bool    `json:"estimated,omitempty"`
	// Saved is what the provider's prompt cache saved on this call: the
	// cached prompt tokens at the input price less their cache-read price.
	Saved float64 `json:"saved,omitempty"`
}

// Bounds on a Trace's free-text fields, in bytes. A trace is kept in the
// request log, in the dashboard's live tail and in every snapshot, so one
// hostile request must not make any of them large.
const (
	MaxTraceModel  = MaxModelName
	MaxTraceError  = 1024
	MaxTraceReason = 512
	// MaxTraceNotes is the most notes a trace keeps, each cut to
	// MaxTraceReason.
	MaxTraceNotes = 8
)

// Capped returns t with its model, error and attempt reasons cut to the
// MaxTrace bounds. The attempts are copied when one is cut, so the caller's
// slice is never changed.
func (t Trace) Capped() Trace {
	t.Model = truncate(t.Model, MaxTraceModel)
	t.Error = truncate(t.Error, MaxTraceError)
	if len(t.Notes) > 0 {
		notes := make([]string, 0, min(len(t.Notes), MaxTraceNotes))
		for _, n := range t.Notes[:min(len(t.Notes), MaxTraceNotes)] {
			notes = append(notes, truncate(n, MaxTraceReason))
		}
		t.Notes = notes
	}
	copied := false
	for i, a := range t.Attempts {
		if len(a.Reason) <= MaxTraceReason {
			continue
		}
		if !copied {
			t.Attempts = append([]Attempt(nil), t.Attempts...)
			copied = true
		}
		t.Attempts[i].Reason = truncate(a.Reason, MaxTraceReason)
	}
	t.Decision = t.Decision.capped()
	return t
}

// capped returns d with the client's name and the reasons cut to the
// MaxTrace bounds, copied when one is cut; the router's decision is
// shared with the request still being answered.
func (d *Decision) capped() *Decision {
	if d == nil {
		return nil
	}
	long := len(d.Requested) > MaxTraceModel || len(d.Fallback) > MaxTraceReason || len(d.Candidates) > MaxDecisionCandidates
	for _, c := range d.Candidates {
		long = long || len(c.Reason) > MaxTraceReason
	}
	if !long {
		return d
	}
	out := *d
	out.Requested = truncate(d.Requested, MaxTraceModel)
	out.Fallback = truncate(d.Fallback, MaxTraceReason)
	n := min(len(d.Candidates), MaxDecisionCandidates)
	out.More += len(d.Candidates) - n
	out.Candidates = make([]Candidate, n)
	copy(out.Candidates, d.Candidates[:n])
	for i := range out.Candidates {
		out.Candidates[i].Reason = truncate(out.Candidates[i].Reason, MaxTraceReason)
	}
	return &out
}

// Trace is everything worth remembering about one client request: where it
// went, how each attempt ended and what it cost. It never holds prompt text.
type Trace struct {
	ID       string    `json:"id"`
	Start    time.Time `json:"start"`
	Endpoint string    `json:"endpoint"` // chat, completions, embeddings
	// Path is the API path the client called, as Request.Path names it
	// (the pattern of the dialect's route). Empty for requests logged
	// before it was recorded.
	Path string `json:"path,omitempty"`
	// Dialect is the wire format the client spoke.
	Dialect Dialect `json:"dialect,omitempty"`
	Model   string  `json:"model"` // as the client asked
	Chain   string  `json:"chain,omitempty"`
	// Alias is the model alias pattern that routed Model to Chain.
	Alias     string        `json:"alias,omitempty"`
	Backend   string        `json:"backend,omitempty"` // the one that served, if any
	Stream    bool          `json:"stream"`
	Status    int           `json:"status"` // status the client got
	Class     Class         `json:"class"`  // ok, or why the request failed
	Error     string        `json:"error,omitempty"`
	Latency   time.Duration `json:"latency_ns"`
	TTFT      time.Duration `json:"ttft_ns,omitempty"`
	Usage     Usage         `json:"usage"`
	Cost      float64       `json:"cost"` // sum of the attempts' costs
	Attempts  []Attempt     `json:"attempts"`
	Committed bool          `json:"committed,omitempty"` // stream body started
	// Notes are what the request's parser left out (see Request.Notes).
	Notes []string `json:"notes,omitempty"`
	// Decision is how the router chose the backends it tried; nil for
	// requests logged before decisions were recorded.
	Decision *Decision `json:"decision,omitempty"`
	// Cache is what the response cache did: CacheHit, CacheMiss,
	// CacheBypass, CacheRefresh, or "" when it was not asked (off, or a
	// request it does not keep).
	Cache CacheOutcome `json:"cache,omitempty"`
	// Session is the first 16 hex digits of the request's session key
	// (Request.Session), for grouping a conversation's turns; "" for none.
	Session string `json:"session,omitempty"`
	// Saved is what caching saved on the request: the attempts' prompt
	// cache savings, or for a response-cache hit the cost of the answer
	// when it was first made.
	Saved float64 `json:"saved,omitempty"`
	// Instance is the name of the instance of a team that served the
	// request; "" on a single machine.
	Instance string `json:"instance,omitempty"`
	// Stored, when set, is told once the request log has written this
	// trace's rows, or failed to; the router then lets the answer's last
	// bytes go out. Nil for a trace nobody waits on.
	Stored *Ack `json:"-"`
}

// Ack is a one-time word that something was done, or could not be: the
// request log gives it once a trace's rows are written, and the router
// waits on it before ending an answer. The zero value is not usable; make
// one with NewAck.
type Ack struct{ ch chan error }

// NewAck returns an Ack nobody has given yet.
func NewAck() *Ack { return &Ack{ch: make(chan error, 1)} }

// Give reports err (nil for done). It never blocks: a word given while an
// earlier one is still unread is dropped.
func (a *Ack) Give(err error) {
	select {
	case a.ch <- err:
	default:
	}
}

// Wait is the channel the word arrives on, once.
func (a *Ack) Wait() <-chan error { return a.ch }

// CacheOutcome is what the response cache did with a request; the
// X-FreeLane-Cache response header carries it.
type CacheOutcome string

// The cache outcomes.
const (
	CacheHit       CacheOutcome = "hit"
	CacheMiss      CacheOutcome = "miss"
	CacheBypassed  CacheOutcome = "bypass"
	CacheRefreshed CacheOutcome = "refresh"
)
