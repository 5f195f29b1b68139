package teame2e_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/teamtest"
)

// turn sends one request of the session straight to an instance and
// reports which backend's model answered.
func (tm *team) turn(t *testing.T, g *gateway.Gateway, session string) string {
	t.Helper()
	before := map[string]int{"mf": tm.up.Calls("mf"), "ms": tm.up.Calls("ms")}
	req, err := http.NewRequest("POST", "http://"+g.Addr()+"/v1/chat/completions",
		strings.NewReader(`{"model":"main","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set("X-FreeLane-Session", session)
	}
	resp, err := tm.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	for m, n := range before {
		if tm.up.Calls(m) > n {
			return m
		}
	}
	t.Fatal("no backend was called")
	return ""
}

// A session's first turn, served by one instance, makes the backend that
// served it the session's home on every instance: its next turns, through
// the two others, go to the same backend though their round robin's turn
// is the other one. The home is kept on Redis under the session's
// pseudonym, never the id the client sent.
func TestSessionsNextTurnOnAnotherInstanceKeepsItsHome(t *testing.T) {
	var key [32]byte
	_, _ = rand.Read(key[:])
	t.Setenv(gateway.VaultKeyEnv, base64.StdEncoding.EncodeToString(key[:]))
	r := teamtest.StartRedis(t)
	db := r.NewDB(t)
	tm := startTeam(t, 3, fmt.Sprintf("redis://%s/%d", r.Addr, db), config.Limits{}, func(c *config.Config) {
		c.Chains[0].Strategy = config.StrategyRoundRobin
	})
	// office-1's round robin is at its second backend when the session
	// starts; the others' are still at their first.
	first := tm.turn(t, tm.gws[0], "")
	home := tm.turn(t, tm.gws[0], "conversation-42")
	if home == first {
		t.Fatalf("round robin sent both of office-1's requests to %s", home)
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, DB: db})
	defer rdb.Close()
	deadline := time.Now().Add(5 * time.Second)
	var keys []string
	for len(keys) == 0 {
		var err error
		if keys, err = rdb.Keys(context.Background(), "{freelane}:home:*").Result(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the session's home never reached Redis")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(keys) != 1 || strings.Contains(keys[0], "conversation-42") {
		t.Fatalf("homes on Redis: %q, want one, under the session's pseudonym", keys)
	}
	for i, g := range tm.gws[1:] {
		if got := tm.turn(t, g, "conversation-42"); got != home {
			t.Fatalf("the session's turn through office-%d went to %s, want its home %s", i+2, got, home)
		}
	}
}
