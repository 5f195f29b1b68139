package redisstate

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Pauser is the routing pause of one instance; the gateway implements it.
type Pauser interface {
	// ApplyPause pauses or resumes routing as the team decided, without
	// telling the team again. from names the instance the change came
	// from.
	ApplyPause(paused bool, from string)
}

var (
	pauseKey     = key("pause")
	pauseChannel = key("pause")
)

// wirePause is the team's pause as it travels on the channel; the pause
// hash holds the same fields. V is a version Redis hands out, so that the
// order of changes is Redis's and not that of the instances' clocks.
type wirePause struct {
	Paused bool   `json:"p"`
	V      int64  `json:"v"`
	From   string `json:"f"`
}

// pauseState is the routing-pause side of State. Its zero value is an
// instance that has not yet taken the team's pause.
type pauseState struct {
	mu sync.Mutex
	to Pauser
	// v is the newest version this instance applied or sent.
	v int64
	// pending is a change of this instance not sent yet; sending is true
	// while one is on its way. Meanwhile the team's older pause is not
	// applied, or it would undo the change before it arrives.
	pending *bool
	sending bool
	// joined is set once the instance took the team's pause; stale while
	// this instance's pause may differ from the team's because it changed
	// while Redis was unreachable. Either way the next reconcile takes
	// the team's pause whatever its version.
	joined, stale bool
}

// SharePause makes the state carry p's routing pause to the other
// instances and theirs to p. Call it before Run.
func (s *State) SharePause(p Pauser) {
	s.pause.mu.Lock()
	defer s.pause.mu.Unlock()
	s.pause.to = p
}

// TellPause queues a change of this instance's routing pause for the
// team. While Redis is unreachable it is not sent: the instance keeps its
// own pause and takes the team's when Redis is back.
func (s *State) TellPause(paused bool) {
	p := &s.pause
	p.mu.Lock()
	if !s.up.Load() {
		p.stale = true
		p.mu.Unlock()
		return
	}
	p.pending = &paused
	p.mu.Unlock()
	s.marks.poke()
}

// JoinPause reads the team's pause once and applies it, so that an
// instance starting while the team is paused serves nothing before it
// knows. It waits at most half a second; on failure the first reconcile
// takes the team's pause instead.
func (s *State) JoinPause(ctx context.Context) { s.reconcilePause(ctx) }

// pauseScript records a change of the pause with a new version and
// publishes it. KEYS: the pause hash, the channel. ARGV: "1" or "0", the
// sending run's member. It answers the version.
var pauseScript = redis.NewScript(`
local v = redis.call('HINCRBY', KEYS[1], 'v', 1)
redis.call('HSET', KEYS[1], 'p', ARGV[1], 'f', ARGV[2])
local p = 'false'
if ARGV[1] == '1' then p = 'true' end
redis.call('PUBLISH', KEYS[2], '{"p":' .. p .. ',"v":' .. v .. ',"f":' .. cjson.encode(ARGV[2]) .. '}')
return v
`)

// sendPause sends the change TellPause queued, if any.
func (s *State) sendPause(ctx context.Context) {
	p := &s.pause
	p.mu.Lock()
	if p.pending == nil {
		p.mu.Unlock()
		return
	}
	paused := *p.pending
	p.pending, p.sending = nil, true
	p.mu.Unlock()
	flag := "0"
	if paused {
		flag = "1"
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	v, err := pauseScript.Run(ctx, s.rdb, []string{pauseKey, pauseChannel}, flag, s.member).Int64()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sending = false
	if err != nil {
		s.fault(err)
		p.stale = true
		return
	}
	p.v = max(p.v, v)
	p.joined = true
}

// applyPause applies the team's pause when it is newer than what this
// instance applied or sent, or whatever its version when this instance
// has to take the team's (reconciling after start or an outage). It
// calls the Pauser with the lock held, so that two changes arriving at
// once are applied in their order.
func (s *State) applyPause(w wirePause, reconciling bool) {
	p := &s.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != nil || p.sending {
		return
	}
	take := reconciling && (p.stale || !p.joined)
	if w.V <= p.v && !take {
		return
	}
	p.v = max(p.v, w.V)
	p.stale, p.joined = false, true
	if p.to != nil {
		p.to.ApplyPause(w.Paused, memberName(w.From))
	}
}

// applyPauseWire applies a change another instance published.
func (s *State) applyPauseWire(b []byte) {
	var w wirePause
	if json.Unmarshal(b, &w) != nil || w.From == s.member {
		return
	}
	s.applyPause(w, false)
}

// reconcilePause takes the team's pause from the hash, in case the
// channel missed a change, and after start or an outage.
func (s *State) reconcilePause(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	all, err := s.rdb.HGetAll(ctx, pauseKey).Result()
	if err != nil {
		return
	}
	s.applyPause(pauseOf(all), true)
}

// pauseOf reads the pause hash; an empty one is a team that never paused.
func pauseOf(h map[string]string) wirePause {
	v, _ := strconv.ParseInt(h["v"], 10, 64)
	return wirePause{Paused: h["p"] == "1", V: v, From: h["f"]}
}
