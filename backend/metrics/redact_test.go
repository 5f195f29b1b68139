package metrics_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"freelane/backend/metrics"
	"freelane/backend/redact"
)

// TestPrometheusLabelsAreRedacted names a backend after a key, as a model
// list that lists one can, and reads the exposition.
func TestPrometheusLabelsAreRedacted(t *testing.T) {
	const key = "sk-METRICS-0123456789abcdef"
	r := metrics.New(nil)
	r.RedactLabels(redact.New(redact.Key(key)))
	r.Observe("prov/"+strings.ToUpper(key), metrics.Outcome{OK: true, Latency: time.Second})
	var b bytes.Buffer
	if err := r.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(strings.ToLower(out), "metrics-0123") || !strings.Contains(out, `backend="prov/[redacted key]"`) {
		t.Errorf("exposition:\n%s", out)
	}
}
