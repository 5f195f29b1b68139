package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakelocal"
	"freelane/backend/internal/fakeupstream"
)

// Every goroutine a running gateway starts (the HTTP server, the
// background rounds and the writers) has ended once Shutdown returns.
func TestShutdownStopsEveryLoop(t *testing.T) {
	srv, err := fakelocal.New(fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "qwen2.5:7b", Context: 8192, Loaded: true}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	cfg := testConfig(up.URL)
	cfg.Discovery.Ports = []int{srv.Port()}
	// Not ManualProbes: every background round runs as in production.
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), LookupEnv: withoutCatalogKeys})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	want := []string{"dashboard hub", "discovery", "housekeeping", "http server", "model lists", "notifications", "probes",
		"request log writer", "response cache writer", "response store writer", "state saver", "time series writer"}
	started, running := g.Loops()
	slices.Sort(started)
	slices.Sort(running)
	if !slices.Equal(started, want) {
		t.Fatalf("started %v, want %v", started, want)
	}
	if !slices.Equal(running, want) {
		t.Fatalf("running while the gateway serves: %v, want %v", running, want)
	}
	if err := g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, running := g.Loops(); len(running) != 0 {
		t.Fatalf("still running after Shutdown: %v", running)
	}
}
