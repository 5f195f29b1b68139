package config

import (
	"strings"
	"testing"

	"freelane/backend/defaults"
)

// The stored Responses answers are bounded in time and in total size; both
// default when left out and refuse values outside their range.
func TestResponseStoreSettings(t *testing.T) {
	cfg, _, err := Parse("t.yaml", doc("requests:", "  response_retention_days: 7", "  response_store_mb: 64"), nil)
	if err != nil || cfg.Requests.ResponseRetentionDays != 7 || cfg.Requests.ResponseStoreMB != 64 {
		t.Fatalf("got %+v, %v", cfg.Requests, err)
	}
	cfg, _, err = Parse("t.yaml", doc("listen: 127.0.0.1:1"), nil)
	if err != nil || cfg.Requests.ResponseRetentionDays != defaults.ResponseRetentionDays || cfg.Requests.ResponseStoreMB != defaults.ResponseStoreMB {
		t.Fatalf("defaults: got %+v, %v", cfg.Requests, err)
	}
	if d := Default(); d.Requests.ResponseStoreMB != defaults.ResponseStoreMB {
		t.Fatalf("Default() has response_store_mb %d", d.Requests.ResponseStoreMB)
	}
	for bad, want := range map[string]string{
		"  response_store_mb: -1":        "requests.response_store_mb: must be from 1 to 65536 (MiB); 0 or leaving it out means 512, got -1",
		"  response_store_mb: 70000":     "requests.response_store_mb: must be from 1 to 65536 (MiB)",
		"  response_retention_days: 91":  "requests.response_retention_days: must be from 1 to 90",
		"  response_retention_days: -1":  "requests.response_retention_days",
		"  response_store_mb: lots":      "response_store_mb",
		"  response_store_megabytes: 10": "response_store_megabytes",
	} {
		if _, _, err := Parse("t.yaml", doc("requests:", bad), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", bad, err, want)
		}
	}
}
