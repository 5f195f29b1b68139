// Package respcache is FreeLane's exact response cache: an answer to a
// deterministic request (temperature 0, a seed, or a client's opt-in) is
// kept, filed under the SHA-256 of the request in the neutral model, and
// the same question asked again in any dialect is answered from it without
// calling a backend.
//
// Entries live in memory, which is what the request path reads, and in
// the SQLite database, which is what survives a restart: the database is
// read once when the cache opens, and every later write (a new answer, an
// eviction, the time an entry was last served) goes through one writer
// loop (Run), off the request path. Entries expire after the TTL and the
// least recently used go first when the size bound is reached.
package respcache

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/clock"
	"freelane/backend/defaults"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/router"
	"freelane/backend/store"
)

// Defaults and bounds of the settings.
const (
	DefaultTTL   = defaults.ResponseCacheTTL
	DefaultMaxMB = defaults.ResponseCacheMB
	// maxEntry bounds one answer, in bytes, whatever the size bound: an
	// answer larger than this is not kept.
	maxEntry = 8 << 20
	// entryOverhead is what an entry costs beside its answer: the key,
	// the times, the backend's name and the index's bookkeeping.
	entryOverhead = 160
	// writeBuffer is how many writes may wait for the writer; past it a
	// write is dropped (the entry stays in memory, only not on disk).
	writeBuffer = 1024
	// writeBatch is the most writes done in one transaction.
	writeBatch = 256
	// pruneEvery is how often expired entries are removed, the times
	// entries were last served stored and the totals saved.
	pruneEvery = time.Minute
)

// Settings are the configuration's word on the cache.
type Settings struct {
	// Enabled turns the cache on for every route without a word of its
	// own in Chains.
	Enabled bool
	// Chains turns it on or off for a chain by name.
	Chains map[string]bool
	// TTL is how long an answer is served; 0 is DefaultTTL.
	TTL time.Duration
	// MaxBytes bounds the entries' bytes; 0 is DefaultMaxMB.
	MaxBytes int64
}

// Options configure a Cache.
type Options struct {
	// Codecs are the dialects answers are read and written in.
	Codecs *protocol.Registry
	Clock  clock.Clock
	Logger *slog.Logger
}

// Cache is the response cache. It is safe for concurrent use.
//
// Lifecycle: Open reads the stored entries; the owner runs Run in a
// goroutine it owns and stops it by cancelling its context, or calls Close
// when Run never started; either writes what was accepted before
// returning.
type Cache struct {
	db     *sql.DB
	codecs *protocol.Registry
	clock  clock.Clock
	log    *slog.Logger
	set    atomic.Pointer[Settings]

	mu      sync.Mutex
	entries map[Key]*entry
	// lru is a ring through a sentinel: lru.next is the most recently
	// used entry, lru.prev the least.
	lru    entry
	bytes  int64
	saved  float64
	closed bool
	// touched are the entries served since the writer last stored when
	// they were used: a hit does not queue a write of its own, the writer
	// stores them all at its next round.
	touched map[Key]int64
	// dropWarn rate-limits the warning of a dropped write.
	dropWarn clock.Rare

	hits, misses atomic.Uint64
	// base are the totals stored before this run, read at Open.
	base Totals

	ch   chan op
	quit chan struct{}
	stop sync.Once
	done chan struct{}
	// started and drained are the writer's state, under runMu.
	runMu   sync.Mutex
	started bool
	// saved* are the totals the writer last stored; only it touches them.
	savedHits, savedMisses uint64
	savedMoney             float64
}

// entry is one cached answer. Its answer is never changed once stored,
// so a hit being replayed keeps reading it after the entry was replaced
// or evicted.
type entry struct {
	key        Key
	ans        *llm.Answer
	origin     router.CacheOrigin
	size       int64
	created    time.Time
	used       time.Time
	prev, next *entry
}

// opKind is what the writer does.
type opKind uint8

const (
	opPut opKind = iota
	opDelete
	opTouch
)

// op is one write for the writer loop.
type op struct {
	kind opKind
	key  Key
	// answer is the stored JSON of a put.
	answer  []byte
	backend string
	cost    float64
	created int64
	used    int64
}

// Totals are what the cache did over its lifetime.
type Totals struct {
	Hits   uint64  `json:"hits"`
	Misses uint64  `json:"misses"`
	Saved  float64 `json:"saved"`
}

// Open reads the stored entries from db and returns the cache, off until
// Configure turns it on.
func Open(ctx context.Context, db *store.DB, o Options) (*Cache, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Cache{db: db.SQL(), codecs: o.Codecs, clock: clock.OrReal(o.Clock), log: o.Logger.With("component", "respcache"),
		entries: map[Key]*entry{}, touched: map[Key]int64{}, ch: make(chan op, writeBuffer), quit: make(chan struct{}), done: make(chan struct{})}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	c.set.Store(&Settings{TTL: DefaultTTL, MaxBytes: DefaultMaxMB << 20})
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// load reads every stored entry, least recently used first, and the
// totals. An entry that cannot be read is deleted: it was written by a
// build that stored something else, and is only a cached answer.
func (c *Cache) load(ctx context.Context) error {
	row := c.db.QueryRowContext(ctx, `SELECT hits, misses, saved FROM response_cache_totals WHERE id = 1`)
	switch err := row.Scan(&c.base.Hits, &c.base.Misses, &c.base.Saved); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("respcache: reading the totals: %w", err)
	}
	rows, err := c.db.QueryContext(ctx, `SELECT key, answer, backend, cost, created_at, used_at FROM response_cache ORDER BY used_at`)
	if err != nil {
		return fmt.Errorf("respcache: reading the entries: %w", err)
	}
	defer rows.Close()
	var bad [][]byte
	for rows.Next() {
		var key, answer []byte
		var backend string
		var cost float64
		var created, used int64
		if err := rows.Scan(&key, &answer, &backend, &cost, &created, &used); err != nil {
			return fmt.Errorf("respcache: reading an entry: %w", err)
		}
		var st stored
		if len(key) != len(Key{}) || json.Unmarshal(answer, &st) != nil {
			bad = append(bad, key)
			continue
		}
		e := &entry{ans: &st.Answer, origin: router.CacheOrigin{Backend: backend, Usage: st.Usage, Cost: cost},
			size: int64(len(answer)) + entryOverhead, created: time.UnixMilli(created), used: time.UnixMilli(used)}
		copy(e.key[:], key)
		c.insert(e)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("respcache: reading the entries: %w", err)
	}
	for _, k := range bad {
		if _, err := c.db.ExecContext(ctx, `DELETE FROM response_cache WHERE key = ?`, k); err != nil {
			return fmt.Errorf("respcache: deleting an unreadable entry: %w", err)
		}
	}
	return nil
}

// stored is an entry's answer as the database holds it.
type stored struct {
	Answer llm.Answer `json:"answer"`
	Usage  llm.Usage  `json:"usage"`
}

// Configure applies the configuration's settings; entries past a lower
// size bound are evicted at once, expired ones with the next lookup or
// prune.
func (c *Cache) Configure(s Settings) {
	if s.TTL <= 0 {
		s.TTL = DefaultTTL
	}
	if s.MaxBytes <= 0 {
		s.MaxBytes = DefaultMaxMB << 20
	}
	c.set.Store(&s)
	c.mu.Lock()
	c.evictTo(s.MaxBytes)
	c.mu.Unlock()
}

// enabledFor reports whether the cache serves chain ("" for a route no
// chain names).
func (s *Settings) enabledFor(chain string) bool {
	if on, ok := s.Chains[chain]; ok && chain != "" {
		return on
	}
	return s.Enabled
}

// Enabled reports whether the cache is on for any route.
func (c *Cache) Enabled() bool {
	s := c.set.Load()
	if s.Enabled {
		return true
	}
	for _, on := range s.Chains {
		if on {
			return true
		}
	}
	return false
}

// deterministic reports whether a request's answer is worth keeping: it
// asks for the same answer every time (temperature 0, or a seed), or
// its client asked for it to be kept.
func deterministic(req *llm.Request, c *llm.Conversation) bool {
	return req.Cache.OptIn || c.Seed != nil || c.Temperature != nil && *c.Temperature == 0
}

// Lookup implements router.ResponseCache.
func (c *Cache) Lookup(req *llm.Request, route, chain string) (llm.CacheOutcome, router.CachedAnswer, router.CacheKeeper) {
	s := c.set.Load()
	if req.Endpoint != llm.Chat || !s.enabledFor(chain) {
		return "", nil, nil
	}
	if req.Cache.Mode == llm.CacheBypass {
		return llm.CacheBypassed, nil, nil
	}
	conv, err := req.Conversation()
	if err != nil || !deterministic(req, conv) {
		return "", nil, nil
	}
	codec, ok := c.codecs.Codec(req.Dialect)
	if !ok {
		return "", nil, nil
	}
	key := NewKey(req.Endpoint, conv, route, req.Cache.Caller)
	keep := &keeper{c: c, key: key, codec: codec}
	if req.Cache.Mode == llm.CacheRefresh {
		c.misses.Add(1)
		return llm.CacheRefreshed, nil, keep
	}
	now := c.clock.Now()
	c.mu.Lock()
	e := c.entries[key]
	if e != nil && !now.Before(e.created.Add(s.TTL)) {
		c.remove(e)
		c.write(op{kind: opDelete, key: key})
		e = nil
	}
	if e == nil || req.Cache.HasMaxAge && now.Sub(e.created) > req.Cache.MaxAge {
		c.mu.Unlock()
		c.misses.Add(1)
		return llm.CacheMiss, nil, keep
	}
	e.used = now
	c.unlink(e)
	c.front(e)
	c.saved += e.origin.Cost
	c.touched[key] = now.UnixMilli()
	c.mu.Unlock()
	c.hits.Add(1)
	return llm.CacheHit, &hit{e: e, c: c}, nil
}

// put keeps an answer under key, replacing what was there.
func (c *Cache) put(key Key, a *llm.Answer, o router.CacheOrigin) {
	a.ID = ""
	js, err := json.Marshal(stored{Answer: *a, Usage: o.Usage})
	if err != nil {
		c.log.Warn("answer not cached", "err", err)
		return
	}
	s := c.set.Load()
	size := int64(len(js)) + entryOverhead
	if size > min(s.MaxBytes/4, maxEntry) {
		return
	}
	now := c.clock.Now()
	e := &entry{key: key, ans: a, origin: o, size: size, created: now, used: now}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[key]; old != nil {
		c.remove(old)
	}
	c.insert(e)
	c.write(op{kind: opPut, key: key, answer: js, backend: o.Backend, cost: o.Cost, created: now.UnixMilli(), used: now.UnixMilli()})
	c.evictTo(s.MaxBytes)
}

// insert adds e as the most recently used entry, or, while loading in
// order of use, after the ones loaded before it. c.mu is held.
func (c *Cache) insert(e *entry) {
	c.entries[e.key] = e
	c.front(e)
	c.bytes += e.size
}

// remove takes e out of the index. c.mu is held.
func (c *Cache) remove(e *entry) {
	delete(c.entries, e.key)
	c.unlink(e)
	c.bytes -= e.size
}

func (c *Cache) front(e *entry) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

func (c *Cache) unlink(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// evictTo removes the least recently used entries until the rest fit in
// max bytes. c.mu is held.
func (c *Cache) evictTo(max int64) {
	for c.bytes > max && c.lru.prev != &c.lru {
		e := c.lru.prev
		c.remove(e)
		c.write(op{kind: opDelete, key: e.key})
	}
}

// write hands o to the writer without waiting; with the writer's buffer
// full or the cache closed, the write is dropped: the entry is still
// served from memory, only not kept across a restart. c.mu is held.
func (c *Cache) write(o op) {
	if c.closed {
		return
	}
	select {
	case c.ch <- o:
	default:
		if c.dropWarn.Now(c.clock.Now(), time.Minute) {
			c.log.Warn("response cache write dropped: the writer is behind")
		}
	}
}

// flushTouched stores when the entries served since the last round were
// last used.
func (c *Cache) flushTouched(ctx context.Context) {
	c.mu.Lock()
	if len(c.touched) == 0 {
		c.mu.Unlock()
		return
	}
	batch := make([]op, 0, len(c.touched))
	for k, used := range c.touched {
		batch = append(batch, op{kind: opTouch, key: k, used: used})
	}
	clear(c.touched)
	c.mu.Unlock()
	for len(batch) > 0 {
		n := min(len(batch), writeBatch)
		if err := c.writeBatch(ctx, batch[:n]); err != nil {
			c.log.Warn("response cache writes lost", "writes", n, "err", err)
		}
		batch = batch[n:]
	}
}

// Stats are the cache's figures for the dashboard.
type Stats struct {
	// Enabled is whether the cache is on for any route.
	Enabled bool `json:"enabled"`
	// Entries and Bytes are what it holds now, MaxBytes its bound.
	Entries  int   `json:"entries"`
	Bytes    int64 `json:"bytes"`
	MaxBytes int64 `json:"max_bytes"`
	// TTLSeconds is how long an answer is served.
	TTLSeconds int64 `json:"ttl_seconds"`
	// Hits and Misses count lookups since FreeLane started; a refresh is
	// a miss and a bypass neither. HitRate is Hits over both, 0 with
	// none.
	Hits    uint64  `json:"hits"`
	Misses  uint64  `json:"misses"`
	HitRate float64 `json:"hit_rate"`
	// Saved is the money hits saved since start: what the answers they
	// served cost when they were made.
	Saved float64 `json:"saved"`
	// Total is the same over every run, as far as it was stored.
	Total Totals `json:"total"`
}

// Stats returns the cache's figures now.
func (c *Cache) Stats() Stats {
	s := c.set.Load()
	c.mu.Lock()
	st := Stats{Enabled: c.Enabled(), Entries: len(c.entries), Bytes: c.bytes, MaxBytes: s.MaxBytes,
		TTLSeconds: int64(s.TTL / time.Second), Saved: c.saved}
	c.mu.Unlock()
	st.Hits, st.Misses = c.hits.Load(), c.misses.Load()
	if n := st.Hits + st.Misses; n > 0 {
		st.HitRate = float64(st.Hits) / float64(n)
	}
	st.Total = Totals{Hits: c.base.Hits + st.Hits, Misses: c.base.Misses + st.Misses, Saved: c.base.Saved + st.Saved}
	return st
}

// Run is the writer loop; the caller owns the goroutine it runs in. It
// writes until ctx is cancelled or Close is called, then writes what was
// accepted and returns.
func (c *Cache) Run(ctx context.Context) error {
	c.runMu.Lock()
	if c.started {
		c.runMu.Unlock()
		return errors.New("respcache: Run called more than once, or after Close")
	}
	c.started = true
	c.runMu.Unlock()
	defer close(c.done)
	wctx := context.WithoutCancel(ctx)
	// What expired while FreeLane was not running goes first.
	c.prune()
	ticker, tick := c.clock.NewTicker(pruneEvery)
	defer ticker.Stop()
	for {
		select {
		case o := <-c.ch:
			c.flush(wctx, o)
		case <-tick:
			c.prune()
			c.flushTouched(wctx)
			_ = c.saveTotals(wctx)
		case <-c.quit:
			return c.drain(wctx)
		case <-ctx.Done():
			return c.drain(wctx)
		}
	}
}

// Close stops accepting writes and writes those accepted, waiting for
// the writer if it runs, or for ctx.
func (c *Cache) Close(ctx context.Context) error {
	c.stop.Do(func() { close(c.quit) })
	c.runMu.Lock()
	if !c.started {
		c.started = true
		c.runMu.Unlock()
		defer close(c.done)
		return c.drain(ctx)
	}
	c.runMu.Unlock()
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("respcache: waiting for the writer: %w", ctx.Err())
	}
}

// drain stops accepting writes and writes what is left.
func (c *Cache) drain(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	for {
		select {
		case o := <-c.ch:
			c.flush(ctx, o)
		default:
			c.flushTouched(ctx)
			return c.saveTotals(ctx)
		}
	}
}

// prune removes the entries past their TTL.
func (c *Cache) prune() {
	ttl := c.set.Load().TTL
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.prev; e != &c.lru; {
		prev := e.prev
		if !now.Before(e.created.Add(ttl)) {
			c.remove(e)
			c.write(op{kind: opDelete, key: e.key})
		}
		e = prev
	}
}

// flush writes o and whatever else is waiting, up to a batch, in one
// transaction. A failed write is logged and given up: it is only a
// cached answer.
func (c *Cache) flush(ctx context.Context, first op) {
	batch := []op{first}
	for len(batch) < writeBatch {
		select {
		case o := <-c.ch:
			batch = append(batch, o)
			continue
		default:
		}
		break
	}
	if err := c.writeBatch(ctx, batch); err != nil {
		c.log.Warn("response cache writes lost", "writes", len(batch), "err", err)
	}
}

func (c *Cache) writeBatch(ctx context.Context, batch []op) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, o := range batch {
		switch o.kind {
		case opPut:
			_, err = tx.ExecContext(ctx, `INSERT INTO response_cache (key, answer, backend, cost, created_at, used_at) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT(key) DO UPDATE SET answer = excluded.answer, backend = excluded.backend, cost = excluded.cost,
				created_at = excluded.created_at, used_at = excluded.used_at`, o.key[:], o.answer, o.backend, o.cost, o.created, o.used)
		case opDelete:
			_, err = tx.ExecContext(ctx, `DELETE FROM response_cache WHERE key = ?`, o.key[:])
		case opTouch:
			_, err = tx.ExecContext(ctx, `UPDATE response_cache SET used_at = max(used_at, ?) WHERE key = ?`, o.used, o.key[:])
		}
		if err != nil {
			return err
		}
	}
	return tx.Commit()
}

// saveTotals adds what the cache did since the last save to the stored
// totals.
func (c *Cache) saveTotals(ctx context.Context) error {
	hits, misses := c.hits.Load(), c.misses.Load()
	c.mu.Lock()
	saved := c.saved
	c.mu.Unlock()
	dh, dm, ds := hits-c.savedHits, misses-c.savedMisses, saved-c.savedMoney
	if dh == 0 && dm == 0 && ds == 0 {
		return nil
	}
	if math.IsNaN(ds) || math.IsInf(ds, 0) {
		ds = 0
	}
	_, err := c.db.ExecContext(ctx, `INSERT INTO response_cache_totals (id, hits, misses, saved) VALUES (1, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET hits = hits + excluded.hits, misses = misses + excluded.misses, saved = saved + excluded.saved`,
		int64(dh), int64(dm), ds)
	if err != nil {
		c.log.Warn("response cache totals not saved", "err", err)
		return fmt.Errorf("respcache: saving the totals: %w", err)
	}
	c.savedHits, c.savedMisses, c.savedMoney = hits, misses, saved
	return nil
}
