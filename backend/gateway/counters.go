package gateway

import (
	"context"
	"errors"
	"time"

	"freelane/backend/metrics"
	"freelane/backend/store"
)

// restoreSlack is how much older than the metrics' longest window a
// request may have started and still end inside it: a long stream.
const restoreSlack = 15 * time.Minute

// errRestoreStopped ends the ledger read when the metrics want no more.
var errRestoreStopped = errors.New("restore stopped")

// restoreCounters rebuilds what the dashboard counts from the stored rows,
// so the figures read the same after a restart as before it: today's
// requests from the request log, each backend's calls today from the
// ledger (the rows the Usage screen adds up), and the rolling windows of
// the last hour from the ledger. From then on the feed adds each request
// in memory as it is recorded, and the database is not read again for
// them. It runs once, before anything is served.
func (g *Gateway) restoreCounters(ctx context.Context) {
	now := g.clock.Now()
	day := startOfDay(now)
	next := day.AddDate(0, 0, 1)
	requests, err := g.db.CountRequests(ctx, day, next)
	if err != nil {
		g.log.Warn("could not count today's requests from the request log", "err", err)
	}
	rows, err := g.db.Usage(ctx, store.UsageQuery{From: day, To: next, GroupBy: store.ByBackend})
	if err != nil {
		g.log.Warn("could not count today's calls from the ledger", "err", err)
	}
	calls := make(map[string]metrics.DayCount, len(rows))
	for _, r := range rows {
		calls[r.Key] = metrics.DayCount{Calls: r.Requests, Failures: r.Failures}
	}
	g.feed.today.Load(now, requests, calls)

	err = nil
	g.metrics.Restore(func(yield func(metrics.Past) bool) {
		err = g.db.EachCall(ctx, now.Add(-metrics.Window1h-restoreSlack), func(c store.Call) error {
			if !yield(metrics.Past{At: c.End, Backend: c.Backend, Outcome: metrics.Outcome{
				OK: c.OK, Failover: c.Failover, Latency: c.Latency, TTFT: c.TTFT}}) {
				return errRestoreStopped
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, errRestoreStopped) {
		g.log.Warn("could not rebuild the last hour's metrics from the ledger", "err", err)
	}
}

// startOfDay is the start of t's local calendar day.
func startOfDay(t time.Time) time.Time {
	t = t.Local()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.Local)
}
