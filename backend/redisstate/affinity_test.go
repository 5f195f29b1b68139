package redisstate_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"freelane/backend/internal/teamtest"
	"freelane/backend/llm"
	"freelane/backend/router"
)

// A session's home shared by one instance is read by another, and its
// key expires when the home goes cold.
func TestHomesReachTheTeamAndExpire(t *testing.T) {
	r := teamtest.StartRedis(t)
	db := r.NewDB(t)
	insts := team(t, r.Addr, db, 2)
	const session = "0123456789abcdef0123456789abcdef"
	if _, ok := insts[1].TeamHome(session, "main"); ok {
		t.Fatal("a home before any was shared")
	}
	until := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	warm := llm.BackendID{Provider: "p", Key: "k2", Model: "m"}
	insts[0].ShareHome(session, "main", router.Home{Backend: warm, Until: until})
	var h router.Home
	waitFor(t, "the other instance to read the home", func() bool {
		var ok bool
		h, ok = insts[1].TeamHome(session, "main")
		return ok
	})
	if h.Backend != warm || !h.Until.Equal(until) {
		t.Fatalf("home = %v until %v, want %v until %v", h.Backend, h.Until, warm, until)
	}
	if _, ok := insts[1].TeamHome(session, "side"); ok {
		t.Fatal("the home on one route answered for another")
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, DB: db})
	defer rdb.Close()
	ttl, err := rdb.PTTL(context.Background(), "{freelane}:home:"+session+":main").Result()
	if err != nil || ttl <= 0 || ttl > 2*time.Second {
		t.Fatalf("the home's key lives %v (%v), want until the home goes cold", ttl, err)
	}
	waitFor(t, "the cold home to go", func() bool { _, ok := insts[1].TeamHome(session, "main"); return !ok })
}
