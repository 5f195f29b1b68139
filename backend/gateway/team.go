package gateway

import (
	"cmp"
	"fmt"
	"net"
	"os"

	"freelane/backend/config"
	"freelane/backend/redisstate"
)

// openTeam connects to the state a team's instances share, when the
// configuration names it: the quota and budget counters, and what the
// breakers learn. Redis need not be reachable yet: the instance serves on
// its share of every limit, and on its own breakers, until it is.
func (g *Gateway) openTeam(cfg *config.Config) (*redisstate.State, error) {
	if cfg == nil || cfg.State.Redis == "" {
		return nil, nil
	}
	rs, err := redisstate.Open(redisstate.Options{URL: cfg.State.Redis, Instance: instanceName(cfg, g.o.Listen),
		Clock: g.clock, Logger: g.log})
	if err != nil {
		return nil, err
	}
	g.team = rs
	g.quota.ShareWith(rs)
	g.gate.ShareWith(rs)
	rs.ShareBreakers(g.gate)
	return rs, nil
}

// instanceName is how the instance is known to the others of its team:
// the configured name or else the host name with the port it listens on,
// which is what tells two instances on one host apart.
func instanceName(cfg *config.Config, listen string) string {
	if cfg.Instance != "" {
		return cfg.Instance
	}
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(cmp.Or(listen, cfg.Listen))
	return fmt.Sprintf("%s:%s", cmp.Or(host, "localhost"), cmp.Or(port, "7788"))
}

// teamStatus adapts the shared state's status to /healthz.
type teamStatus struct{ rs *redisstate.State }

func (t teamStatus) TeamStatus() (any, bool) {
	st := t.rs.Status()
	return st, st.Redis != "connected"
}
