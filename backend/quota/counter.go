package quota

import "time"

// ring counts requests and tokens over a rolling window in fixed buckets:
// 60 one-second buckets for the minute limits, 1440 one-minute buckets for
// a rolling 24 hours. It keeps running totals, so adding and summing cost
// the same however long the window; buckets that leave the window are
// subtracted as time passes them. Nothing allocates after newRing.
type ring struct {
	width    time.Duration
	idx      []int64 // bucket number held by each slot (time / width)
	req, tok []int64
	totReq   int64
	totTok   int64
	last     int64 // newest bucket the ring has advanced to
}

func newRing(width time.Duration, n int) *ring {
	return &ring{width: width, idx: make([]int64, n), req: make([]int64, n), tok: make([]int64, n)}
}

func (r *ring) bucket(t time.Time) int64 { return t.UnixNano() / int64(r.width) }

// advance moves the window's end to bucket cur, dropping what left it.
func (r *ring) advance(cur int64) {
	n := int64(len(r.idx))
	if cur <= r.last {
		return
	}
	from := r.last + 1
	if cur-r.last >= n {
		from = cur - n + 1
		r.totReq, r.totTok = 0, 0
		clear(r.req)
		clear(r.tok)
	}
	for b := from; b <= cur; b++ {
		s := b % n
		r.totReq -= r.req[s]
		r.totTok -= r.tok[s]
		r.idx[s], r.req[s], r.tok[s] = b, 0, 0
	}
	r.last = cur
}

func (r *ring) add(t time.Time, req, tok int64) {
	b := r.bucket(t)
	r.advance(b)
	if b <= r.last-int64(len(r.idx)) {
		return // older than the window
	}
	s := b % int64(len(r.idx))
	r.req[s] += req
	r.tok[s] += tok
	r.totReq += req
	r.totTok += tok
}

// sum returns the totals of the window ending at now.
func (r *ring) sum(now time.Time) (req, tok int64) {
	r.advance(r.bucket(now))
	return r.totReq, r.totTok
}

// frees returns when the oldest counted bucket leaves the window, which is
// when the totals first go down; zero when the window is empty.
func (r *ring) frees(now time.Time) time.Time {
	r.advance(r.bucket(now))
	n := int64(len(r.idx))
	for b := r.last - n + 1; b <= r.last; b++ {
		if s := b % n; r.idx[s] == b && (r.req[s] != 0 || r.tok[s] != 0) {
			return time.Unix(0, (b+n)*int64(r.width))
		}
	}
	return time.Time{}
}

// window counts requests and tokens in one calendar window of a Rule,
// starting over when time passes its end.
type window struct {
	start, end time.Time
	req, tok   int64
}

// at moves the window to the one containing now, dropping old counts.
func (w *window) at(r Rule, now time.Time) {
	if w.end.IsZero() || !now.Before(w.end) || now.Before(w.start) {
		start, end := r.Bounds(now)
		if start.Equal(w.start) {
			return
		}
		*w = window{start: start, end: end}
	}
}
