package config

import (
	"reflect"
	"slices"
	"testing"

	"freelane/backend/defaults"
)

// tableConfig is the configuration package defaults' table describes: what
// a file that sets nothing but one bare provider must load as.
func tableConfig() *Config {
	return &Config{
		Listen:    defaults.Listen,
		MaxBodyMB: defaults.MaxBodyMB,
		Requests: Requests{BodyReadTimeout: defaults.BodyReadTimeout, MaxInflightBodyMB: defaults.MaxInflightBodyMB,
			ResponseRetentionDays: defaults.ResponseRetentionDays, ResponseStoreMB: defaults.ResponseStoreMB},
		Breaker: Breaker{Failures: defaults.BreakerFailures, Open: defaults.BreakerOpen,
			RateLimitCooldown: defaults.RateLimitCooldown, HealthThreshold: defaults.HealthThreshold},
		Probes: Probes{Interval: defaults.ProbeInterval, OpenInterval: defaults.ProbeOpenInterval, Daily: defaults.ProbeDaily},
		Ledger: Ledger{RetentionDays: defaults.LedgerRetentionDays},
	}
}

// TestDefaultsAreTheTable fails when Default, the loader or a provider's
// time limits use a default other than package defaults' table, the one
// the upstream client, the breaker and the probes read too.
func TestDefaultsAreTheTable(t *testing.T) {
	if got, want := Default(), tableConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("Default() = %+v,\nthe table says %+v", got, want)
	}
	src := "providers:\n  - {name: lab, kind: openai, tier: local, keyless: true, base_url: http://127.0.0.1:8000/v1, models: [{id: m}]}\n"
	cfg, problems, err := Parse("t.yaml", []byte(src), nil)
	if err != nil || len(problems) != 0 {
		t.Fatalf("problems %v, err %v", problems, err)
	}
	want := tableConfig()
	loaded := *cfg
	loaded.Providers = nil
	if !reflect.DeepEqual(&loaded, want) {
		t.Errorf("loaded %+v,\nthe table says %+v", &loaded, want)
	}
	wantTimeouts := Timeouts{Connect: defaults.ConnectTimeout, Header: defaults.HeaderTimeout,
		FirstToken: defaults.FirstTokenTimeout, Idle: defaults.IdleTimeout}
	if got := cfg.Providers[0].Timeouts; got != wantTimeouts {
		t.Errorf("a provider without timeouts has %+v, the table says %+v", got, wantTimeouts)
	}
	if got := DefaultTimeouts(); got != wantTimeouts {
		t.Errorf("DefaultTimeouts() = %+v, the table says %+v", got, wantTimeouts)
	}
	if got, want := cfg.Breaker.OpenTimes(), defaults.OpenTimes(defaults.BreakerOpen); !slices.Equal(got, want) {
		t.Errorf("the default open times are %v, the table says %v", got, want)
	}
}
