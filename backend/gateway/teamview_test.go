package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/teamtest"
	"freelane/backend/llm"
	"freelane/backend/redisstate"
	"freelane/backend/vault"
)

// teamAnswer reads GET /api/team, checking it against its wire type.
func teamAnswer(t *testing.T, e *env) (gateway.TeamView, string) {
	t.Helper()
	r := newWire(e).call("GET /api/team", "/api/team", "", http.StatusOK)
	var tv gateway.TeamView
	if err := json.Unmarshal(r.body, &tv); err != nil {
		t.Fatalf("GET /api/team: %v: %s", err, r.body)
	}
	return tv, string(r.body)
}

// On a single machine /api/team says so, and like every admin route it
// needs a session.
func TestTeamViewOutsideATeam(t *testing.T) {
	e := newEnv(t, nil)
	tv, body := teamAnswer(t, e)
	if tv.Enabled || tv.Instance != "" || tv.Redis.Configured || tv.Postgres.Configured || len(tv.Instances) != 0 {
		t.Fatalf("a single machine's team view: %s", body)
	}
	if !strings.Contains(body, `"instances":[]`) {
		t.Errorf("the instances are not an empty list: %s", body)
	}
	if r := e.do("GET", "/api/team", "", map[string]string{"X-FreeLane-Session": ""}); r.status != http.StatusUnauthorized {
		t.Errorf("GET /api/team without a session: %d", r.status)
	}
}

// Two instances sharing a real Redis and a real PostgreSQL (whose URL
// holds a password) each list both, with their versions and how they see
// the shared parts; the password and the addresses are in no answer.
func TestTeamViewListsTheTeam(t *testing.T) {
	const pgPassword = "pg-s3cret-pass"
	r := teamtest.StartRedis(t)
	p := teamtest.StartPostgres(t)
	db := r.NewDB(t)
	// Loopback needs no password, so PostgreSQL accepts the URL with it.
	dsn := strings.Replace(p.DSN(p.NewDatabase(t)), p.User+"@", p.User+":"+pgPassword+"@", 1)
	t.Setenv(gateway.VaultKeyEnv, vault.NewKey())
	redisURL := fmt.Sprintf("redis://%s/%d", r.Addr, db)
	member := func(name string) *env {
		return newEnv(t, func(c *config.Config) {
			c.Instance, c.State.Redis, c.Store.Postgres = name, redisURL, dsn
		})
	}
	a, b := member("office-a"), member("office-b")
	var tv gateway.TeamView
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		tv, body = teamAnswer(t, a)
		if len(tv.Instances) == 2 && tv.Instances[1].Started != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !tv.Enabled || tv.Instance != "office-a" || tv.Redis.Status != redisstate.Connected || tv.Postgres.Status != redisstate.Connected {
		t.Fatalf("office-a's team view: %s", body)
	}
	if len(tv.Instances) != 2 || tv.Instances[0].Name != "office-a" || !tv.Instances[0].Self || tv.Instances[1].Name != "office-b" || tv.Instances[1].Self {
		t.Fatalf("office-a lists %s", body)
	}
	for _, in := range tv.Instances {
		if in.Redis != redisstate.Connected || in.Postgres != redisstate.Connected || in.Started == nil {
			t.Errorf("instance %s as office-a sees it: %+v", in.Name, in)
		}
	}
	tvb, bodyB := teamAnswer(t, b)
	if tvb.Instance != "office-b" || len(tvb.Instances) != 2 {
		t.Errorf("office-b's team view: %s", bodyB)
	}
	state := a.do("GET", "/api/state", "", nil)
	for _, answer := range []string{body, bodyB, string(state.body)} {
		for _, secret := range []string{pgPassword, "postgres://", "redis://", r.Addr, p.Addr} {
			if strings.Contains(answer, secret) {
				t.Errorf("an answer holds %q: %.600s", secret, answer)
			}
		}
	}
	if !strings.Contains(string(state.body), `"instance":"office-a"`) {
		t.Errorf("the snapshot has no team view: %.600s", state.body)
	}

	// office-b stops: office-a's dashboard is told, over its websocket,
	// that the team is office-a alone.
	w := newWire(a)
	c := w.dial()
	if err := b.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.socket(c, func(msg []byte) bool {
		var u struct {
			Type string            `json:"type"`
			Team *gateway.TeamView `json:"team"`
		}
		_ = json.Unmarshal(msg, &u)
		return u.Type == "update" && u.Team != nil && len(u.Team.Instances) == 1 && u.Team.Instances[0].Name == "office-a"
	})
}

// An instance whose Redis cannot be reached (its URL holds a password)
// shows itself alone, seeing Redis unreachable, and says nothing of the
// URL.
func TestTeamViewWithRedisUnreachable(t *testing.T) {
	const password = "redis-s3cret-pass"
	e := newEnv(t, func(c *config.Config) {
		c.Instance, c.State.Redis = "lonely", "redis://:"+password+"@127.0.0.1:1/0"
	})
	tv, body := teamAnswer(t, e)
	if !tv.Enabled || tv.Redis.Status != redisstate.Unreachable || tv.Postgres.Configured || len(tv.Instances) != 1 {
		t.Fatalf("the team view without Redis: %s", body)
	}
	if in := tv.Instances[0]; in.Name != "lonely" || !in.Self || in.Redis != redisstate.Unreachable {
		t.Fatalf("the instance without Redis: %+v", in)
	}
	if strings.Contains(body, password) || strings.Contains(body, "127.0.0.1:1") {
		t.Fatalf("the answer holds the URL: %s", body)
	}

	// The request log names the instance that served each request, in the
	// live tail and in the stored rows.
	e.g.RecordTrace(llm.Trace{ID: "served-here", Start: e.clock.Now(), Endpoint: "chat", Model: "auto", Backend: "a/ma", Status: 200, Class: llm.OK})
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := e.do("GET", "/api/requests?id=served-here", "", nil)
		var rows []llm.Trace
		_ = json.Unmarshal(r.body, &rows)
		if len(rows) == 1 {
			if rows[0].Instance != "lonely" {
				t.Fatalf("the stored row names instance %q, want lonely", rows[0].Instance)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the request never reached the log: %s", r.body)
		}
		e.clock.Advance(time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	var snap struct {
		Requests []llm.Trace `json:"requests"`
	}
	_ = json.Unmarshal(e.do("GET", "/api/state", "", nil).body, &snap)
	if len(snap.Requests) != 1 || snap.Requests[0].Instance != "lonely" {
		t.Errorf("the live tail: %+v, want served-here by lonely", snap.Requests)
	}
}
