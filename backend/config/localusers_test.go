package config

import (
	"strings"
	"testing"
)

func TestLocalUsers(t *testing.T) {
	for _, v := range []string{LocalUsersSelf, LocalUsersAny} {
		cfg, problems := mustParse(t, withGroq("server:", "  local_users: "+v), nil)
		if len(problems) != 0 || cfg.Server.LocalUsers != v {
			t.Errorf("local_users %s: %q, problems %v", v, cfg.Server.LocalUsers, problems)
		}
	}
	cfg, _ := mustParse(t, withGroq(), nil)
	if cfg.Server.LocalUsers != "" {
		t.Errorf("default local_users = %q, want empty (self)", cfg.Server.LocalUsers)
	}

	_, problems, err := Parse("c.yaml", withGroq("server:", "  local_users: everyone"), nil)
	p, ok := findProblem(problems, "server.local_users")
	if err == nil || !ok || p.Line != 10 || p.Warning ||
		!strings.Contains(p.Message, `must be "self" (only programs of the account running FreeLane, the default) or "any" (programs of every account on this machine), got "everyone"`) {
		t.Errorf("bad local_users: err %v, problems %v", err, problems)
	}
}
