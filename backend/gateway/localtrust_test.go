package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakelocal"
	"freelane/backend/internal/fakeupstream"
)

// owners plays the operating system's socket owner lookup: the account
// that runs the server on each loopback port.
type owners struct {
	mu     sync.Mutex
	byPort map[int]uint32
}

func (o *owners) set(port int, uid uint32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.byPort[port] = uid
}

func (o *owners) lookup(c net.Conn) (uint32, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	port := c.RemoteAddr().(*net.TCPAddr).Port
	if uid, ok := o.byPort[port]; ok {
		return uid, nil
	}
	return 0, fmt.Errorf("no socket for port %d", port)
}

// ownerEnv is a first-run FreeLane (no keys, no config file) whose socket
// owners come from o, looking only at the given ports.
func ownerEnv(t *testing.T, o *owners, ports ...int) (*env, func()) {
	t.Helper()
	e := &env{t: t, clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), dir: t.TempDir()}
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	e.up = up
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Discovery.Ports = ports
	start := func() {
		g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: e.dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Clock: e.clock, ManualProbes: true, LookupEnv: func(string) (string, bool) { return "", false }, SocketOwner: o.lookup})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Start(); err != nil {
			t.Fatal(err)
		}
		e.g, e.base, e.session = g, "http://"+g.Addr(), ""
		t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	}
	start()
	restart := func() {
		if err := e.g.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		start()
	}
	return e, restart
}

type localView struct {
	Kind      string `json:"kind"`
	Port      int    `json:"port"`
	Provider  string `json:"provider"`
	Up        bool   `json:"up"`
	Foreign   bool   `json:"foreign"`
	Allowed   bool   `json:"allowed"`
	OwnerUID  int64  `json:"owner_uid"`
	OwnerName string `json:"owner_name"`
}

func localOf(t *testing.T, e *env) []localView {
	t.Helper()
	r := e.do(http.MethodGet, "/api/setup", "", nil)
	var v struct {
		Local []localView `json:"local"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil {
		t.Fatalf("GET /api/setup: %d %s", r.status, r.body)
	}
	return v.Local
}

// The server of another account on a discovery port is not a backend:
// on a first run, when it is the only server, it gets no prompt, neither
// through auto nor through its own name, and the Setup screen shows it as
// run by another user. Allowed through the admin API it serves, and the
// permission survives a restart; another account on the same port is not
// covered by it; withdrawn, the server is out again.
func TestLocalServerOfAnotherUserIsNotServed(t *testing.T) {
	srv, err := fakelocal.New(fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "qwen2.5:7b", Context: 8192, Loaded: true}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	port := srv.Port()
	o := &owners{byPort: map[int]uint32{port: 1001}}
	e, restart := ownerEnv(t, o, port)
	ctx := context.Background()
	e.g.ScanLocal(ctx)
	name := fmt.Sprintf("ollama-%d/qwen2.5:7b", port)
	prompts := func() int { return len(srv.Upstream().Requests()) }
	chat := func(model string) reply {
		return e.post("/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"my secret plans"}]}`)
	}

	r := chat("auto")
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.errorMessage(), "run by another user") {
		t.Errorf("auto with only a foreign server: %d %s", r.status, r.body)
	}
	if r := chat(name); r.status != http.StatusNotFound {
		t.Errorf("%s: %d %s", name, r.status, r.body)
	}
	if r := chat("qwen2.5:7b"); r.status != http.StatusNotFound {
		t.Errorf("the bare id: %d %s", r.status, r.body)
	}
	if n := prompts(); n != 0 {
		t.Fatalf("the foreign server got %d requests", n)
	}
	l := localOf(t, e)
	if len(l) != 1 || !l[0].Foreign || l[0].Allowed || l[0].OwnerUID != 1001 || l[0].Provider != "" || !l[0].Up {
		t.Fatalf("setup local = %+v", l)
	}
	foreignEvents := 0
	for _, ev := range e.g.Events().Recent() {
		if ev.Kind == "local_foreign" && strings.Contains(ev.Reason, "user id 1001") {
			foreignEvents++
		}
		if ev.Kind == "local_found" {
			t.Errorf("a foreign server was announced as found: %+v", ev)
		}
	}
	if foreignEvents != 1 {
		t.Errorf("%d local_foreign events", foreignEvents)
	}

	// Allowing needs the server's owner as the setup shows it.
	if r := e.do(http.MethodPost, "/api/setup/local/allow", fmt.Sprintf(`{"port":%d,"kind":"ollama","uid":1002}`, port), nil); r.status != http.StatusNotFound {
		t.Errorf("allow with the wrong uid: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPost, "/api/setup/local/allow", fmt.Sprintf(`{"port":%d,"kind":"ollama"}`, port), nil); r.status != http.StatusBadRequest {
		t.Errorf("allow without a uid: %d %s", r.status, r.body)
	}
	// The admin route needs a session like every other.
	if r := e.raw(http.MethodPost, "/api/setup/local/allow", fmt.Sprintf(`{"port":%d,"kind":"ollama","uid":1001}`, port), nil); r.status != http.StatusUnauthorized && r.status != http.StatusForbidden {
		t.Errorf("allow without a session: %d %s", r.status, r.body)
	}
	if n := prompts(); n != 0 {
		t.Fatalf("the foreign server got %d requests", n)
	}
	if r := e.do(http.MethodPost, "/api/setup/local/allow", fmt.Sprintf(`{"port":%d,"kind":"ollama","uid":1001}`, port), nil); r.status != http.StatusOK {
		t.Fatalf("allow: %d %s", r.status, r.body)
	}
	if l := localOf(t, e); !l[0].Foreign || !l[0].Allowed || l[0].Provider != fmt.Sprintf("ollama-%d", port) {
		t.Fatalf("after allowing: %+v", l)
	}
	if r := chat("auto"); r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != name {
		t.Fatalf("auto after allowing: %d %s", r.status, r.body)
	}
	if n := prompts(); n != 1 {
		t.Fatalf("%d requests after allowing, want 1", n)
	}

	// Kept in the data directory: a restart keeps it allowed.
	restart()
	e.g.ScanLocal(ctx)
	if r := chat("auto"); r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != name {
		t.Fatalf("auto after a restart: %d %s", r.status, r.body)
	}
	if n := prompts(); n != 2 {
		t.Fatalf("%d requests after the restart, want 2", n)
	}

	// Another account takes the port between two scans: the connection
	// to it is refused before a prompt is sent.
	srv.Stop()
	o.set(port, 1002)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// A connection kept alive to the server that stopped may be tried
	// first and fail as closed; the next request dials the new server,
	// whose owner is checked.
	r = chat("auto")
	if r.status != http.StatusOK && strings.Contains(string(r.body), "connection closed unexpectedly") {
		r = chat("auto")
	}
	if r.status == http.StatusOK || !strings.Contains(string(r.body), "now run by user id 1002") {
		t.Errorf("auto before the next scan: %d %s", r.status, r.body)
	}
	if n := prompts(); n != 2 {
		t.Fatalf("the server that took the port got %d requests before the scan", n-2)
	}

	// The next scan sees the other account: the first one's permission
	// does not cover it.
	e.g.ScanLocal(ctx)
	if r := chat("auto"); r.status != http.StatusServiceUnavailable {
		t.Errorf("auto with another owner on the allowed port: %d %s", r.status, r.body)
	}
	if r := chat(name); r.status != http.StatusNotFound {
		t.Errorf("%s with another owner: %d %s", name, r.status, r.body)
	}
	if n := prompts(); n != 2 {
		t.Fatalf("the second owner's server got %d requests", n-2)
	}
	if l := localOf(t, e); !l[0].Foreign || l[0].Allowed || l[0].OwnerUID != 1002 {
		t.Fatalf("with another owner: %+v", l)
	}

	// The first owner back, then the permission withdrawn.
	srv.Stop()
	o.set(port, 1001)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	e.g.ScanLocal(ctx)
	if r := chat("auto"); r.status != http.StatusOK {
		t.Fatalf("auto with the allowed owner back: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPost, "/api/setup/local/withdraw", fmt.Sprintf(`{"port":%d,"kind":"ollama","uid":1001}`, port), nil); r.status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.status, r.body)
	}
	before := prompts()
	if r := chat("auto"); r.status != http.StatusServiceUnavailable {
		t.Errorf("auto after withdrawing: %d %s", r.status, r.body)
	}
	if n := prompts(); n != before {
		t.Fatalf("the server got a request after the permission was withdrawn")
	}
	if r := e.do(http.MethodPost, "/api/setup/local/withdraw", fmt.Sprintf(`{"port":%d,"kind":"ollama","uid":1001}`, port), nil); r.status != http.StatusNotFound {
		t.Errorf("withdrawing twice: %d %s", r.status, r.body)
	}
}

// Servers of this account, root and system accounts serve without asking.
func TestLocalServersOfTrustedAccountsServe(t *testing.T) {
	o := &owners{byPort: map[int]uint32{}}
	var ports []int
	for _, uid := range []uint32{0, 120} {
		srv, err := fakelocal.New(fakelocal.Config{Kind: fakelocal.VLLM, Models: []fakelocal.Model{{ID: fmt.Sprintf("m%d", uid), Context: 4096}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		o.set(srv.Port(), uid)
		ports = append(ports, srv.Port())
	}
	e, _ := ownerEnv(t, o, ports...)
	e.g.ScanLocal(context.Background())
	for _, l := range localOf(t, e) {
		if l.Foreign || l.Provider == "" {
			t.Errorf("trusted server shut out: %+v", l)
		}
	}
	for _, m := range []string{"m0", "m120"} {
		if r := e.post("/v1/chat/completions", `{"model":"`+m+`","messages":[{"role":"user","content":"hi"}]}`); r.status != http.StatusOK {
			t.Errorf("%s: %d %s", m, r.status, r.body)
		}
	}
}

// A found server may list any model names: one that looks like a pin of a
// provider nobody configured ("paid/gpt-x") is not answered by it, while
// its own name reaches it, as Ollama's library/model:tag does.
func TestDiscoveredSlashNamesNeedTheServerName(t *testing.T) {
	srv, err := fakelocal.New(fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{
		{ID: "paid/gpt-x", Context: 1_000_000_000, Loaded: true}, {ID: "library/llama3.2:3b"}, {ID: strings.Repeat("x", 5000)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	o := &owners{byPort: map[int]uint32{srv.Port(): 0}}
	e, _ := ownerEnv(t, o, srv.Port())
	e.g.ScanLocal(context.Background())
	chat := func(model string) reply {
		return e.post("/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
	}
	if r := chat("paid/gpt-x"); r.status != http.StatusNotFound || !strings.Contains(r.errorMessage(), fmt.Sprintf("ollama-%d/paid/gpt-x", srv.Port())) {
		t.Errorf("paid/gpt-x: %d %s", r.status, r.body)
	}
	if n := len(srv.Upstream().Requests()); n != 0 {
		t.Fatalf("the local server answered %d requests for a name that was not its own", n)
	}
	for _, m := range []string{"paid/gpt-x", "library/llama3.2:3b"} {
		if r := chat(fmt.Sprintf("ollama-%d/%s", srv.Port(), m)); r.status != http.StatusOK {
			t.Errorf("%s through the server's name: %d %s", m, r.status, r.body)
		}
	}
	r := e.do(http.MethodGet, "/api/setup", "", nil)
	var v struct {
		Local []struct {
			Dropped int `json:"dropped"`
			Models  []struct {
				ID      string `json:"id"`
				Context int    `json:"context"`
			} `json:"models"`
		} `json:"local"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil || len(v.Local) != 1 || v.Local[0].Dropped != 1 || len(v.Local[0].Models) != 2 {
		t.Fatalf("setup %s", r.body)
	}
	for _, m := range v.Local[0].Models {
		if m.ID == "paid/gpt-x" && m.Context != 10<<20 {
			t.Errorf("a window of 1e9 tokens was kept as %d", m.Context)
		}
	}
}
