package breaker

import (
	"reflect"
	"testing"

	"freelane/backend/defaults"
)

// TestZeroSettingsAreTheDefaults fails when a breaker built with no
// settings uses a default other than package defaults' table, which the
// config loader fills the configurable ones from too, or when a setting
// has no default at all.
func TestZeroSettingsAreTheDefaults(t *testing.T) {
	want := Settings{
		Failures:           defaults.BreakerFailures,
		HealthThreshold:    defaults.HealthThreshold,
		Alpha:              defaults.HealthAlpha,
		OpenTimes:          defaults.OpenTimes(defaults.BreakerOpen),
		FlapWindow:         defaults.FlapWindow,
		HealthyStretch:     defaults.HealthyStretch,
		RateLimitCooldown:  defaults.RateLimitCooldown,
		CredentialCooldown: defaults.CredentialCooldown,
		RetireFallback:     defaults.RetireFallback,
		SlowFactor:         defaults.SlowFactor,
		SlowSamples:        defaults.SlowSamples,
		ProbeFailures:      defaults.ProbeFailures,
		ProbeSuccesses:     defaults.ProbeSuccesses,
	}
	s := New(Settings{}, nil, nil)
	if !reflect.DeepEqual(s.s, want) {
		t.Errorf("a breaker with no settings uses %+v,\nthe table says %+v", s.s, want)
	}
	s.Configure(Settings{})
	if !reflect.DeepEqual(s.s, want) {
		t.Errorf("configured with no settings it uses %+v,\nthe table says %+v", s.s, want)
	}
	v := reflect.ValueOf(s.s)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("Settings.%s has no default", v.Type().Field(i).Name)
		}
	}
}
