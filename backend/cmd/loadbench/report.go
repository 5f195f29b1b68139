package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printLoad writes the normal mode's table and the ratios the goals are
// stated in.
func printLoad(w io.Writer, rep *loadReport, o options) {
	fmt.Fprintf(w, "\nloadbench: %d rounds of %v (after %v of warm-up) per run, bare proxy and FreeLane interleaved, swapping order each round; %s\n",
		o.rounds, o.dur, o.warm, tunedRuntime())
	fmt.Fprintf(w, "figures are the best round's (the highest throughput, the lowest CPU and latency), the median of the rounds in brackets\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scenario\ttarget\treq/s @%d\tp50 ms @%d\tp99 ms @%d\t1st byte p50 ms @%d\tCPU us/req @%d\tp50 ms @1\tadded p50 ms @1\terrors\t\n",
		o.conc, o.conc, o.conc, o.conc, o.cpuConc)
	for _, r := range rep.Summary {
		first, added, at1 := "-", "-", "-"
		if r.FirstByte.Best > 0 {
			first = fmt.Sprintf("%.2f", r.FirstByte.Best)
		}
		if r.P50At1.Best > 0 {
			at1 = fmt.Sprintf("%.3f", r.P50At1.Best)
			added = fmt.Sprintf("%+.3f", r.AddedP50.Best)
		}
		errs := fmt.Sprint(r.Errors)
		if r.Misses > 0 {
			errs += fmt.Sprintf(" (%d cache misses)", r.Misses)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f (%.0f)\t%.2f\t%.2f\t%s\t%.0f (%.0f)\t%s\t%s\t%s\t\n",
			r.Scenario, label(r.Target), r.RPS.Best, r.RPS.Median, r.P50.Best, r.P99.Best, first, r.CPU.Best, r.CPU.Median, at1, added, errs)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nresident memory (VmRSS): idle after %v  bare proxy %s, FreeLane %s;  after the load  bare proxy %s (peak %s), FreeLane %s (peak %s)\n",
		o.settle, mb(rep.Idle["proxy"].RSS), mb(rep.Idle["freelane"].RSS),
		mb(rep.End["proxy"].RSS), mb(rep.End["proxy"].Peak), mb(rep.End["freelane"].RSS), mb(rep.End["freelane"].Peak))

	q := rep.Ratios
	fmt.Fprintf(w, "\nthe goals, from the best rounds (medians in brackets):\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  CPU per request, FreeLane / bare proxy\tnon-stream %.2fx (%.2fx), stream %.2fx (%.2fx)\tgoal at most 1.00x: %s\n",
		q["cpu_freelane_over_proxy_non-stream"], q["cpu_freelane_over_proxy_median_non-stream"],
		q["cpu_freelane_over_proxy_stream"], q["cpu_freelane_over_proxy_median_stream"],
		verdict(q["cpu_freelane_over_proxy_non-stream"] <= 1 && q["cpu_freelane_over_proxy_stream"] <= 1))
	fmt.Fprintf(tw, "  throughput, FreeLane / bare proxy\tnon-stream %.2fx, stream %.2fx\tgoal at least 1.00x: %s\n",
		q["rps_freelane_over_proxy_non-stream"], q["rps_freelane_over_proxy_stream"],
		verdict(q["rps_freelane_over_proxy_non-stream"] >= 1 && q["rps_freelane_over_proxy_stream"] >= 1))
	fmt.Fprintf(tw, "  added p50 at 1 client, FreeLane vs bare proxy\tnon-stream %+.3f vs %+.3f ms, stream %+.3f vs %+.3f ms\tgoal no more than the proxy's: %s\n",
		q["added_p50_ms_freelane_non-stream"], q["added_p50_ms_proxy_non-stream"], q["added_p50_ms_freelane_stream"], q["added_p50_ms_proxy_stream"],
		verdict(q["added_p50_ms_freelane_non-stream"] <= q["added_p50_ms_proxy_non-stream"] && q["added_p50_ms_freelane_stream"] <= q["added_p50_ms_proxy_stream"]))
	fmt.Fprintf(tw, "  idle RSS, FreeLane\t%.1f MB (bare proxy %.1f MB)\tgoal at most 30 MB: %s\n",
		q["idle_rss_mb_freelane"], q["idle_rss_mb_proxy"], verdict(q["idle_rss_mb_freelane"] <= 30))
	fmt.Fprintf(tw, "  CPU per request, cross-dialect / same-dialect\tnon-stream %.2fx, stream %.2fx\tgoal at most 1.30x: %s\n",
		q["cpu_cross_over_same_non-stream"], q["cpu_cross_over_same_stream"],
		verdict(q["cpu_cross_over_same_non-stream"] <= 1.3 && q["cpu_cross_over_same_stream"] <= 1.3))
	if _, ok := q["rps_redis_over_freelane_stream"]; ok {
		fmt.Fprintf(tw, "  throughput, FreeLane on Redis / FreeLane alone\tnon-stream %.2fx (%.2fx), stream %.2fx (%.2fx)\tgoal at least 0.85x: %s\n",
			q["rps_redis_over_freelane_non-stream"], q["rps_redis_over_freelane_median_non-stream"],
			q["rps_redis_over_freelane_stream"], q["rps_redis_over_freelane_median_stream"],
			verdict(q["rps_redis_over_freelane_non-stream"] >= 0.85 && q["rps_redis_over_freelane_stream"] >= 0.85))
		fmt.Fprintf(tw, "  p50 added by Redis\tnon-stream %+.3f ms @%d, %+.3f ms @1; stream %+.3f ms @%d, %+.3f ms @1\tFreeLane's CPU per request %.2fx, %.2fx; redis-server's own %.0f, %.0f us per request\n",
			q["p50_ms_redis_minus_freelane_non-stream"], o.conc, q["p50_at_1_ms_redis_minus_freelane_non-stream"],
			q["p50_ms_redis_minus_freelane_stream"], o.conc, q["p50_at_1_ms_redis_minus_freelane_stream"],
			q["cpu_redis_over_freelane_non-stream"], q["cpu_redis_over_freelane_stream"],
			q["redis_server_cpu_us_non-stream"], q["redis_server_cpu_us_stream"])
	}
	tw.Flush()
	for _, r := range rep.Summary {
		if r.errText != "" {
			fmt.Fprintf(w, "first error, %s on %s: %s\n", r.Scenario, label(r.Target), r.errText)
		}
	}
}

// printScale writes what the scale mode saw.
func printScale(w io.Writer, phases []openPhase, o options) {
	if len(phases) == 0 {
		return
	}
	fmt.Fprintf(w, "\nloadbench scale: %s\n\n", tunedRuntime())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "RSS all open is the most VmRSS while every request was open (the first reading, when the last one opened, in brackets); kB per open = (RSS all open - idle RSS) / N\n\n")
	fmt.Fprintf(tw, "load\ttarget\topen at once\tsecs to open\tidle RSS\tRSS all open\tpeak RSS\tkB per open\tCPU us/req\tp50 ms\tp99 ms\tmax ms\tcompleted\terrors\t\n")
	for _, p := range phases {
		what := fmt.Sprintf("%d streams of %v", p.N, o.streamDur)
		if p.Kind == "slow" {
			what = fmt.Sprintf("%d slow (%v) requests", p.N, o.slowLatency)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%s\t%s (%s)\t%s\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%d\t\n",
			what, label(p.Target), p.PeakOpen, p.OpenSeconds, mb(p.IdleRSS), mb(p.OpenRSS), mb(p.AtOpenRSS), mb(p.PeakRSS), p.PerOpenKB, p.CPUPerReq, p.P50, p.P99, p.Max, p.Completed, p.Errors)
	}
	tw.Flush()
	for _, p := range phases {
		for _, l := range p.Live {
			fmt.Fprintf(w, "%s, %s open: %s answered %d of %d checks within %v (slowest %.1f ms)", p.Kind, label(p.Target), l.Path, l.Checks-l.Failures, l.Checks, o.liveBound, l.MaxMS)
			if l.FirstFailure != "" {
				fmt.Fprintf(w, "; first failure: %s", l.FirstFailure)
			}
			fmt.Fprintln(w)
		}
		if p.FirstError != "" {
			fmt.Fprintf(w, "%s, %s: first error: %s\n", p.Kind, label(p.Target), p.FirstError)
		}
	}
	for _, kind := range []string{"streams", "slow"} {
		var px, fl *openPhase
		for i := range phases {
			if phases[i].Kind == kind {
				if phases[i].Target == "proxy" {
					px = &phases[i]
				} else {
					fl = &phases[i]
				}
			}
		}
		if px == nil || fl == nil {
			continue
		}
		atOpen := func(p *openPhase) float64 { return float64(p.AtOpenRSS-p.IdleRSS) / float64(p.N) }
		fmt.Fprintf(w, "memory per open %s, FreeLane / bare proxy: %.1f / %.1f kB = %.2fx (goal at most 1.00x: %s; when the last one opened %.1f / %.1f kB = %.2fx); errors FreeLane %d, bare proxy %d (goal 0: %s)\n",
			map[string]string{"streams": "stream", "slow": "slow request"}[kind],
			fl.PerOpenKB, px.PerOpenKB, ratio(fl.PerOpenKB, px.PerOpenKB), verdict(fl.PerOpenKB <= px.PerOpenKB),
			atOpen(fl), atOpen(px), ratio(atOpen(fl), atOpen(px)),
			fl.Errors, px.Errors, verdict(fl.Errors == 0 && px.Errors == 0))
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "not met"
}

// label is how a target is named in the tables.
func label(t string) string {
	switch t {
	case "proxy":
		return "bare proxy"
	case "freelane":
		return "FreeLane"
	case teamTarget:
		return "FreeLane on Redis"
	}
	return t
}

// mb writes kB as MB.
func mb(kb int64) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }
