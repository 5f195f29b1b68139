package config

import (
	"strings"
	"testing"
	"time"
)

// The response cache's settings parse, with a chain's own switch, and
// refuse a negative TTL and sizes outside their range with a message
// that names the key and the range.
func TestResponseCacheSettings(t *testing.T) {
	cfg, _, err := Parse("t.yaml", doc("cache:", "  enabled: true", "  ttl: 1h", "  max_mb: 64"), nil)
	if err != nil || !cfg.Cache.Enabled || cfg.Cache.TTL != time.Hour || cfg.Cache.MaxMB != 64 {
		t.Fatalf("got %+v, %v", cfg.Cache, err)
	}
	cfg, _, err = Parse("t.yaml", doc("listen: 127.0.0.1:1"), nil)
	if err != nil || cfg.Cache.Enabled {
		t.Fatalf("the cache is on by default: %+v, %v", cfg.Cache, err)
	}
	for bad, want := range map[string]string{
		"  ttl: -1m":      "cache.ttl: must be a duration from 1s to 720h (such as 10m or 1h); 0 or leaving it out means 10m0s, got -1m0s",
		"  ttl: 1ms":      "cache.ttl: must be at least 1s",
		"  ttl: 9000h":    "cache.ttl: must be a duration from 1s to 720h",
		"  max_mb: -1":    "cache.max_mb: must be from 1 to 16384 (MiB); 0 or leaving it out means 256, got -1",
		"  max_mb: 20000": "cache.max_mb: must be from 1 to 16384 (MiB)",
		"  max_mb: lots":  "max_mb",
		"  enabeld: true": "enabeld",
	} {
		if _, _, err := Parse("t.yaml", doc("cache:", bad), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", bad, err, want)
		}
	}
}
