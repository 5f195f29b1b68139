package api

import (
	"testing"
	"time"

	"freelane/backend/defaults"
)

// TestZeroOptionsAreTheDefaults fails when a server built with no body
// limits uses limits other than package defaults' table, which the config
// loader fills max_body_mb and requests: from too.
func TestZeroOptionsAreTheDefaults(t *testing.T) {
	s := New(Options{})
	if got, want := s.maxBody.Load(), int64(defaults.MaxBodyMB*defaults.MiB); got != want {
		t.Errorf("body limit %d, the table says %d", got, want)
	}
	if got, want := time.Duration(s.readTimeout.Load()), defaults.BodyReadTimeout; got != want {
		t.Errorf("body read timeout %v, the table says %v", got, want)
	}
	if got, want := s.budget.max.Load(), int64(defaults.MaxInflightBodyMB*defaults.MiB); got != want {
		t.Errorf("in-flight bodies %d, the table says %d", got, want)
	}
}
