package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakeupstream"
)

// startFromFile starts e's gateway as freelane serve --config path does:
// the file loaded from disk, with the environment, and named.
func (e *env) startFromFile(path string) {
	e.t.Helper()
	cfg, _, err := config.Load(path)
	if err != nil {
		e.t.Fatal(err)
	}
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, ConfigPath: path, DataDir: e.dir,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: e.clock, ManualProbes: true, LookupEnv: withoutCatalogKeys})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.g, e.base, e.session = g, "http://"+g.Addr(), ""
	e.t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
}

// TestTheConfigFileKeyWinsOverTheDashboard: with --config, the key the
// file gives a provider is the one sent, at this start and the next; the
// dashboard's attempt to set another is refused with the file's name, and
// the provider's view says where the key comes from. A dashboard key
// would otherwise outlive every edit of the file and every restart.
func TestTheConfigFileKeyWinsOverTheDashboard(t *testing.T) {
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	t.Setenv("FL_FILEKEY_TEST_A", "sk-from-the-file-variable-1")
	path := filepath.Join(t.TempDir(), "freelane.yaml")
	file := `listen: 127.0.0.1:0
providers:
  - name: a
    tier: own
    base_url: ` + up.URL + `
    api_key: ${FL_FILEKEY_TEST_A}
    models: [{id: ma}]
  - name: z
    tier: own
    base_url: ` + up.URL + `
    api_key: ${FL_FILEKEY_TEST_UNSET}
    models: [{id: mz}]
`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	up.RequireKey("sk-from-the-file-variable-1")
	e := &env{t: t, up: up, clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), dir: t.TempDir()}
	e.startFromFile(path)

	r := e.do(http.MethodPut, "/api/providers/a/key", `{"key":"sk-pasted-in-the-dashboard-2"}`, nil)
	var body struct {
		Error struct{ Message, Code, Param string } `json:"error"`
	}
	_ = json.Unmarshal(r.body, &body)
	if r.status != http.StatusForbidden || body.Error.Code != "invalid_value" || body.Error.Param != "api_key" ||
		!strings.Contains(body.Error.Message, "the config file "+path+" gives the key of \"a\" (from FL_FILEKEY_TEST_A)") {
		t.Fatalf("setting a key the file gives: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), "sk-pasted") || strings.Contains(string(r.body), "sk-from-the-file") {
		t.Errorf("the answer holds a key: %s", r.body)
	}

	for run := 1; run <= 2; run++ {
		if r := e.post("/v1/chat/completions", chat("a/ma", false)); r.status != http.StatusOK {
			t.Errorf("run %d: a/ma: %d %s (the file's key was not the one sent)", run, r.status, r.body)
		}
		r := e.do(http.MethodGet, "/api/providers", "", nil)
		var views []control.ProviderView
		if err := json.Unmarshal(r.body, &views); err != nil {
			t.Fatalf("run %d: %v: %s", run, err, r.body)
		}
		for _, v := range views {
			if v.Key.File != path || v.Key.Source != map[string]string{"a": control.SourceEnv, "z": control.SourceNone}[v.Name] {
				t.Errorf("run %d: %s's key: %+v", run, v.Name, v.Key)
			}
		}
		// The key the file reads from an unset variable is asked for in
		// the file's terms, not the dashboard's.
		r = e.post("/v1/chat/completions", chat("z/mz", false))
		if msg := r.errorMessage(); r.status != http.StatusServiceUnavailable ||
			!strings.Contains(msg, "set FL_FILEKEY_TEST_UNSET and restart FreeLane (the config file "+path) || strings.Contains(msg, "dashboard") {
			t.Errorf("run %d: z/mz: %d %q", run, r.status, msg)
		}
		if run == 1 {
			// A second gateway over the same data directory and file.
			if err := e.g.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.startFromFile(path)
		}
	}
}
