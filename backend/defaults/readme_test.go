package defaults_test

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/defaults"
	"freelane/backend/router"
)

// documented is what the README's table of defaults must say for each
// key: the values written in backquotes in its row, in order.
var documented = map[string][]any{
	"listen":                           {defaults.Listen},
	"max_body_mb":                      {defaults.MaxBodyMB},
	"requests.body_read_timeout":       {defaults.BodyReadTimeout},
	"requests.max_inflight_body_mb":    {defaults.MaxInflightBodyMB},
	"requests.response_retention_days": {defaults.ResponseRetentionDays},
	"requests.response_store_mb":       {defaults.ResponseStoreMB},
	"timeouts.connect":                 {defaults.ConnectTimeout},
	"timeouts.header":                  {defaults.HeaderTimeout},
	"timeouts.first_token":             {defaults.FirstTokenTimeout, defaults.LocalFirstTokenTimeout},
	"timeouts.idle":                    {defaults.IdleTimeout},
	"breaker.failures":                 {defaults.BreakerFailures},
	"breaker.open":                     durations(defaults.OpenTimes(defaults.BreakerOpen)),
	"breaker.rate_limit_cooldown":      {defaults.RateLimitCooldown},
	"breaker.health_threshold":         {defaults.HealthThreshold},
	"probes.interval":                  {defaults.ProbeInterval},
	"probes.open_interval":             {defaults.ProbeOpenInterval},
	"probes.daily":                     {defaults.ProbeDaily},
	"ledger.retention_days":            {defaults.LedgerRetentionDays},
	"request_log.keep_days":            {defaults.RequestLogKeepDays},
	"cache_ttl":                        {router.DefaultCacheTTL},
	"cache.ttl":                        {defaults.ResponseCacheTTL},
	"cache.max_mb":                     {defaults.ResponseCacheMB},
	"request_log.max_body_kb":          {defaults.RequestLogBodyKB},
	// On for an instance of a team, off on a single machine.
	"request_log.durable": {config.RequestLog{}.DurableAnswers(true), config.RequestLog{}.DurableAnswers(false)},
	// Every kind of notification is on unless switched off.
	"notifications.breaker": {true},
}

func durations(ds []time.Duration) []any {
	out := make([]any, len(ds))
	for i, d := range ds {
		out[i] = d
	}
	return out
}

var quoted = regexp.MustCompile("`([^`]*)`")

// TestREADMEShowsTheTable fails when the README's table of defaults
// differs from the table the code reads: a value, a key missing from
// either, or the table itself gone.
func TestREADMEShowsTheTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### Defaults\n")
	if !ok {
		t.Fatal("README.md has no \"### Defaults\" section")
	}
	section, _, _ = strings.Cut(section, "\n#")
	seen := map[string]bool{}
	for line := range strings.Lines(section) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 2 {
			continue
		}
		key := quoted.FindStringSubmatch(cells[0])
		if key == nil {
			continue
		}
		want, ok := documented[key[1]]
		if !ok {
			t.Errorf("README.md documents a default of %s, which this test does not know: add it to documented", key[1])
			continue
		}
		seen[key[1]] = true
		var got []string
		for _, m := range quoted.FindAllStringSubmatch(cells[1], -1) {
			got = append(got, m[1])
		}
		if len(got) != len(want) {
			t.Errorf("README.md gives %s the values %q, the table has %v", key[1], got, want)
			continue
		}
		for i, w := range want {
			if err := same(got[i], w); err != nil {
				t.Errorf("README.md: %s: %v", key[1], err)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(documented)) {
		if !seen[k] {
			t.Errorf("README.md's table of defaults has no row for %s", k)
		}
	}
}

// same reports whether the README's text s states value v.
func same(s string, v any) error {
	var ok bool
	switch v := v.(type) {
	case time.Duration:
		d, err := time.ParseDuration(s)
		ok = err == nil && d == v
	case int:
		n, err := strconv.Atoi(s)
		ok = err == nil && n == v
	case float64:
		f, err := strconv.ParseFloat(s, 64)
		ok = err == nil && f == v
	case string:
		ok = s == v
	case bool:
		b, err := strconv.ParseBool(s)
		ok = err == nil && b == v
	default:
		return fmt.Errorf("cannot compare with a %T", v)
	}
	if !ok {
		return fmt.Errorf("says %q, the table has %v", s, v)
	}
	return nil
}
