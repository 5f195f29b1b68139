package probe

import (
	"testing"

	"freelane/backend/defaults"
)

// TestZeroSettingsAreTheDefaults fails when a prober built with no
// settings uses a schedule other than package defaults' table, which the
// config loader fills probes: from too.
func TestZeroSettingsAreTheDefaults(t *testing.T) {
	want := Settings{Interval: defaults.ProbeInterval, OpenInterval: defaults.ProbeOpenInterval,
		Daily: defaults.ProbeDaily, Timeout: defaults.ProbeTimeout, Parallel: defaults.ProbeParallel}
	p := New(Settings{}, func() []Target { return nil }, nil, nil, nil, nil)
	if p.s != want {
		t.Errorf("a prober with no settings uses %+v, the table says %+v", p.s, want)
	}
	p.Configure(Settings{})
	if p.s != want {
		t.Errorf("configured with no settings it uses %+v, the table says %+v", p.s, want)
	}
}
