package redisstate_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"freelane/backend/internal/teamtest"
	"freelane/backend/quota"
	"freelane/backend/redisstate"
)

func TestMain(m *testing.M) { os.Exit(teamtest.Main(m)) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// team opens n instances on one fresh database of addr and runs them
// until the test ends.
func team(t *testing.T, addr string, db, n int) []*redisstate.State {
	t.Helper()
	var out []*redisstate.State
	for i := range n {
		s, err := redisstate.Open(redisstate.Options{URL: fmt.Sprintf("redis://%s/%d", addr, db), Instance: fmt.Sprintf("i%d", i+1), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done; s.Close() })
		out = append(out, s)
	}
	waitFor(t, "every instance to see the others", func() bool {
		for _, s := range out {
			if !s.Up() || s.Alive() != n {
				return false
			}
		}
		return true
	})
	return out
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func day(limit int64) quota.Count {
	return quota.Count{Kind: quota.CountWindow, Key: "q:test:rpd", Bucket: 1000, Oldest: 1000,
		TTL: time.Hour, Limit: limit, N: 1}
}

// Three instances taking requests of one daily limit from many goroutines
// at once admit exactly the limit between them.
func TestTakeHoldsALimitAcrossInstances(t *testing.T) {
	r := teamtest.StartRedis(t)
	insts := team(t, r.Addr, r.NewDB(t), 3)
	const limit = 100
	var admitted, refused atomic.Int64
	per := make([]atomic.Int64, len(insts))
	var wg sync.WaitGroup
	for g := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := insts[g%len(insts)]
			for range 10 {
				totals := make([]int64, 1)
				n, err := s.Take([]quota.Count{day(limit)}, totals)
				if err != nil {
					t.Error(err)
					return
				}
				if n < 0 {
					admitted.Add(1)
					per[g%len(insts)].Add(1)
				} else {
					refused.Add(1)
					if totals[0] != limit {
						t.Errorf("a refusal reported a total of %d, want %d", totals[0], limit)
					}
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != limit || refused.Load() != 300-limit {
		t.Fatalf("admitted %d and refused %d of 300, want %d and %d", admitted.Load(), refused.Load(), limit, 300-limit)
	}
	for i := range per {
		if per[i].Load() == 0 {
			t.Errorf("instance %d admitted nothing", i+1)
		}
	}
}

// A check and its increment are all or nothing: a request refused by one
// limit is not counted against the other.
func TestTakeAppliesAllOrNothing(t *testing.T) {
	r := teamtest.StartRedis(t)
	s := team(t, r.Addr, r.NewDB(t), 1)[0]
	tight := quota.Count{Kind: quota.CountWindow, Key: "q:tight:rpm", Bucket: 50, Oldest: 0, TTL: time.Hour, Limit: 1, N: 1}
	loose := quota.Count{Kind: quota.CountWindow, Key: "q:loose:rpd", Bucket: 7, Oldest: 7, TTL: time.Hour, Limit: 10, N: 1}
	totals := make([]int64, 2)
	if n, err := s.Take([]quota.Count{loose, tight}, totals); err != nil || n != -1 || totals[0] != 1 || totals[1] != 1 {
		t.Fatalf("first take: refused %d, totals %v, err %v", n, totals, err)
	}
	if n, err := s.Take([]quota.Count{loose, tight}, totals); err != nil || n != 1 {
		t.Fatalf("second take: refused %d, err %v; want the tight limit (1) to refuse", n, err)
	}
	if n, _ := s.Take([]quota.Count{loose}, totals); n != -1 || totals[0] != 2 {
		t.Fatalf("the refused take counted against the loose limit: total %d, want 2", totals[0])
	}
	// A bucket that has left the window no longer counts.
	later := tight
	later.Bucket, later.Oldest = 200, 141
	if n, _ := s.Take([]quota.Count{later}, totals); n != -1 || totals[0] != 1 {
		t.Fatalf("after the window moved: refused %d, total %d; want admitted with 1", n, totals[0])
	}
	// A token check (N 0) refuses once the limit is reached.
	tok := quota.Count{Kind: quota.CountWindow, Key: "q:tok:tpd", Bucket: 7, Oldest: 7, TTL: time.Hour, Limit: 100}
	s.Add([]quota.Count{{Kind: quota.CountWindow, Key: tok.Key, Bucket: 7, Oldest: 7, TTL: tok.TTL, N: 100}})
	waitFor(t, "the added tokens", func() bool { n, _ := s.Take([]quota.Count{tok}, totals); return n == 0 && totals[0] == 100 })
}

// Budgets: reservations of live instances count against the limit, spend
// replaces them at settlement, and the reservation of an instance that is
// gone stops counting.
func TestBudgetReservations(t *testing.T) {
	r := teamtest.StartRedis(t)
	db := r.NewDB(t)
	insts := team(t, r.Addr, db, 2)
	a, b := insts[0], insts[1]
	exp := time.Hour
	reserve := func(s *redisstate.State, n int64) (int, int64) {
		totals := make([]int64, 1)
		refused, err := s.Take([]quota.Count{{Kind: quota.CountReserve, Key: "b:global|day:1", TTL: exp, Limit: 1000, N: n}}, totals)
		if err != nil {
			t.Fatal(err)
		}
		return refused, totals[0]
	}
	if n, tot := reserve(a, 600); n != -1 || tot != 600 {
		t.Fatalf("a's reservation: refused %d total %d", n, tot)
	}
	if n, tot := reserve(b, 600); n != 0 || tot != 600 {
		t.Fatalf("b's reservation past the limit: refused %d total %d, want refused at 600", n, tot)
	}
	// a settles: 600 held becomes 150 spent.
	a.Add([]quota.Count{{Kind: quota.CountReserve, Key: "b:global|day:1", TTL: exp, N: -600}, {Kind: quota.CountSpend, Key: "b:global|day:1", TTL: exp, N: 150}})
	waitFor(t, "a's settlement", func() bool { n, tot := reserve(b, 0); return n == -1 && tot == 150 })
	if n, tot := reserve(b, 800); n != -1 || tot != 950 {
		t.Fatalf("b's reservation after a settled: refused %d total %d, want admitted at 950", n, tot)
	}
	// A third instance that reserves and dies: its hold stops counting
	// once it is no longer alive.
	c, err := redisstate.Open(redisstate.Options{URL: fmt.Sprintf("redis://%s/%d", r.Addr, db), Instance: "doomed", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	waitFor(t, "the third instance", func() bool { return c.Up() && c.Alive() == 3 })
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, DB: db})
	defer rdb.Close()
	// Its reservation goes in directly, as a crash leaves it.
	if n, _ := reserve(c, 40); n != -1 {
		t.Fatalf("the third instance's reservation was refused")
	}
	if n, _ := reserve(b, 20); n != 0 {
		t.Fatalf("the live third instance's hold did not count")
	}
	cancel()
	<-done
	c.Close()
	// leave took it off the live list: its hold is void at once.
	if n, tot := reserve(b, 40); n != -1 || tot != 990 {
		t.Fatalf("after the third instance left: refused %d total %d, want admitted at 990", n, tot)
	}
}

// With Redis cut off, Take answers at once with ErrUnavailable (no
// timeout per call), Add keeps its counts, and they arrive when Redis is
// back.
func TestUnreachableRedisIsAModeAndCountsCatchUp(t *testing.T) {
	h := teamtest.StartHAProxy(t)
	r := teamtest.StartRedis(t)
	db := r.NewDB(t)
	s := team(t, h.RedisAddr, db, 1)[0]
	totals := make([]int64, 1)
	// A limit this small leases nothing, so every take asks Redis.
	if n, err := s.Take([]quota.Count{day(10)}, totals); err != nil || n != -1 {
		t.Fatalf("take: %d %v", n, err)
	}
	h.Down(t, teamtest.BackendRedis)
	defer h.Up(t, teamtest.BackendRedis)
	// The first call after the cut may wait for its deadline; the ones
	// after it must not.
	_, err := s.Take([]quota.Count{day(10)}, totals)
	if !errors.Is(err, redisstate.ErrUnavailable) {
		t.Fatalf("take with Redis cut: %v, want ErrUnavailable", err)
	}
	if s.Up() {
		t.Fatal("still up after a failed take")
	}
	t0 := time.Now()
	for range 1000 {
		if _, err := s.Take([]quota.Count{day(10)}, totals); !errors.Is(err, redisstate.ErrUnavailable) {
			t.Fatalf("take with Redis down: %v", err)
		}
	}
	if d := time.Since(t0); d > 50*time.Millisecond {
		t.Fatalf("1000 takes with Redis known down took %v; they must not wait", d)
	}
	if st := s.Status(); st.Redis != "unreachable" || st.Since == nil {
		t.Fatalf("status while down: %+v", st)
	}
	for range 29 {
		s.Add([]quota.Count{day(0)})
	}
	if st := s.Status(); st.Pending != 1 {
		t.Fatalf("pending while down: %d, want the 29 adds merged into 1", st.Pending)
	}
	h.Up(t, teamtest.BackendRedis)
	waitFor(t, "Redis to be back", s.Up)
	waitFor(t, "the kept counts to arrive", func() bool { return s.Status().Pending == 0 })
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, DB: db})
	defer rdb.Close()
	got, err := rdb.HGet(context.Background(), "{freelane}:q:test:rpd", "1000").Int64()
	if err != nil || got != 30 {
		t.Fatalf("counter after reconnecting: %d (%v), want 30", got, err)
	}
}

// Open refuses a URL it cannot read without repeating it (it may hold a
// password).
func TestOpenHidesTheURL(t *testing.T) {
	_, err := redisstate.Open(redisstate.Options{URL: "http://user:hunter2@example.com:6379"})
	if err == nil {
		t.Fatal("an http URL was accepted")
	}
	if msg := err.Error(); strings.Contains(msg, "hunter2") || strings.Contains(msg, "example.com") {
		t.Fatalf("the error repeats the URL: %s", msg)
	}
}
