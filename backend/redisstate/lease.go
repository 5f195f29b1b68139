package redisstate

import (
	"sync"
	"time"

	"freelane/backend/quota"
)

// Leases spare most calls their round trip. Far from a limit, the take
// script grants an instance a few units more than the call needs (a lease:
// requests of a window, nano-dollars of a budget), counted on Redis like
// any others, and the instance admits its next calls from them without
// asking. Leases come only out of the first half of a limit, at most the
// instance's share, 1/(instances × leaseShare), of what is left of it:
// the second half is counted call by call, so a lease never lets the team
// pass a limit, and by the time the team reaches it the units leased
// early have long been used by the busy instances. Units not used within
// leaseIdle go back, and so do those of a window's bucket once the call
// counts in the next one.
const (
	// leaseCalls is the most calls' worth a lease grants beyond the
	// call's own.
	leaseCalls = 15
	// leaseShare divides what the team has left by the instances alive
	// and this, for the most one instance may hold.
	leaseShare = 8
	// leaseIdle is how long unused units stay held.
	leaseIdle = time.Second
	// tokenFresh is how recent the team's total must be for a token
	// check (N 0) to be decided without asking: it passes locally only
	// while the team was below half its limit that recently.
	tokenFresh = time.Second
	// leaseForget drops what is known of a counter nobody used for this
	// long.
	leaseForget = time.Minute
)

// leaseKey names one of the team's counters.
type leaseKey struct {
	kind quota.CountKind
	key  string
}

// lease is what an instance knows of one team counter: the units it holds
// in the current bucket and the team's total when last asked.
type lease struct {
	bucket, oldest int64
	expire         time.Time
	left           int64
	total, limit   int64
	seen, used     time.Time
}

// leases are an instance's leases, by counter.
type leases struct {
	mu sync.Mutex
	m  map[leaseKey]*lease
}

// covers reports whether c can be decided from the lease alone.
func (l *lease) covers(c quota.Count, now time.Time) bool {
	if l == nil || l.bucket != c.Bucket || l.limit != c.Limit {
		return false
	}
	switch c.Kind {
	case quota.CountWindow:
		if c.N == 0 {
			return now.Sub(l.seen) < tokenFresh && (c.Limit <= 0 || l.total*2 < c.Limit)
		}
		return c.N > 0 && l.left >= c.N
	case quota.CountReserve:
		return c.N > 0 && l.left >= c.N
	}
	return false
}

// take admits counts from the leases when every one of them is covered,
// filling totals with the team's totals as last seen; false changes
// nothing.
func (ls *leases) take(counts []quota.Count, totals []int64, now time.Time) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if len(ls.m) == 0 || len(counts) == 0 {
		return false
	}
	for _, c := range counts {
		if !ls.m[leaseKey{c.Kind, c.Key}].covers(c, now) {
			return false
		}
	}
	for i, c := range counts {
		l := ls.m[leaseKey{c.Kind, c.Key}]
		l.left -= c.N
		l.used = now
		totals[i] = l.total
	}
	return true
}

// want is how many units beyond c's own the script may grant for c.
func want(c quota.Count) int64 {
	if c.N <= 0 || c.Kind == quota.CountSpend {
		return 0
	}
	return c.N * leaseCalls
}

// granted records a round trip's outcome: the team's totals and the units
// granted beyond the calls' own. Units still held in a bucket the counter
// has left are returned as counts to give back.
func (ls *leases) granted(counts []quota.Count, totals, grants []int64, now time.Time) (back []quota.Count) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = map[leaseKey]*lease{}
	}
	for i, c := range counts {
		k := leaseKey{c.Kind, c.Key}
		l := ls.m[k]
		if l == nil {
			l = &lease{}
			ls.m[k] = l
		}
		if l.bucket != c.Bucket || l.limit != c.Limit {
			back = l.giveBack(back, k, now)
			l.bucket, l.limit = c.Bucket, c.Limit
		}
		l.oldest, l.expire = c.Oldest, now.Add(c.TTL)
		l.left += grants[i]
		l.total, l.seen, l.used = totals[i], now, now
	}
	return back
}

// giveBack appends the count that returns the lease's unused units and
// empties it.
func (l *lease) giveBack(back []quota.Count, k leaseKey, now time.Time) []quota.Count {
	if l.left <= 0 {
		return back
	}
	back = append(back, quota.Count{Kind: k.kind, Key: k.key, Bucket: l.bucket, Oldest: l.oldest,
		TTL: l.expire.Sub(now), N: -l.left})
	l.left = 0
	return back
}

// idle returns the counts that give back the units not used within
// leaseIdle (all of them with all set) and forgets counters long unused.
func (ls *leases) idle(now time.Time, all bool) (back []quota.Count) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for k, l := range ls.m {
		if all || now.Sub(l.used) >= leaseIdle {
			back = l.giveBack(back, k, now)
		}
		if now.Sub(l.used) >= leaseForget {
			delete(ls.m, k)
		}
	}
	return back
}
