package gateway

import (
	"encoding/json"
	"time"

	"freelane/backend/redisstate"
)

// TeamView is the team as this instance sees it: GET /api/team, and the
// team panel of the dashboard. It holds names, states and counts only,
// never the URL of a shared part or its password.
type TeamView struct {
	// Enabled is true when the instance is one of a team's: it shares
	// state on Redis (state.redis), a store on PostgreSQL
	// (store.postgres), or both.
	Enabled bool `json:"enabled"`
	// Instance is this instance's name; "" outside a team.
	Instance string       `json:"instance"`
	Redis    TeamRedis    `json:"redis"`
	Postgres TeamPostgres `json:"postgres"`
	// Instances are the team's live instances by name, each as its
	// status record says; this instance alone while Redis is unreachable
	// or not used, none outside a team.
	Instances []redisstate.Peer `json:"instances"`
}

// TeamRedis is how this instance sees the team's Redis.
type TeamRedis struct {
	// Configured is true when state.redis is set.
	Configured bool `json:"configured"`
	// Status is "connected" or "unreachable"; "" when not configured.
	Status string `json:"status"`
	// Since is when Redis became unreachable, while it is.
	Since *time.Time `json:"since,omitempty"`
	// Pending is how many of this instance's counter changes wait for
	// Redis to be back.
	Pending int `json:"pending"`
}

// TeamPostgres is how this instance sees the team's PostgreSQL.
type TeamPostgres struct {
	// Configured is true when store.postgres is set.
	Configured bool `json:"configured"`
	// Status is "connected" or "unreachable"; "" when not configured.
	// While unreachable the instance serves the configuration it last
	// read, and refuses changes.
	Status string `json:"status"`
}

// Team serves GET /api/team.
func (a adminView) Team() any { return a.g.teamView() }

// teamView is the team as this instance sees it now.
func (g *Gateway) teamView() TeamView {
	tv := TeamView{Instances: []redisstate.Peer{}}
	if g.shared == nil && g.team == nil {
		return tv
	}
	tv.Enabled, tv.Instance = true, g.instance
	pg := ""
	if g.team != nil {
		tv.Postgres.Configured = true
		pg = redisstate.Unreachable
		if g.team.Reachable() {
			pg = redisstate.Connected
		}
		tv.Postgres.Status = pg
	}
	if g.shared == nil {
		now := g.clock.Now().UTC()
		started := g.started.UTC()
		tv.Instances = []redisstate.Peer{{Name: g.instance, LastSeen: now, Self: true, Version: g.o.Version,
			Started: &started, Postgres: pg, Served: g.feed.served.Load()}}
		return tv
	}
	st := g.shared.Status()
	tv.Redis = TeamRedis{Configured: true, Status: st.Redis, Since: st.Since, Pending: st.Pending}
	tv.Instances = st.Instances
	return tv
}

// Unreachable names the shared parts this instance cannot reach ("Redis",
// "PostgreSQL"): while any is, the instance is degraded, serving on its
// share of each limit or on the configuration it last read.
func (tv TeamView) Unreachable() []string {
	var out []string
	if tv.Redis.Status == redisstate.Unreachable {
		out = append(out, "Redis")
	}
	if tv.Postgres.Status == redisstate.Unreachable {
		out = append(out, "PostgreSQL")
	}
	return out
}

// changeKey is what of the view the dashboard is told again when it
// changes: everything but the times the instances were last seen, which
// move every beat.
func (tv TeamView) changeKey() string {
	peers := make([]redisstate.Peer, len(tv.Instances))
	for i, p := range tv.Instances {
		p.LastSeen = time.Time{}
		peers[i] = p
	}
	tv.Instances = peers
	b, _ := json.Marshal(tv)
	return string(b)
}
