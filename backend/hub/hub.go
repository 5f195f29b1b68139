// Package hub fans the dashboard's live state out to websocket clients.
//
// A new client first gets a full snapshot, then, at most once per
// Interval, the coalesced update message the caller builds. Every message
// is encoded once (as a websocket.PreparedMessage) and the same bytes are
// queued to every client. Snapshots too are built at most once per
// Interval: clients that join between two ticks share one, so a crowd of
// connections costs one snapshot build, not one each. At most MaxClients
// are connected at once; more are refused with 503 before the upgrade.
//
// Publishing never blocks. Each client has a writer goroutine fed by a
// bounded channel; a broadcast only tries to enqueue, and a client whose
// queue is full is dropped: its connection is closed with code 1013 (try
// again later) and the dashboard reconnects with backoff and gets a fresh
// snapshot. The router never touches the hub at all: the hub pulls
// (Update, Snapshot) on its own goroutine, so a stuck browser cannot slow
// a request down.
//
// Goroutines and their owners:
//   - Run's goroutine (the caller's) owns the ticker. It stops when Run's
//     context ends, after closing every client and waiting for them.
//   - ServeHTTP's goroutine (the HTTP server's) runs the client's read loop
//     and owns the client's writer goroutine: it waits for the writer to
//     end before returning. The writer ends when it is kicked (dropped or
//     shut down), when a write fails, or when the read loop ends; the read
//     loop ends when the connection is closed (by the writer, the peer or a
//     missed pong).
package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"freelane/backend/clock"
)

// Options configure a Hub. Only Snapshot is really needed; everything else
// has a default.
type Options struct {
	// Snapshot returns the full state. It is called for each new client and
	// on the tick after Invalidate, and sent as
	// {"type":"snapshot","data":<Snapshot()>}. Nil sends "data":null.
	Snapshot func() any
	// Update returns the complete update message (for example
	// {"type":"update",...}) covering what changed since the given time, or
	// nil when nothing changed. since is the Clock's reading just before
	// the previous call, so consecutive calls cover back-to-back intervals.
	// It is only called while clients are connected. A json.RawMessage is
	// sent as is. Nil Update sends no updates.
	Update func(since time.Time) any
	// Interval is the least time between two broadcasts (default 250 ms:
	// at most 4 messages per second).
	Interval time.Duration
	// SendBuffer is how many messages may wait for one client before it is
	// dropped (default 16).
	SendBuffer int
	// MaxClients is how many websockets may be connected at once (default
	// 32); one more is refused with 503. A dashboard opens one, so the
	// default leaves room for many windows while bounding what idle
	// connections can hold.
	MaxClients int
	// CheckOrigin accepts or refuses a request's Origin before the
	// upgrade. The default accepts a missing Origin and an Origin whose
	// host equals the request's Host.
	CheckOrigin func(r *http.Request) bool
	// Redact, when set, is applied to every message before it is sent,
	// so that no secret an upstream wrote into the state reaches a
	// client, whatever part of the state it was copied into.
	Redact func([]byte) []byte
	// Logger receives drops and failures (default slog.Default()).
	Logger *slog.Logger
	// Clock dates Update's since argument (default: the wall clock). The
	// broadcast and ping pacing and the socket deadlines stay on the wall
	// clock whatever this is: they pace writes to real sockets, and the
	// network poller reads deadlines against the wall clock.
	Clock clock.Clock
}

// Defaults and protocol timings.
const (
	DefaultInterval   = 250 * time.Millisecond
	DefaultSendBuffer = 16
	DefaultMaxClients = 32

	// pingInterval is how often the server pings an idle client, so that
	// proxies keep the connection open and dead peers are noticed.
	pingInterval = 20 * time.Second
	// pongWait is how long the read loop waits for any frame (a pong at
	// the latest) before it gives the client up: one ping may go
	// unanswered.
	pongWait = 2*pingInterval + 5*time.Second
	// writeWait bounds each write; a client that cannot take a frame in
	// this time is gone.
	writeWait = 10 * time.Second
	// closeGrace bounds the close handshake of a dropped or shut down
	// client, including cutting short a write stuck on a peer that does
	// not read.
	closeGrace = time.Second
	// maxClientMessage caps what a client may send: the protocol has
	// clients send nothing, so anything large is a misbehaving peer.
	maxClientMessage = 4 << 10
)

// Protocol is the websocket subprotocol of the dashboard's feed. When a
// client offers it, the hub selects it: a browser that offered
// subprotocols fails a handshake whose answer selects none. The dashboard
// offers its session credential as a second subprotocol beside it, which
// is never echoed back.
const Protocol = "freelane"

// Close codes and reasons sent to clients.
const (
	closeTooSlow      = websocket.CloseTryAgainLater // 1013
	reasonTooSlow     = "client too slow: send buffer full"
	reasonShutdown    = "server shutting down"
	reasonInternalErr = "could not build the snapshot"
)

// errClosed is returned by register once Run has ended.
var errClosed = errors.New("hub: closed")

// Hub is a websocket fan-out. Create it with New, serve it as an
// http.Handler and call Run once.
type Hub struct {
	snapshot    func() any
	update      func(since time.Time) any
	interval    time.Duration
	sendBuffer  int
	maxClients  int
	checkOrigin func(r *http.Request) bool
	redact      func([]byte) []byte
	log         *slog.Logger
	clock       clock.Clock
	upgrader    websocket.Upgrader

	// Protocol timings, variables only so that tests can shorten them.
	pingInterval, pongWait, writeWait, closeGrace time.Duration

	invalidated atomic.Bool
	dropped     atomic.Uint64
	started     atomic.Bool
	// conns counts connections from the capacity check to the end of
	// ServeHTTP, so upgrades in progress count against MaxClients too.
	conns atomic.Int64
	// snap is the snapshot message new clients share until the next tick
	// or broadcast clears it. It is built and cleared with bcast held;
	// Invalidate clears it without the lock, which is safe because the
	// tick after Invalidate sends a fresh snapshot to every client anyway.
	snap atomic.Pointer[websocket.PreparedMessage]

	// bcast serialises broadcasts with a new client's snapshot and
	// registration. Without it a tick could broadcast an update covering
	// changes made after the client's snapshot was taken, just before the
	// client joins the broadcast set, and the client would never see those
	// changes. With it the worst case is an update the snapshot already
	// contains: a harmless duplicate (requests and events carry ids).
	bcast sync.Mutex

	mu      sync.Mutex // guards clients and closed
	clients map[*client]struct{}
	closed  bool
	// live counts registered clients whose ServeHTTP has not returned;
	// Run waits for it to reach zero after closing them.
	live sync.WaitGroup

	since time.Time // owned by Run's goroutine
}

// New returns a Hub configured by opts.
func New(opts Options) *Hub {
	h := &Hub{
		snapshot:     opts.Snapshot,
		update:       opts.Update,
		interval:     opts.Interval,
		sendBuffer:   opts.SendBuffer,
		maxClients:   opts.MaxClients,
		checkOrigin:  opts.CheckOrigin,
		redact:       opts.Redact,
		log:          opts.Logger,
		clock:        opts.Clock,
		pingInterval: pingInterval,
		pongWait:     pongWait,
		writeWait:    writeWait,
		closeGrace:   closeGrace,
		clients:      map[*client]struct{}{},
	}
	if h.snapshot == nil {
		h.snapshot = func() any { return nil }
	}
	if h.interval <= 0 {
		h.interval = DefaultInterval
	}
	if h.sendBuffer <= 0 {
		h.sendBuffer = DefaultSendBuffer
	}
	if h.maxClients <= 0 {
		h.maxClients = DefaultMaxClients
	}
	if h.checkOrigin == nil {
		h.checkOrigin = sameOrigin
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.clock = clock.OrReal(h.clock)
	h.upgrader = websocket.Upgrader{
		ReadBufferSize:  1 << 10,
		WriteBufferSize: 4 << 10,
		// Idle dashboards should not pin a write buffer each: prepared
		// messages bypass it anyway.
		WriteBufferPool: &sync.Pool{},
		// ServeHTTP has already checked the Origin (so that it can refuse
		// with 403 and a JSON body before any upgrade work); checking again
		// would call a user's CheckOrigin twice.
		CheckOrigin:  func(*http.Request) bool { return true },
		Subprotocols: []string{Protocol},
	}
	return h
}

// sameOrigin accepts a request without Origin (not a browser) or whose
// Origin's host:port equals the Host it was sent to.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// client is one connected websocket.
type client struct {
	ws     *websocket.Conn
	remote string
	send   chan *websocket.PreparedMessage

	kickOnce    sync.Once
	kicked      chan struct{} // closed when the client must go
	closeCode   int           // written before kicked is closed
	closeReason string

	readDone chan struct{} // closed when the read loop has ended
}

// kick asks the writer to close the connection with code and reason. It
// never blocks, so broadcasts can call it with the hub locked.
func (c *client) kick(code int, reason string, grace time.Duration) {
	c.kickOnce.Do(func() {
		c.closeCode, c.closeReason = code, reason
		close(c.kicked)
		// A writer stuck in a write to a peer that does not read would only
		// notice the kick when writeWait expires; shortening the deadline
		// of the underlying connection (safe to do concurrently, unlike the
		// websocket.Conn's own setter) frees it within grace. A writer that
		// is not stuck sets its own deadline before its next write.
		_ = c.ws.NetConn().SetWriteDeadline(clock.Deadline(grace))
	})
}

// ServeHTTP upgrades r to a websocket, sends the snapshot and keeps the
// client until it leaves, is dropped or the hub stops. A refused Origin
// gets 403 before any upgrade; a stopped hub, or one with MaxClients
// connected, answers 503.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.checkOrigin(r) {
		h.log.Warn("hub: refused a websocket from a foreign origin",
			"origin", r.Header.Get("Origin"), "remote", r.RemoteAddr)
		writeError(w, http.StatusForbidden, "forbidden_origin",
			"This websocket only accepts connections from the FreeLane dashboard's own page.")
		return
	}
	if h.isClosed() {
		writeError(w, http.StatusServiceUnavailable, "shutting_down", "FreeLane is shutting down.")
		return
	}
	if n := h.conns.Add(1); n > int64(h.maxClients) {
		h.conns.Add(-1)
		h.log.Warn("hub: refused a websocket: too many dashboard connections", "max", h.maxClients, "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "too_many_clients",
			fmt.Sprintf("FreeLane already serves %d dashboard connections, its limit; close a dashboard tab or window and try again.", h.maxClients))
		return
	}
	defer h.conns.Add(-1)
	ws, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		// Upgrade has already answered the request with an HTTP error.
		h.log.Debug("hub: websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	c := &client{
		ws:       ws,
		remote:   r.RemoteAddr,
		send:     make(chan *websocket.PreparedMessage, h.sendBuffer),
		kicked:   make(chan struct{}),
		readDone: make(chan struct{}),
	}
	if err := h.register(c); err != nil {
		code, reason := websocket.CloseGoingAway, reasonShutdown
		if !errors.Is(err, errClosed) {
			code, reason = websocket.CloseInternalServerErr, reasonInternalErr
			h.log.Error("hub: could not send the snapshot", "remote", c.remote, "err", err)
		}
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), clock.Deadline(h.closeGrace))
		_ = ws.Close()
		return
	}
	defer h.live.Done()
	// The desktop window's webview says so in its user agent; the log line
	// tells a user (and the desktop smoke test) that the window is live.
	kind := "browser"
	if strings.Contains(r.UserAgent(), "wails.io") {
		kind = "window"
	}
	h.log.Info("dashboard connected", "client", kind, "remote", c.remote)

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		h.writeLoop(c)
	}()
	h.readLoop(c)
	close(c.readDone)
	<-writerDone
	h.remove(c)
}

// register queues the snapshot as the client's first message and adds the
// client to the broadcast set.
func (h *Hub) register(c *client) error {
	h.bcast.Lock()
	defer h.bcast.Unlock()
	if h.isClosed() {
		return errClosed
	}
	pm := h.snap.Load()
	if pm == nil {
		var err error
		if pm, err = h.snapshotMessage(); err != nil {
			return err
		}
		h.snap.Store(pm)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
	}
	c.send <- pm // cannot block: the channel is new and has room for one
	h.clients[c] = struct{}{}
	h.live.Add(1)
	return nil
}

// remove takes c out of the broadcast set (idempotent).
func (h *Hub) remove(c *client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
}

func (h *Hub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// readLoop discards whatever the client sends and returns when the
// connection fails or closes. Reading is what processes pongs and the
// peer's close frame, and its deadline is what detects a vanished peer.
func (h *Hub) readLoop(c *client) {
	c.ws.SetReadLimit(maxClientMessage)
	_ = c.ws.SetReadDeadline(clock.Deadline(h.pongWait))
	c.ws.SetPongHandler(func(string) error {
		return c.ws.SetReadDeadline(clock.Deadline(h.pongWait))
	})
	for {
		_, rd, err := c.ws.NextReader()
		if err == nil {
			_, err = io.Copy(io.Discard, rd)
		}
		if err != nil {
			if websocket.IsUnexpectedCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
				h.log.Debug("hub: client connection ended", "remote", c.remote, "err", err)
			}
			return
		}
		_ = c.ws.SetReadDeadline(clock.Deadline(h.pongWait))
	}
}

// writeLoop is the only goroutine that writes data frames to c. It closes
// the connection when it returns, which also ends the read loop.
func (h *Hub) writeLoop(c *client) {
	defer func() {
		// Leave the broadcast set first, so that a client whose writes
		// failed is not later counted as dropped for being slow.
		h.remove(c)
		_ = c.ws.Close()
	}()
	ping, pingC := socketTicker(h.pingInterval)
	defer ping.Stop()
	for {
		// A kick wins over queued messages: a dropped client gets no more
		// data, and select alone would pick among ready cases at random.
		select {
		case <-c.kicked:
			h.writeClose(c)
			return
		default:
		}
		select {
		case <-c.kicked:
			h.writeClose(c)
			return
		case <-c.readDone:
			return
		case pm := <-c.send:
			_ = c.ws.SetWriteDeadline(clock.Deadline(h.writeWait))
			if err := c.ws.WritePreparedMessage(pm); err != nil {
				h.log.Debug("hub: write failed", "remote", c.remote, "err", err)
				return
			}
		case <-pingC:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, clock.Deadline(h.writeWait)); err != nil {
				h.log.Debug("hub: ping failed", "remote", c.remote, "err", err)
				return
			}
		}
	}
}

// writeClose sends the close frame of a kicked client. It fails silently
// when the connection is already broken: the socket is closed right after
// either way.
func (h *Hub) writeClose(c *client) {
	msg := websocket.FormatCloseMessage(c.closeCode, c.closeReason)
	_ = c.ws.WriteControl(websocket.CloseMessage, msg, clock.Deadline(h.closeGrace))
}

// Run broadcasts every Interval until ctx ends, then closes every client,
// waits for their goroutines and returns. After Run returns, ServeHTTP
// answers 503. Run must be called once; a second call returns at once.
func (h *Hub) Run(ctx context.Context) {
	if !h.started.CompareAndSwap(false, true) {
		h.log.Error("hub: Run called twice")
		return
	}
	t, tick := socketTicker(h.interval)
	defer t.Stop()
	h.since = h.clock.Now()
	for {
		select {
		case <-ctx.Done():
			h.shutdown()
			return
		case <-tick:
			h.tick()
		}
	}
}

// tick sends one message: a fresh snapshot after Invalidate, otherwise the
// caller's update if anything changed.
func (h *Hub) tick() {
	now := h.clock.Now()
	since := h.since
	h.since = now
	// A client joining from here on must get a snapshot taken after now:
	// this tick's update, which it may miss, covers changes up to now.
	h.bcast.Lock()
	h.snap.Store(nil)
	h.bcast.Unlock()
	if h.Clients() == 0 {
		// Nobody listens: skip the work. A new client starts from its own
		// snapshot, which makes any pending Invalidate moot too.
		h.invalidated.Store(false)
		return
	}
	var (
		pm  *websocket.PreparedMessage
		err error
	)
	if h.invalidated.Swap(false) {
		// The snapshot supersedes this interval's update.
		pm, err = h.snapshotMessage()
	} else {
		if h.update == nil {
			return
		}
		v := h.update(since)
		if v == nil {
			return
		}
		pm, err = h.encode(v)
	}
	if err != nil {
		h.log.Error("hub: could not encode a message", "err", err)
		return
	}
	if pm != nil {
		h.broadcast(pm)
	}
}

// Invalidate makes the next tick send a fresh snapshot to every client
// instead of an update, for changes an update cannot express (providers,
// chains, keys, settings). It never blocks.
func (h *Hub) Invalidate() {
	h.invalidated.Store(true)
	h.snap.Store(nil)
}

// broadcast queues pm to every client without waiting. A client whose
// queue is full is dropped.
func (h *Hub) broadcast(pm *websocket.PreparedMessage) {
	h.bcast.Lock()
	defer h.bcast.Unlock()
	// A client that joins after this broadcast does not get pm, so the
	// snapshot it starts from must include what pm says.
	h.snap.Store(nil)
	var slow []string
	h.mu.Lock()
	for c := range h.clients {
		select {
		case c.send <- pm:
		default:
			delete(h.clients, c)
			h.dropped.Add(1)
			c.kick(closeTooSlow, reasonTooSlow, h.closeGrace)
			slow = append(slow, c.remote)
		}
	}
	h.mu.Unlock()
	// Log outside the lock: a slow log sink must not delay broadcasts.
	for _, remote := range slow {
		h.log.Warn("hub: dropped a slow dashboard client", "remote", remote, "send_buffer", h.sendBuffer)
	}
}

// shutdown closes every client and waits until their ServeHTTP calls end.
func (h *Hub) shutdown() {
	h.mu.Lock()
	h.closed = true
	clients := h.clients
	h.clients = map[*client]struct{}{}
	h.mu.Unlock()
	for c := range clients {
		c.kick(websocket.CloseGoingAway, reasonShutdown, h.closeGrace)
	}
	h.live.Wait()
}

// Clients returns the number of connected clients.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// Dropped returns how many clients were dropped for being too slow.
func (h *Hub) Dropped() uint64 { return h.dropped.Load() }

// snapshotMessage builds {"type":"snapshot","data":Snapshot()}.
func (h *Hub) snapshotMessage() (*websocket.PreparedMessage, error) {
	pm, err := h.encode(struct {
		Type string `json:"type"`
		Data any    `json:"data"`
	}{"snapshot", h.snapshot()})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return pm, nil
}

// encode marshals v once into a message every client can share. A typed
// nil (for example a nil *Update) encodes as null and yields no message.
func (h *Hub) encode(v any) (*websocket.PreparedMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("hub: encode %T: %w", v, err)
	}
	if bytes.Equal(b, []byte("null")) {
		return nil, nil
	}
	if h.redact != nil {
		b = h.redact(b)
	}
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, b)
	if err != nil {
		return nil, fmt.Errorf("hub: prepare message: %w", err)
	}
	return pm, nil
}

// writeError answers with the admin API's error shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	type apiError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Param   *string `json:"param"`
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error apiError `json:"error"`
	}{apiError{Message: message, Type: "invalid_request_error", Code: code}})
}

// socketTicker paces writes to real sockets, which happen in real time
// whatever clock dates their content.
func socketTicker(d time.Duration) (clock.Ticker, <-chan time.Time) { return clock.Real{}.NewTicker(d) }
