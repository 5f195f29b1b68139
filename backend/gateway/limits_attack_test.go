package gateway_test

import (
	"encoding/json"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"freelane/backend/config"
)

// Attacks on FreeLane's resource limits, each through the real HTTP server.

// TestAttackHugeModelName: a 15 MiB model name is refused with 400 without
// being echoed, and neither the request log nor the dashboard's state grows
// with it. A long unknown name within the limit is not echoed whole either.
func TestAttackHugeModelName(t *testing.T) {
	e := newEnv(t, nil)
	huge := strings.Repeat("m", 15<<20)
	r := e.post("/v1/chat/completions", chat(huge, false))
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"model_too_long"`) {
		t.Fatalf("a 15 MiB model name got %d %.300s, want 400 model_too_long", r.status, r.body)
	}
	// The refusal states the bound and stays small: the name is not echoed.
	if len(r.body) > 1<<10 || !strings.Contains(r.errorMessage(), "256 bytes") {
		t.Fatalf("the refusal is %d bytes: %.300s", len(r.body), r.body)
	}
	if r := e.post("/v1/chat/completions", chat(huge, true)); r.status != http.StatusBadRequest || len(r.body) > 1<<10 {
		t.Fatalf("a streamed request with a 15 MiB model name got %d, %d bytes", r.status, len(r.body))
	}
	if r := e.do("GET", "/v1/models/"+strings.Repeat("m", 64<<10), "", nil); r.status != http.StatusBadRequest || len(r.body) > 1<<10 {
		t.Fatalf("GET /v1/models/<64 KiB> got %d, %d bytes", r.status, len(r.body))
	}
	// A name at the limit is routed and refused as unknown; the request is
	// logged, and the log and state stay small.
	long := strings.Repeat("n", 256)
	if r := e.post("/v1/chat/completions", chat(long, false)); r.status != http.StatusNotFound || len(r.body) > 4<<10 {
		t.Fatalf("an unknown 256-byte model got %d, %d bytes", r.status, len(r.body))
	}
	if r := e.post("/v1/chat/completions", chat(strings.Repeat("n", 257), false)); r.status != http.StatusBadRequest {
		t.Fatalf("a 257-byte model name got %d, want 400", r.status)
	}
	if r := e.post("/v1/chat/completions", chat("main", false)); r.status != http.StatusOK {
		t.Fatalf("a normal request got %d %s", r.status, r.body)
	}
	var reqs []json.RawMessage
	for deadline := time.Now().Add(5 * time.Second); ; {
		r := e.do("GET", "/api/requests?limit=100", "", nil)
		if err := json.Unmarshal(r.body, &reqs); err != nil {
			t.Fatalf("/api/requests: %v %.300s", err, r.body)
		}
		if len(r.body) > 64<<10 {
			t.Fatalf("/api/requests is %d bytes, want at most 64 KiB", len(r.body))
		}
		if len(reqs) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(reqs) != 2 {
		t.Fatalf("the request log holds %d requests, want 2 (the unknown model and the normal one)", len(reqs))
	}
	if st := e.do("GET", "/api/state", "", nil); st.status != http.StatusOK || len(st.body) > 256<<10 {
		t.Fatalf("/api/state is %d bytes (status %d), want at most 256 KiB", len(st.body), st.status)
	}
}

// TestAttackRaiseMaxBodyThroughAPI: the admin API may lower max_body_mb
// but never raise it past what the config file allows.
func TestAttackRaiseMaxBodyThroughAPI(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.MaxBodyMB = 2 })
	settings := func(mb int) reply {
		var s map[string]any
		if err := json.Unmarshal(e.do("GET", "/api/settings", "", nil).body, &s); err != nil {
			t.Fatal(err)
		}
		s["max_body_mb"] = mb
		b, _ := json.Marshal(s)
		return e.do("PUT", "/api/settings", string(b), nil)
	}
	for _, mb := range []int{3, 512} {
		if r := settings(mb); r.status != http.StatusForbidden || r.param() != "max_body_mb" || !strings.Contains(r.errorMessage(), "config file") {
			t.Fatalf("raising max_body_mb to %d through the API got %d %s, want 403", mb, r.status, r.body)
		}
	}
	// The limit still holds: a 3 MiB body is refused.
	big := chat("main", false)
	big = big[:len(big)-1] + `,"pad":"` + strings.Repeat("x", 3<<20) + `"}`
	if r := e.post("/v1/chat/completions", big); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "request_too_large") {
		t.Fatalf("a 3 MiB body got %d %.200s, want 400 request_too_large", r.status, r.body)
	}
	// Lowering, and raising back up to the file's value, are allowed.
	for _, mb := range []int{1, 2} {
		if r := settings(mb); r.status != http.StatusOK {
			t.Fatalf("setting max_body_mb to %d got %d %s", mb, r.status, r.body)
		}
	}
}

// heapInUse is the live heap after a collection, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// rss is the process's resident set in bytes, 0 where /proc is missing.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestAttackIdleWebsockets: 100 idle websockets get at most 32
// connections (the rest 503), and the connected ones share snapshots, so
// the heap grows by less than 16 MiB.
func TestAttackIdleWebsockets(t *testing.T) {
	const bound = 16 << 20
	e := newEnv(t, nil)
	for range 20 {
		e.post("/v1/chat/completions", chat("main", false))
	}
	before, rssBefore := heapInUse(), rss()
	url := "ws" + strings.TrimPrefix(e.base, "http") + "/api/ws"
	var conns []*websocket.Conn
	refused := 0
	for i := range 100 {
		c, resp, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("websocket %d: %v (%v), want a connection or 503 with Retry-After", i, err, resp)
			}
			refused++
			continue
		}
		conns = append(conns, c)
		t.Cleanup(func() { _ = c.Close() })
		// Each connected client gets its snapshot; none reads after that.
		if _, _, err := c.ReadMessage(); err != nil {
			t.Fatalf("websocket %d: no snapshot: %v", i, err)
		}
	}
	time.Sleep(time.Second) // a few ticks with every client connected
	after, rssAfter := heapInUse(), rss()
	t.Logf("100 idle websockets: heap %d -> %d KiB, RSS %d -> %d KiB", before>>10, after>>10, rssBefore>>10, rssAfter>>10)
	if len(conns) != 32 || refused != 68 {
		t.Fatalf("100 websockets: %d connected, %d refused; want 32 and 68", len(conns), refused)
	}
	if after > before+bound {
		t.Fatalf("the heap grew by %d KiB with 32 idle websockets, want under %d KiB", (after-before)>>10, bound>>10)
	}
}
