// Package redisstate keeps what the instances of a team share on Redis:
// the quota and budget counters every instance checks before a call (one
// server-side script per call, so a check and its increment are one step
// for the whole team), and which instances are alive. Redis being slow or
// gone is a mode, not an outage: every operation on the request path has a
// short deadline, and while Redis is unreachable callers are told at once
// (without waiting for a timeout each time) so that they fall back to
// their share of each limit; what they counted meanwhile is kept and added
// when Redis is back.
package redisstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"freelane/backend/clock"
	"freelane/backend/quota"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one operation on the request path. A team's
	// Redis answers on its network in about a millisecond; a tenth of a
	// second is a fault, and a request waits no longer than that before it
	// is decided on this instance's share.
	DefaultTimeout = 100 * time.Millisecond
	// Beat is how often an instance says it is alive and checks Redis.
	Beat = time.Second
	// aliveFor is how long an instance counts as alive after its last
	// beat: three beats, so one slow beat does not drop it.
	aliveFor = 3 * Beat
	// maxPending bounds the counts kept while Redis is unreachable; each
	// is a distinct counter bucket, and the oldest are the first to have
	// left their windows.
	maxPending = 100_000
	// gather is how long counts Add kept wait to be sent together: one
	// pipeline carries every call settled meanwhile, rather than one round
	// trip each, and the reservations a settlement gives back are held
	// that much longer, which errs on the safe side.
	gather = 50 * time.Millisecond
)

// ErrUnavailable is returned while Redis is unreachable.
var ErrUnavailable = errors.New("redisstate: the shared state on Redis is unreachable")

// Options for Open.
type Options struct {
	// URL is redis://, rediss:// or unix:// as go-redis reads it.
	URL string
	// Instance names this instance on the dashboard of every instance.
	Instance string
	Clock    clock.Clock
	Logger   *slog.Logger
	// Timeout bounds one operation on the request path [DefaultTimeout].
	Timeout time.Duration
}

// State is one instance's connection to the team's shared state. It is
// safe for concurrent use; Run drives its background work.
type State struct {
	rdb     *redis.Client
	clock   clock.Clock
	log     *slog.Logger
	timeout time.Duration
	// name is the instance's name; member is its entry among the live
	// instances, the name with a number of this run, so that a restarted
	// instance does not inherit the reservations of its previous run.
	name, member string
	started      time.Time

	up    atomic.Bool
	alive atomic.Int32
	// downSince is when Redis was last found unreachable (unix nanos), 0
	// while it is reachable.
	downSince atomic.Int64

	mu      sync.Mutex
	pending map[pendingKey]*pendingCount
	peers   []Peer
	wake    chan struct{}

	// leases are the units this instance holds of the team's counters
	// (lease.go).
	leases leases

	// marks carries the breakers' marks (see marks.go), pause the
	// routing pause (pause.go), homes the sessions' homes (affinity.go),
	// learned the limits learned from providers (learned.go), roster the
	// instance's status record (roster.go).
	marks   marks
	pause   pauseState
	homes   homes
	learned learnedMarks
	roster  roster
}

// pendingKey merges counts that change the same counter bucket.
type pendingKey struct {
	kind   quota.CountKind
	key    string
	bucket int64
}

type pendingCount struct {
	n, oldest int64
	expire    time.Time
}

// Peer is an instance of the team as last seen, with what its status
// record says: how it sees the shared parts, and what it did.
type Peer struct {
	Name     string    `json:"name"`
	LastSeen time.Time `json:"last_seen"`
	Self     bool      `json:"self,omitempty"`
	Version  string    `json:"version,omitempty"`
	// Started is when the instance started; nil for an instance that
	// wrote no status record.
	Started *time.Time `json:"started,omitempty"`
	// Redis is "connected" or "unreachable" as the instance sees it: an
	// instance that reached Redis within the last beats is connected.
	Redis string `json:"redis"`
	// Postgres is "connected" or "unreachable" as the instance sees the
	// team's PostgreSQL, "" for an instance without store.postgres.
	Postgres string `json:"postgres,omitempty"`
	// Pending is how many of its counter changes wait for Redis.
	Pending int `json:"pending"`
	// Served counts the requests it served since it started.
	Served int64 `json:"served"`
}

// Open connects to the URL's Redis, waiting at most half a second for it.
// Redis need not be reachable yet: the instance starts on its share of
// each limit and joins the team's count once Run reaches Redis. Errors never show the URL, which may hold a
// password.
func Open(o Options) (*State, error) {
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	opts, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("state.redis is not a Redis URL (%s)", urlProblem(err))
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	// A call waits for a connection, a reply or a dial no longer than its
	// deadline, and is never retried: retrying is the caller's fallback.
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	opts.DialTimeout = max(o.Timeout, 250*time.Millisecond)
	opts.ReadTimeout, opts.WriteTimeout = time.Second, time.Second
	opts.PoolTimeout = o.Timeout
	opts.DisableIdentity = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	var run [4]byte
	_, _ = rand.Read(run[:])
	clk := clock.OrReal(o.Clock)
	s := &State{rdb: redis.NewClient(opts), clock: clk, log: o.Logger, timeout: o.Timeout,
		name: o.Instance, member: o.Instance + "#" + hex.EncodeToString(run[:]), started: clk.Now(),
		pending: map[pendingKey]*pendingCount{}, wake: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.marks.init()
	s.alive.Store(1)
	s.downSince.Store(s.started.UnixNano())
	// One beat now, so that an instance whose Redis answers counts with
	// the team from its first request rather than from Run's first beat.
	s.heartbeat(context.Background())
	if !s.up.Load() {
		s.log.Warn("shared state on Redis is unreachable at start; this instance serves on its share of every limit until it is reachable",
			"instance", s.name)
	}
	return s, nil
}

// quiet silences go-redis's own logging, which writes every failed dial
// to stderr on its own, outside the application's log and its level;
// State logs the faults that matter, once per outage.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// urlProblem describes what is wrong with a Redis URL without repeating it.
func urlProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	if msg := err.Error(); !strings.Contains(msg, "://") {
		return msg
	}
	return "use redis://[user:password@]host:port[/db], rediss:// for TLS or unix:///path/to/redis.sock"
}

// Close closes the connections.
func (s *State) Close() error { return s.rdb.Close() }

// key is the Redis key of a shared counter. The braces put every key of
// FreeLane in one hash slot, so the scripts that touch several keys also
// run on a Redis Cluster.
func key(name string) string { return "{freelane}:" + name }

var instancesKey = key("instances")

// Up reports whether Redis answered last time it was asked.
func (s *State) Up() bool { return s.up.Load() }

// Alive is how many instances were alive when last seen, this one
// included (quota.Shared).
func (s *State) Alive() int { return max(int(s.alive.Load()), 1) }

// Status is the instance's view of the shared state, for /healthz and the
// dashboard.
type Status struct {
	Instance string `json:"instance"`
	Redis    string `json:"redis"` // "connected" or "unreachable"
	// Since is when Redis became unreachable, while it is.
	Since *time.Time `json:"since,omitempty"`
	// Instances are the team's instances alive when last seen, by name,
	// each with its status record; while Redis is unreachable, this
	// instance alone.
	Instances []Peer `json:"instances"`
	// Pending is how many counter changes wait for Redis to be back.
	Pending int `json:"pending"`
}

// Status returns the instance's view of the shared state. It holds no
// URL and no secret: the records hold names, versions, states and counts.
func (s *State) Status() Status {
	now := s.clock.Now()
	st := Status{Instance: s.name, Redis: Connected}
	up := s.Up()
	if !up {
		st.Redis = Unreachable
		if d := s.downSince.Load(); d != 0 {
			t := time.Unix(0, d).UTC()
			st.Since = &t
		}
	}
	// This instance's own entry is as of now; the others' as the last
	// heartbeat read them.
	self := Peer{Name: s.name, LastSeen: now.UTC(), Self: true}.withRecord(s.selfRecord(now))
	self.Redis = st.Redis
	s.mu.Lock()
	if up {
		st.Instances = slices.Clone(s.peers)
	}
	st.Pending = len(s.pending)
	s.mu.Unlock()
	i := slices.IndexFunc(st.Instances, func(p Peer) bool { return p.Self })
	if i < 0 {
		// While Redis is unreachable the others' records are unknown, and
		// before the first beat there are none: the instance shows itself.
		st.Instances = append(st.Instances, self)
		slices.SortFunc(st.Instances, func(a, b Peer) int { return strings.Compare(a.Name, b.Name) })
	} else {
		self.LastSeen = st.Instances[i].LastSeen
		st.Instances[i] = self
	}
	return st
}

// fault marks Redis unreachable after an operation failed.
func (s *State) fault(err error) {
	if s.up.Swap(false) {
		s.downSince.Store(s.clock.Now().UnixNano())
		s.log.Warn("shared state on Redis is unreachable; each instance serves on its share of every limit until it is back",
			"instance", s.name, "err", redactErr(err))
	}
}

// redactErr is an error's text without anything that looks like a URL,
// which could carry the password.
func redactErr(err error) string {
	if msg := err.Error(); !strings.Contains(msg, "://") {
		return msg
	}
	return "connection failed"
}

// Take checks and applies counts as one step on Redis (quota.Shared).
func (s *State) Take(counts []quota.Count, totals []int64) (int, error) {
	if !s.up.Load() {
		return -1, ErrUnavailable
	}
	now := s.clock.Now()
	if s.leases.take(counts, totals, now) {
		return -1, nil
	}
	keys := make([]string, 0, len(counts)+1)
	args := make([]any, 0, 3+7*len(counts))
	args = append(args, s.member, now.Add(-aliveFor).UnixMilli(), int64(s.Alive())*leaseShare)
	for _, c := range counts {
		keys = append(keys, key(c.Key))
		args = append(args, int(c.Kind), c.Bucket, c.Oldest, max(c.TTL.Milliseconds(), 1), c.Limit, c.N, want(c))
	}
	keys = append(keys, instancesKey)
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	res, err := takeScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		s.fault(err)
		return -1, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if len(res) != 2*len(counts)+1 {
		return -1, fmt.Errorf("redisstate: the take script answered %d values for %d counts", len(res), len(counts))
	}
	copy(totals, res[1:len(counts)+1])
	if res[0] < 0 {
		s.Add(s.leases.granted(counts, totals, res[len(counts)+1:], now))
	}
	return int(res[0]), nil
}

// Add applies counts in the background (quota.Shared), merged with the
// others that change the same buckets.
func (s *State) Add(counts []quota.Count) {
	if len(counts) == 0 {
		return
	}
	now := s.clock.Now()
	s.mu.Lock()
	for _, c := range counts {
		if c.N == 0 {
			continue
		}
		k := pendingKey{kind: c.Kind, key: c.Key, bucket: c.Bucket}
		p := s.pending[k]
		if p == nil {
			if len(s.pending) >= maxPending {
				continue
			}
			p = &pendingCount{}
			s.pending[k] = p
		}
		p.n += c.N
		p.oldest = c.Oldest
		if exp := now.Add(c.TTL); exp.After(p.expire) {
			p.expire = exp
		}
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run keeps the instance's place among the team's live instances, checks
// Redis every Beat, and sends the counts Add kept. It returns when ctx is
// done.
func (s *State) Run(ctx context.Context) {
	beat, tick := s.clock.NewTicker(Beat)
	defer beat.Stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.runMarks(ctx)
	}()
	defer func() { <-done }()
	s.heartbeat(ctx)
	gt, gathered := s.clock.NewTimer(gather)
	gt.Stop()
	defer gt.Stop()
	gathering := false
	for {
		select {
		case <-ctx.Done():
			s.leave()
			return
		case <-gathered:
			gathering = false
			if s.up.Load() {
				s.flush(ctx)
			}
		case <-tick:
			s.heartbeat(ctx)
			s.Add(s.leases.idle(s.clock.Now(), false))
			s.flush(ctx)
			if s.up.Load() {
				s.reconcile(ctx)
				s.marks.poke()
			}
		case <-s.wake:
			if !gathering {
				gt.Reset(gather)
				gathering = true
			}
		}
	}
}

// heartbeat records the instance as alive and writes its status record,
// drops instances gone for long and the records of those no longer
// alive, and reads who is alive with their records.
func (s *State) heartbeat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	now := s.clock.Now()
	var live *redis.ZSliceCmd
	var recs *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, instancesKey, redis.Z{Score: float64(now.UnixMilli()), Member: s.member})
		p.ZRemRangeByScore(ctx, instancesKey, "-inf", strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10))
		live = p.ZRangeByScoreWithScores(ctx, instancesKey, &redis.ZRangeBy{Min: strconv.FormatInt(now.Add(-aliveFor).UnixMilli(), 10), Max: "+inf"})
		recs = s.writeRecord(ctx, p, now)
		return nil
	})
	if err != nil {
		if ctx.Err() == nil || errors.Is(err, context.DeadlineExceeded) {
			s.fault(err)
		}
		return
	}
	alive := make(map[string]bool, len(live.Val()))
	for _, z := range live.Val() {
		m, _ := z.Member.(string)
		alive[m] = true
	}
	byMember, stale := liveRecords(recs.Val(), alive)
	if len(stale) > 0 {
		// A record of an instance that stopped or died goes with it.
		_ = s.rdb.HDel(ctx, statusKey, stale...).Err()
	}
	peers := make([]Peer, 0, len(live.Val()))
	for _, z := range live.Val() {
		m, _ := z.Member.(string)
		p := Peer{Name: memberName(m), LastSeen: time.UnixMilli(int64(z.Score)).UTC(), Self: m == s.member, Redis: Connected}
		if r, ok := byMember[m]; ok {
			p = p.withRecord(r)
		}
		peers = append(peers, p)
	}
	slices.SortFunc(peers, func(a, b Peer) int { return strings.Compare(a.Name, b.Name) })
	s.mu.Lock()
	s.peers = peers
	s.mu.Unlock()
	s.alive.Store(int32(max(len(peers), 1)))
	if !s.up.Swap(true) {
		s.downSince.Store(0)
		s.log.Info("shared state on Redis is reachable", "instance", s.name, "instances", len(peers))
	}
}

// leave takes the instance off the live list at shutdown, so the others
// split limits among those still running at once.
func (s *State) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	s.Add(s.leases.idle(s.clock.Now(), true))
	s.flush(ctx)
	_ = s.rdb.ZRem(ctx, instancesKey, s.member).Err()
}

// flush sends what Add kept, in one pipeline. Counts whose counters have
// expired are dropped; on failure everything is kept for the next try.
func (s *State) flush(ctx context.Context) {
	s.mu.Lock()
	if len(s.pending) == 0 {
		s.mu.Unlock()
		return
	}
	batch := s.pending
	s.pending = map[pendingKey]*pendingCount{}
	s.mu.Unlock()
	now := s.clock.Now()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	// One transaction, so that no Take sees a settled call's reservation
	// gone before its spend is there.
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for k, c := range batch {
			if !c.expire.After(now) {
				continue
			}
			rk := key(k.key)
			switch k.kind {
			case quota.CountWindow:
				p.HIncrBy(ctx, rk, strconv.FormatInt(k.bucket, 10), c.n)
			case quota.CountReserve:
				p.HIncrBy(ctx, rk, "res:"+s.member, c.n)
			case quota.CountSpend:
				p.HIncrBy(ctx, rk, "spent", c.n)
			}
			p.PExpire(ctx, rk, c.expire.Sub(now))
		}
		return nil
	})
	if err == nil {
		return
	}
	s.fault(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range batch {
		if p := s.pending[k]; p != nil {
			p.n += c.n
			if c.expire.After(p.expire) {
				p.expire = c.expire
			}
			continue
		}
		if len(s.pending) < maxPending {
			s.pending[k] = c
		}
	}
}

// takeScript checks every count and, when none refuses, applies them all.
// KEYS are the counters and, last, the live instances; ARGV are this
// run's member, the oldest beat that counts as alive (ms), then six
// values per count: kind, bucket, oldest bucket, time to live (ms),
// limit, n.
// It answers the index of the refusing count (-1 for none) followed by
// each count's total.
var takeScript = redis.NewScript(`
local member = ARGV[1]
local aliveAfter = tonumber(ARGV[2])
local share = tonumber(ARGV[3])
local nc = #KEYS - 1
local live = KEYS[#KEYS]
local totals, grants = {}, {}

local function window(k, oldest)
  local all = redis.call('HGETALL', k)
  local sum = 0
  for i = 1, #all, 2 do
    if tonumber(all[i]) < oldest then
      redis.call('HDEL', k, all[i])
    else
      sum = sum + tonumber(all[i + 1])
    end
  end
  return sum
end

local function budget(k)
  local all = redis.call('HGETALL', k)
  local spent, held = 0, 0
  for i = 1, #all, 2 do
    local f = all[i]
    if f == 'spent' then
      spent = tonumber(all[i + 1])
    elseif string.sub(f, 1, 4) == 'res:' then
      local owner = string.sub(f, 5)
      local v = tonumber(all[i + 1])
      if owner == member then
        held = held + v
      else
        -- A reservation of an instance no longer alive died with it.
        local beat = redis.call('ZSCORE', live, owner)
        if beat and tonumber(beat) >= aliveAfter then
          held = held + v
        else
          redis.call('HDEL', k, f)
        end
      end
    end
  end
  return spent, math.max(held, 0)
end

local function answer(refused)
  local out = {refused}
  for i = 1, nc do out[i + 1] = totals[i] or 0 end
  for i = 1, nc do out[nc + i + 1] = grants[i] or 0 end
  return out
end

for i = 1, nc do
  local a = 3 + (i - 1) * 7
  local kind, limit, n = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6])
  local sum
  if kind == 0 then
    sum = window(KEYS[i], tonumber(ARGV[a + 3]))
    totals[i] = sum
    if limit > 0 and sum + math.max(n, 1) > limit then return answer(i - 1) end
  elseif kind == 1 then
    local spent, held = budget(KEYS[i])
    sum = spent + held
    totals[i] = sum
    if limit > 0 and (spent >= limit or spent + held + n > limit) then return answer(i - 1) end
  end
  -- A lease: a share of what is left of the first half of the limit
  -- beyond the call, so that the second half is counted call by call.
  local w = tonumber(ARGV[a + 7])
  if w > 0 and n > 0 then
    if limit > 0 then w = math.min(w, math.floor((math.floor(limit / 2) - sum - n) / share)) end
    if w > 0 then grants[i] = w end
  end
end

for i = 1, nc do
  local a = 3 + (i - 1) * 7
  local kind, n = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 6]) + (grants[i] or 0)
  local k, ttl = KEYS[i], ARGV[a + 4]
  if n ~= 0 then
    if kind == 0 then
      redis.call('HINCRBY', k, ARGV[a + 2], n)
    elseif kind == 1 then
      redis.call('HINCRBY', k, 'res:' .. member, n)
    else
      redis.call('HINCRBY', k, 'spent', n)
    end
    totals[i] = (totals[i] or 0) + n
    redis.call('PEXPIRE', k, ttl)
  end
end
return answer(-1)
`)

var _ quota.Shared = (*State)(nil)
