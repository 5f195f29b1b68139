package teame2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"freelane/backend/breaker"
	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/internal/teamtest"
	"freelane/backend/llm"
	"freelane/backend/vault"
)

func TestMain(m *testing.M) { os.Exit(teamtest.Main(m)) }

// team is several instances behind a load balancer.
type team struct {
	up   *fakeupstream.Server
	gws  []*gateway.Gateway
	lb   *teamtest.Balancer
	http *http.Client
}

// startTeam starts n instances sharing the Redis at redisURL. Their one
// chain, main, tries free/mf (limited by limits) and then spare/ms.
func startTeam(t *testing.T, n int, redisURL string, limits config.Limits, mutate ...func(*config.Config)) *team {
	t.Helper()
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	tm := &team{up: up, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	// Every instance's day is the same fixed day, moving with real time,
	// so that a run near midnight does not start the count over.
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Every instance opens the keys the others seal with the team's one
	// master key, which team mode on PostgreSQL requires.
	key := vault.NewKey()
	lookup := func(name string) (string, bool) {
		if name == gateway.VaultKeyEnv {
			return key, true
		}
		return withoutCatalogKeys(name)
	}
	tm.lb = teamtest.NewBalancer(t)
	var addrs []string
	for i := range n {
		cfg := config.Default()
		cfg.Listen = "127.0.0.1:0"
		cfg.Instance = fmt.Sprintf("office-%d", i+1)
		cfg.State.Redis = redisURL
		cfg.Discovery.Disabled = true
		cfg.AllowedHosts = []string{tm.lb.Addr}
		lim := limits
		timeouts := config.Timeouts{Connect: time.Second, Header: 2 * time.Second, FirstToken: 2 * time.Second, Idle: 2 * time.Second}
		cfg.Providers = []config.Provider{
			{Name: "free", Kind: "openai", Tier: "free", BaseURL: up.URL, APIKey: "sk-test-free", Timeouts: timeouts,
				Models: []config.Model{{ID: "mf", Context: 8192, Limits: &lim}}},
			{Name: "spare", Kind: "openai", Tier: "free", BaseURL: up.URL, APIKey: "sk-test-spare", Timeouts: timeouts,
				Models: []config.Model{{ID: "ms", Context: 8192}}},
		}
		cfg.Chains = []config.Chain{{Name: "main", Backends: []string{"free/mf", "spare/ms"}}}
		for _, m := range mutate {
			m(cfg)
		}
		g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: t.TempDir(), Logger: quiet,
			Clock: clocktest.Following(start), ManualProbes: true, LookupEnv: lookup})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
		tm.gws = append(tm.gws, g)
		addrs = append(addrs, g.Addr())
	}
	tm.lb.Start(t, addrs...)
	tm.waitHealth(t, func(h health) bool { return h.Status == "ok" && len(h.Team.Instances) == n })
	return tm
}

func withoutCatalogKeys(name string) (string, bool) {
	for _, p := range catalog.Embedded().Providers {
		for _, k := range append(p.KeyEnv, p.Placeholders...) {
			if k == name {
				return "", false
			}
		}
	}
	return os.LookupEnv(name)
}

// health is the part of /healthz these tests read.
type health struct {
	Status string `json:"status"`
	Team   struct {
		Instance  string `json:"instance"`
		Redis     string `json:"redis"`
		Instances []struct {
			Name string `json:"name"`
		} `json:"instances"`
		Pending int `json:"pending"`
	} `json:"team"`
}

// waitHealth waits until every instance's /healthz satisfies ok.
func (tm *team) waitHealth(t *testing.T, ok func(health) bool) []health {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var hs []health
		all := true
		for _, g := range tm.gws {
			resp, err := tm.http.Get("http://" + g.Addr() + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			var h health
			err = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
			all = all && ok(h)
		}
		if all {
			return hs
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the instances' health; last seen %+v", hs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// load sends requests from clients at once through the balancer, each
// client sending per requests, and returns how many were answered 200
// and the first other answer.
func (tm *team) load(t *testing.T, clients, per int) (ok int64, failure string) {
	t.Helper()
	var good atomic.Int64
	var bad atomic.Value
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				resp, err := tm.http.Post("http://"+tm.lb.Addr+"/v1/chat/completions", "application/json",
					strings.NewReader(`{"model":"main","messages":[{"role":"user","content":"hi"}]}`))
				if err != nil {
					bad.CompareAndSwap(nil, err.Error())
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					bad.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, b))
					continue
				}
				good.Add(1)
			}
		}()
	}
	wg.Wait()
	f, _ := bad.Load().(string)
	return good.Load(), f
}

// counted is the sum of a day counter's buckets on Redis.
func counted(t *testing.T, rdb *redis.Client, key string) int64 {
	t.Helper()
	vals, err := rdb.HGetAll(context.Background(), "{freelane}:"+key).Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, v := range vals {
		x, _ := strconv.ParseInt(v, 10, 64)
		n += x
	}
	return n
}

// Three instances behind a load balancer, under load from many clients,
// serve a backend limited to 100 requests a day exactly 100 times; every
// other request goes to the next backend of the chain and none fails.
func TestThreeInstancesServeADailyLimitExactly(t *testing.T) {
	r := teamtest.StartRedis(t)
	tm := startTeam(t, 3, fmt.Sprintf("redis://%s/%d", r.Addr, r.NewDB(t)), config.Limits{RPD: 100})
	ok, failure := tm.load(t, 30, 10)
	if ok != 300 {
		t.Fatalf("%d of 300 requests answered 200; first failure: %s", ok, failure)
	}
	if got := tm.up.Calls("mf"); got != 100 {
		t.Fatalf("the 100-a-day backend was called %d times across three instances, want exactly 100", got)
	}
	if got := tm.up.Calls("ms"); got != 200 {
		t.Fatalf("the next backend was called %d times, want 200", got)
	}
}

// With Redis cut off before the load, no request fails, every instance
// says it is degraded, a 90-a-day backend is served at most its limit
// (each instance its third), and once Redis is back the team's counter
// holds every call and the health is ok again.
func TestRedisDownIsADegradedModeNotAnOutage(t *testing.T) {
	h := teamtest.StartHAProxy(t)
	r := teamtest.StartRedis(t)
	db := r.NewDB(t)
	tm := startTeam(t, 3, fmt.Sprintf("redis://%s/%d", h.RedisAddr, db), config.Limits{RPD: 90})
	h.Down(t, teamtest.BackendRedis)
	defer h.Up(t, teamtest.BackendRedis)
	tm.waitHealth(t, func(h health) bool { return h.Status == "degraded" && h.Team.Redis == "unreachable" })
	ok, failure := tm.load(t, 30, 8)
	if ok != 240 {
		t.Fatalf("%d of 240 requests answered 200 with Redis down; first failure: %s", ok, failure)
	}
	served := tm.up.Calls("mf")
	if served != 90 {
		t.Fatalf("the 90-a-day backend was called %d times with Redis down, want 90 (30 through each instance)", served)
	}
	h.Up(t, teamtest.BackendRedis)
	tm.waitHealth(t, func(h health) bool { return h.Status == "ok" && h.Team.Pending == 0 && len(h.Team.Instances) == 3 })
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, DB: db})
	defer rdb.Close()
	if got := counted(t, rdb, "q:free/mf:rpd"); got != int64(served) {
		t.Fatalf("after Redis returned the team's counter holds %d, want the %d calls made while it was down", got, served)
	}
	// The day's 90 are used: nothing more goes to the limited backend.
	if ok, failure := tm.load(t, 6, 5); ok != 30 {
		t.Fatalf("%d of 30 answered after Redis returned; first failure: %s", ok, failure)
	}
	if got := tm.up.Calls("mf"); got != served {
		t.Fatalf("the used-up backend was called %d more times after Redis returned", got-served)
	}
}

// A backend that starts failing is opened on all three instances after
// three failures in total (one through each), not three on each: the
// requests after that go straight to the next backend everywhere.
func TestBreakerOpensOnEveryInstanceAfterTheTeamsFailures(t *testing.T) {
	r := teamtest.StartRedis(t)
	tm := startTeam(t, 3, fmt.Sprintf("redis://%s/%d", r.Addr, r.NewDB(t)), config.Limits{}, func(c *config.Config) {
		// Only failures in a row trip, so that the count is the team's.
		c.Breaker.Failures, c.Breaker.HealthThreshold = 3, 0.01
	})
	tm.up.Set("mf", fakeupstream.Behavior{Status: 503})
	// One request to each instance in turn (the balancer goes round).
	for i := range 3 {
		if ok, failure := tm.load(t, 1, 1); ok != 1 {
			t.Fatalf("request %d failed: %s", i+1, failure)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := tm.up.Calls("mf"); got != 3 {
		t.Fatalf("the failing backend was called %d times, want 3", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		open := 0
		for _, g := range tm.gws {
			if st := g.BreakerStatus(llm.BackendID{Provider: "free", Model: "mf"}); st.State == breaker.Open {
				open++
			}
		}
		if open == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 instances opened the failing backend's breaker", open)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ok, failure := tm.load(t, 10, 3); ok != 30 {
		t.Fatalf("%d of 30 answered: %s", ok, failure)
	}
	if got := tm.up.Calls("mf"); got != 3 {
		t.Fatalf("the failing backend was called %d times after every instance opened it, want still 3", got)
	}
}

// startPostgresTeam starts three instances sharing one Redis and one new
// PostgreSQL database, which they reach through HAProxy so that a test
// can cut it off; dsn reaches the database directly.
func startPostgresTeam(t *testing.T) (tm *team, h *teamtest.HAProxy, dsn string) {
	t.Helper()
	h = teamtest.StartHAProxy(t)
	r := teamtest.StartRedis(t)
	p := teamtest.StartPostgres(t)
	db := p.NewDatabase(t)
	tm = startTeam(t, 3, fmt.Sprintf("redis://%s/%d", r.Addr, r.NewDB(t)), config.Limits{}, func(c *config.Config) {
		c.Store.Postgres = p.Via(h.PostgresAddr, db)
	})
	return tm, h, p.DSN(db)
}

// PostgreSQL cut off under load from many clients: no request fails, and
// once it is back the team's ledger on PostgreSQL holds every request
// exactly once, whichever instance served it.
func TestPostgresDownMidLoadLosesNoLedgerRow(t *testing.T) {
	tm, h, dsn := startPostgresTeam(t)
	var total atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ok, failure := tm.load(t, 1, 1)
				if ok != 1 {
					t.Errorf("a request failed: %s", failure)
					return
				}
				total.Add(1)
			}
		}()
	}
	time.Sleep(time.Second)
	h.Down(t, teamtest.BackendPostgres)
	time.Sleep(2 * time.Second)
	h.Up(t, teamtest.BackendPostgres)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	pg, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	want := total.Load()
	var rows, distinct, instances int64
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := pg.QueryRow(context.Background(),
			`SELECT COUNT(*), COUNT(DISTINCT (instance, seq)), COUNT(DISTINCT instance) FROM ledger`).Scan(&rows, &distinct, &instances)
		if err != nil {
			t.Fatal(err)
		}
		if rows >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if rows != want || distinct != rows || instances != 3 {
		t.Fatalf("PostgreSQL's ledger holds %d rows (%d distinct) from %d instances after %d requests answered, want each once from 3", rows, distinct, instances, want)
	}
	t.Logf("%d requests, PostgreSQL cut off for 2 s in the middle; its ledger holds each once", want)
}
