package gateway_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/store"
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
	e := &env{t: t, up: up, dir: t.TempDir(), clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))}
	g, err := gateway.New(context.Background(), gateway.Options{
		Config: cfg, DataDir: e.dir, ManualProbes: true, Clock: e.clock,
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

// noSecret fails the test when text holds a planted secret or a piece of
// one.
func noSecret(t *testing.T, where string, text []byte) {
	t.Helper()
	if s := string(text); strings.Contains(s, plantedWord) {
		i := strings.Index(s, plantedWord)
		t.Errorf("%s holds a planted secret: …%s…", where, s[max(0, i-80):min(len(s), i+80)])
	}
}

// wsMessages dials the dashboard's websocket and returns the messages it
// sends within d: the snapshot and the updates after it.
func wsMessages(t *testing.T, e *env, d time.Duration) []byte {
	t.Helper()
	c, _, err := e.dialer().Dial("ws"+strings.TrimPrefix(e.base, "http")+"/api/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var all []byte
	deadline := time.Now().Add(d)
	for {
		_ = c.SetReadDeadline(deadline)
		_, msg, err := c.ReadMessage()
		if err != nil {
			break
		}
		all = append(all, msg...)
	}
	if len(all) == 0 {
		t.Fatal("the websocket sent nothing")
	}
	return all
}

// requestRows dumps every column of every row of the request table.
func requestRows(t *testing.T, dir string) []byte {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(dir, "freelane.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out, n := tableRows(t, db.SQL(), "requests", "")
	if n == 0 {
		t.Fatal("the request table is empty")
	}
	return out
}

// tableRows dumps every column of every row of table, each row on a line
// of its own that starts with prefix, and counts the rows.
func tableRows(t *testing.T, db *sql.DB, table, prefix string) ([]byte, int) {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM "` + table + `"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	n := 0
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, prefix...)
		for _, v := range vals {
			out = append(append(out, v...), '|')
		}
		out = append(out, '\n')
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, n
}

// TestAttackEchoedSecretsAreRedactedEverywhere has a hostile upstream echo
// the key and the secret header it was sent: in a 400 body passed through
// to the client, in the error of a 200 answer, in an error event after a
// stream has started, and behind 190 characters of padding, where a cut
// at the message limit used to leave most of the key. None of it may reach
// the client, the log, the request table, /api/requests, /api/state or the
// websocket.
func TestAttackEchoedSecretsAreRedactedEverywhere(t *testing.T) {
	e, logs := attackEnv(t, nil)
	echo := `you sent ` + plantedKey + ` and ` + plantedHeader
	e.up.Set("m400", fakeupstream.Behavior{Status: 400, Body: `{"error":{"message":"` + echo + `","type":"invalid_request_error"}}`})
	// The same secret spelt with a JSON escape, which a client's parser
	// turns back into the key.
	e.up.Set("m200", fakeupstream.Behavior{Body: `{"error":{"message":"quota for \u0073k-PLANTED-7f3c9a1e5b2d4680 used up: ` + echo + `"}}`})
	e.up.Set("mstream", fakeupstream.Behavior{Headers: map[string]string{"Content-Type": "text/event-stream"},
		Body: "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
			"data: {\"error\":{\"message\":\"upstream broke: " + echo + "\"}}\n\n"})
	pad := strings.Repeat("x", 190)
	e.up.Set("mlong", fakeupstream.Behavior{Status: 400, Body: `{"error":{"message":"` + pad + " " + plantedKey + `"}}`})

	var answers []byte
	for _, c := range []struct {
		model  string
		stream bool
	}{{"paid/m400", false}, {"paid/m400", true}, {"paid/m200", false}, {"paid/mstream", true}, {"paid/mlong", false}, {"paid/mlong", true}} {
		r := e.post("/v1/chat/completions", chat(c.model, c.stream))
		if r.status == 200 && !c.stream {
			t.Errorf("%s: a hostile answer was served: %s", c.model, r.body)
		}
		answers = append(answers, r.body...)
		for k, v := range r.header {
			answers = append(answers, fmt.Sprint(k, v)...)
		}
	}
	noSecret(t, "a client answer", answers)
	if !strings.Contains(string(answers), "[redacted key]") {
		t.Errorf("the answers do not show where the key was redacted: %s", answers)
	}

	// The request log is written in the background; wait for all six.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r := e.do("GET", "/api/requests", "", nil); strings.Count(string(r.body), `"id"`) >= 6 || time.Now().After(deadline) {
			break
		}
	}
	for _, path := range []string{"/api/requests", "/api/state"} {
		r := e.do("GET", path, "", nil)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		noSecret(t, "GET "+path, r.body)
		if !strings.Contains(string(r.body), "[redacted key]") {
			t.Errorf("GET %s does not hold the redacted failures: %.2000s", path, r.body)
		}
	}
	ws := wsMessages(t, e, time.Second)
	noSecret(t, "the websocket", ws)
	if !strings.Contains(string(ws), "[redacted key]") {
		t.Errorf("the websocket snapshot does not hold the redacted failures: %.2000s", ws)
	}

	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	noSecret(t, "the log", []byte(logs.String()))
	rows := requestRows(t, e.dir)
	noSecret(t, "the request table", rows)
	if !strings.Contains(string(rows), "[redacted key]") {
		t.Errorf("the request table does not hold the redacted failures: %s", rows)
	}
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

// TestAttackKeyCaptureByBaseURLChange points the paid provider at the
// attacker's server through the admin API, without sending a key, and asks
// for a test call: the key and the secret header must stay behind.
func TestAttackKeyCaptureByBaseURLChange(t *testing.T) {
	e, _ := attackEnv(t, nil)
	attacker := fakeupstream.Start()
	t.Cleanup(attacker.Close)

	// The test endpoint takes no address of its own.
	if r := e.do("POST", "/api/providers/paid/test", `{"base_url":"`+attacker.URL+`"}`, nil); r.status != http.StatusBadRequest {
		t.Errorf("a test call with a base_url of its own: %d %s", r.status, r.body)
	}
	r := e.do("PUT", "/api/providers/paid", `{"base_url":"`+attacker.URL+`"}`, nil)
	if r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	noSecret(t, "the PUT answer", r.body)
	var v struct {
		Key struct {
			Set bool `json:"set"`
		} `json:"key"`
		Notice string `json:"notice"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatal(err)
	}
	if v.Key.Set || !strings.Contains(v.Notice, "removed its key") {
		t.Errorf("the answer does not say the key was removed: %s", r.body)
	}
	e.do("POST", "/api/providers/paid/test", "", nil)
	e.post("/v1/chat/completions", chat("paid/mok", false))
	// Keyless, the provider is called at the new address: without the
	// old credentials.
	if r := e.do("PATCH", "/api/providers/paid", `{"keyless":true}`, nil); r.status != 200 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	tr := e.do("POST", "/api/providers/paid/test", "", nil)
	noSecret(t, "the test answer", tr.body)
	reqs := attacker.Requests()
	if len(reqs) == 0 {
		t.Fatalf("the test call did not reach the new server: %s", tr.body)
	}
	for _, req := range reqs {
		for name, vals := range req.Header {
			noSecret(t, "a header "+name+" sent to the new server", []byte(strings.Join(vals, " ")))
		}
		noSecret(t, "a body sent to the new server", req.Body)
	}
}

// TestAttackEnvExpansionInAPIInput sends ${VAR} in a header value and a
// model id: both must stay the literal text, and the header value must not
// show.
func TestAttackEnvExpansionInAPIInput(t *testing.T) {
	t.Setenv("FREELANE_ATTACK_SECRET", "env-PLANTED-aws-secret-0123")
	e, _ := attackEnv(t, nil)
	body := `{"name":"evil","tier":"free","base_url":"` + e.up.URL + `","keyless":true,` +
		`"headers":{"X-Steal":"${FREELANE_ATTACK_SECRET}"},"models":[{"id":"m-${FREELANE_ATTACK_SECRET}"}]}`
	r := e.do("POST", "/api/providers", body, nil)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /api/providers: %d %s", r.status, r.body)
	}
	noSecret(t, "the 201 answer", r.body)
	if !strings.Contains(string(r.body), `"m-${FREELANE_ATTACK_SECRET}"`) {
		t.Errorf("the model id is not the literal text: %s", r.body)
	}
	for _, path := range []string{"/v1/models", "/api/providers", "/api/state", "/api/chains", "/api/limits", "/api/routing"} {
		r := e.do("GET", path, "", nil)
		noSecret(t, "GET "+path, r.body)
	}
	e.up.Reset()
	e.post("/v1/chat/completions", chat("evil/m-${FREELANE_ATTACK_SECRET}", false))
	reqs := e.up.Requests()
	if len(reqs) == 0 {
		t.Fatal("the literal model was not routed")
	}
	for _, req := range reqs {
		if got := req.Header.Get("X-Steal"); got != "${FREELANE_ATTACK_SECRET}" {
			t.Errorf("the upstream got X-Steal %q, want the literal text", got)
		}
		noSecret(t, "the upstream request", req.Body)
	}
}

// TestAttackNoAdminResponseHoldsASecret plants a key and a secret header
// and reads every admin GET route and the websocket snapshot.
func TestAttackNoAdminResponseHoldsASecret(t *testing.T) {
	e, _ := attackEnv(t, nil)
	for _, path := range []string{"/api/state", "/api/providers", "/api/chains", "/api/settings", "/api/requests",
		"/api/usage", "/api/usage.csv", "/api/budgets", "/api/limits", "/api/routing", "/metrics", "/v1/models"} {
		r := e.do("GET", path, "", nil)
		if r.status != 200 {
			t.Errorf("GET %s: %d", path, r.status)
		}
		noSecret(t, "GET "+path, r.body)
	}
	noSecret(t, "the websocket", wsMessages(t, e, 500*time.Millisecond))
}

// TestAttackRedactionKnowsTheCurrentSecrets echoes a key pasted after the
// start, and checks that a key shorter than eight characters does not turn
// the letters of a message into markers.
func TestAttackRedactionKnowsTheCurrentSecrets(t *testing.T) {
	e, _ := attackEnv(t, func(c *config.Config) {
		short := c.Providers[0]
		short.Name, short.APIKey, short.Headers = "short", "k", nil
		c.Providers = append(c.Providers, short)
		// The file gives paid no key, so one can be pasted for it.
		c.Providers[0].APIKey = ""
	})
	e.up.SetDefault(fakeupstream.Behavior{Status: 503, Body: `{"error":{"message":"mock key k and sk-NEW-PLANTED-0123456789 rejected"}}`})
	if r := e.do("PUT", "/api/providers/paid/key", `{"key":"sk-NEW-PLANTED-0123456789"}`, nil); r.status != 200 {
		t.Fatalf("PUT key: %d %s", r.status, r.body)
	}
	// A 503's message becomes the attempt's reason, which the client's
	// error lists.
	r := e.post("/v1/chat/completions", chat("short/mok", false))
	noSecret(t, "the client answer", r.body)
	if msg := r.errorMessage(); !strings.Contains(msg, "mock key k and [redacted key] rejected") {
		t.Errorf("message %q", msg)
	}
}

// TestAttackConfigFileMoveForgetsTheDashboardKey pastes a key in the
// dashboard, then restarts with a config file that points the provider at
// another server: the key was given for the old address only.
func TestAttackConfigFileMoveForgetsTheDashboardKey(t *testing.T) {
	e, _ := attackEnv(t, func(c *config.Config) { c.Providers[0].APIKey = "" })
	if r := e.do("PUT", "/api/providers/paid/key", `{"key":"`+plantedKey+`"}`, nil); r.status != 200 {
		t.Fatalf("PUT key: %d %s", r.status, r.body)
	}
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	other := fakeupstream.Start()
	t.Cleanup(other.Close)
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Providers = []config.Provider{{Name: "paid", Kind: "openai", Tier: "own", BaseURL: other.URL,
		Models: []config.Model{{ID: "mok", Context: 8192}}, Timeouts: fastTimeouts}}
	e.start(cfg)
	e.do("POST", "/api/providers/paid/test", "", nil)
	e.post("/v1/chat/completions", chat("paid/mok", false))
	for _, req := range other.Requests() {
		noSecret(t, "the Authorization sent to the file's new base_url", []byte(req.Header.Get("Authorization")))
	}
	r := e.do("GET", "/api/providers", "", nil)
	if !strings.Contains(string(r.body), `"key":{"set":false`) {
		t.Errorf("the moved provider still has a key: %s", r.body)
	}
}
