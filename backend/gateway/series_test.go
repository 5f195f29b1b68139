package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"freelane/backend/metrics"
)

func (e *env) seriesView(query string) metrics.SeriesView {
	e.t.Helper()
	r := e.do("GET", "/api/series"+query, "", nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("GET /api/series%s: %d %s", query, r.status, r.body)
	}
	var v metrics.SeriesView
	if err := json.Unmarshal(r.body, &v); err != nil {
		e.t.Fatalf("GET /api/series%s: %v: %s", query, err, r.body)
	}
	return v
}

func seriesRequests(v metrics.SeriesView) (n int64) {
	for _, b := range v.Buckets {
		n += b.Requests
	}
	return n
}

func TestSeriesAPI(t *testing.T) {
	e := newEnv(t, nil)
	for range 3 {
		if r := e.post("/v1/chat/completions", chat("main", false)); r.status != http.StatusOK {
			t.Fatalf("chat: %d %s", r.status, r.body)
		}
	}
	for _, c := range []struct {
		query   string
		buckets int
	}{
		{"", 360},
		{"?window=1m", 6},
		{"?window=5m&backend=a/ma", 30},
		{"?window=1h&chain=main", 360},
		{"?window=24h", 1440},
		{"?window=7d&backend=a/ma", 168},
	} {
		v := e.seriesView(c.query)
		if len(v.Buckets) != c.buckets {
			t.Errorf("%q: %d buckets, want %d", c.query, len(v.Buckets), c.buckets)
		}
		if got := seriesRequests(v); got != 3 {
			t.Errorf("%q: %d requests, want 3", c.query, got)
		}
		if now := e.clock.Now().Unix(); v.To < now-1 || v.To > now {
			t.Errorf("%q: window ends at %d, want now (%d)", c.query, v.To, now)
		}
	}
	// A backend with no calls has every bucket, all empty, and a quiet
	// bucket is only its start and its zero requests.
	if v := e.seriesView("?window=1m&backend=b/mb"); len(v.Buckets) != 6 || seriesRequests(v) != 0 {
		t.Errorf("idle backend: %d buckets with %d requests", len(v.Buckets), seriesRequests(v))
	}
	if r := e.do("GET", "/api/series?window=24h&backend=b/mb", "", nil); len(r.body) > 1440*40 {
		t.Errorf("a quiet day is %d bytes of JSON, want under %d", len(r.body), 1440*40)
	}

	start := time.Now()
	e.seriesView("?window=7d")
	t.Logf("GET /api/series?window=7d: %v", time.Since(start))

	for _, c := range []struct{ query, field, words string }{
		{"?window=2h", "window", "window must be one of 1m, 5m, 1h, 24h, 7d"},
		{"?window=" + strings.Repeat("x", 500), "window", "window must be one of"},
		{"?backend=a/ma&chain=main", "chain", "not both"},
		{"?backend=" + url.QueryEscape("a/\x00ma"), "backend", "without control characters"},
		{"?chain=" + strings.Repeat("c", 2000), "chain", "at most"},
	} {
		r := e.do("GET", "/api/series"+c.query, "", nil)
		var body struct {
			Error struct{ Message, Param string }
		}
		_ = json.Unmarshal(r.body, &body)
		if r.status != http.StatusBadRequest || body.Error.Param != c.field || !strings.Contains(body.Error.Message, c.words) {
			t.Errorf("%.60q: %d %s, want 400 on %s saying %q", c.query, r.status, r.body, c.field, c.words)
		}
		if strings.Contains(string(r.body), strings.Repeat("x", 100)) {
			t.Errorf("%.60q: the answer repeats the whole bad value: %s", c.query, r.body)
		}
	}
}
