package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"freelane/backend/config"
)

// TestProfilingFollowsTheConfig: /debug/pprof/ is there only with
// debug.pprof on.
func TestProfilingFollowsTheConfig(t *testing.T) {
	get := func(e *env) (int, string) {
		resp, err := http.Get(e.base + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	on := newEnv(t, func(cfg *config.Config) { cfg.Debug.Pprof = true })
	if status, body := get(on); status != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Errorf("with debug.pprof: %d %s", status, body)
	}
	if status, body := get(newEnv(t, nil)); status != http.StatusNotFound || !strings.Contains(body, "profiling is off") {
		t.Errorf("without: %d %s", status, body)
	}
}
