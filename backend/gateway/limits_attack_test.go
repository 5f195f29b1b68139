package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"freelane/backend/api"
	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
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
		c, resp, err := e.dialer().Dial(url, nil)
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

// stalledBody opens a connection that announces a body of size bytes,
// sends first bytes of it at once and then trickles 1 KiB every 100 ms
// until the server cuts it off or stop is closed. The returned channel
// yields the status the server answered with (0 when it only closed the
// connection) and when.
func stalledBody(t *testing.T, addr string, size, first int, stop <-chan struct{}) <-chan int {
	t.Helper()
	return stalledRequest(t, addr, "POST /v1/chat/completions", "", size, first, stop)
}

// stalledRequest is stalledBody for any method, path and extra header
// lines (each ending in CRLF).
func stalledRequest(t *testing.T, addr, line, headers string, size, first int, stop <-chan struct{}) <-chan int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fmt.Fprintf(c, "%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n", line, addr, size, headers)
	_, _ = c.Write(bytes.Repeat([]byte(" "), first))
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		chunk := bytes.Repeat([]byte(" "), 1<<10)
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}
	}()
	status := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	return status
}

// TestAttackStalledBodies: 60 connections that announce 16 MiB bodies and
// send them slowly hold at most what they sent (well under 48 MiB of heap
// for all of them), and are cut with 408 at the body read deadline.
func TestAttackStalledBodies(t *testing.T) {
	const bound = 48 << 20
	e := newEnv(t, func(c *config.Config) { c.Requests.BodyReadTimeout = time.Second })
	addr := strings.TrimPrefix(e.base, "http://")
	stop := make(chan struct{})
	defer close(stop)
	before, rssBefore := heapInUse(), rss()
	start := time.Now()
	var answers []<-chan int
	for range 60 {
		answers = append(answers, stalledBody(t, addr, 16<<20, 64<<10, stop))
	}
	time.Sleep(500 * time.Millisecond)
	during, rssDuring := heapInUse(), rss()
	t.Logf("60 stalled 16 MiB bodies: heap %d -> %d KiB, RSS %d -> %d KiB", before>>10, during>>10, rssBefore>>10, rssDuring>>10)
	if during > before+bound {
		t.Errorf("60 stalled bodies grew the heap by %d KiB, want under %d KiB", (during-before)>>10, bound>>10)
	}
	for i, a := range answers {
		select {
		case st := <-a:
			if st != http.StatusRequestTimeout && st != 0 {
				t.Fatalf("stalled body %d got %d, want 408 or a closed connection", i, st)
			}
		case <-time.After(5*time.Second - time.Since(start)):
			t.Fatalf("stalled body %d still open %s after it started; the read deadline is 1s", i, time.Since(start).Round(time.Millisecond))
		}
	}
	// The server still serves.
	if r := e.post("/v1/chat/completions", chat("main", false)); r.status != http.StatusOK {
		t.Fatalf("after the stalled bodies: %d %s", r.status, r.body)
	}
}

// TestAttackStalledAdminBody: a signed-in admin write whose body trickles
// in is cut at the same read deadline as /v1 bodies, and the admin API
// goes on serving.
func TestAttackStalledAdminBody(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Requests.BodyReadTimeout = time.Second })
	addr := strings.TrimPrefix(e.base, "http://")
	headers := api.SessionHeader + ": " + e.signedIn() + "\r\n"
	stop := make(chan struct{})
	defer close(stop)
	start := time.Now()
	answer := stalledRequest(t, addr, "PUT /api/budgets", headers, 512<<10, 16, stop)
	select {
	case st := <-answer:
		if st != http.StatusRequestTimeout && st != 0 {
			t.Fatalf("stalled admin body got %d, want 408 or a closed connection", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("stalled admin body still open %s after it started; the read deadline is 1s", time.Since(start).Round(time.Millisecond))
	}
	if r := e.do("GET", "/api/budgets", "", nil); r.status != http.StatusOK {
		t.Fatalf("after the stalled body: %d %s", r.status, r.body)
	}
}

// TestAttackBodyBytesInFlight: a request that does not fit in what a slow
// upload leaves of max_inflight_body_mb gets 503 with Retry-After, a small
// one beside it is served, and the large one is served again once the
// upload is cut.
func TestAttackBodyBytesInFlight(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.MaxBodyMB = 4
		c.Requests.BodyReadTimeout = time.Second
		c.Requests.MaxInflightBodyMB = 2
	})
	addr := strings.TrimPrefix(e.base, "http://")
	stop := make(chan struct{})
	defer close(stop)
	// 700 KiB sent of 3 MiB: the upload's buffer has grown to 1 MiB, half
	// the budget.
	cut := stalledBody(t, addr, 3<<20, 700<<10, stop)
	time.Sleep(200 * time.Millisecond)
	body := chat("main", false)
	body = body[:len(body)-1] + `,"pad":"` + strings.Repeat("x", 1536<<10) + `"}`
	r := e.post("/v1/chat/completions", body)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(r.errorMessage(), "max_inflight_body_mb") {
		t.Fatalf("a request past the in-flight budget got %d %s (Retry-After %q), want 503 with Retry-After", r.status, r.body, r.header.Get("Retry-After"))
	}
	// Small bodies still fit: the budget counts bytes, not requests.
	if r := e.post("/v1/chat/completions", chat("main", false)); r.status != http.StatusOK {
		t.Fatalf("a small request beside the upload got %d %s", r.status, r.body)
	}
	select {
	case st := <-cut:
		if st != http.StatusRequestTimeout && st != 0 {
			t.Fatalf("the slow upload got %d, want 408", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the slow upload was not cut at the read deadline")
	}
	if r := e.post("/v1/chat/completions", body); r.status != http.StatusOK {
		t.Fatalf("after the upload was cut: %d %s", r.status, r.body)
	}
}

// TestBodyReadDeadlineSparesLongStreams: the read deadline bounds the body
// only; a streamed answer that lasts past it arrives whole, and so does a
// second request on the same connection.
func TestBodyReadDeadlineSparesLongStreams(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Requests.BodyReadTimeout = time.Second })
	chunks := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	e.up.Set("ma", fakeupstream.Behavior{Chunks: chunks, ChunkDelay: 250 * time.Millisecond})
	start := time.Now()
	r := e.post("/v1/chat/completions", chat("a/ma", true))
	res := parseSSE(t, r.body)
	if r.status != http.StatusOK || !res.done || res.text != strings.Join(chunks, "") {
		t.Fatalf("a %s stream got %d, done %v, text %q", time.Since(start).Round(time.Millisecond), r.status, res.done, res.text)
	}
	if time.Since(start) < 1500*time.Millisecond {
		t.Fatalf("the stream took %s, not past the read deadline", time.Since(start))
	}
	if r := e.post("/v1/chat/completions", chat("main", false)); r.status != http.StatusOK {
		t.Fatalf("the next request got %d %s", r.status, r.body)
	}
}

// allocated is how many bytes the process has allocated so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestAttackHostileUpstream: an upstream that answers with a huge body or
// a huge stream event costs FreeLane memory in proportion to its limits
// (32 MiB for an answer, 4 MiB for an event), not to what it sends, and an
// answer within the limit is held once, not several times over.
func TestAttackHostileUpstream(t *testing.T) {
	answer := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("x", 24<<20) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	huge := bytes.Repeat([]byte(" "), 48<<20)
	event := []byte("data: " + `{"choices":[{"delta":{"content":"` + strings.Repeat("y", 30<<20) + `"}}]}` + "\n\n")
	big := []byte("data: " + `{"choices":[{"delta":{"content":"` + strings.Repeat("z", 3<<20) + `"}}]}` + "\n\ndata: [DONE]\n\n")
	// The hostile upstream answers by model: every answer is prepared, so
	// what a request allocates is FreeLane's.
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch req.Model {
		case "event", "big-event":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(map[string][]byte{"event": event, "big-event": big}[req.Model])
		case "chunked":
			// No Content-Length: the answer's size is only known at its end.
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer[:1])
			w.(http.Flusher).Flush()
			_, _ = w.Write(answer[1:])
		case "huge":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(huge)))
			_, _ = w.Write(huge)
		case "huge-chunked":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(huge[:1])
			w.(http.Flusher).Flush()
			_, _ = w.Write(huge[1:])
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			_, _ = w.Write(answer)
		}
	}))
	t.Cleanup(hostile.Close)
	e := newEnv(t, func(c *config.Config) {
		p := &c.Providers[0]
		p.BaseURL = hostile.URL
		p.Timeouts = config.Timeouts{Connect: 5 * time.Second, Header: 5 * time.Second, FirstToken: 5 * time.Second, Idle: 5 * time.Second}
		for _, m := range []string{"answer", "chunked", "huge", "huge-chunked", "event", "big-event"} {
			p.Models = append(p.Models, config.Model{ID: m, ParamsB: 1, Context: 8192})
		}
	})
	cost := func(model string, stream bool, status int, bound uint64) {
		t.Helper()
		runtime.GC()
		before, rssBefore := allocated(), rss()
		resp, err := http.Post(e.base+"/v1/chat/completions", "application/json", strings.NewReader(chat("a/"+model, stream)))
		if err != nil {
			t.Fatal(err)
		}
		// Read in small pieces and discard, so the client's copy does not
		// count.
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		spent := allocated() - before
		t.Logf("%s (stream %v): status %d, %d KiB to the client, %d KiB allocated, RSS %d -> %d KiB",
			model, stream, resp.StatusCode, n>>10, spent>>10, rssBefore>>10, rss()>>10)
		if resp.StatusCode != status {
			t.Errorf("%s: status %d, want %d", model, resp.StatusCode, status)
		}
		if spent > bound {
			t.Errorf("%s: one request allocated %d KiB, want under %d KiB", model, spent>>10, bound>>10)
		}
	}
	// A first stream loads the tokenizer, once per process: not a cost of
	// the requests measured.
	if r := e.post("/v1/chat/completions", chat("a/big-event", true)); r.status != http.StatusOK {
		t.Fatalf("warm-up: %d", r.status)
	}
	// The bounds: an answer is held once in a buffer of its announced
	// size, or read in blocks joined once (twice its size) when it
	// announces none; a stream holds its current event, allocating at most
	// about twice the 4 MiB limit while a line grows.
	cost("answer", false, http.StatusOK, 48<<20)               // 24 MiB with Content-Length
	cost("chunked", false, http.StatusOK, 56<<20)              // 24 MiB without
	cost("huge", false, http.StatusBadGateway, 4<<20)          // 48 MiB announced: refused unread
	cost("huge-chunked", false, http.StatusBadGateway, 40<<20) // 48 MiB unannounced: read to the 32 MiB limit
	cost("event", true, http.StatusBadGateway, 16<<20)         // a 30 MiB event: cut at 4 MiB
	cost("big-event", true, http.StatusOK, 16<<20)             // a 3 MiB event, passed on
}
