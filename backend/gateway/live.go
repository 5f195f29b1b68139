package gateway

import (
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/llm"
	"freelane/backend/metrics"
	"freelane/backend/redact"
)

// recentKeep is how many finished requests the dashboard's snapshot holds.
const recentKeep = 100

// pendingMax bounds requests queued between two dashboard updates; past it
// the oldest are dropped from the live tail (they stay in the request log).
const pendingMax = 500

// feed receives every finished request: it writes the request log, feeds
// the metrics and today's counts, and keeps the live tail for the
// dashboard. Record runs on the request path, so it only appends to
// memory: the request log is written by its own goroutine, and today's
// counts and the metrics' windows were loaded from the stored rows at
// start (restoreCounters), so they go on from what the rows hold.
type feed struct {
	log     interface{ Record(llm.Trace) }
	metrics *metrics.Registry
	today   *metrics.Today
	clock   interface{ Now() time.Time }
	red     *redact.Redactor
	// unchecked are the providers added without their key being tried;
	// a call their server answers checks it.
	unchecked uncheckedKeys
	// served counts the requests recorded since the start, for the
	// instance's status record in a team.
	served atomic.Int64
	// instance is this instance's name in a team, stamped on every trace;
	// "" outside one. It is set before anything is served.
	instance string

	mu      sync.Mutex
	recent  []llm.Trace // ring, newest at (next-1)
	next    int
	pending []llm.Trace
}

func newFeed(log interface{ Record(llm.Trace) }, m *metrics.Registry, clock interface{ Now() time.Time }, red *redact.Redactor) *feed {
	return &feed{log: log, metrics: m, today: metrics.NewToday(), clock: clock, red: red, recent: make([]llm.Trace, 0, recentKeep)}
}

// Record implements router.Recorder.
func (f *feed) Record(t llm.Trace) {
	// One redaction and one cap for every place the trace goes: the
	// request log, the live tail, the snapshots and the websocket. The
	// secrets go first, so that a cut never leaves part of one.
	t = redactTrace(f.red, t).Capped()
	if f.instance != "" {
		t.Instance = f.instance
	}
	f.log.Record(t)
	f.served.Add(1)
	// Counted by the day the request started, as its stored row is.
	start := t.Start
	if start.IsZero() {
		start = f.clock.Now()
	}
	f.today.Request(start)
	f.unchecked.answered(t.Attempts)
	// A failed call failed over when the request went on to call another
	// backend; skipped backends after it were not called. The ledger, which
	// holds only calls, tells a failover the same way after a restart.
	last := -1
	for i, a := range t.Attempts {
		if !a.Skipped {
			last = i
		}
	}
	for i, a := range t.Attempts {
		if a.Skipped {
			continue
		}
		f.today.Call(start, a.Backend, a.Class == llm.OK)
		f.metrics.Observe(a.Backend, metrics.Outcome{
			OK:       a.Class == llm.OK,
			Failover: a.Class != llm.OK && i < last,
			Latency:  a.Latency,
			TTFT:     a.TTFT,
		})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.recent) < recentKeep {
		f.recent = append(f.recent, t)
	} else {
		f.recent[f.next] = t
	}
	f.next = (f.next + 1) % recentKeep
	if len(f.pending) >= pendingMax {
		f.pending = f.pending[1:]
	}
	f.pending = append(f.pending, t)
}

// Recent returns the last requests, newest first.
func (f *feed) Recent() []llm.Trace {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]llm.Trace, 0, len(f.recent))
	for i := 1; i <= len(f.recent); i++ {
		out = append(out, f.recent[(f.next-i+len(f.recent))%len(f.recent)])
	}
	return out
}

// Find returns the request with the id from the live tail.
func (f *feed) Find(id string) (llm.Trace, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.recent {
		if f.recent[i].ID == id {
			return f.recent[i], true
		}
	}
	return llm.Trace{}, false
}

// Take returns the requests finished since the last Take, oldest first.
func (f *feed) Take() []llm.Trace {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.pending
	f.pending = nil
	return out
}

// redactTrace returns t with the secrets removed from its free text: the
// model the client named, the error and the notes, each attempt's reason
// and the routing decision's words. The caller's attempts and notes are copied before one is
// changed, never changed in place.
func redactTrace(r *redact.Redactor, t llm.Trace) llm.Trace {
	t.Model, t.Alias, t.Error = r.String(t.Model), r.String(t.Alias), r.String(t.Error)
	copied := false
	for i, n := range t.Notes {
		if m := r.String(n); m != n {
			if !copied {
				t.Notes, copied = append([]string(nil), t.Notes...), true
			}
			t.Notes[i] = m
		}
	}
	copied = false
	for i, a := range t.Attempts {
		if m := r.String(a.Reason); m != a.Reason {
			if !copied {
				t.Attempts, copied = append([]llm.Attempt(nil), t.Attempts...), true
			}
			t.Attempts[i].Reason = m
		}
	}
	t.Decision = redactDecision(r, t.Decision)
	return t
}

// redactDecision is redactTrace for the routing decision: the name the
// client sent and the reasons, which quote upstream errors, are free
// text. It copies only when something was removed, since the router's
// decision is shared with the request still being answered.
func redactDecision(r *redact.Redactor, d *llm.Decision) *llm.Decision {
	if d == nil {
		return nil
	}
	var out *llm.Decision
	edit := func() *llm.Decision {
		if out == nil {
			c := *d
			c.Candidates = append([]llm.Candidate(nil), d.Candidates...)
			out = &c
		}
		return out
	}
	if m := r.String(d.Requested); m != d.Requested {
		edit().Requested = m
	}
	if m := r.String(d.Fallback); m != d.Fallback {
		edit().Fallback = m
	}
	if m := r.String(d.Error); m != d.Error {
		edit().Error = m
	}
	if m := r.String(d.AffinityNote); m != d.AffinityNote {
		edit().AffinityNote = m
	}
	for i, c := range d.Candidates {
		if m := r.String(c.Reason); m != c.Reason {
			edit().Candidates[i].Reason = m
		}
	}
	if out == nil {
		return d
	}
	return out
}
