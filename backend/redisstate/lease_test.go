package redisstate_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"freelane/backend/internal/teamtest"
	"freelane/backend/quota"
)

// scriptCalls is how many times the server ran a script so far.
func scriptCalls(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for line := range strings.Lines(info) {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if rest, ok := strings.CutPrefix(line, cmd); ok {
				v, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				n += v
			}
		}
	}
	return n
}

// Far from a limit most takes are answered from a lease without a round
// trip; the units leased and not used go back once the instance is idle,
// so the team's counter ends at exactly what was admitted; a limit this
// instance shares leases less, and a small one nothing at all.
func TestLeasesSpareRoundTrips(t *testing.T) {
	r := teamtest.StartRedis(t)
	db := r.NewDB(t)
	s := team(t, r.Addr, db, 1)[0]
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, DB: db})
	defer rdb.Close()
	totals := make([]int64, 1)
	before := scriptCalls(t, rdb)
	const takes = 150
	for range takes {
		if n, err := s.Take([]quota.Count{day(100_000)}, totals); err != nil || n != -1 {
			t.Fatalf("take: %d %v", n, err)
		}
	}
	trips := scriptCalls(t, rdb) - before
	if trips > takes/16+2 {
		t.Fatalf("%d takes far from the limit made %d round trips, want at most %d", takes, trips, takes/16+2)
	}
	counted := func() int64 {
		n, _ := rdb.HGet(context.Background(), "{freelane}:q:test:rpd", "1000").Int64()
		return n
	}
	if n := counted(); n <= takes {
		t.Fatalf("the team's counter holds %d after %d takes, want the lease's units besides", n, takes)
	}
	waitFor(t, "the unused units to go back", func() bool { return counted() == takes })

	// Ten a day, half of it five: nothing to lease, every take asks.
	before = scriptCalls(t, rdb)
	small := day(10)
	small.Key = "q:small:rpd"
	for range 5 {
		if n, err := s.Take([]quota.Count{small}, totals); err != nil || n != -1 {
			t.Fatalf("take: %d %v", n, err)
		}
	}
	if small := scriptCalls(t, rdb) - before; small != 5 {
		t.Fatalf("5 takes of a 10-a-day limit made %d round trips, want 5", small)
	}
	t.Logf("%d takes far from the limit: %d round trips", takes, trips)
}
