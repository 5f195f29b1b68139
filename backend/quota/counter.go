package quota

import "time"

// ring counts requests and tokens over a rolling window in fixed buckets:
// 60 one-second buckets for the minute limits, 1440 one-minute buckets for
// a rolling 24 hours. Adding and summing never allocate.
type ring struct {
	width time.Duration
	idx   []int64 // bucket number held by each slot (time / width)
	req   []int64
	tok   []int64
}

func newRing(width time.Duration, n int) *ring {
	return &ring{width: width, idx: make([]int64, n), req: make([]int64, n), tok: make([]int64, n)}
}

func (r *ring) add(t time.Time, req, tok int64) {
	b := t.UnixNano() / int64(r.width)
	s := int(b % int64(len(r.idx)))
	if r.idx[s] != b {
		if r.idx[s] > b {
			return // older than the window this slot now holds
		}
		r.idx[s], r.req[s], r.tok[s] = b, 0, 0
	}
	r.req[s] += req
	r.tok[s] += tok
}

// sum returns the totals of the window ending at now and when its oldest
// counted bucket leaves the window (zero when it is empty).
func (r *ring) sum(now time.Time) (req, tok int64, frees time.Time) {
	cur := now.UnixNano() / int64(r.width)
	oldest := int64(-1)
	for s, b := range r.idx {
		if b > cur-int64(len(r.idx)) && b <= cur && (r.req[s] != 0 || r.tok[s] != 0) {
			req += r.req[s]
			tok += r.tok[s]
			if oldest < 0 || b < oldest {
				oldest = b
			}
		}
	}
	if oldest >= 0 {
		frees = time.Unix(0, (oldest+int64(len(r.idx)))*int64(r.width))
	}
	return req, tok, frees
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
