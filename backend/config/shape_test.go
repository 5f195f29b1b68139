package config

import (
	"strings"
	"testing"
	"time"
)

func TestQueueWaitIsReadAndBounded(t *testing.T) {
	src := `providers:
  - name: groq
    tier: free
    base_url: https://api.groq.com/openai/v1
    keyless: true
    limits: {rpm: 30, queue_wait: 1m}
    models:
      - {id: m, limits: {concurrency: 1, queue_wait: -1s}}
      - {id: n, limits: {concurrency: 2, queue_wait: 0s}}
`
	_, _, err := Parse("s.yaml", []byte(src), nil)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"s.yaml:6: providers[0].limits.queue_wait: must be between 0 (pass a busy backend by at once) and 30s, got 1m0s",
		"s.yaml:8: providers[0].models[0].limits.queue_wait: must be between 0 (pass a busy backend by at once) and 30s, got -1s",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "models[1]") {
		t.Errorf("a queue wait of 0 was refused: %v", err)
	}
	ok := strings.NewReplacer("queue_wait: 1m", "queue_wait: 1500ms", "queue_wait: -1s", "queue_wait: 2s").Replace(src)
	cfg, _, err := Parse("s.yaml", []byte(ok), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers[0]
	if p.Limits.QueueWait == nil || *p.Limits.QueueWait != 1500*time.Millisecond ||
		p.Models[1].Limits.QueueWait == nil || *p.Models[1].Limits.QueueWait != 0 {
		t.Fatalf("read: %+v %+v", p.Limits, p.Models[1].Limits)
	}
}
