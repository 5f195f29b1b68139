package metrics_test

import (
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/metrics"
)

// TestTodayCountsTheLocalDay goes on from the loaded counts, counts a
// request on the local day it started, and starts the next day at zero.
func TestTodayCountsTheLocalDay(t *testing.T) {
	noon := time.Date(2026, 3, 8, 12, 0, 0, 0, time.Local) // a daylight-saving day in some zones
	d := metrics.NewToday()
	d.Load(noon, 5, map[string]metrics.DayCount{"a/m": {Calls: 4, Failures: 1}})
	d.Request(noon)
	d.Call(noon, "a/m", false)
	d.Call(noon, "b/m", true)
	if n := d.Requests(noon); n != 6 {
		t.Fatalf("requests %d, want 6", n)
	}
	if c := d.Backend(noon, "a/m"); c != (metrics.DayCount{Calls: 5, Failures: 2}) {
		t.Fatalf("a/m %+v", c)
	}
	if c := d.Backend(noon, "b/m"); c != (metrics.DayCount{Calls: 1}) {
		t.Fatalf("b/m %+v", c)
	}

	midnight := time.Date(2026, 3, 9, 0, 0, 0, 0, time.Local)
	if n, c := d.Requests(midnight), d.Backend(midnight, "a/m"); n != 0 || c != (metrics.DayCount{}) {
		t.Fatalf("at midnight: %d requests, a/m %+v", n, c)
	}
	// A request that started before midnight counts for the day before,
	// which is no longer counted; one of the new day starts it.
	d.Request(midnight.Add(-time.Second))
	d.Request(midnight)
	d.Call(midnight, "a/m", true)
	d.Request(midnight.Add(-time.Second))
	if n, c := d.Requests(midnight.Add(time.Hour)), d.Backend(midnight, "a/m"); n != 1 || c != (metrics.DayCount{Calls: 1}) {
		t.Fatalf("the next day: %d requests, a/m %+v", n, c)
	}
	if n := d.Requests(noon); n != 0 {
		t.Fatalf("the day before reads %d once the next one began", n)
	}
}

// TestRestoreRebuildsWindows puts one run's attempts into a new Registry:
// its windows read as the first one's did, attempts more than an hour old
// are left out, and the totals since start are not touched.
func TestRestoreRebuildsWindows(t *testing.T) {
	clk := clocktest.New(t0)
	first := metrics.New(clk)
	var past []metrics.Past
	observe := func(o metrics.Outcome) {
		first.Observe("p/m", o)
		past = append(past, metrics.Past{At: clk.Now(), Backend: "p/m", Outcome: o})
	}
	// An attempt a minute for an hour and a half, then a burst.
	for i := range 90 {
		clk.Advance(time.Minute)
		observe(metrics.Outcome{OK: i%3 != 0, Failover: i%9 == 0, Latency: time.Duration(10+i) * time.Millisecond, TTFT: time.Duration(i) * time.Millisecond})
	}
	for range 5 {
		clk.Advance(10 * time.Second)
		observe(metrics.Outcome{OK: true, Latency: 7 * time.Millisecond})
	}
	clk.Advance(5 * time.Second)
	want := first.Windows("p/m")

	second := metrics.New(clk)
	second.Restore(func(yield func(metrics.Past) bool) {
		for _, p := range past {
			if !yield(p) {
				return
			}
		}
	})
	got := second.Windows("p/m")
	for k, w := range want {
		g := got[k]
		if g.Requests != w.Requests || g.Failures != w.Failures || g.Failovers != w.Failovers || g.SuccessRate != w.SuccessRate ||
			g.LatencyMS != w.LatencyMS || g.TTFTMS != w.TTFTMS {
			t.Errorf("%s window after restoring %+v, before %+v", k, g, w)
		}
	}
	if w := got["1h"]; w.Requests == 0 || w.Requests >= int64(len(past)) {
		t.Errorf("the hour holds %d of %d attempts: the older ones must be left out", w.Requests, len(past))
	}
	if c := second.Counters("p/m"); c != (metrics.Counters{}) {
		t.Errorf("totals since start %+v after restoring, want none", c)
	}
	second.Observe("p/m", metrics.Outcome{OK: true, Latency: time.Millisecond})
	if n := second.Window("p/m", time.Minute).Requests; n != want["1m"].Requests+1 {
		t.Errorf("the minute holds %d after one more attempt, want %d", n, want["1m"].Requests+1)
	}
}

// BenchmarkTodayRecord is what counting one request and its call adds to
// the request path: memory only, no allocation.
func BenchmarkTodayRecord(b *testing.B) {
	d := metrics.NewToday()
	now := time.Now()
	d.Load(now, 0, nil)
	d.Call(now, "groq/llama", true)
	b.ReportAllocs()
	for b.Loop() {
		d.Request(now)
		d.Call(now, "groq/llama", true)
	}
}
