package metrics_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/metrics"
	"freelane/backend/store"
)

// st0 is a start time on a whole hour, so tests know where buckets begin.
var st0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func openDB(t testing.TB, path string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func window(t testing.TB, name string) metrics.SeriesWindow {
	t.Helper()
	w, ok := metrics.LookupSeriesWindow(name)
	if !ok {
		t.Fatalf("no window %q", name)
	}
	return w
}

func read(t testing.TB, s *metrics.Series, q metrics.SeriesQuery) metrics.SeriesView {
	t.Helper()
	v, err := s.Window(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// okTrace is a request served by backend on chain in lat.
func okTrace(chain, backend string, lat time.Duration, prompt, completion int) llm.Trace {
	return llm.Trace{Chain: chain, Backend: backend, Class: llm.OK, Latency: lat,
		Attempts: []llm.Attempt{{Backend: backend, Class: llm.OK, Latency: lat, PromptTokens: prompt, CompletionTokens: completion, Cost: 0.001}}}
}

func sum(v metrics.SeriesView) (requests, failures int64) {
	for _, b := range v.Buckets {
		requests += b.Requests
		failures += b.Failures
	}
	return
}

func TestSeriesFineWindowSpansTheWindow(t *testing.T) {
	clk := clocktest.New(st0.Add(35 * time.Second))
	db := openDB(t, filepath.Join(t.TempDir(), "s.db"))
	defer db.Close()
	s := metrics.NewSeries(db, clk, nil)

	// Nothing recorded: still six empty buckets covering the minute.
	v := read(t, s, metrics.SeriesQuery{Window: window(t, "1m")})
	if len(v.Buckets) != 6 || v.ResolutionS != 10 {
		t.Fatalf("empty 1m window: %d buckets of %d s, want 6 of 10 s", len(v.Buckets), v.ResolutionS)
	}
	now := clk.Now().Unix()
	if v.To != now || v.From != now-60 {
		t.Errorf("window from %d to %d, want %d to %d", v.From, v.To, now-60, now)
	}
	for i, b := range v.Buckets {
		if b.Start <= v.From || b.Start > v.To || b.Start%10 != 0 {
			t.Errorf("bucket %d starts at %d, outside (%d, %d] or off the 10 s grid", i, b.Start, v.From, v.To)
		}
		if b.Requests != 0 || b.LatencyMS.P50 != 0 {
			t.Errorf("bucket %d of an empty series = %+v", i, b)
		}
	}
	if got := v.Buckets[5].Start; got != st0.Add(30*time.Second).Unix() {
		t.Errorf("newest bucket starts at %d, want %d", got, st0.Add(30*time.Second).Unix())
	}

	s.Record(okTrace("coding", "groq/llama", 100*time.Millisecond, 10, 5))
	clk.Advance(20 * time.Second) // 55 s: the bucket at 50 s
	s.Record(okTrace("coding", "groq/llama", 300*time.Millisecond, 10, 5))
	s.Record(llm.Trace{Chain: "coding", Class: llm.RateLimited,
		Attempts: []llm.Attempt{{Backend: "groq/llama", Class: llm.RateLimited}}})

	v = read(t, s, metrics.SeriesQuery{Window: window(t, "1m"), Backend: "groq/llama"})
	got := map[int64]metrics.SeriesBucket{}
	for _, b := range v.Buckets {
		got[b.Start-st0.Unix()] = b
	}
	if b := got[30]; b.Requests != 1 || b.LatencyMS.P50 != 100 || b.PromptTokens != 10 || b.CompletionTokens != 5 {
		t.Errorf("bucket at 30 s = %+v, want one call of 100 ms with 10+5 tokens", b)
	}
	if b := got[50]; b.Requests != 2 || b.Failures != 1 || b.Errors.RateLimited != 1 || b.LatencyMS.P99 != 300 {
		t.Errorf("bucket at 50 s = %+v, want two calls, one rate limited, p99 300 ms", b)
	}
	if b := got[40]; b.Requests != 0 {
		t.Errorf("bucket at 40 s = %+v, want empty", b)
	}

	// The chain and the total count the same requests.
	for _, q := range []metrics.SeriesQuery{{Window: window(t, "1m"), Chain: "coding"}, {Window: window(t, "1m")}} {
		if r, f := sum(read(t, s, q)); r != 3 || f != 1 {
			t.Errorf("%+v: %d requests, %d failed, want 3 and 1", q, r, f)
		}
	}

	// An hour later the ring has let everything go.
	clk.Advance(time.Hour)
	if r, _ := sum(read(t, s, metrics.SeriesQuery{Window: window(t, "1h"), Backend: "groq/llama"})); r != 0 {
		t.Errorf("1h window an hour later holds %d calls, want 0", r)
	}
}

func TestSeriesEveryWindowHasItsBuckets(t *testing.T) {
	clk := clocktest.New(st0.Add(90*time.Minute + 7*time.Second))
	db := openDB(t, filepath.Join(t.TempDir(), "s.db"))
	defer db.Close()
	s := metrics.NewSeries(db, clk, nil)
	for _, c := range []struct {
		name  string
		n     int
		width int64
	}{{"1m", 6, 10}, {"5m", 30, 10}, {"1h", 360, 10}, {"24h", 1440, 60}, {"7d", 168, 3600}} {
		v := read(t, s, metrics.SeriesQuery{Window: window(t, c.name)})
		if len(v.Buckets) != c.n || v.ResolutionS != c.width {
			t.Errorf("%s: %d buckets of %d s, want %d of %d s", c.name, len(v.Buckets), v.ResolutionS, c.n, c.width)
			continue
		}
		span := v.To - v.From
		if want := int64(c.n) * c.width; span != want {
			t.Errorf("%s: spans %d s, want %d", c.name, span, want)
		}
		first, last := v.Buckets[0].Start, v.Buckets[len(v.Buckets)-1].Start
		if first <= v.From || last > v.To || last+c.width <= v.To {
			t.Errorf("%s: buckets %d..%d do not tile (%d, %d]", c.name, first, last, v.From, v.To)
		}
	}
}

func TestSeriesRollsUpIntoMinutesAndHours(t *testing.T) {
	clk := clocktest.New(st0)
	db := openDB(t, filepath.Join(t.TempDir(), "s.db"))
	defer db.Close()
	s := metrics.NewSeries(db, clk, nil)
	ctx := context.Background()

	// Ten requests a minute for three hours, flushed as the writer would.
	for m := range 180 {
		for i := range 10 {
			s.Record(okTrace("", "groq/llama", time.Duration(100+10*i)*time.Millisecond, 3, 2))
		}
		if m%7 == 0 {
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Minute)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	day := read(t, s, metrics.SeriesQuery{Window: window(t, "24h"), Backend: "groq/llama"})
	if r, _ := sum(day); r != 1800 {
		t.Errorf("24h window: %d calls, want 1800", r)
	}
	var filled int
	for _, b := range day.Buckets {
		if b.Requests == 0 {
			continue
		}
		filled++
		if b.Requests != 10 || b.PromptTokens != 30 || b.CompletionTokens != 20 {
			t.Errorf("minute at %d = %+v, want 10 calls and 30+20 tokens", b.Start, b)
		}
		if b.LatencyMS.P50 < 120 || b.LatencyMS.P50 > 160 || b.LatencyMS.P99 != 190 {
			t.Errorf("minute at %d latency %+v, want p50 near 140 ms and p99 190 ms", b.Start, b.LatencyMS)
		}
	}
	if filled != 180 {
		t.Errorf("%d minute buckets have calls, want 180", filled)
	}
	week := read(t, s, metrics.SeriesQuery{Window: window(t, "7d"), Backend: "groq/llama"})
	var hours []int64
	for _, b := range week.Buckets {
		if b.Requests > 0 {
			hours = append(hours, b.Requests)
			if b.Start%3600 != 0 {
				t.Errorf("hour bucket starts at %d, not on the hour", b.Start)
			}
			if b.Cost < 0.59 || b.Cost > 0.61 {
				t.Errorf("hour at %d cost %v, want 0.6", b.Start, b.Cost)
			}
		}
	}
	if fmt.Sprint(hours) != "[600 600 600]" {
		t.Errorf("hour buckets hold %v calls, want [600 600 600]", hours)
	}
}

func TestSeriesPrunesOldBuckets(t *testing.T) {
	clk := clocktest.New(st0)
	db := openDB(t, filepath.Join(t.TempDir(), "s.db"))
	defer db.Close()
	s := metrics.NewSeries(db, clk, nil)
	ctx := context.Background()
	s.Record(okTrace("", "a/b", time.Millisecond, 1, 1))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	count := func(width int64) int {
		rows, err := db.SeriesRange(ctx, width, "b:a/b", 0, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	if count(60) != 1 || count(3600) != 1 {
		t.Fatalf("after one request: %d minute rows and %d hour rows, want 1 and 1", count(60), count(3600))
	}
	clk.Advance(metrics.MinuteKeep + time.Minute)
	if err := s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if count(60) != 0 || count(3600) != 1 {
		t.Errorf("a day later: %d minute rows and %d hour rows, want 0 and 1", count(60), count(3600))
	}
	clk.Advance(metrics.HourKeep)
	if err := s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if count(3600) != 0 {
		t.Errorf("91 days later: %d hour rows, want 0", count(3600))
	}
}

func TestSeriesSurvivesARestart(t *testing.T) {
	clk := clocktest.New(st0.Add(10 * time.Second))
	path := filepath.Join(t.TempDir(), "s.db")
	ctx := context.Background()

	db := openDB(t, path)
	s := metrics.NewSeries(db, clk, nil)
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s.Record(okTrace("coding", "groq/llama", 200*time.Millisecond, 7, 3))
	clk.Advance(2 * time.Minute)
	s.Record(okTrace("coding", "groq/llama", 400*time.Millisecond, 7, 3))
	// Run stores what is pending when it stops.
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { s.Run(rctx); close(done) }()
	stop()
	<-done
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A new process in the same minute and hour: what it adds joins what
	// the first one stored.
	clk.Advance(5 * time.Second)
	db = openDB(t, path)
	defer db.Close()
	s = metrics.NewSeries(db, clk, nil)
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s.Record(okTrace("coding", "groq/llama", 400*time.Millisecond, 7, 3))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []metrics.SeriesQuery{
		{Window: window(t, "24h"), Backend: "groq/llama"},
		{Window: window(t, "7d"), Chain: "coding"},
		{Window: window(t, "7d")},
	} {
		v := read(t, s, q)
		if r, _ := sum(v); r != 3 {
			t.Errorf("%s %q%q after a restart: %d requests, want 3", q.Window.Name, q.Backend, q.Chain, r)
		}
	}
	day := read(t, s, metrics.SeriesQuery{Window: window(t, "24h"), Backend: "groq/llama"})
	var minutes []string
	for _, b := range day.Buckets {
		if b.Requests > 0 {
			minutes = append(minutes, fmt.Sprintf("%d:%d@%g", (b.Start-st0.Unix())/60, b.Requests, b.LatencyMS.P50))
		}
	}
	if fmt.Sprint(minutes) != "[0:1@200 2:2@400]" {
		t.Errorf("minutes after a restart = %v, want [0:1@200 2:2@400]", minutes)
	}
}

func TestSeriesCountsClassesTokensAndQuota(t *testing.T) {
	clk := clocktest.New(st0)
	db := openDB(t, filepath.Join(t.TempDir(), "s.db"))
	defer db.Close()
	s := metrics.NewSeries(db, clk, nil)
	s.Record(llm.Trace{Class: llm.OK, Latency: 50 * time.Millisecond, TTFT: 20 * time.Millisecond, Attempts: []llm.Attempt{
		{Backend: "a/x", Skipped: true, Skip: llm.SkipQuota, Class: llm.Quota},
		{Backend: "a/y", Skipped: true, Skip: llm.SkipCooling},
		{Backend: "b/x", Class: llm.Transient, Latency: time.Second},
		{Backend: "c/x", Class: llm.OK, Latency: 50 * time.Millisecond, TTFT: 20 * time.Millisecond,
			PromptTokens: 100, CompletionTokens: 40, Estimated: true, Cost: 0.25},
	}})
	one := func(q metrics.SeriesQuery) metrics.SeriesBucket {
		v := read(t, s, q)
		return v.Buckets[len(v.Buckets)-1]
	}
	w := window(t, "1m")
	if b := one(metrics.SeriesQuery{Window: w}); b.Requests != 1 || b.Failures != 0 || b.QuotaSkips != 1 ||
		b.PromptTokens != 100 || b.EstimatedTokens != 140 || b.Cost != 0.25 || b.TTFTMS.P50 != 20 {
		t.Errorf("total bucket = %+v", b)
	}
	if b := one(metrics.SeriesQuery{Window: w, Backend: "a/x"}); b.Requests != 0 || b.QuotaSkips != 1 {
		t.Errorf("a/x (passed over for its quota) = %+v, want no call and one quota skip", b)
	}
	if v := read(t, s, metrics.SeriesQuery{Window: w, Backend: "a/y"}); v.Buckets[5].Requests != 0 || v.Buckets[5].QuotaSkips != 0 {
		t.Errorf("a/y (cooling down) = %+v, want nothing", v.Buckets[5])
	}
	if b := one(metrics.SeriesQuery{Window: w, Backend: "b/x"}); b.Requests != 1 || b.Errors.Transient != 1 || b.LatencyMS.P50 != 0 {
		t.Errorf("b/x = %+v, want one transient failure and no latency", b)
	}
}

// TestSeriesTableSize fills the stored series as 90 days of 20 busy
// backends would (every minute of the last day and every hour of 90 days
// with calls) and checks the database stays small.
func TestSeriesTableSize(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 73 000 rows")
	}
	clk := clocktest.New(st0)
	path := filepath.Join(t.TempDir(), "s.db")
	db := openDB(t, path)
	defer db.Close()
	s := metrics.NewSeries(db, clk, nil)
	ctx := context.Background()
	// One realistic bucket per backend: 60 calls with spread latencies,
	// a few failures, tokens and cost.
	for i := range 60 {
		for b := range 20 {
			tr := okTrace("", fmt.Sprintf("provider%d/model-%d", b, b), time.Duration(200+i*37)*time.Millisecond, 500+i, 200+i)
			tr.Attempts[0].TTFT = time.Duration(50+i*7) * time.Millisecond
			if i%10 == 0 {
				tr.Attempts[0].Class = llm.Transient
			}
			s.Record(tr)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var rows []store.SeriesRow
	for b := range 20 {
		name := fmt.Sprintf("b:provider%d/model-%d", b, b)
		for _, w := range []struct{ width, n int64 }{{60, 25 * 60}, {3600, 91 * 24}} {
			got, err := db.SeriesRange(ctx, w.width, name, 0, 1<<40)
			if err != nil || len(got) != 1 {
				t.Fatalf("%s: %d rows, %v", name, len(got), err)
			}
			for k := range w.n {
				r := got[0]
				r.Start -= k * w.width
				rows = append(rows, r)
			}
		}
	}
	// Written as the writer would: oldest first, in batches.
	slices.SortStableFunc(rows, func(a, b store.SeriesRow) int { return cmp.Compare(a.Start, b.Start) })
	for batch := range slices.Chunk(rows, 2000) {
		if err := db.WriteSeries(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		if _, err := db.SQL().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	written := size()
	if _, err := db.SQL().ExecContext(ctx, "VACUUM"); err != nil {
		t.Fatal(err)
	}
	t.Logf("after VACUUM: %.1f MB", float64(size())/1e6)
	var dataBytes int64
	if err := db.SQL().QueryRowContext(ctx, "SELECT SUM(LENGTH(data)) FROM series").Scan(&dataBytes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows for 20 backends: database file %.1f MB, %d bytes of bucket data (%.0f a row)",
		len(rows), float64(written)/1e6, dataBytes, float64(dataBytes)/float64(len(rows)))
	if written > 16<<20 {
		t.Errorf("database file is %d bytes, want under 16 MiB", written)
	}

	// The API's longest read, a week of hours, stays quick on it.
	start := time.Now()
	const reads = 50
	for range reads {
		if v := read(t, s, metrics.SeriesQuery{Window: window(t, "7d"), Backend: "provider3/model-3"}); len(v.Buckets) != 168 {
			t.Fatalf("7d window has %d buckets", len(v.Buckets))
		}
	}
	t.Logf("7d window read: %v each", time.Since(start)/reads)
	start = time.Now()
	for range reads {
		read(t, s, metrics.SeriesQuery{Window: window(t, "24h"), Backend: "provider3/model-3"})
	}
	t.Logf("24h window read: %v each", time.Since(start)/reads)
}
