package redisstate

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"freelane/backend/llm"
	"freelane/backend/quota"
)

// LearnedLimits is what the shared state tells of the limits other
// instances learned from their providers; *quota.Manager implements it.
type LearnedLimits interface {
	ApplyLearned(l quota.Learned)
}

var (
	learnedKey                   = key("learned")
	learnedChannel               = key("learned")
	_              quota.Teacher = (*State)(nil)
)

// wireLearned is a learned limit as it travels: on the channel, and in
// the learned hash (one field per backend and kind) for the instances
// that reconcile later.
type wireLearned struct {
	Backend   string `json:"b"`
	Kind      string `json:"k"`
	Limit     int64  `json:"l"`
	Remaining int64  `json:"r"`
	Reset     int64  `json:"x"` // unix ms
	At        int64  `json:"t"` // unix ms, when it was learned
	Soft      bool   `json:"s,omitempty"`
	From      string `json:"f"`
}

// learnedMarks is the learned-limits side of State: what waits to be
// sent, the newest per backend and kind.
type learnedMarks struct {
	mu    sync.Mutex
	to    LearnedLimits
	queue newest[wireLearned]
}

// ShareLearned makes the state carry what l learns of its providers'
// limits to the other instances, and theirs to l. Call it before Run;
// l.ShareWith(s) is the other half.
func (s *State) ShareLearned(l LearnedLimits) {
	s.learned.mu.Lock()
	defer s.learned.mu.Unlock()
	s.learned.to = l
}

func learnedField(backend, kind string) string { return backend + "|" + kind }

// Teach queues a learned limit for the other instances (quota.Teacher).
func (s *State) Teach(l quota.Learned) {
	w := wireLearned{Backend: l.Backend.String(), Kind: l.Kind, Limit: l.Limit, Remaining: l.Remaining,
		Reset: l.Reset.UnixMilli(), At: l.At.UnixMilli(), Soft: l.Soft, From: s.member}
	s.learned.queue.put(learnedField(w.Backend, w.Kind), w)
	s.marks.poke()
}

// sendLearned stores and publishes the queued limits in one pipeline.
// Limits learned while Redis is unreachable stay queued and are sent when
// it is back, unless they have reset by then.
func (s *State) sendLearned(ctx context.Context) {
	batch := s.learned.queue.take()
	if len(batch) == 0 {
		return
	}
	now := s.clock.Now().UnixMilli()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for f, w := range batch {
			if w.Reset <= now {
				continue
			}
			b, _ := json.Marshal(w)
			p.HSet(ctx, learnedKey, f, b)
			p.Publish(ctx, learnedChannel, b)
		}
		return nil
	})
	if err == nil {
		return
	}
	s.fault(err)
	s.learned.queue.restore(batch)
}

// applyLearnedWire applies a limit another instance learned; the manager
// keeps it only when it is newer than what it knows.
func (s *State) applyLearnedWire(b []byte) {
	var w wireLearned
	if json.Unmarshal(b, &w) != nil || w.From == s.member {
		return
	}
	id, err := llm.ParseBackendID(w.Backend)
	if err != nil {
		return
	}
	s.learned.mu.Lock()
	to := s.learned.to
	s.learned.mu.Unlock()
	if to == nil {
		return
	}
	to.ApplyLearned(quota.Learned{Backend: id, Kind: w.Kind, Limit: w.Limit, Remaining: w.Remaining,
		Reset: time.UnixMilli(w.Reset), At: time.UnixMilli(w.At), Soft: w.Soft})
}

// reconcileLearned applies the learned limits in the hash that the
// channel did not bring, and drops those that have reset.
func (s *State) reconcileLearned(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	all, err := s.rdb.HGetAll(ctx, learnedKey).Result()
	if err != nil {
		return
	}
	now := s.clock.Now().UnixMilli()
	var gone []string
	for f, v := range all {
		var w wireLearned
		if json.Unmarshal([]byte(v), &w) != nil || w.Reset <= now {
			gone = append(gone, f)
			continue
		}
		s.applyLearnedWire([]byte(v))
	}
	if len(gone) > 0 {
		_ = s.rdb.HDel(ctx, learnedKey, gone...).Err()
	}
}
