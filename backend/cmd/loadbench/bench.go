package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"freelane/backend/clock"
)

// scenario is one kind of traffic measured on some targets.
type scenario struct {
	name string
	call call
	// chain is what FreeLane's clients name; the proxy and the upstream
	// are sent the model itself.
	chain string
	// compared scenarios run on the bare proxy too, and their added
	// latency is measured at one client against the upstream itself.
	compared bool
}

var scenarios = []scenario{
	{name: "non-stream", call: call{temperature: "0.2"}, chain: chainSame, compared: true},
	{name: "stream", call: call{stream: true, temperature: "0.2"}, chain: chainSame, compared: true},
	{name: "cross non-stream", call: call{temperature: "0.2"}, chain: chainCross},
	{name: "cross stream", call: call{stream: true, temperature: "0.2"}, chain: chainCross},
	{name: "cache hit", call: call{temperature: "0", wantHit: true}, chain: chainCached},
}

// memSample is a target's resident memory in kB.
type memSample struct {
	RSS  int64 `json:"rss_kb"`
	Peak int64 `json:"peak_kb"`
}

// loadReport is everything the normal mode measured.
type loadReport struct {
	Options  map[string]any       `json:"options"`
	Idle     map[string]memSample `json:"idle"`
	End      map[string]memSample `json:"after_load"`
	Runs     []result             `json:"runs"`
	Summary  []summaryRow         `json:"summary"`
	Ratios   map[string]float64   `json:"ratios"`
	Machine  map[string]any       `json:"machine"`
	Duration float64              `json:"duration_s"`
}

// benchLoad runs the normal mode: rounds of every scenario on the bare
// proxy and on FreeLane, interleaved, so that whatever else the machine
// does falls on both alike.
func benchLoad(ctx context.Context, clk clock.Clock, o options, s *stack, progress func(string)) (*loadReport, error) {
	rep := &loadReport{Idle: map[string]memSample{}, End: map[string]memSample{}}
	// The idle figure is taken after a settle period with no request yet
	// sent, which is what a router that was started and not yet used
	// holds.
	if !(loader{clk}).wait(ctx, o.settle) {
		return nil, ctx.Err()
	}
	for _, c := range s.routers() {
		rss, peak, err := memory(c.pid())
		if err != nil {
			return nil, err
		}
		rep.Idle[targetName(c)] = memSample{rss, peak}
	}
	up := target{name: "upstream", base: originOf(s.upstream.url), pid: s.upstream.pid(), model: modelNormal}
	px := target{name: "proxy", base: s.proxy.url, pid: s.proxy.pid(), model: modelNormal}
	fl := target{name: "freelane", base: s.freelane.url, pid: s.freelane.pid()}
	var tm *target
	if s.team != nil {
		tm = &target{name: teamTarget, base: s.team.url, pid: s.team.pid(), sidePid: s.redis.pid()}
	}
	l := loader{clk}
	for round := range o.rounds {
		// The order of the targets turns every round, so that none always
		// runs first, on a cooler machine or right after another.
		pair := []target{px, fl}
		if tm != nil {
			pair = append(pair, *tm)
		}
		for range round % len(pair) {
			pair = append(pair[1:], pair[0])
		}
		for _, sc := range scenarios {
			ts := pair
			if !sc.compared {
				ts = []target{fl}
			}
			concs := []int{o.conc, o.cpuConc}
			if sc.compared {
				concs = append(concs, 1)
			}
			for _, conc := range concs {
				run := ts
				if conc == 1 {
					run = append([]target{up}, ts...)
				}
				for _, t := range run {
					if t.name == "freelane" || t.name == teamTarget {
						t.model = sc.chain
					}
					r, err := l.run(ctx, t, sc.call, conc, o.warm, o.dur)
					if err != nil {
						return nil, fmt.Errorf("%s on %s at %d clients: %w", sc.name, t.name, conc, err)
					}
					if err := s.alive(); err != nil {
						return nil, err
					}
					r.Scenario, r.Round = sc.name, round+1
					rep.Runs = append(rep.Runs, r)
					progress(fmt.Sprintf("round %d/%d  %-16s %-8s c=%-3d %7.0f req/s  p50 %6.2f ms  %6.0f us CPU/req  %d errors",
						round+1, o.rounds, sc.name, t.name, conc, r.RPS, r.P50, r.CPUPerReq, r.Errors))
				}
			}
		}
	}
	for _, c := range s.routers() {
		rss, peak, err := memory(c.pid())
		if err != nil {
			return nil, err
		}
		rep.End[targetName(c)] = memSample{rss, peak}
	}
	rep.Summary = summarize(rep.Runs, o)
	rep.Ratios = ratios(rep)
	return rep, nil
}

// teamTarget names the FreeLane that counts on Redis.
const teamTarget = "freelane+redis"

// routers are the children whose memory is reported.
func (s *stack) routers() []*child {
	out := []*child{s.proxy, s.freelane}
	if s.team != nil {
		out = append(out, s.team)
	}
	return out
}

// targetName is the name a child is reported by.
func targetName(c *child) string {
	if c.name == "bareproxy" {
		return "proxy"
	}
	return c.name
}

// originOf strips the path from the upstream's OpenAI base URL.
func originOf(base string) string { return strings.TrimSuffix(base, "/v1") }

// stat is one figure over the rounds: the best round's and the median.
type stat struct {
	Best   float64 `json:"best"`
	Median float64 `json:"median"`
}

// summaryRow is one scenario on one target, over every round.
type summaryRow struct {
	Scenario string `json:"scenario"`
	Target   string `json:"target"`
	// Throughput and latency at -c clients.
	RPS       stat `json:"rps"`
	P50       stat `json:"p50_ms"`
	P99       stat `json:"p99_ms"`
	FirstByte stat `json:"first_byte_p50_ms"`
	// CPU per request at -cpu-c clients.
	CPU stat `json:"cpu_us_per_request"`
	// SideCPU is the CPU per request, at -cpu-c clients, of the server
	// the target calls (redis-server).
	SideCPU stat `json:"side_cpu_us_per_request,omitzero"`
	// p50 at one client, and what it adds to the upstream's own p50.
	P50At1   stat  `json:"p50_at_1_ms"`
	AddedP50 stat  `json:"added_p50_at_1_ms"`
	Errors   int64 `json:"errors"`
	Misses   int64 `json:"cache_misses"`
	Rounds   int   `json:"rounds"`
	Requests int   `json:"requests"`
	// errText is the first error seen, for the report.
	errText string
}

// summarize folds the rounds into one row per scenario and target. The
// best round is the one the machine disturbed least, since other work
// only ever adds time and CPU: the highest throughput, the lowest CPU per
// request and the lowest latencies. The median shows how steady it was.
func summarize(runs []result, o options) []summaryRow {
	var rows []summaryRow
	pick := func(sc, t string, conc int, f func(result) float64) (vals []float64) {
		for _, r := range runs {
			if r.Scenario == sc && r.Target == t && r.Conc == conc {
				vals = append(vals, f(r))
			}
		}
		return vals
	}
	team := slices.ContainsFunc(runs, func(r result) bool { return r.Target == teamTarget })
	for _, sc := range scenarios {
		ts := []string{"proxy", "freelane"}
		if team {
			ts = append(ts, teamTarget)
		}
		if !sc.compared {
			ts = []string{"freelane"}
		}
		for _, t := range ts {
			row := summaryRow{Scenario: sc.name, Target: t}
			row.RPS = best(pick(sc.name, t, o.conc, func(r result) float64 { return r.RPS }), true)
			row.P50 = best(pick(sc.name, t, o.conc, func(r result) float64 { return r.P50 }), false)
			row.P99 = best(pick(sc.name, t, o.conc, func(r result) float64 { return r.P99 }), false)
			if sc.call.stream {
				row.FirstByte = best(pick(sc.name, t, o.conc, func(r result) float64 { return r.FirstByte50 }), false)
			}
			row.CPU = best(pick(sc.name, t, o.cpuConc, func(r result) float64 { return r.CPUPerReq }), false)
			row.SideCPU = best(pick(sc.name, t, o.cpuConc, func(r result) float64 { return r.SideCPUPerReq }), false)
			if sc.compared {
				mine := pick(sc.name, t, 1, func(r result) float64 { return r.P50 })
				ups := pick(sc.name, "upstream", 1, func(r result) float64 { return r.P50 })
				row.P50At1 = best(mine, false)
				// Each round's added latency is against the upstream's p50
				// of the same round, measured just before.
				var added []float64
				for i := range min(len(mine), len(ups)) {
					added = append(added, mine[i]-ups[i])
				}
				row.AddedP50 = best(added, false)
			}
			for _, r := range runs {
				if r.Scenario == sc.name && r.Target == t {
					row.Errors += r.Errors
					row.Misses += r.CacheMisses
					row.Requests += r.Requests
					if row.errText == "" {
						row.errText = r.FirstError
					}
				}
			}
			row.Rounds = len(pick(sc.name, t, o.conc, func(result) float64 { return 0 }))
			rows = append(rows, row)
		}
	}
	return rows
}

// best is the best of vals (the highest when high is set, else the
// lowest) and their median.
func best(vals []float64, high bool) stat {
	if len(vals) == 0 {
		return stat{}
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	st := stat{Best: s[0]}
	if high {
		st.Best = s[len(s)-1]
	}
	if n := len(s); n%2 == 1 {
		st.Median = s[n/2]
	} else {
		st.Median = (s[n/2-1] + s[n/2]) / 2
	}
	return st
}

// row finds a summary row.
func (rep *loadReport) row(sc, t string) summaryRow {
	for _, r := range rep.Summary {
		if r.Scenario == sc && r.Target == t {
			return r
		}
	}
	return summaryRow{}
}

// ratios are the figures the performance goals are stated in, from the
// best rounds.
func ratios(rep *loadReport) map[string]float64 {
	q := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	out := map[string]float64{}
	for _, mode := range []string{"non-stream", "stream"} {
		p, f := rep.row(mode, "proxy"), rep.row(mode, "freelane")
		out["cpu_freelane_over_proxy_"+mode] = q(f.CPU.Best, p.CPU.Best)
		out["cpu_freelane_over_proxy_median_"+mode] = q(f.CPU.Median, p.CPU.Median)
		out["rps_freelane_over_proxy_"+mode] = q(f.RPS.Best, p.RPS.Best)
		out["added_p50_ms_freelane_"+mode] = f.AddedP50.Best
		out["added_p50_ms_proxy_"+mode] = p.AddedP50.Best
		out["cpu_cross_over_same_"+mode] = q(rep.row("cross "+mode, "freelane").CPU.Best, f.CPU.Best)
		if r := rep.row(mode, teamTarget); r.Rounds > 0 {
			out["rps_redis_over_freelane_"+mode] = q(r.RPS.Best, f.RPS.Best)
			out["rps_redis_over_freelane_median_"+mode] = q(r.RPS.Median, f.RPS.Median)
			out["p50_ms_redis_minus_freelane_"+mode] = r.P50.Best - f.P50.Best
			out["p50_at_1_ms_redis_minus_freelane_"+mode] = r.P50At1.Best - f.P50At1.Best
			out["cpu_redis_over_freelane_"+mode] = q(r.CPU.Best, f.CPU.Best)
			out["redis_server_cpu_us_"+mode] = r.SideCPU.Best
		}
	}
	out["idle_rss_mb_freelane"] = float64(rep.Idle["freelane"].RSS) / 1024
	out["idle_rss_mb_proxy"] = float64(rep.Idle["proxy"].RSS) / 1024
	return out
}
