package hub

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"freelane/backend/internal/clocktest"
)

// noLeaks fails the test if goroutines started during it are still running
// once its cleanups are done. Register it first: cleanups run last-in
// first-out, so it then runs after the server and hub are stopped.
func noLeaks(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Errorf("goroutines: %d at start, %d after cleanup\n%s", base, runtime.NumGoroutine(), buf[:n])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

type testHub struct {
	*Hub
	srv    *httptest.Server
	url    string
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returns
}

// start serves h on a real HTTP server and runs it until the test ends.
func start(t *testing.T, h *Hub) *testHub {
	t.Helper()
	srv := httptest.NewServer(h)
	ctx, cancel := context.WithCancel(context.Background())
	th := &testHub{Hub: h, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http"), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(th.done)
		h.Run(ctx)
	}()
	t.Cleanup(func() {
		th.stop(t)
		srv.Close()
	})
	return th
}

func (th *testHub) stop(t *testing.T) {
	t.Helper()
	th.cancel()
	select {
	case <-th.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// dial connects a real gorilla client. A non-nil readBuffer caps the
// client socket's receive buffer, which makes a client that does not read
// back up quickly.
func dial(t *testing.T, url string, header http.Header, readBuffer int) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	if readBuffer > 0 {
		d.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(readBuffer)
			}
			return c, nil
		}
	}
	c, resp, err := d.Dial(url, header)
	if resp != nil && resp.Body != nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

type message struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	Seq  int             `json:"seq"`
}

func read(t *testing.T, c *websocket.Conn, timeout time.Duration) (message, error) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	_, b, err := c.ReadMessage()
	if err != nil {
		return message{}, err
	}
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("bad message %q: %v", b, err)
	}
	return m, nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSnapshotFirstThenAtMostFourUpdatesPerSecond(t *testing.T) {
	noLeaks(t)
	clk := clocktest.New(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	var (
		mu      sync.Mutex
		sinces  []time.Time
		nows    []time.Time
		updates atomic.Int64
	)
	h := New(Options{
		Snapshot: func() any { return map[string]string{"version": "test"} },
		// A fast Update that always has news: only the hub's interval
		// limits the rate.
		Update: func(since time.Time) any {
			mu.Lock()
			sinces = append(sinces, since)
			nows = append(nows, clk.Now())
			mu.Unlock()
			clk.Advance(time.Second)
			return map[string]any{"type": "update", "seq": updates.Add(1)}
		},
		Logger: quietLogger(),
		Clock:  clk,
	})
	th := start(t, h)
	c, _, err := dial(t, th.url, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := read(t, c, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != "snapshot" || string(m.Data) != `{"version":"test"}` {
		t.Fatalf("first message = %+v, want the snapshot", m)
	}

	// Count what arrives in one second.
	var got []message
	end := time.Now().Add(time.Second)
	for time.Now().Before(end) {
		m, err := read(t, c, time.Until(end))
		if err != nil {
			break
		}
		got = append(got, m)
	}
	if len(got) < 2 || len(got) > 5 {
		t.Fatalf("%d updates in one second, want about 4 (at most 5 with the window's edges)", len(got))
	}
	for i, m := range got {
		if m.Type != "update" {
			t.Fatalf("message %d is %q, want update", i, m.Type)
		}
		if i > 0 && m.Seq != got[i-1].Seq+1 {
			t.Fatalf("updates out of order: %d after %d", m.Seq, got[i-1].Seq)
		}
	}
	th.stop(t)
	// Each Update covers the interval since the previous one.
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(sinces); i++ {
		if !sinces[i].Equal(nows[i-1]) {
			t.Fatalf("Update %d got since %v, want %v (the previous call's time)", i, sinces[i], nows[i-1])
		}
	}
}

func TestInvalidateSendsSnapshot(t *testing.T) {
	noLeaks(t)
	var version atomic.Int64
	h := New(Options{
		Snapshot: func() any { return map[string]int64{"v": version.Load()} },
		Update:   func(time.Time) any { return nil }, // nothing ever changes
		Interval: 20 * time.Millisecond,
		Logger:   quietLogger(),
	})
	th := start(t, h)
	c, _, err := dial(t, th.url, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := read(t, c, 5*time.Second); err != nil || m.Type != "snapshot" || string(m.Data) != `{"v":0}` {
		t.Fatalf("first message %+v, %v", m, err)
	}
	// Nil updates send nothing.
	if m, err := read(t, c, 150*time.Millisecond); err == nil {
		t.Fatalf("got %+v although Update reported no change", m)
	}
	// A failed read poisons a gorilla connection: use a fresh client.
	c, _, err = dial(t, th.url, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	version.Store(7)
	h.Invalidate()
	m, err := read(t, c, 5*time.Second)
	if err != nil || m.Type != "snapshot" || string(m.Data) != `{"v":7}` {
		t.Fatalf("after Invalidate got %+v, %v; want the new snapshot", m, err)
	}
}

func TestBadOriginRefusedBeforeUpgrade(t *testing.T) {
	noLeaks(t)
	var snapshots atomic.Int64
	h := New(Options{
		Snapshot: func() any { snapshots.Add(1); return "ok" },
		Logger:   quietLogger(),
	})
	th := start(t, h)

	c, resp, err := dial(t, th.url, http.Header{"Origin": {"http://evil.example"}}, 0)
	if !errors.Is(err, websocket.ErrBadHandshake) || c != nil {
		t.Fatalf("dial from a foreign origin: conn %v, err %v; want a refused handshake", c, err)
	}
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d, want 403", resp.StatusCode)
	}
	if resp.Header.Get("Upgrade") != "" || resp.Header.Get("Sec-Websocket-Accept") != "" {
		t.Fatalf("refusal carries upgrade headers: %v", resp.Header)
	}
	body, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct{ Message, Code string }
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != "forbidden_origin" || e.Error.Message == "" {
		t.Fatalf("body %q is not an API error with code forbidden_origin", body)
	}
	if snapshots.Load() != 0 || h.Clients() != 0 {
		t.Fatalf("a refused client got a snapshot or was registered")
	}

	// The server's own origin and no Origin at all are accepted.
	for _, hdr := range []http.Header{{"Origin": {th.srv.URL}}, nil} {
		c, _, err := dial(t, th.url, hdr, 0)
		if err != nil {
			t.Fatalf("dial with %v: %v", hdr, err)
		}
		if m, err := read(t, c, 5*time.Second); err != nil || m.Type != "snapshot" {
			t.Fatalf("with %v got %+v, %v", hdr, m, err)
		}
	}
}

func TestCustomCheckOrigin(t *testing.T) {
	noLeaks(t)
	h := New(Options{
		CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "wails://wails" },
		Logger:      quietLogger(),
	})
	th := start(t, h)
	if _, resp, err := dial(t, th.url, nil, 0); err == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("custom CheckOrigin ignored: err %v", err)
	}
	if _, _, err := dial(t, th.url, http.Header{"Origin": {"wails://wails"}}, 0); err != nil {
		t.Fatalf("custom CheckOrigin refused its origin: %v", err)
	}
}

func TestSlowClientDroppedWithoutBlockingOthers(t *testing.T) {
	noLeaks(t)
	// 256 KB messages: a client that does not read fills its socket
	// buffers after a few dozen of them.
	big := json.RawMessage(`{"type":"update","pad":"` + strings.Repeat("x", 256<<10) + `"}`)
	h := New(Options{
		Snapshot:   func() any { return "hello" },
		SendBuffer: 2,
		Logger:     quietLogger(),
	})
	// The close frame reaches the slow client only if it starts reading
	// before the grace period ends; give the test room on a slow machine.
	h.closeGrace = 5 * time.Second
	th := start(t, h) // Run's ticker never fires a message: Update is nil

	slow, _, err := dial(t, th.url, nil, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	fast, _, err := dial(t, th.url, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := read(t, fast, 5*time.Second); err != nil || m.Type != "snapshot" {
		t.Fatalf("fast client: %+v, %v", m, err)
	}
	waitFor(t, "two clients", func() bool { return h.Clients() == 2 })

	// The fast client reads everything; count what it gets.
	var fastGot atomic.Int64
	fastDone := make(chan error, 1)
	go func() {
		for {
			_ = fast.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, _, err := fast.ReadMessage(); err != nil {
				fastDone <- err
				return
			}
			fastGot.Add(1)
		}
	}()

	pm, err := h.encode(big)
	if err != nil {
		t.Fatal(err)
	}
	var worst time.Duration
	sent := 0
	for h.Dropped() == 0 {
		if sent == 2000 {
			t.Fatalf("slow client never dropped after %d broadcasts", sent)
		}
		start := time.Now()
		h.broadcast(pm)
		worst = max(worst, time.Since(start))
		sent++
		// The fast client is one that keeps up: let it catch up before
		// the next broadcast so that a loaded machine (the race detector,
		// GOMAXPROCS=1) cannot make it look slow.
		waitFor(t, "the fast client to catch up", func() bool { return fastGot.Load() == int64(sent) })
	}
	// Broadcast a few more after the drop: they go to the fast client only.
	for range 5 {
		start := time.Now()
		h.broadcast(pm)
		worst = max(worst, time.Since(start))
		sent++
		waitFor(t, "the fast client to catch up", func() bool { return fastGot.Load() == int64(sent) })
	}
	t.Logf("slow client dropped after %d broadcasts; slowest broadcast %v", sent, worst)
	if worst > 50*time.Millisecond {
		t.Errorf("a broadcast took %v: broadcasting must not wait for clients", worst)
	}
	if got := h.Dropped(); got != 1 {
		t.Fatalf("Dropped() = %d, want 1 (the fast client must not be dropped)", got)
	}
	if h.Clients() != 1 {
		t.Fatalf("Clients() = %d after the drop, want 1", h.Clients())
	}
	waitFor(t, "the fast client to receive every broadcast", func() bool { return fastGot.Load() == int64(sent) })

	// The slow client, reading at last, finds the data it had buffered and
	// then the close frame with code 1013 and a reason.
	var closeErr *websocket.CloseError
	for {
		_ = slow.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, _, err = slow.ReadMessage(); err != nil {
			break
		}
	}
	if !errors.As(err, &closeErr) || closeErr.Code != websocket.CloseTryAgainLater || closeErr.Text != reasonTooSlow {
		t.Fatalf("slow client ended with %v, want close 1013 %q", err, reasonTooSlow)
	}

	th.stop(t)
	if err := <-fastDone; !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Fatalf("fast client ended with %v, want close 1001 at shutdown", err)
	}
}

func TestRunCancelClosesClients(t *testing.T) {
	noLeaks(t)
	h := New(Options{Snapshot: func() any { return 1 }, Logger: quietLogger()})
	th := start(t, h)
	var conns []*websocket.Conn
	for range 3 {
		c, _, err := dial(t, th.url, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := read(t, c, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	waitFor(t, "three clients", func() bool { return h.Clients() == 3 })
	th.stop(t) // returns only once every client is closed
	if h.Clients() != 0 {
		t.Fatalf("Clients() = %d after Run returned", h.Clients())
	}
	for i, c := range conns {
		if _, err := read(t, c, 5*time.Second); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("client %d: %v, want close 1001", i, err)
		}
	}
	if h.Dropped() != 0 {
		t.Fatalf("shutdown counted as drops: %d", h.Dropped())
	}
	// A stopped hub refuses new clients before upgrading.
	if _, resp, err := dial(t, th.url, nil, 0); err == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after Run: %v, want 503", err)
	}
}

func TestClientCloseAndPings(t *testing.T) {
	noLeaks(t)
	h := New(Options{Logger: quietLogger()})
	h.pingInterval = 30 * time.Millisecond
	h.pongWait = 200 * time.Millisecond
	th := start(t, h)

	// A client that reads answers pings (gorilla's default ping handler)
	// and stays connected well beyond pongWait.
	c, _, err := dial(t, th.url, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var pings atomic.Int64
	c.SetPingHandler(func(data string) error {
		pings.Add(1)
		// A ping that crosses the client's own close frame cannot be
		// answered any more; that is not the read loop's end.
		if err := c.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second)); err != nil && !errors.Is(err, websocket.ErrCloseSent) {
			return err
		}
		return nil
	})
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				readErr <- err
				return
			}
		}
	}()
	time.Sleep(600 * time.Millisecond)
	if pings.Load() < 3 {
		t.Fatalf("%d pings in 600 ms at a 30 ms interval", pings.Load())
	}
	if h.Clients() != 1 {
		t.Fatalf("a client answering pings was disconnected")
	}
	// A client that does not read never answers; the server gives it up
	// after pongWait.
	silent, _, err := dial(t, th.url, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = silent
	waitFor(t, "two clients", func() bool { return h.Clients() == 2 })
	waitFor(t, "the silent client to be given up", func() bool { return h.Clients() == 1 })

	// A client closing politely leaves at once.
	if err := c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the closing client to leave", func() bool { return h.Clients() == 0 })
	if err := <-readErr; !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("client read ended with %v, want the echoed close 1000", err)
	}
	if h.Dropped() != 0 {
		t.Fatalf("leaving clients counted as dropped: %d", h.Dropped())
	}
}

func TestTypedNilUpdateSendsNothing(t *testing.T) {
	noLeaks(t)
	type update struct{ Type string }
	var calls atomic.Int64
	h := New(Options{
		Update: func(time.Time) any {
			calls.Add(1)
			var u *update
			return u
		},
		Interval: 10 * time.Millisecond,
		Logger:   quietLogger(),
	})
	th := start(t, h)
	c, _, err := dial(t, th.url, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a few Update calls", func() bool { return calls.Load() >= 5 })
	if m, err := read(t, c, 100*time.Millisecond); err == nil {
		t.Fatalf("a typed nil update was sent: %+v", m)
	}
}

func TestUpdateNotCalledWithoutClients(t *testing.T) {
	noLeaks(t)
	var calls atomic.Int64
	h := New(Options{
		Update:   func(time.Time) any { calls.Add(1); return "x" },
		Interval: 5 * time.Millisecond,
		Logger:   quietLogger(),
	})
	start(t, h)
	time.Sleep(100 * time.Millisecond)
	if calls.Load() != 0 {
		t.Fatalf("Update called %d times with nobody connected", calls.Load())
	}
}

// TestSelectsTheFeedProtocol: a client offering subprotocols (as the
// dashboard does, its session beside the feed's) gets the feed's selected
// and nothing else echoed; a browser fails a handshake that selects none.
func TestSelectsTheFeedProtocol(t *testing.T) {
	noLeaks(t)
	th := start(t, New(Options{Logger: quietLogger()}))
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second, Subprotocols: []string{Protocol, Protocol + ".session.secret"}}
	c, resp, err := d.Dial(th.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != Protocol || c.Subprotocol() != Protocol {
		t.Errorf("selected %q, want %q", got, Protocol)
	}
	// A client that offers none gets none, as before.
	c2, resp2, err := dial(t, th.url, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := resp2.Header.Get("Sec-WebSocket-Protocol"); got != "" {
		t.Errorf("a client offering no subprotocol got %q", got)
	}
}
