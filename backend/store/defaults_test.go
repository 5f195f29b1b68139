package store

import (
	"context"
	"testing"
	"time"

	"freelane/backend/defaults"
)

// TestZeroResponseOptionsAreTheDefaults fails when a response store built
// with no limits keeps answers longer or more of them than package
// defaults' table says, which the config loader fills requests: from too.
func TestZeroResponseOptionsAreTheDefaults(t *testing.T) {
	s := NewResponseStore(openTestDB(t), ResponseOptions{Logger: quietLogger})
	defer s.Close(context.Background())
	if got, want := time.Duration(s.retention.Load()), time.Duration(defaults.ResponseRetentionDays)*24*time.Hour; got != want {
		t.Errorf("retention %v, the table says %v", got, want)
	}
	if got, want := s.maxTotal.Load(), int64(defaults.ResponseStoreMB*defaults.MiB); got != want {
		t.Errorf("all stored answers %d bytes, the table says %d", got, want)
	}
}
