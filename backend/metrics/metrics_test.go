package metrics_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/metrics"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func within(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*want {
		t.Errorf("%s = %.3f, want %.3f ± %.0f %%", what, got, want, rel*100)
	}
}

func TestPercentilesUniform(t *testing.T) {
	clk := clocktest.New(t0)
	r := metrics.New(clk)
	// 1000 samples spread evenly over 100..200 ms, shuffled so that the
	// order of arrival does not matter.
	vals := make([]float64, 1000)
	for i := range vals {
		vals[i] = 100 + 100*float64(i)/999
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	for _, v := range vals {
		r.Observe("p/m", metrics.Outcome{OK: true, Latency: ms(v), TTFT: ms(v / 4)})
	}
	w := r.Window("p/m", time.Minute)
	within(t, "latency p50", w.LatencyMS.P50, 150, 0.05)
	within(t, "latency p95", w.LatencyMS.P95, 195, 0.05)
	within(t, "latency p99", w.LatencyMS.P99, 199, 0.05)
	within(t, "ttft p50", w.TTFTMS.P50, 37.5, 0.05)
	within(t, "ttft p99", w.TTFTMS.P99, 49.75, 0.05)
}

func TestPercentilesAreNotAverages(t *testing.T) {
	r := metrics.New(clocktest.New(t0))
	// 90 % fast, 10 % very slow: the mean (109 ms) describes no request.
	for i := range 1000 {
		lat := 10 * time.Millisecond
		if i%10 == 0 {
			lat = time.Second
		}
		r.Observe("b", metrics.Outcome{OK: true, Latency: lat})
	}
	w := r.Window("b", 5*time.Minute)
	within(t, "p50", w.LatencyMS.P50, 10, 0.05)
	within(t, "p95", w.LatencyMS.P95, 1000, 0.05)
	within(t, "p99", w.LatencyMS.P99, 1000, 0.05)
	if w.TTFTMS != (metrics.Percentiles{}) {
		t.Errorf("non-stream requests produced TTFT percentiles %+v", w.TTFTMS)
	}
}

func TestPercentileResolutionAcrossRange(t *testing.T) {
	// A constant distribution must come back within the bin resolution
	// (bins are about 9 % wide, so 5 %) from 1 ms to 10 min.
	for _, v := range []time.Duration{
		time.Millisecond, 1700 * time.Microsecond, 13 * time.Millisecond, 250 * time.Millisecond,
		999 * time.Millisecond, 7 * time.Second, 42 * time.Second, 3 * time.Minute, 10 * time.Minute,
	} {
		r := metrics.New(clocktest.New(t0))
		for range 100 {
			r.Observe("b", metrics.Outcome{OK: true, Latency: v})
		}
		w := r.Window("b", time.Hour)
		want := float64(v) / float64(time.Millisecond)
		within(t, fmt.Sprintf("p50 of constant %v", v), w.LatencyMS.P50, want, 0.05)
		within(t, fmt.Sprintf("p99 of constant %v", v), w.LatencyMS.P99, want, 0.05)
	}
}

func TestDataLeavesWindowsAsTheClockMoves(t *testing.T) {
	clk := clocktest.New(t0)
	r := metrics.New(clk)
	for range 10 {
		r.Observe("b", metrics.Outcome{OK: true, Latency: 100 * time.Millisecond})
	}
	r.Observe("b", metrics.Outcome{Failover: true, Latency: 2 * time.Second})

	check := func(when string, want1m, want5m, want1h int64) {
		t.Helper()
		ws := r.Windows("b")
		if ws["1m"].Requests != want1m || ws["5m"].Requests != want5m || ws["1h"].Requests != want1h {
			t.Errorf("%s: requests 1m/5m/1h = %d/%d/%d, want %d/%d/%d", when,
				ws["1m"].Requests, ws["5m"].Requests, ws["1h"].Requests, want1m, want5m, want1h)
		}
		for _, k := range []string{"1m", "5m", "1h"} {
			if got, direct := ws[k], r.Window("b", map[string]time.Duration{"1m": time.Minute, "5m": 5 * time.Minute, "1h": time.Hour}[k]); got != direct {
				t.Errorf("%s: Windows[%q] = %+v but Window = %+v", when, k, got, direct)
			}
		}
	}
	check("at once", 11, 11, 11)
	clk.Advance(30 * time.Second)
	check("after 30s", 11, 11, 11)
	clk.Advance(31 * time.Second)
	check("after 61s", 0, 11, 11)
	if w := r.Window("b", time.Minute); w.LatencyMS != (metrics.Percentiles{}) || w.SuccessRate != 1 || w.RPS != 0 {
		t.Errorf("empty 1m window = %+v, want zero percentiles, success 1, rps 0", w)
	}
	if w := r.Window("b", 5*time.Minute); w.LatencyMS.P50 == 0 || w.Failovers != 1 || w.Failures != 1 {
		t.Errorf("5m window lost its data: %+v", w)
	}
	clk.Advance(5 * time.Minute)
	check("after 6m1s", 0, 0, 11)
	clk.Advance(55 * time.Minute)
	check("after 61m1s", 0, 0, 0)
	// Totals are forever.
	if c := r.Counters("b"); c != (metrics.Counters{Requests: 11, Successes: 10, Failures: 1, Failovers: 1}) {
		t.Errorf("Counters = %+v", c)
	}
}

func TestLongClockJumpClearsEverything(t *testing.T) {
	clk := clocktest.New(t0)
	r := metrics.New(clk)
	r.Observe("b", metrics.Outcome{OK: true, Latency: time.Second})
	clk.Advance(48 * time.Hour)
	r.Observe("b", metrics.Outcome{OK: true, Latency: time.Second})
	for k, w := range r.Windows("b") {
		if w.Requests != 1 {
			t.Errorf("%s after a two-day jump: %d requests, want 1", k, w.Requests)
		}
	}
}

func TestRPSAndSuccessRate(t *testing.T) {
	clk := clocktest.New(t0)
	r := metrics.New(clk)
	// Two minutes of traffic: 5 attempts per second, 1 in 5 a failure and
	// 1 in 10 a failover (failovers are failures too).
	for s := range 120 {
		for i := range 5 {
			n := s*5 + i
			o := metrics.Outcome{OK: n%5 != 0, Latency: 50 * time.Millisecond}
			if n%10 == 0 {
				o = metrics.Outcome{Failover: true, Latency: 3 * time.Second}
			}
			r.Observe("b", o)
		}
		clk.Advance(time.Second)
	}
	w1 := r.Window("b", time.Minute)
	within(t, "1m rps", w1.RPS, 5, 0.03)
	within(t, "1m success rate", w1.SuccessRate, 0.8, 0.03)
	within(t, "1m failovers share", float64(w1.Failovers)/float64(w1.Requests), 0.1, 0.05)
	if w1.Failures < w1.Failovers {
		t.Errorf("failures %d < failovers %d", w1.Failures, w1.Failovers)
	}
	// Failed attempts do not pollute latency: every success took 50 ms.
	within(t, "1m p99", w1.LatencyMS.P99, 50, 0.05)

	// The process has been up for two minutes: the 1h rate divides by
	// those two minutes, not by an hour.
	w60 := r.Window("b", time.Hour)
	if w60.Requests != 600 {
		t.Errorf("1h requests = %d, want 600", w60.Requests)
	}
	within(t, "1h rps", w60.RPS, 5, 0.03)

	// Other lengths round up to the finest ring's slots. The clock has just
	// entered a new, empty second, so 10 s covers 9 full seconds.
	if w := r.Window("b", 10*time.Second); w.Requests != 45 {
		t.Errorf("10s window: %d requests, want 45", w.Requests)
	}
	within(t, "2m rps", r.Window("b", 2*time.Minute).RPS, 5, 0.1)
}

func TestUnknownBackendAndJSONShape(t *testing.T) {
	r := metrics.New(clocktest.New(t0))
	w := r.Window("nobody", time.Minute)
	if w.Requests != 0 || w.SuccessRate != 1 {
		t.Errorf("unknown backend window = %+v", w)
	}
	if len(r.Windows("nobody")) != 3 {
		t.Errorf("Windows of an unknown backend should still have 3 keys")
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"requests":0,"rps":0,"success_rate":1,"failures":0,"failovers":0,` +
		`"latency_ms":{"p50":0,"p95":0,"p99":0},"ttft_ms":{"p50":0,"p95":0,"p99":0}}`
	if string(b) != want {
		t.Errorf("JSON\n got %s\nwant %s", b, want)
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	clk := clocktest.New(t0)
	r := metrics.New(clk)
	r.Observe("p/m", metrics.Outcome{OK: true})
	o := metrics.Outcome{OK: true, Latency: 200 * time.Millisecond, TTFT: 50 * time.Millisecond}
	if a := testing.AllocsPerRun(1000, func() {
		clk.Advance(7 * time.Millisecond) // also crosses slot boundaries
		r.Observe("p/m", o)
	}); a != 0 {
		t.Fatalf("Observe allocates %v times per call", a)
	}
}

func TestConcurrentObserve(t *testing.T) {
	clk := clocktest.New(t0)
	r := metrics.New(clk)
	const workers, per = 8, 2000
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range per {
				r.Observe(fmt.Sprintf("p/m%d", i%3), metrics.Outcome{OK: (i+g)%7 != 0, Latency: time.Duration(1+i%500) * time.Millisecond})
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, b := range r.Backends() {
				_ = r.Windows(b)
				_ = r.Window(b, 90*time.Second)
			}
			_ = r.WritePrometheus(&bytes.Buffer{})
			clk.Advance(100 * time.Millisecond)
		}
	})
	wg.Wait()
	close(stop)
	readers.Wait()
	var total int64
	for _, b := range r.Backends() {
		total += r.Counters(b).Requests
		// Within an hour nothing has fallen out of the 1h window.
		if c, w := r.Counters(b), r.Window(b, time.Hour); w.Requests != c.Requests {
			t.Errorf("%s: 1h window %d requests, counters %d", b, w.Requests, c.Requests)
		}
	}
	if total != workers*per {
		t.Fatalf("counted %d requests, want %d", total, workers*per)
	}
}

// promLine matches one line of the text format 0.0.4: a HELP or TYPE
// comment, or a sample with properly quoted and escaped label values.
var promLine = regexp.MustCompile(`^(?:` +
	`# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*` +
	`|# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (?:counter|gauge|summary|histogram|untyped)` +
	`|[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*\})? ` +
	`(?:NaN|[+-]Inf|[-+]?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)` +
	`)$`)

func TestWritePrometheus(t *testing.T) {
	clk := clocktest.New(t0)
	r := metrics.New(clk)
	weird := "we\"ird\\name\nx"
	for i := range 100 {
		r.Observe("groq/llama", metrics.Outcome{OK: true, Latency: ms(float64(100 + i)), TTFT: ms(20)})
	}
	r.Observe("groq/llama", metrics.Outcome{Failover: true})
	r.Observe(weird, metrics.Outcome{OK: false})

	var buf bytes.Buffer
	if err := r.WritePrometheus(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("output does not end with a newline")
	}
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !promLine.MatchString(line) {
			t.Errorf("line %d does not parse: %q", i+1, line)
		}
	}
	for _, want := range []string{
		"# TYPE freelane_backend_requests_total counter",
		`freelane_backend_requests_total{backend="groq/llama",outcome="success"} 100`,
		`freelane_backend_requests_total{backend="groq/llama",outcome="failure"} 1`,
		"# TYPE freelane_backend_failovers_total counter",
		`freelane_backend_failovers_total{backend="groq/llama"} 1`,
		"# TYPE freelane_backend_latency_seconds gauge",
		"# TYPE freelane_backend_ttft_seconds gauge",
		// The weird name is escaped, and it has no latency samples.
		`freelane_backend_requests_total{backend="we\"ird\\name\nx",outcome="failure"} 1`,
		`freelane_backend_latency_seconds{backend="we\"ird\\name\nx",quantile="0.95"} NaN`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	for series, want := range map[string]float64{
		`freelane_backend_latency_seconds{backend="groq/llama",quantile="0.5"}`:  0.1495,
		`freelane_backend_latency_seconds{backend="groq/llama",quantile="0.99"}`: 0.199,
		`freelane_backend_ttft_seconds{backend="groq/llama",quantile="0.95"}`:    0.020,
	} {
		m := regexp.MustCompile(regexp.QuoteMeta(series) + ` (\S+)\n`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("no %s sample", series)
			continue
		}
		got, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Errorf("%s: %v", series, err)
			continue
		}
		within(t, series, got, want, 0.05)
	}
	// Every sample belongs to a family announced by HELP and TYPE.
	for _, fam := range []string{"freelane_backend_requests_total", "freelane_backend_failovers_total",
		"freelane_backend_latency_seconds", "freelane_backend_ttft_seconds"} {
		if strings.Count(out, "# HELP "+fam+" ") != 1 || strings.Count(out, "# TYPE "+fam+" ") != 1 {
			t.Errorf("%s: want exactly one HELP and one TYPE line", fam)
		}
	}
	// The quantiles are the 5m window: after 6 minutes they are NaN.
	clk.Advance(6 * time.Minute)
	buf.Reset()
	if err := r.WritePrometheus(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `freelane_backend_latency_seconds{backend="groq/llama",quantile="0.5"} NaN`) {
		t.Errorf("5m quantiles did not expire:\n%s", buf.String())
	}
}

type failingWriter struct{}

var errDiskFull = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestWritePrometheusWrapsWriteErrors(t *testing.T) {
	r := metrics.New(nil)
	r.Observe("b", metrics.Outcome{OK: true})
	if err := r.WritePrometheus(failingWriter{}); !errors.Is(err, errDiskFull) {
		t.Fatalf("err = %v, want it to wrap %v", err, errDiskFull)
	}
}
