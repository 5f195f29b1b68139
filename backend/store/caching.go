package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"freelane/backend/llm"
)

// CachingQuery selects the requests Caching adds up: those started from
// From (inclusive) to To (exclusive).
type CachingQuery struct {
	From, To time.Time
	// Sessions is how many of the most recent sessions are listed:
	// default DefaultCachingSessions, at most MaxCachingSessions.
	Sessions int
	// WarmFor is how long a provider keeps a prompt cache warm after a
	// turn: a session's turn that came later than this after its previous
	// one found the cache cold anyway, so it is not counted as a turn that
	// could break it. Default DefaultWarmFor.
	WarmFor time.Duration
	// WarmByProvider is the cache lifetime of the providers whose
	// lifetime is not WarmFor, by provider name; the lifetime that counts
	// for a turn is that of the provider that served the turn before it.
	WarmByProvider map[string]time.Duration
}

// Bounds and defaults of a CachingQuery.
const (
	DefaultCachingSessions = 50
	MaxCachingSessions     = 200
	// DefaultWarmFor is the prompt-cache lifetime most providers give
	// (Anthropic's and OpenAI's default of five minutes).
	DefaultWarmFor = 5 * time.Minute
	// maxSessionBackends bounds the backends listed for one session.
	maxSessionBackends = 8
)

// CachingReport is what caching did over a time window, read from the
// request log.
type CachingReport struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Backends are the backends that served requests in the window, the
	// most prompt tokens first.
	Backends []BackendCaching `json:"backends"`
	// Sessions are the most recent sessions, the latest first.
	Sessions []SessionCaching `json:"sessions"`
	// Response is what the response cache did.
	Response ResponseCacheTotals `json:"response"`
	// Chains are the session turns each chain routed, and how many of
	// them went to another backend than their session's previous turn
	// while its cache was warm; chains without session turns are left out.
	Chains []ChainTurns `json:"chains"`
}

// BackendCaching is one backend's prompt caching over the window. A
// response-cache hit called no backend and is not counted here.
type BackendCaching struct {
	Backend  string `json:"backend"`
	Requests int    `json:"requests"`
	// PromptTokens counts every input token; CachedTokens the part the
	// provider read from its cache, CacheWriteTokens the part it wrote.
	PromptTokens     int64 `json:"prompt_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// HitShare is CachedTokens / PromptTokens, 0 without prompt tokens.
	HitShare float64 `json:"hit_share"`
	// Saved is what the prompt cache saved, in the user's currency.
	Saved float64 `json:"saved"`
}

// SessionCaching is one session's prompt caching over the window.
type SessionCaching struct {
	// Session is the first 16 hex digits of the session's key.
	Session string `json:"session"`
	// Dialect is the one the client spoke on its latest turn, Chain the
	// chain that turn was routed through.
	Dialect llm.Dialect `json:"dialect"`
	Chain   string      `json:"chain"`
	// Backends are the backends that served the session's turns, sorted
	// (at most eight).
	Backends     []string  `json:"backends"`
	Turns        int       `json:"turns"`
	PromptTokens int64     `json:"prompt_tokens"`
	CachedTokens int64     `json:"cached_tokens"`
	HitShare     float64   `json:"hit_share"`
	Saved        float64   `json:"saved"`
	LastSeen     time.Time `json:"last_seen"`
}

// ResponseCacheTotals counts the response cache's outcomes over the window.
type ResponseCacheTotals struct {
	Hits      int `json:"hits"`
	Misses    int `json:"misses"`
	Bypasses  int `json:"bypasses"`
	Refreshes int `json:"refreshes"`
	// HitRate is Hits over the lookups that could have hit (hits, misses
	// and refreshes; a bypass did not look), 0 without any.
	HitRate float64 `json:"hit_rate"`
	// Saved is the cost of the answers the hits replayed, when they were
	// first made.
	Saved float64 `json:"saved"`
}

// ChainTurns is how a chain's routing treated warm prompt caches.
type ChainTurns struct {
	Chain string `json:"chain"`
	// Turns are the session turns whose previous turn of the same
	// session was served at most WarmFor before; Changed are those served
	// by another backend than that previous turn.
	Turns   int `json:"turns"`
	Changed int `json:"changed"`
}

// Caching adds up what caching did over q's window: per backend, per
// recent session, for the response cache, and per chain the session turns
// that changed backend while their cache was warm. Each part is one query
// over the requests_listing index, which leads with the start time and
// covers every column read, so the cost follows the number of requests in
// the window, not the length of the log.
func (d *DB) Caching(ctx context.Context, q CachingQuery) (CachingReport, error) {
	if !q.From.Before(q.To) {
		return CachingReport{}, fmt.Errorf("store: caching: the window's start %v is not before its end %v", q.From, q.To)
	}
	n := q.Sessions
	if n <= 0 {
		n = DefaultCachingSessions
	}
	n = min(n, MaxCachingSessions)
	warm := q.WarmFor
	if warm <= 0 {
		warm = DefaultWarmFor
	}
	from, to := q.From.UnixMilli(), q.To.UnixMilli()
	rep := CachingReport{From: q.From, To: q.To, Backends: []BackendCaching{}, Sessions: []SessionCaching{}, Chains: []ChainTurns{}}
	var err error
	if rep.Backends, err = d.backendCaching(ctx, from, to); err != nil {
		return CachingReport{}, err
	}
	if rep.Sessions, err = d.sessionCaching(ctx, from, to, n); err != nil {
		return CachingReport{}, err
	}
	if rep.Response, err = d.responseCacheTotals(ctx, from, to); err != nil {
		return CachingReport{}, err
	}
	warmMS := func(backend string) int64 {
		id, _ := llm.CutBackendID(backend)
		if w, ok := q.WarmByProvider[id.Provider]; ok && w > 0 {
			return w.Milliseconds()
		}
		return warm.Milliseconds()
	}
	if rep.Chains, err = d.chainTurns(ctx, from, to, warmMS); err != nil {
		return CachingReport{}, err
	}
	return rep, nil
}

// share is part / whole, 0 for an empty whole.
func share(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

func (d *DB) backendCaching(ctx context.Context, from, to int64) ([]BackendCaching, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT backend, COUNT(*), SUM(prompt_tokens), SUM(cache_read_tokens), SUM(cache_write_tokens), SUM(saved)
FROM requests INDEXED BY requests_listing
WHERE started_at >= ? AND started_at < ? AND backend <> '' AND cache <> 'hit'
GROUP BY backend
ORDER BY SUM(prompt_tokens) DESC, backend`, from, to)
	if err != nil {
		return nil, fmt.Errorf("store: caching per backend: %w", err)
	}
	defer rows.Close()
	out := []BackendCaching{}
	for rows.Next() {
		var b BackendCaching
		if err := rows.Scan(&b.Backend, &b.Requests, &b.PromptTokens, &b.CachedTokens, &b.CacheWriteTokens, &b.Saved); err != nil {
			return nil, fmt.Errorf("store: caching per backend: %w", err)
		}
		b.HitShare = share(b.CachedTokens, b.PromptTokens)
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: caching per backend: %w", err)
	}
	return out, nil
}

// sessionCaching lists the n sessions seen last in the window. A
// response-cache hit counts as a turn and for what it saved, but not in
// the prompt-cache share: its tokens are those of the call that first
// made the answer, and no provider saw them this time. SQLite
// takes the bare dialect and chain columns from the row of MAX(started_at),
// which is the session's latest turn.
func (d *DB) sessionCaching(ctx context.Context, from, to int64, n int) ([]SessionCaching, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT session, MAX(started_at), dialect, chain, COUNT(*),
	SUM(CASE WHEN cache = 'hit' THEN 0 ELSE prompt_tokens END), SUM(CASE WHEN cache = 'hit' THEN 0 ELSE cache_read_tokens END),
	SUM(saved), GROUP_CONCAT(DISTINCT NULLIF(backend, ''))
FROM requests INDEXED BY requests_listing
WHERE started_at >= ? AND started_at < ? AND session <> ''
GROUP BY session
ORDER BY MAX(started_at) DESC, session
LIMIT ?`, from, to, n)
	if err != nil {
		return nil, fmt.Errorf("store: caching per session: %w", err)
	}
	defer rows.Close()
	out := []SessionCaching{}
	for rows.Next() {
		var (
			s        SessionCaching
			last     int64
			dialect  string
			backends *string
		)
		if err := rows.Scan(&s.Session, &last, &dialect, &s.Chain, &s.Turns, &s.PromptTokens, &s.CachedTokens, &s.Saved, &backends); err != nil {
			return nil, fmt.Errorf("store: caching per session: %w", err)
		}
		s.LastSeen, s.Dialect = time.UnixMilli(last), llm.Dialect(dialect)
		s.HitShare = share(s.CachedTokens, s.PromptTokens)
		s.Backends = sessionBackends(backends)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: caching per session: %w", err)
	}
	return out, nil
}

// sessionBackends splits GROUP_CONCAT's list (backend names hold no
// comma), sorted and bounded.
func sessionBackends(list *string) []string {
	out := []string{}
	if list == nil || *list == "" {
		return out
	}
	out = strings.Split(*list, ",")
	slices.Sort(out)
	return out[:min(len(out), maxSessionBackends)]
}

func (d *DB) responseCacheTotals(ctx context.Context, from, to int64) (ResponseCacheTotals, error) {
	var r ResponseCacheTotals
	rows, err := d.sql.QueryContext(ctx, `SELECT cache, COUNT(*), SUM(saved)
FROM requests INDEXED BY requests_listing
WHERE started_at >= ? AND started_at < ? AND cache <> ''
GROUP BY cache`, from, to)
	if err != nil {
		return r, fmt.Errorf("store: response cache totals: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			outcome string
			count   int
			saved   float64
		)
		if err := rows.Scan(&outcome, &count, &saved); err != nil {
			return r, fmt.Errorf("store: response cache totals: %w", err)
		}
		switch llm.CacheOutcome(outcome) {
		case llm.CacheHit:
			r.Hits, r.Saved = count, saved
		case llm.CacheMiss:
			r.Misses = count
		case llm.CacheBypassed:
			r.Bypasses = count
		case llm.CacheRefreshed:
			r.Refreshes = count
		}
	}
	if err := rows.Err(); err != nil {
		return r, fmt.Errorf("store: response cache totals: %w", err)
	}
	r.HitRate = share(int64(r.Hits), int64(r.Hits+r.Misses+r.Refreshes))
	return r, nil
}

// chainTurns walks the window's served session turns in the order they
// started (the order of the index, so nothing is sorted), keeping each
// session's previous turn, and counts per chain the turns that followed a
// warm previous turn and those of them that another backend served; a
// previous turn is warm for as long as warmMS says the cache of the
// backend that served it lasts. A response-cache hit served from no
// backend and is left out, as are failed turns.
func (d *DB) chainTurns(ctx context.Context, from, to int64, warmMS func(backend string) int64) ([]ChainTurns, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT session, started_at, backend, chain
FROM requests INDEXED BY requests_listing
WHERE started_at >= ? AND started_at < ? AND session <> '' AND backend <> '' AND cache <> 'hit'
ORDER BY started_at`, from, to)
	if err != nil {
		return nil, fmt.Errorf("store: session turns per chain: %w", err)
	}
	defer rows.Close()
	type prevTurn struct {
		at      int64
		backend string
	}
	prev := map[string]prevTurn{}
	byChain := map[string]*ChainTurns{}
	var (
		session, backend, chain string
		at                      int64
	)
	for rows.Next() {
		if err := rows.Scan(&session, &at, &backend, &chain); err != nil {
			return nil, fmt.Errorf("store: session turns per chain: %w", err)
		}
		p, seen := prev[session]
		if seen && at-p.at <= warmMS(p.backend) {
			c := byChain[chain]
			if c == nil {
				c = &ChainTurns{Chain: chain}
				byChain[chain] = c
			}
			c.Turns++
			if backend != p.backend {
				c.Changed++
			}
		}
		prev[session] = prevTurn{at: at, backend: backend}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: session turns per chain: %w", err)
	}
	out := make([]ChainTurns, 0, len(byChain))
	for _, c := range byChain {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b ChainTurns) int { return strings.Compare(a.Chain, b.Chain) })
	return out, nil
}
