package metrics

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// ContentType is the Content-Type of WritePrometheus's output (Prometheus
// text exposition format 0.0.4).
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// quantiles exported for the latency and TTFT gauges.
var promQuantiles = [...]struct {
	label string
	q     float64
}{{"0.5", 0.5}, {"0.95", 0.95}, {"0.99", 0.99}}

// WritePrometheus writes every backend's counters and 5-minute latency and
// TTFT quantiles to w in the Prometheus text format 0.0.4, backends sorted
// by name. Quantiles with no samples in the window are NaN, as Prometheus
// summaries report them.
//
// The quantiles are exported as gauges with a quantile label rather than
// as a summary: they describe a sliding 5-minute window, and a summary's
// _sum and _count series would have to be monotonic counters, which a
// sliding window cannot provide.
func (r *Registry) WritePrometheus(w io.Writer) error {
	names := r.Backends()
	type snap struct {
		name     string
		totals   Counters
		lat, ttf [len(promQuantiles)]float64
	}
	snaps := make([]snap, 0, len(names))
	el := r.elapsed(r.clock.Now())
	for _, name := range names {
		b := r.lookup(name)
		var s slot
		b.mu.Lock()
		g := &b.rings[ring5m]
		g.advance(int64(el / g.width))
		g.readSum(&s)
		t := b.totals
		b.mu.Unlock()
		sn := snap{name: r.label(name), totals: t}
		for i, pq := range promQuantiles {
			sn.lat[i], sn.ttf[i] = promSeconds(&s.lat, pq.q), promSeconds(&s.ttft, pq.q)
		}
		snaps = append(snaps, sn)
	}

	// Build the whole page first so a slow or failing writer never holds
	// any lock and never receives half a page from us.
	var buf bytes.Buffer
	header(&buf, "freelane_backend_requests_total", "counter",
		"Attempts that reached each backend, by outcome (success or failure; failovers are failures).")
	for _, s := range snaps {
		l := escapeLabel(s.name)
		fmt.Fprintf(&buf, "freelane_backend_requests_total{backend=\"%s\",outcome=\"success\"} %d\n", l, s.totals.Successes)
		fmt.Fprintf(&buf, "freelane_backend_requests_total{backend=\"%s\",outcome=\"failure\"} %d\n", l, s.totals.Failures)
	}
	header(&buf, "freelane_backend_failovers_total", "counter",
		"Attempts that failed on each backend and moved on to the next backend of the chain.")
	for _, s := range snaps {
		fmt.Fprintf(&buf, "freelane_backend_failovers_total{backend=\"%s\"} %d\n", escapeLabel(s.name), s.totals.Failovers)
	}
	header(&buf, "freelane_backend_latency_seconds", "gauge",
		"Total latency quantiles of successful attempts over the last 5 minutes.")
	for _, s := range snaps {
		writeQuantiles(&buf, "freelane_backend_latency_seconds", s.name, s.lat)
	}
	header(&buf, "freelane_backend_ttft_seconds", "gauge",
		"Time-to-first-token quantiles of successful streams over the last 5 minutes.")
	for _, s := range snaps {
		writeQuantiles(&buf, "freelane_backend_ttft_seconds", s.name, s.ttf)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("metrics: write prometheus text: %w", err)
	}
	return nil
}

func header(buf *bytes.Buffer, name, typ, help string) {
	fmt.Fprintf(buf, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

func writeQuantiles(buf *bytes.Buffer, metric, backend string, vals [len(promQuantiles)]float64) {
	l := escapeLabel(backend)
	for i, pq := range promQuantiles {
		fmt.Fprintf(buf, "%s{backend=\"%s\",quantile=\"%s\"} %s\n", metric, l, pq.label, formatFloat(vals[i]))
	}
}

// promSeconds is a quantile in seconds, NaN when the histogram is empty.
func promSeconds(d *dist, q float64) float64 {
	if d.n == 0 {
		return math.NaN()
	}
	return d.quantile(q) / float64(time.Second)
}

func formatFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Label values escape backslash, double quote and line feed; HELP text
// escapes only backslash and line feed (text format 0.0.4).
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
