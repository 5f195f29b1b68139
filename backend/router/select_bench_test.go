package router_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"freelane/backend/llm"
	"freelane/backend/router"
	"freelane/backend/tier"
)

// BenchmarkSelect ranks a chain of 20 backends (five of them a pooled
// provider's keys) with each strategy, on warm latency stats, and fails
// if a ranking allocates; the session cases rank a request whose
// session's cache is warm on one of them.
func BenchmarkSelect(b *testing.B) {
	for _, name := range []string{"priority", "round_robin", "weighted", "least_latency", "cost", "auto",
		"priority/session", "round_robin/session", "cost/session", "auto/session"} {
		strategy, session, _ := strings.Cut(name, "/")
		b.Run(name, func(b *testing.B) {
			up := &scriptUp{name: "x"}
			var spec router.Spec
			chain := router.ChainSpec{Name: "c", Strategy: strategy, Weights: map[llm.BackendID]int{}, Priority: map[llm.BackendID]int{}}
			for i := range 15 {
				name := fmt.Sprintf("p%d", i)
				spec.Providers = append(spec.Providers, router.ProviderSpec{Name: name, Tier: tier.Own, HasKey: true, Up: up,
					Models: []router.ModelSpec{{ID: "m", Context: 128000, Price: router.Price{Known: i%3 != 0, Input: float64(i), Output: float64(2 * i)}}}})
				id := llm.BackendID{Provider: name, Model: "m"}
				chain.Backends = append(chain.Backends, id)
				chain.Weights[id] = 1 + i%3
				if i >= 12 {
					chain.Priority[id] = 1
				}
			}
			pool := router.ProviderSpec{Name: "pool", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{{ID: "m"}}}
			for k := range 5 {
				pool.Keys = append(pool.Keys, router.KeySpec{Label: fmt.Sprintf("k%d", k), Up: up})
			}
			spec.Providers = append(spec.Providers, pool)
			chain.Backends = append(chain.Backends, llm.BackendID{Provider: "pool", Model: "m"})
			spec.Chains = []router.ChainSpec{chain}
			r := router.New(router.Build(spec), nopGate{}, nil, nil, quiet)
			req := benchReq(b, false)
			req.Model = "c"
			if session != "" {
				req.Session = "5e55104"
			}
			// Warm the stats so the scoring strategies score.
			for range 10 {
				if _, f := r.Complete(b.Context(), req); f != nil {
					b.Fatal(f)
				}
			}
			for i := range 15 {
				pin := benchReq(b, false)
				pin.Model = fmt.Sprintf("p%d/m", i)
				for range 6 {
					r.Complete(b.Context(), pin)
				}
			}
			if n := r.RankOnce(req); n != 20 {
				b.Fatalf("%d candidates, want 20", n)
			}
			if a := testing.AllocsPerRun(100, func() { r.RankOnce(req) }); a != 0 {
				b.Fatalf("a selection allocates %v times, want 0", a)
			}
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				r.RankOnce(req)
			}
			if per := time.Since(start) / time.Duration(b.N); per > 2*time.Microsecond && !testing.Short() {
				b.Logf("%s per selection, over the 2 us budget", per)
			}
		})
	}
}
