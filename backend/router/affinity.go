package router

import (
	"container/list"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/llm"
)

// DefaultCacheTTL is how long a provider is taken to keep a prompt-cache
// entry after its last use when neither the configuration nor the catalog
// says: the lifetime of Anthropic's default breakpoints and about the
// shortest of OpenAI's automatic cache.
const DefaultCacheTTL = 5 * time.Minute

// MaxSessions bounds the sessions the router remembers; beyond it the
// least recently served go first.
const MaxSessions = 100_000

// Home is where a session's conversation was served last and until when
// its provider's prompt cache is taken to be warm there.
type Home struct {
	Backend llm.BackendID
	Until   time.Time
}

// SessionStore remembers each session's home, per route: a session may
// send its main turns to one chain and short side questions (titles,
// summaries) to another, and each has its own warm cache. The router
// keeps one in memory; in a team it also asks the team's (see
// ShareSessionsWith). Home is called on every ranking and must not
// allocate when it answers from memory.
type SessionStore interface {
	// Home returns the session's home on the route, if one is warm at now.
	Home(session, route string, now time.Time) (Home, bool)
	// SetHome records that the backend served the session on the route.
	SetHome(session, route string, h Home, now time.Time)
}

// sessionKey names one session on one route.
type sessionKey struct{ session, route string }

// sessionMap is the in-memory SessionStore: a map bounded to max entries,
// least recently served evicted first, with expired entries swept from
// the old end on every insert, so no goroutine is needed.
type sessionMap struct {
	mu  sync.RWMutex
	max int
	m   map[sessionKey]*list.Element
	// lru holds *sessionEntry, most recently served at the front.
	lru list.List
}

type sessionEntry struct {
	key  sessionKey
	home Home
	// checked is when the home was last set here or read from the team
	// (see teamSessions); zero outside a team.
	checked time.Time
}

// sweepPerInsert bounds the expired entries one insert removes, so that a
// burst of expiries is spread over the inserts that follow.
const sweepPerInsert = 8

func newSessionMap(max int) *sessionMap {
	return &sessionMap{max: max, m: map[sessionKey]*list.Element{}}
}

// Home implements SessionStore.
func (s *sessionMap) Home(session, route string, now time.Time) (Home, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.m[sessionKey{session, route}]
	if !ok {
		return Home{}, false
	}
	h := e.Value.(*sessionEntry).home
	if !now.Before(h.Until) {
		return Home{}, false
	}
	return h, true
}

// SetHome implements SessionStore.
func (s *sessionMap) SetHome(session, route string, h Home, now time.Time) {
	s.set(session, route, h, now, time.Time{})
}

// set records the session's home, and when it was last checked.
func (s *sessionMap) set(session, route string, h Home, now, checked time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sessionKey{session, route}
	if e, ok := s.m[k]; ok {
		se := e.Value.(*sessionEntry)
		se.home, se.checked = h, checked
		s.lru.MoveToFront(e)
		return
	}
	for range sweepPerInsert {
		old := s.lru.Back()
		if old == nil || now.Before(old.Value.(*sessionEntry).home.Until) {
			break
		}
		s.remove(old)
	}
	for s.lru.Len() >= s.max && s.lru.Len() > 0 {
		s.remove(s.lru.Back())
	}
	s.m[k] = s.lru.PushFront(&sessionEntry{key: k, home: h, checked: checked})
}

// peek returns the session's home as remembered, warm or not, and when
// it was last checked; ok is false when the session is not remembered.
func (s *sessionMap) peek(session, route string) (h Home, checked time.Time, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.m[sessionKey{session, route}]
	if !ok {
		return Home{}, time.Time{}, false
	}
	se := e.Value.(*sessionEntry)
	return se.home, se.checked, true
}

func (s *sessionMap) remove(e *list.Element) {
	delete(s.m, e.Value.(*sessionEntry).key)
	s.lru.Remove(e)
}

// Len is how many sessions are remembered.
func (s *sessionMap) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lru.Len()
}

// SetSessionStore replaces the in-memory store of session homes. Call it
// before serving.
func (r *Router) SetSessionStore(s SessionStore) { r.sessions = s }

// routeName is what a route's sessions and cache breaks are kept under:
// its chain, or for a pin or a bare model id its first backend, which
// names the route as well without allocating.
func routeName(route Route) string {
	if route.Chain != "" || len(route.Backends) == 0 {
		return route.Chain
	}
	return route.Backends[0].name
}

// findHome looks the request's session up before ranking, so that the
// cost of leaving its warm cache is in the scores and the warm backend
// can go first.
func (r *Router) findHome(req *llm.Request, route Route, now time.Time, sel *selection) {
	sel.warm = -1
	if req.Session == "" || r.sessions == nil || sel.manual {
		// The manual gear is the listed order exactly, for a run that
		// must be repeatable: no session moves a backend up.
		return
	}
	sel.session = true
	h, ok := r.sessions.Home(req.Session, routeName(route), now)
	if !ok {
		return
	}
	sel.home, sel.hasHome = h, true
}

// keepWarm puts the session's warm backend first in its tier, ahead of
// the strategy and the key rotation, when the request may call it. A warm
// backend this request cannot use (excluded by a filter or a shortcut,
// passed by for now, or not in the route at all) leaves the ranking as
// the strategy made it.
func (r *Router) keepWarm(sel *selection) {
	if !sel.hasHome {
		return
	}
	pos := -1
	for p, i := range sel.seq {
		if sel.cands[i].b.ID == sel.home.Backend {
			pos = p
			break
		}
	}
	if pos < 0 {
		return
	}
	i := sel.seq[pos]
	sel.warm = i
	c := &sel.cands[i]
	if c.verdict != ordered {
		return
	}
	// Priority tiers are the user's order: the warm backend leads its own
	// tier, and an earlier tier that may serve still goes before it.
	start := pos
	for start > 0 && sel.cands[sel.seq[start-1]].prio == c.prio {
		start--
	}
	copy(sel.seq[start+1:pos+1], sel.seq[start:pos])
	sel.seq[start] = i
	c.warm = true
}

// cacheBreaks counts, per route, what became of warm sessions.
type cacheBreaks struct {
	kept, failed, unavailable atomic.Uint64
}

// CacheBreaks is what became of a route's warm sessions since FreeLane
// started: requests kept on the backend whose prompt cache was warm, and
// requests served elsewhere while that backend was still configured,
// which had to write the provider's cache anew (a broken warm cache).
type CacheBreaks struct {
	// Kept counts requests of a warm session its warm backend served.
	Kept uint64 `json:"kept"`
	// Broken counts requests of a warm session another backend served:
	// Failed of them because the warm backend failed the request,
	// Unavailable because it was passed by (cooling down, breaker open,
	// a quota, a budget, the pacing, or the request did not fit it).
	Broken      uint64 `json:"broken"`
	Failed      uint64 `json:"failed"`
	Unavailable uint64 `json:"unavailable"`
}

// maxBreakRoutes bounds the routes counted; route names come from the
// configuration and its backends, so the bound is only a safeguard.
const maxBreakRoutes = 4096

// CacheBreaks returns, per chain (or, for a request pinned to a backend or
// naming a bare model id, per the route's first backend), what became of
// its warm sessions: the dashboard warns about a chain whose routing
// keeps breaking warm caches.
func (r *Router) CacheBreaks() map[string]CacheBreaks {
	out := map[string]CacheBreaks{}
	r.breaks.Range(func(k, v any) bool {
		c := v.(*cacheBreaks)
		f, u := c.failed.Load(), c.unavailable.Load()
		out[k.(string)] = CacheBreaks{Kept: c.kept.Load(), Broken: f + u, Failed: f, Unavailable: u}
		return true
	})
	return out
}

func (r *Router) breaksOf(route string) *cacheBreaks {
	if v, ok := r.breaks.Load(route); ok {
		return v.(*cacheBreaks)
	}
	if r.nBreaks.Load() >= maxBreakRoutes {
		return nil
	}
	v, loaded := r.breaks.LoadOrStore(route, &cacheBreaks{})
	if !loaded {
		r.nBreaks.Add(1)
	}
	return v.(*cacheBreaks)
}

// Session outcomes in a decision.
const (
	sessionKept        = "kept"
	sessionMoved       = "moved"
	sessionNew         = "new"
	maxAffinityNoteLen = 200
)

// noteSession says in the decision what the ranking did with the
// request's session: kept on its warm backend, moving because that
// backend cannot take it now, or new (no warm home on this route).
func noteSession(dec *llm.Decision, sel *selection) {
	switch {
	case !sel.hasHome:
		dec.Affinity = sessionNew
	case sel.warm < 0:
		dec.Affinity = sessionNew
		dec.AffinityNote = capNote(sel.home.Backend.String() + ", where its cache was warm, is not in this route")
	default:
		c := &sel.cands[sel.warm]
		if c.warm {
			dec.Affinity = sessionKept
			dec.AffinityNote = capNote("cache warm on " + c.b.name + " until " + sel.home.Until.UTC().Format(time.TimeOnly) + " UTC")
			return
		}
		dec.Affinity = sessionMoved
		why := "is unavailable"
		if c.skip != nil && c.skip.Reason != "" {
			why = "is unavailable: " + c.skip.Reason
		}
		dec.AffinityNote = capNote("warm backend " + c.b.name + " " + why)
	}
}

func capNote(s string) string {
	if len(s) <= maxAffinityNoteLen {
		return s
	}
	cut := maxAffinityNoteLen
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}

// rememberSession records the backend that served the request as its
// session's home on the route, warm for its provider's cache lifetime,
// and counts whether a warm cache was kept or broken.
func (r *Router) rememberSession(req *llm.Request, route Route, sel *selection, b *Backend, dec *llm.Decision) {
	if req.Session == "" || r.sessions == nil {
		return
	}
	now := r.clock.Now()
	name := routeName(route)
	ttl := b.CacheTTL
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	r.sessions.SetHome(req.Session, name, Home{Backend: b.ID, Until: now.Add(ttl)}, now)
	if !sel.hasHome || sel.warm < 0 {
		return
	}
	cb := r.breaksOf(name)
	warm := &sel.cands[sel.warm]
	switch {
	case warm.b == b:
		if cb != nil {
			cb.kept.Add(1)
		}
	case warm.warm:
		// It went first and did not serve: it failed the request, or
		// refused it at the last moment.
		if cb != nil {
			cb.failed.Add(1)
		}
		if dec != nil {
			dec.Affinity = sessionMoved
			dec.AffinityNote = capNote("warm backend " + warm.b.name + " failed; " + b.name + " served and is the session's home now")
		}
	default:
		if cb != nil {
			cb.unavailable.Add(1)
		}
	}
}

// pruneBreaks forgets the counts of routes the new table no longer has.
func (r *Router) pruneBreaks(t *Table) {
	r.breaks.Range(func(k, _ any) bool {
		name := k.(string)
		if _, ok := t.chains[name]; ok {
			return true
		}
		if slices.ContainsFunc(t.order, func(b *Backend) bool { return b.name == name }) {
			return true
		}
		r.breaks.Delete(k)
		r.nBreaks.Add(-1)
		return true
	})
}
