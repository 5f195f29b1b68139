package redisstate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"freelane/backend/internal/teamtest"
	"freelane/backend/redisstate"
)

// Two instances on one Redis each show the other's status record: its
// version, start, PostgreSQL as it sees it and requests served; once one
// stops, it is gone from the other's view, record and all.
func TestStatusRecordsShowTheTeam(t *testing.T) {
	r := teamtest.StartRedis(t)
	db := r.NewDB(t)
	var served [2]atomic.Int64
	var pgUp [2]atomic.Bool
	pgUp[0].Store(true)
	var insts [2]*redisstate.State
	var stops [2]func()
	for i := range insts {
		s, err := redisstate.Open(redisstate.Options{URL: fmt.Sprintf("redis://%s/%d", r.Addr, db), Instance: fmt.Sprintf("office-%d", i+1), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		s.SetReport(redisstate.Report{Version: fmt.Sprintf("1.%d.0", i), Postgres: pgUp[i].Load, Served: served[i].Load})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		var once atomic.Bool
		stops[i] = func() {
			if once.CompareAndSwap(false, true) {
				cancel()
				<-done
			}
		}
		t.Cleanup(func() { stops[i](); s.Close() })
		insts[i] = s
	}
	served[1].Store(7)
	find := func(st redisstate.Status, name string) (redisstate.Peer, bool) {
		for _, p := range st.Instances {
			if p.Name == name {
				return p, true
			}
		}
		return redisstate.Peer{}, false
	}
	waitFor(t, "office-1 to see office-2's record", func() bool {
		p, ok := find(insts[0].Status(), "office-2")
		return ok && p.Served == 7 && p.Version == "1.1.0"
	})
	st := insts[0].Status()
	if len(st.Instances) != 2 {
		t.Fatalf("office-1 sees %d instances, want 2: %+v", len(st.Instances), st.Instances)
	}
	other, _ := find(st, "office-2")
	if other.Self || other.Redis != redisstate.Connected || other.Postgres != redisstate.Unreachable || other.Started == nil {
		t.Fatalf("office-2 as office-1 sees it: %+v", other)
	}
	self, _ := find(st, "office-1")
	if !self.Self || self.Postgres != redisstate.Connected || self.Version != "1.0.0" {
		t.Fatalf("office-1 as it sees itself: %+v", self)
	}
	// And the other way round.
	waitFor(t, "office-2 to see office-1's record", func() bool {
		p, ok := find(insts[1].Status(), "office-1")
		return ok && p.Version == "1.0.0" && p.Postgres == redisstate.Connected
	})
	b, _ := json.Marshal(st)
	if strings.Contains(string(b), r.Addr) || strings.Contains(string(b), "redis://") {
		t.Fatalf("the status shows where Redis is: %s", b)
	}

	stops[1]()
	waitFor(t, "office-2 to leave office-1's view", func() bool {
		_, ok := find(insts[0].Status(), "office-2")
		return !ok
	})
	// Its record is deleted from Redis too, not just hidden.
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, DB: db})
	defer rdb.Close()
	waitFor(t, "office-2's record to be deleted", func() bool {
		all, err := rdb.HGetAll(context.Background(), "{freelane}:status").Result()
		if err != nil {
			t.Fatal(err)
		}
		for m := range all {
			if strings.HasPrefix(m, "office-2#") {
				return false
			}
		}
		return len(all) == 1
	})
}

// While Redis is unreachable an instance shows itself only, marked as
// seeing Redis unreachable, with its own record.
func TestStatusWhileRedisIsUnreachable(t *testing.T) {
	s, err := redisstate.Open(redisstate.Options{URL: "redis://:s3cret-pass@127.0.0.1:1/0", Instance: "alone", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetReport(redisstate.Report{Version: "9.9.9", Served: func() int64 { return 3 }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	st := s.Status()
	if st.Redis != redisstate.Unreachable || len(st.Instances) != 1 {
		t.Fatalf("status without Redis: %+v", st)
	}
	p := st.Instances[0]
	if !p.Self || p.Name != "alone" || p.Redis != redisstate.Unreachable || p.Served != 3 || p.Version != "9.9.9" || p.Postgres != "" {
		t.Fatalf("the instance without Redis: %+v", p)
	}
	b, _ := json.Marshal(st)
	if strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "127.0.0.1:1") {
		t.Fatalf("the status shows the URL: %s", b)
	}
}
