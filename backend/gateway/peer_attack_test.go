package gateway_test

// Attacks from another account of the same machine: a program of nobody
// (uid 65534) calls FreeLane on loopback, which this test process (root)
// runs. The client is this test binary run again as nobody, so the
// connection really belongs to another account.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakeupstream"
)

// peerClientEnv carries the requests the helper sends when the test binary
// runs as another account.
const peerClientEnv = "FREELANE_TEST_PEER_CLIENT"

const nobodyUID = 65534

// peerRequest is one request the helper sends, Repeat times on one
// kept-alive connection.
type peerRequest struct {
	Method, URL, Body string
	Header            map[string]string
	Repeat            int
}

// peerResult is what the helper saw: the count of each status, and the
// last answer's status, body and Retry-After.
type peerResult struct {
	Statuses   map[int]int
	Status     int
	Body       string
	RetryAfter string
	Err        string
}

func (r peerResult) code() string { return reply{body: []byte(r.Body)}.code() }

// TestHelperPeerClient is the client half: it does nothing in a normal
// run, and sends the requests of peerClientEnv when the test binary runs
// as another account.
func TestHelperPeerClient(t *testing.T) {
	spec := os.Getenv(peerClientEnv)
	if spec == "" {
		return
	}
	var reqs []peerRequest
	if err := json.Unmarshal([]byte(spec), &reqs); err != nil {
		fmt.Println(`{"Err":"bad spec"}`)
		return
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 20 * time.Second}
	out := json.NewEncoder(os.Stdout)
	for _, q := range reqs {
		res := peerResult{Statuses: map[int]int{}}
		for range max(q.Repeat, 1) {
			req, err := http.NewRequest(q.Method, q.URL, strings.NewReader(q.Body))
			if err != nil {
				res.Err = err.Error()
				break
			}
			for k, v := range q.Header {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				res.Err = err.Error()
				break
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			res.Statuses[resp.StatusCode]++
			res.Status, res.Body, res.RetryAfter = resp.StatusCode, string(b), resp.Header.Get("Retry-After")
		}
		_ = out.Encode(res)
	}
}

// asAccount sends reqs from a process of the account uid and returns what
// it saw, one result per request.
func asAccount(t *testing.T, uid uint32, reqs ...peerRequest) []peerResult {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a client as the account nobody (uid 65534)")
	}
	spec, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(peerBinary(t), "-test.run=^TestHelperPeerClient$")
	cmd.Env = append(os.Environ(), peerClientEnv+"="+string(spec))
	cmd.Dir = "/"
	cmd.SysProcAttr = accountAttr(uid)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("the client as uid %d failed: %v\n%s", uid, err, stderr.String())
	}
	var out []peerResult
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r peerResult
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Statuses != nil {
			out = append(out, r)
		}
	}
	if len(out) != len(reqs) {
		t.Fatalf("the client as uid %d answered %d of %d requests:\n%s\n%s", uid, len(out), len(reqs), stdout, stderr.String())
	}
	for _, r := range out {
		if r.Err != "" {
			t.Fatalf("the client as uid %d: %s", uid, r.Err)
		}
	}
	return out
}

// peerBinary is the test binary where another account may run it: go test
// builds it in a directory only root can enter, so it is linked (or, on
// another file system, copied) into a directory anyone may enter.
func peerBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "freelane-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	if os.Link(self, bin) != nil {
		data, err := os.ReadFile(self)
		if err == nil {
			err = os.WriteFile(bin, data, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// newPeerEnv is newEnv with the gateway's log kept, to read what it says
// about strangers.
func newPeerEnv(t *testing.T, mutate func(*config.Config)) (*env, *syncBuffer) {
	t.Helper()
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	cfg := testConfig(up.URL)
	if mutate != nil {
		mutate(cfg)
	}
	e := &env{t: t, up: up, clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), dir: t.TempDir()}
	log := &syncBuffer{}
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: e.dir, Logger: slog.New(slog.NewTextHandler(log, nil)),
		Clock: e.clock, ManualProbes: true, LookupEnv: withoutCatalogKeys})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	e.g, e.base = g, "http://"+g.Addr()
	e.token = cfg.Server.Token
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	return e, log
}

const strangerWords = "FreeLane answers only programs of the account running it"

func (e *env) at(path string) string { return e.base + path }

var jsonHeader = map[string]string{"Content-Type": "application/json"}

// TestAttackOtherAccountSpendsKeys: another account's program posts to
// /v1 on loopback, in each dialect. It is refused in its own dialect with
// a message saying how to let it in, and nothing reaches an upstream. The
// user's own programs are served as before.
func TestAttackOtherAccountSpendsKeys(t *testing.T) {
	e, _ := newPeerEnv(t, nil)
	got := asAccount(t, nobodyUID,
		peerRequest{Method: "POST", URL: e.at("/v1/chat/completions"), Body: chat("a/ma", false), Header: jsonHeader},
		peerRequest{Method: "POST", URL: e.at("/v1/messages"), Body: `{"model":"a/ma","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
			Header: map[string]string{"Content-Type": "application/json", "Anthropic-Version": "2023-06-01"}},
		peerRequest{Method: "POST", URL: e.at("/v1beta/models/a/ma:generateContent"), Body: `{"contents":[{"parts":[{"text":"hi"}]}]}`, Header: jsonHeader},
		peerRequest{Method: "POST", URL: e.at("/v1/responses"), Body: `{"model":"a/ma","input":"hi"}`, Header: jsonHeader},
		peerRequest{Method: "GET", URL: e.at("/v1/models")},
	)
	for i, r := range got {
		if r.Status != http.StatusUnauthorized || !strings.Contains(r.Body, strangerWords) || !strings.Contains(r.Body, "server.local_users: any") ||
			!strings.Contains(r.Body, "uid 65534") {
			t.Errorf("request %d from nobody: %d %s", i, r.Status, r.Body)
		}
	}
	if got[0].code() != "local_user_not_allowed" {
		t.Errorf("OpenAI shape: %s", got[0].Body)
	}
	var ant struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if json.Unmarshal([]byte(got[1].Body), &ant); ant.Type != "error" || ant.Error.Type != "authentication_error" {
		t.Errorf("Anthropic shape: %s", got[1].Body)
	}
	var gem struct {
		Error struct {
			Code   int
			Status string
		}
	}
	if json.Unmarshal([]byte(got[2].Body), &gem); gem.Error.Code != 401 || gem.Error.Status != "UNAUTHENTICATED" {
		t.Errorf("Gemini shape: %s", got[2].Body)
	}
	if n := e.up.Calls("ma"); n != 0 {
		t.Errorf("nobody's requests reached the upstream %d times", n)
	}
	if r := e.post("/v1/chat/completions", chat("a/ma", false)); r.status != http.StatusOK {
		t.Errorf("this account's own request: %d %s", r.status, r.body)
	}
}

// TestAttackOtherAccountWithToken: with an inbound token set, another
// account is served when it sends the token, as a network caller is, and
// refused without it.
func TestAttackOtherAccountWithToken(t *testing.T) {
	const token = "peer-test-token-0123456789"
	e, _ := newPeerEnv(t, func(c *config.Config) { c.Server.Token = token })
	got := asAccount(t, nobodyUID,
		peerRequest{Method: "POST", URL: e.at("/v1/chat/completions"), Body: chat("a/ma", false),
			Header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token}},
		peerRequest{Method: "POST", URL: e.at("/v1/chat/completions"), Body: chat("a/ma", false), Header: jsonHeader},
		peerRequest{Method: "GET", URL: e.at("/metrics"), Header: map[string]string{"Authorization": "Bearer " + token}},
	)
	if got[0].Status != http.StatusOK {
		t.Errorf("nobody with the token: %d %s", got[0].Status, got[0].Body)
	}
	if got[1].Status != http.StatusUnauthorized || got[1].code() != "invalid_api_key" {
		t.Errorf("nobody without the token: %d %s", got[1].Status, got[1].Body)
	}
	if got[2].Status != http.StatusOK {
		t.Errorf("nobody's /metrics with the token: %d %s", got[2].Status, got[2].Body)
	}
}

// TestAttackOtherAccountReadsStoredAnswers: another account asks for an
// answer the user's tool stored, by its id, over HTTP and by opening the
// Responses websocket; and scrapes /metrics. All refused; the user's own
// tools still get them.
func TestAttackOtherAccountReadsStoredAnswers(t *testing.T) {
	e, _ := newPeerEnv(t, nil)
	r := e.post("/v1/responses", `{"model":"a/ma","input":"the secret plan","store":true}`)
	var created struct{ ID string }
	if err := json.Unmarshal(r.body, &created); r.status != http.StatusOK || err != nil || created.ID == "" {
		t.Fatalf("storing an answer: %d %s", r.status, r.body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if r = e.raw("GET", "/v1/responses/"+created.ID, "", nil); r.status == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the response store's writer
	}
	if r.status != http.StatusOK {
		t.Fatalf("this account reading its stored answer: %d %s", r.status, r.body)
	}
	if r := e.raw("GET", "/metrics", "", nil); r.status != http.StatusOK {
		t.Errorf("this account's /metrics: %d %s", r.status, r.body)
	}
	got := asAccount(t, nobodyUID,
		peerRequest{Method: "GET", URL: e.at("/v1/responses/" + created.ID)},
		peerRequest{Method: "GET", URL: e.at("/v1/responses"), Header: map[string]string{
			"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}},
		peerRequest{Method: "GET", URL: e.at("/metrics")},
	)
	for i, r := range got {
		if r.Status != http.StatusUnauthorized || strings.Contains(r.Body, "secret plan") {
			t.Errorf("request %d from nobody: %d %s", i, r.Status, r.Body)
		}
	}
	if !strings.Contains(got[0].Body, strangerWords) {
		t.Errorf("the stored answer's refusal does not say why: %s", got[0].Body)
	}
	if got[2].code() != "token_required" || !strings.Contains(got[2].Body, strangerWords) {
		t.Errorf("/metrics refusal: %s", got[2].Body)
	}
}

// TestLocalUsersAnyTrustsEveryAccount: server.local_users: any brings back
// the trust of every account on the machine.
func TestLocalUsersAnyTrustsEveryAccount(t *testing.T) {
	e, _ := newPeerEnv(t, func(c *config.Config) { c.Server.LocalUsers = config.LocalUsersAny })
	got := asAccount(t, nobodyUID,
		peerRequest{Method: "POST", URL: e.at("/v1/chat/completions"), Body: chat("a/ma", false), Header: jsonHeader},
		peerRequest{Method: "GET", URL: e.at("/metrics")},
	)
	for i, r := range got {
		if r.Status != http.StatusOK {
			t.Errorf("request %d from nobody with local_users any: %d %s", i, r.Status, r.Body)
		}
	}
}

// TestAttackTokenGuessing: another account tries 300 wrong tokens on one
// kept-alive connection. After 5 it is answered 429 with Retry-After and
// its tokens are no longer checked (the right one included), the user's
// own tool with the right token is served all along, one log line a
// minute counts the tries and never holds a token, and after the minute
// the right token works again.
func TestAttackTokenGuessing(t *testing.T) {
	const token = "peer-test-token-0123456789"
	e, log := newPeerEnv(t, func(c *config.Config) { c.Server.Token = token })
	wrong := func(n int) peerRequest {
		return peerRequest{Method: "POST", URL: e.at("/v1/chat/completions"), Body: chat("a/ma", false), Repeat: n,
			Header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer guess-guess-guess-guess"}}
	}
	right := peerRequest{Method: "POST", URL: e.at("/v1/chat/completions"), Body: chat("a/ma", false),
		Header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token}}
	got := asAccount(t, nobodyUID, wrong(300), right)
	if got[0].Statuses[http.StatusUnauthorized] != 5 || got[0].Statuses[http.StatusTooManyRequests] != 295 {
		t.Errorf("300 wrong tokens were answered %v, want 5 401s and 295 429s", got[0].Statuses)
	}
	if got[0].RetryAfter == "" || got[0].RetryAfter == "0" || got[0].code() != "too_many_wrong_tokens" {
		t.Errorf("the 429 lacks Retry-After or its code: %q %s", got[0].RetryAfter, got[0].Body)
	}
	if got[1].Status != http.StatusTooManyRequests {
		t.Errorf("a throttled account's token was checked: %d %s", got[1].Status, got[1].Body)
	}
	if r := e.post("/v1/chat/completions", chat("a/ma", false)); r.status != http.StatusOK {
		t.Errorf("this account's right token while nobody is throttled: %d %s", r.status, r.body)
	}
	if n := e.up.Calls("ma"); n != 1 {
		t.Errorf("the upstream was called %d times, want once (this account's request)", n)
	}
	e.clock.Advance(time.Minute)
	want := "301 wrong inbound tokens from uid 65534 in the last minute; 296 of them came past the limit of 5 a minute and were answered 429 unchecked"
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(log.String(), want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the log line is written by a timer's goroutine
	}
	out := log.String()
	if !strings.Contains(out, want) || strings.Count(out, "wrong inbound tokens") != 1 {
		t.Errorf("want one line %q; the log holds:\n%s", want, out)
	}
	if strings.Contains(out, "guess-guess") || strings.Contains(out, token) {
		t.Error("a token was logged")
	}
	if got := asAccount(t, nobodyUID, right); got[0].Status != http.StatusOK {
		t.Errorf("nobody's right token after the minute: %d %s", got[0].Status, got[0].Body)
	}
}
