package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"freelane/backend/llm"
	"freelane/backend/router"
)

var _ router.TeamSessions = (*State)(nil)

// maxHomes bounds the homes waiting to be sent; each is one session on
// one route, and beyond it a session's next turn stays on the instance
// that knows it.
const maxHomes = 10_000

// wireHome is a session's home as the team keeps it, under a key of its
// own that expires when the home's cache goes cold.
type wireHome struct {
	Backend string `json:"b"`
	Until   int64  `json:"u"` // unix ms
}

// homes is the session side of State: the homes waiting to be sent,
// merged by key, so a busy session is one write per send.
type homes struct {
	queue newest[wireHome]
}

// homeKey names a session's home on a route. session is the pseudonym
// the API made of the caller's session id, never the id itself; being of
// fixed length it keeps the route apart without escaping.
func homeKey(session, route string) string { return key("home:" + session + ":" + route) }

// TeamHome reads the session's home on the route (router.TeamSessions):
// one GET under the request deadline, nothing while Redis is
// unreachable.
func (s *State) TeamHome(session, route string) (router.Home, bool) {
	if !s.up.Load() {
		return router.Home{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	b, err := s.rdb.Get(ctx, homeKey(session, route)).Bytes()
	if errors.Is(err, redis.Nil) {
		return router.Home{}, false
	}
	if err != nil {
		s.fault(err)
		return router.Home{}, false
	}
	var w wireHome
	if json.Unmarshal(b, &w) != nil {
		return router.Home{}, false
	}
	id, err := llm.ParseBackendID(w.Backend)
	if err != nil {
		return router.Home{}, false
	}
	return router.Home{Backend: id, Until: time.UnixMilli(w.Until)}, true
}

// ShareHome queues the session's home for the team (router.TeamSessions).
// Homes of a time Redis is unreachable are kept and sent when it is back,
// those that went cold meanwhile dropped.
func (s *State) ShareHome(session, route string, h router.Home) {
	s.homes.queue.put(homeKey(session, route), wireHome{Backend: h.Backend.String(), Until: h.Until.UnixMilli()})
	s.marks.poke()
}

// sendHomes writes the queued homes in one pipeline, each to expire with
// its cache; on failure they are kept for the next try.
func (s *State) sendHomes(ctx context.Context) {
	batch := s.homes.queue.take()
	if len(batch) == 0 {
		return
	}
	now := s.clock.Now()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, w := range batch {
			ttl := time.UnixMilli(w.Until).Sub(now)
			if ttl < time.Millisecond {
				continue
			}
			b, _ := json.Marshal(w)
			p.Set(ctx, k, b, ttl)
		}
		return nil
	})
	if err == nil {
		return
	}
	s.fault(err)
	s.homes.queue.restore(batch)
}
