package config

import (
	"strings"
	"testing"
)

func TestTeamSettings(t *testing.T) {
	cfg, problems := mustParse(t, withGroq("instance: office-1", "state:", "  redis: redis://:pw@127.0.0.1:6379/0",
		"store:", "  postgres: postgres://fl:pw@db.lan:5432/freelane"), nil)
	if len(problems) != 0 || cfg.Instance != "office-1" || cfg.State.Redis != "redis://:pw@127.0.0.1:6379/0" ||
		cfg.Store.Postgres != "postgres://fl:pw@db.lan:5432/freelane" {
		t.Fatalf("team settings: %+v %+v %q, problems %v", cfg.State, cfg.Store, cfg.Instance, problems)
	}
	if _, problems := mustParse(t, withGroq("store:", "  postgres: host=db.lan dbname=freelane"), nil); len(problems) != 0 {
		t.Errorf("a key=value connection string was refused: %v", problems)
	}
	for _, tc := range []struct{ field, yaml, want string }{
		{"state.redis", "state:\n  redis: http://:secret-pw@redis.lan", "must be a Redis URL"},
		{"store.postgres", "store:\n  postgres: mysql://u:secret-pw@db.lan/x", "must be a PostgreSQL URL"},
		{"instance", "instance: \"a\\nb\"", "without control characters"},
		{"state.fail_closed", "state:\n  fail_closed: true", "set state.redis too"},
	} {
		_, problems, err := Parse("c.yaml", withGroq(strings.Split(tc.yaml, "\n")...), nil)
		p, ok := findProblem(problems, tc.field)
		if err == nil || !ok || !strings.Contains(p.Message, tc.want) {
			t.Errorf("%s: err %v, problems %v", tc.field, err, problems)
			continue
		}
		// The URL's password must not be repeated back.
		if strings.Contains(p.Message, "secret-pw") {
			t.Errorf("%s: the problem quotes the URL: %s", tc.field, p.Message)
		}
	}
}
