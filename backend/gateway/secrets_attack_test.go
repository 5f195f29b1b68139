package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/fakeupstream"
)

// The secrets an attacker is after. Each holds "PLANTED", so a test looks
// for that word rather than for the whole secret: a secret cut in half
// still leaks most of itself.
const (
	plantedKey    = "sk-PLANTED-7f3c9a1e5b2d4680"
	plantedHeader = "hdr-PLANTED-c0ffee-0123"
	plantedWord   = "PLANTED"
)

// attackEnv is a gateway whose log is kept, in front of a hostile upstream
// that knows the planted secrets: provider paid sends both of them.
func attackEnv(t *testing.T, mutate func(*config.Config)) (*env, *syncBuffer) {
	t.Helper()
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Providers = []config.Provider{{
		Name: "paid", Kind: "openai", Tier: "own", BaseURL: up.URL, APIKey: plantedKey,
		Headers: map[string]string{"X-Upstream-Token": plantedHeader},
		Models: []config.Model{
			{ID: "m400", Context: 8192}, {ID: "m200", Context: 8192}, {ID: "mstream", Context: 8192},
			{ID: "mlong", Context: 8192}, {ID: "mok", Context: 8192},
		},
		Timeouts: fastTimeouts,
	}}
	if mutate != nil {
		mutate(cfg)
	}
	logs := &syncBuffer{}
	e := &env{t: t, up: up, dir: t.TempDir()}
	g, err := gateway.New(context.Background(), gateway.Options{
		Config: cfg, DataDir: e.dir, ManualProbes: true,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	e.g, e.base = g, "http://"+g.Addr()
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	return e, logs
}

// TestAttackRedirectToAnotherPortGetsNothing has the upstream answer 307
// to a server of its own on the same host, another port. That server must
// not see the key, the secret header or the prompt: it must not be called.
func TestAttackRedirectToAnotherPortGetsNothing(t *testing.T) {
	e, _ := attackEnv(t, nil)
	other := fakeupstream.Start()
	t.Cleanup(other.Close)
	e.up.Set("mok", fakeupstream.Behavior{Status: http.StatusTemporaryRedirect,
		Headers: map[string]string{"Location": other.URL + "/chat/completions"}})
	const prompt = "the secret plan is PLANTED here"
	body := `{"model":"paid/mok","messages":[{"role":"user","content":"` + prompt + `"}]}`
	r := e.post("/v1/chat/completions", body)
	if r.status == 200 {
		t.Fatalf("the redirect was followed: %s", r.body)
	}
	for _, req := range other.Requests() {
		t.Errorf("the redirect target got %s with Authorization %q, X-Upstream-Token %q and body %s",
			req.Path, req.Header.Get("Authorization"), req.Header.Get("X-Upstream-Token"), req.Body)
	}
	if msg := r.errorMessage(); !strings.Contains(msg, "redirected to "+other.URL) || !strings.Contains(msg, "does not follow redirects") {
		t.Errorf("the failure does not say what happened: %q", msg)
	}
}
