package teame2e_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/teamtest"
)

// pausedAnswers asks every instance directly and reports which answer
// /v1 with the pause's 503.
func (tm *team) pausedAnswers(t *testing.T) []bool {
	t.Helper()
	var out []bool
	for _, g := range tm.gws {
		resp, err := tm.http.Post("http://"+g.Addr()+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"main","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		paused := resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), "freelane_paused")
		if !paused && resp.StatusCode != http.StatusOK {
			t.Fatalf("%s answered %d %s", g.Addr(), resp.StatusCode, b)
		}
		out = append(out, paused)
	}
	return out
}

func same(got []bool, want ...bool) bool {
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// waitPaused waits up to d for the instances' answers to be want.
func (tm *team) waitPaused(t *testing.T, d time.Duration, what string, want ...bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := tm.pausedAnswers(t)
		if same(got, want...) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: paused %v after %v, want %v", what, got, d, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pausing routing on one of three instances behind the balancer pauses
// all three within a second, resuming on another resumes all, and an
// instance starting while the team is paused starts paused.
func TestRoutingPauseIsTheTeams(t *testing.T) {
	r := teamtest.StartRedis(t)
	url := fmt.Sprintf("redis://%s/%d", r.Addr, r.NewDB(t))
	tm := startTeam(t, 3, url, config.Limits{})
	if ok, failure := tm.load(t, 3, 2); ok != 6 {
		t.Fatalf("%d of 6 answered before the pause: %s", ok, failure)
	}
	tm.gws[0].SetRoutingPaused(true)
	tm.waitPaused(t, 2*time.Second, "pausing on office-1", true, true, true)
	if ev := lastEvent(tm.gws[2]); !strings.Contains(ev, "on office-1") {
		t.Fatalf("office-3's pause event does not say where it came from: %q", ev)
	}
	tm.gws[1].SetRoutingPaused(false)
	tm.waitPaused(t, 2*time.Second, "resuming on office-2", false, false, false)
	tm.gws[2].SetRoutingPaused(true)
	tm.waitPaused(t, 2*time.Second, "pausing on office-3", true, true, true)

	cfg := config.Default()
	cfg.Listen, cfg.Instance, cfg.Discovery.Disabled = "127.0.0.1:0", "office-4", true
	cfg.State.Redis = url
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clocktest.Following(time.Now()), ManualProbes: true, LookupEnv: withoutCatalogKeys})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Shutdown(context.Background())
	if !g.RoutingPaused() {
		t.Fatal("an instance starting while the team is paused starts unpaused")
	}
}

// With Redis cut off, a pause on one instance stays on that instance;
// once Redis is back it takes the team's (unpaused) state again.
func TestRoutingPauseWhileRedisIsAway(t *testing.T) {
	h := teamtest.StartHAProxy(t)
	r := teamtest.StartRedis(t)
	tm := startTeam(t, 3, fmt.Sprintf("redis://%s/%d", h.RedisAddr, r.NewDB(t)), config.Limits{})
	h.Down(t, teamtest.BackendRedis)
	defer h.Up(t, teamtest.BackendRedis)
	tm.waitHealth(t, func(h health) bool { return h.Team.Redis == "unreachable" })
	tm.gws[0].SetRoutingPaused(true)
	tm.waitPaused(t, 2*time.Second, "pausing office-1 alone", true, false, false)
	time.Sleep(1500 * time.Millisecond)
	if got := tm.pausedAnswers(t); !same(got, true, false, false) {
		t.Fatalf("with Redis away: paused %v, want only office-1", got)
	}
	h.Up(t, teamtest.BackendRedis)
	tm.waitHealth(t, func(h health) bool { return h.Status == "ok" })
	tm.waitPaused(t, 3*time.Second, "office-1 taking the team's state", false, false, false)
}

func lastEvent(g *gateway.Gateway) string {
	evs := g.Events().Recent()
	if len(evs) == 0 {
		return ""
	}
	return evs[len(evs)-1].Reason
}
