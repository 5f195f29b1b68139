package gateway

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"freelane/backend/router"
	"freelane/backend/store"
)

// When a chain's routing is said to keep breaking warm prompt caches: at
// least warnMinTurns session turns followed a warm turn, and more than
// warnChangedShare of them went to another backend.
const (
	warnMinTurns     = 10
	warnChangedShare = 0.2
)

// CachingView is what GET /api/caching answers: what caching did over the
// window ending now, with the warnings it calls for.
type CachingView struct {
	// Window is the window's length as asked ("24h0m0s").
	Window string `json:"window"`
	store.CachingReport
	// Warnings name the chains whose routing keeps breaking warm prompt
	// caches, the worst first.
	Warnings []CachingWarning `json:"warnings"`
	// Store is the response cache's size now; nil while it is off and
	// empty.
	Store *ResponseCacheSize `json:"store"`
}

// CachingWarning is one chain whose session turns keep changing backend
// while their prompt cache is warm.
type CachingWarning struct {
	Chain   string `json:"chain"`
	Turns   int    `json:"turns"`
	Changed int    `json:"changed"`
	Message string `json:"message"`
}

// ResponseCacheSize is the response cache's size.
type ResponseCacheSize struct {
	Entries  int   `json:"entries"`
	Bytes    int64 `json:"bytes"`
	MaxBytes int64 `json:"max_bytes"`
}

// Caching reads the caching view of the window that ends now from the
// request log.
func (a adminView) Caching(ctx context.Context, window time.Duration) (any, error) {
	return a.g.caching(ctx, window)
}

func (g *Gateway) caching(ctx context.Context, window time.Duration) (CachingView, error) {
	now := g.clock.Now()
	g.mu.Lock()
	cfg := g.cfg
	g.mu.Unlock()
	// A turn finds its provider's cache warm for as long as the provider
	// keeps it, which is how long the router keeps a session on it.
	warm := map[string]time.Duration{}
	for _, p := range cfg.Providers {
		if d := g.cacheTTL(p); d > 0 {
			warm[p.Name] = d
		}
	}
	rep, err := g.db.Caching(ctx, store.CachingQuery{From: now.Add(-window), To: now, WarmFor: router.DefaultCacheTTL, WarmByProvider: warm})
	if err != nil {
		return CachingView{}, err
	}
	v := CachingView{Window: window.String(), CachingReport: rep, Warnings: cachingWarnings(rep.Chains)}
	if g.rcache != nil {
		if st := g.rcache.Stats(); st.Enabled || st.Entries > 0 {
			v.Store = &ResponseCacheSize{Entries: st.Entries, Bytes: st.Bytes, MaxBytes: st.MaxBytes}
		}
	}
	return v, nil
}

// cachingWarnings are the chains whose session turns changed backend too
// often while their cache was warm, the largest share first.
func cachingWarnings(chains []store.ChainTurns) []CachingWarning {
	out := []CachingWarning{}
	for _, c := range chains {
		if c.Turns < warnMinTurns || float64(c.Changed) <= warnChangedShare*float64(c.Turns) {
			continue
		}
		out = append(out, CachingWarning{Chain: c.Chain, Turns: c.Turns, Changed: c.Changed,
			Message: fmt.Sprintf("chain %s's routing keeps breaking warm prompt caches: %d of %d session turns changed backend", c.Chain, c.Changed, c.Turns)})
	}
	// Worst first; the chains came sorted by name, which breaks ties.
	slices.SortStableFunc(out, func(a, b CachingWarning) int {
		return cmp.Compare(b.Changed*a.Turns, a.Changed*b.Turns)
	})
	return out
}
