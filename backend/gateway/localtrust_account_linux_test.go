package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakelocal"
)

// TestLocalServerOfARealOtherAccount runs a fake Ollama as the account
// nobody and lets FreeLane find it with the operating system's own answer
// of who owns the socket (no owner function is injected): the server is
// shown as another user's, with uid 65534, and gets no prompt, while the
// same server run by FreeLane's own account serves.
func TestLocalServerOfARealOtherAccount(t *testing.T) {
	bin := fakelocal.BuildBinary(t)
	theirs := fakelocal.StartProcess(t, bin, 65534, "ollama", "qwen2.5:7b:8192")
	mine := fakelocal.StartProcess(t, bin, -1, "ollama", "qwen2.5:7b:8192")

	e := &env{t: t, clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), dir: t.TempDir()}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Discovery.Ports = []int{theirs, mine}
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: e.dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Clock: e.clock, ManualProbes: true, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	e.g, e.base = g, "http://"+g.Addr()
	g.ScanLocal(context.Background())

	byPort := map[int]localView{}
	for _, l := range localOf(t, e) {
		byPort[l.Port] = l
	}
	if l := byPort[theirs]; !l.Foreign || l.Allowed || l.OwnerUID != 65534 || l.Provider != "" {
		t.Errorf("nobody's server: %+v", l)
	}
	if l := byPort[mine]; l.Foreign || l.Provider != fmt.Sprintf("ollama-%d", mine) {
		t.Errorf("root's own server: %+v", l)
	}
	r := e.post("/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"my secret plans"}]}`)
	if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != fmt.Sprintf("ollama-%d/qwen2.5:7b", mine) {
		t.Errorf("auto: %d from %q, want the own server: %s", r.status, r.header.Get("X-FreeLane-Backend"), r.body)
	}
	if r := e.post("/v1/chat/completions", fmt.Sprintf(`{"model":"ollama-%d/qwen2.5:7b","messages":[{"role":"user","content":"x"}]}`, theirs)); r.status != http.StatusNotFound {
		t.Errorf("nobody's server by its name: %d %s", r.status, r.body)
	}
}
