package metrics

import (
	"sync"
	"time"
)

// DayCount is what one backend was asked on one local calendar day.
type DayCount struct {
	// Calls counts the attempts that called the backend (skipped ones do
	// not), as the usage ledger does.
	Calls int64 `json:"calls"`
	// Failures counts the calls that did not succeed.
	Failures int64 `json:"failures"`
}

// Today counts the requests of the current local calendar day and each
// backend's calls. It starts from what the stored request log and ledger
// hold for the day (Load, once at start) and adds every request recorded
// after that, in memory, so it gives the figures the stored rows give once
// they are written, before a restart and after one, without reading the
// database on the request path.
//
// A request counts on the local day it started, as the stored rows count
// it; one that started yesterday and finished after midnight counts for
// yesterday, which Today no longer holds. The zone is the process's
// (time.Local), as it is for the ledger's days and the budgets' periods.
//
// Today is safe for concurrent use.
type Today struct {
	mu       sync.Mutex
	day      int // dayKey of the day counted; 0 before anything is
	requests int64
	backends map[string]*DayCount
}

// NewToday returns an empty Today.
func NewToday() *Today { return &Today{backends: map[string]*DayCount{}} }

// Load sets the counts of the day that contains day: requests started that
// day and each backend's calls. It replaces what Today held.
func (t *Today) Load(day time.Time, requests int64, backends map[string]DayCount) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.day, t.requests = dayKey(day), requests
	clear(t.backends)
	for name, c := range backends {
		t.backends[name] = &DayCount{Calls: c.Calls, Failures: c.Failures}
	}
}

// roll moves Today to the day of key when that is later than the day it
// counts, and reports whether key is the day counted now. It is called
// with mu held.
func (t *Today) roll(key int) bool {
	if key > t.day {
		t.day, t.requests = key, 0
		// The backends are kept with their counts zeroed, so a new day
		// allocates nothing for backends already seen.
		for _, c := range t.backends {
			*c = DayCount{}
		}
	}
	return key == t.day
}

// Request counts one request that started at start. It is on the request
// path: one lock, no allocation.
func (t *Today) Request(start time.Time) {
	key := dayKey(start)
	t.mu.Lock()
	if t.roll(key) {
		t.requests++
	}
	t.mu.Unlock()
}

// Call counts one call to backend made for a request that started at
// start. It allocates only the first time a backend is seen.
func (t *Today) Call(start time.Time, backend string, ok bool) {
	key := dayKey(start)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.roll(key) {
		return
	}
	c := t.backends[backend]
	if c == nil {
		c = &DayCount{}
		t.backends[backend] = c
	}
	c.Calls++
	if !ok {
		c.Failures++
	}
}

// Requests is how many requests started on now's local day.
func (t *Today) Requests(now time.Time) int64 {
	key := dayKey(now)
	t.mu.Lock()
	defer t.mu.Unlock()
	if key != t.day {
		return 0
	}
	return t.requests
}

// Backend is backend's calls on now's local day.
func (t *Today) Backend(now time.Time, backend string) DayCount {
	key := dayKey(now)
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.backends[backend]
	if key != t.day || c == nil {
		return DayCount{}
	}
	return *c
}

// dayKey identifies the local calendar day of t without formatting a
// string: later days have larger keys.
func dayKey(t time.Time) int {
	t = t.Local()
	return t.Year()*1000 + t.YearDay()
}
