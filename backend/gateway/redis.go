package gateway

import (
	"context"
	"os"

	"freelane/backend/config"
	"freelane/backend/redisstate"
)

// openSharedState connects to the state a team's instances share, when the
// configuration names it: the quota and budget counters, what the
// breakers learn, and each instance's status record. Redis need not be reachable yet: the instance serves on
// its share of every limit, and on its own breakers, until it is.
func (g *Gateway) openSharedState(cfg *config.Config) (*redisstate.State, error) {
	if cfg == nil || cfg.State.Redis == "" {
		return nil, nil
	}
	rs, err := redisstate.Open(redisstate.Options{URL: cfg.State.Redis, Instance: instanceName(cfg, g.o.Listen),
		Clock: g.clock, Logger: g.log})
	if err != nil {
		return nil, err
	}
	g.shared = rs
	report := redisstate.Report{Version: g.o.Version, Served: g.feed.served.Load}
	if g.team != nil {
		report.Postgres = g.team.Reachable
	}
	rs.SetReport(report)
	g.quota.ShareWith(rs, cfg.State.FailClosed)
	rs.ShareLearned(g.quota)
	g.gate.ShareWith(rs)
	rs.ShareBreakers(g.gate)
	return rs, nil
}

// shareWithTeam shares what needs the API server and the router with the
// team's other instances once they exist: the routing pause, taken from
// the team before the instance serves, and the sessions' homes.
func (g *Gateway) shareWithTeam(ctx context.Context, rs *redisstate.State) {
	rs.SharePause(teamPause{g})
	rs.JoinPause(ctx)
	g.router.ShareSessionsWith(rs)
	lookup := g.o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if key, _ := lookup(VaultKeyEnv); key == "" {
		// Sessions are known by a pseudonym keyed by the master key: with
		// a key of each instance's own, no two instances name a session
		// alike.
		g.log.Warn("state.redis is set without " + VaultKeyEnv + ": a session's next request on another instance will not find the backend where its prompt cache is warm; give every instance the same " + VaultKeyEnv)
	}
}

// sharedStatus adapts the shared state's status to /healthz.
type sharedStatus struct{ rs *redisstate.State }

func (t sharedStatus) TeamStatus() (any, bool) {
	st := t.rs.Status()
	return st, st.Redis != "connected"
}
