package main

import (
	"strings"
	"testing"

	"freelane/backend/api"
	"freelane/backend/gateway"
	"freelane/backend/quota"
)

func TestTrayColour(t *testing.T) {
	b := func(name, status string) trayBackend { return trayBackend{Name: name, Status: status} }
	tests := []struct {
		name   string
		in     trayInput
		level  trayLevel
		status string
	}{
		{"all serving", trayInput{Chain: "auto", Backends: []trayBackend{b("a/x", "serving"), b("b/y", "serving")}},
			levelGreen, "Serving from a/x (2 of 2 up)"},
		{"first cooling, second serves", trayInput{Chain: "auto", Backends: []trayBackend{b("a/x", "cooling"), b("b/y", "serving")}},
			levelAmber, "Degraded: serving from b/y (1 of 2 up)"},
		{"first degraded still serves", trayInput{Chain: "auto", Backends: []trayBackend{b("a/x", "degraded"), b("b/y", "serving")}},
			levelAmber, "Degraded: serving from a/x (2 of 2 up)"},
		{"only a half-open trial left", trayInput{Chain: "auto", Backends: []trayBackend{b("a/x", "open"), b("b/y", "half_open")}},
			levelAmber, "Degraded: serving from b/y (1 of 2 up)"},
		{"every backend down", trayInput{Chain: "auto", Backends: []trayBackend{b("a/x", "open"), b("b/y", "key_disabled"), b("c/z", "retired")}},
			levelRed, `No backend of "auto" can serve`},
		{"no backends at all", trayInput{Chain: "auto"}, levelRed, `No backend in "auto": add a provider key`},
		{"near a quota", trayInput{Chain: "auto", Backends: []trayBackend{{Name: "a/x", Status: "serving", NearQuota: true}}},
			levelAmber, "Near quota: a/x"},
		{"quota used up on the only backend", trayInput{Chain: "auto", Backends: []trayBackend{{Name: "a/x", Status: "serving", NearQuota: true, Exhausted: true}}},
			levelRed, `No backend of "auto" can serve`},
		{"quota used up, next serves", trayInput{Chain: "auto", Backends: []trayBackend{{Name: "a/x", Status: "serving", Exhausted: true}, b("b/y", "serving")}},
			levelAmber, "Degraded: serving from b/y (1 of 2 up)"},
		{"near a budget", trayInput{Chain: "auto", Backends: []trayBackend{b("a/x", "serving")}, Budgets: []string{"global day"}},
			levelAmber, "Near budget: global day"},
		{"a team's Redis unreachable", trayInput{Chain: "auto", Backends: []trayBackend{b("a/x", "serving")}, TeamDown: []string{"Redis"}},
			levelAmber, "Degraded: Redis unreachable, serving from a/x on this instance's share"},
		{"no backend beats a shared part down", trayInput{Chain: "auto", Backends: []trayBackend{b("a/x", "open")}, TeamDown: []string{"Redis", "PostgreSQL"}},
			levelRed, `No backend of "auto" can serve`},
		{"paused wins", trayInput{Paused: true, Chain: "auto", Backends: []trayBackend{b("a/x", "open")}},
			levelPaused, "Paused: /v1 answers 503 until you resume"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Endpoint, tc.in.RequestsToday = "http://127.0.0.1:7788/v1", 42
			v := computeTray(tc.in)
			if v.Level != tc.level || v.Status != tc.status {
				t.Errorf("got %s %q, want %s %q", v.Level, v.Status, tc.level, tc.status)
			}
			if !strings.Contains(v.Tooltip, "http://127.0.0.1:7788/v1") || !strings.Contains(v.Tooltip, "42 requests today") {
				t.Errorf("tooltip %q", v.Tooltip)
			}
		})
	}
	// Every level has its own colour.
	seen := map[[4]uint8]trayLevel{}
	for _, l := range []trayLevel{levelGreen, levelAmber, levelRed, levelPaused} {
		c := l.color()
		key := [4]uint8{c.R, c.G, c.B, c.A}
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s share a colour", l, other)
		}
		seen[key] = l
	}
}

func TestTrayInputFromSnapshot(t *testing.T) {
	s := gateway.Snapshot{
		Endpoint: "http://127.0.0.1:7788/v1",
		Totals:   gateway.Totals{RequestsToday: 7},
		Chains: []api.ChainView{
			{Name: "auto", Backends: []string{"own/m", "nokey/m", "free/m", "gone/m"}, Default: true},
			{Name: "other", Backends: []string{"free/m"}},
		},
		Backends: []gateway.BackendView{
			{Name: "free/m", Status: "serving"},
			{Name: "own/m", Status: "cooling"},
			{Name: "nokey/m", Status: "no_key"},
		},
		Quotas: []quota.QuotaView{
			{Backend: "free/m", Limits: []quota.LimitUse{{Kind: "concurrency", Fraction: 1}, {Kind: "rpd", Fraction: 0.85}}},
			{Backend: "own/m", Limits: []quota.LimitUse{{Kind: "concurrency", Fraction: 0.9}}},
		},
		Budgets:       []quota.BudgetView{{Scope: "global", Period: "day", Fraction: 0.5}, {Scope: "provider:own", Period: "month", Fraction: 0.8}},
		RoutingPaused: false,
	}
	in := trayInputFrom(s)
	if in.Chain != "auto" || in.RequestsToday != 7 || in.Endpoint != s.Endpoint {
		t.Errorf("header fields: %+v", in)
	}
	// Chain order kept; a backend without a key and one the snapshot does
	// not know are left out; concurrency is not a quota.
	want := []trayBackend{{Name: "own/m", Status: "cooling"}, {Name: "free/m", Status: "serving", NearQuota: true}}
	if len(in.Backends) != len(want) {
		t.Fatalf("backends %+v", in.Backends)
	}
	for i := range want {
		if in.Backends[i] != want[i] {
			t.Errorf("backend %d: %+v, want %+v", i, in.Backends[i], want[i])
		}
	}
	if len(in.Budgets) != 1 || in.Budgets[0] != "provider:own month" {
		t.Errorf("budgets %q", in.Budgets)
	}
	if in.TeamDown != nil {
		t.Errorf("a single machine's snapshot has shared parts down: %q", in.TeamDown)
	}
	s.Team = gateway.TeamView{Enabled: true, Redis: gateway.TeamRedis{Configured: true, Status: "connected"},
		Postgres: gateway.TeamPostgres{Configured: true, Status: "unreachable"}}
	if in := trayInputFrom(s); len(in.TeamDown) != 1 || in.TeamDown[0] != "PostgreSQL" {
		t.Errorf("PostgreSQL unreachable in the snapshot gives %q", in.TeamDown)
	}
	s.RoutingPaused = true
	if v := computeTray(trayInputFrom(s)); v.Level != levelPaused {
		t.Errorf("paused snapshot gives %s", v.Level)
	}
}

func TestTrayGearItem(t *testing.T) {
	if got := gearTitle(trayState{defaultChain: "work", gear: "manual"}); got != "Manual gear for work" {
		t.Errorf("title %q", got)
	}
	if otherGear("manual") != "auto" || otherGear("auto") != "manual" || otherGear("") != "manual" {
		t.Error("a click must switch to the other gear")
	}
}
