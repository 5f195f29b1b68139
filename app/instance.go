package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"freelane/backend/clock"
)

// One FreeLane runs per data directory. The first launch listens on a Unix
// socket in the data directory; a second launch connects to it, asks the
// running one to bring its window forward and exits. A socket (rather than a
// lock file) also tells a crashed instance's leftover apart from a live one:
// nobody answers on a stale socket.
//
// The socket is trusted only in a directory no other user can write: the
// data directory when it is private and short enough for a socket path,
// otherwise $XDG_RUNTIME_DIR, otherwise a private directory of the user's
// own in the temporary directory, created 0700. When another user has taken
// that directory's usual name, FreeLane makes one under a random name and
// records it in the data directory, so that the next launch finds it. A second launch also checks that the
// socket, and on Linux the process answering on it, belong to the same
// user before it believes the answer: on a shared machine another user
// could otherwise bind the path first and pose as the running FreeLane.

// instanceSocket is the socket's file name inside the data directory.
const instanceSocket = "instance.sock"

// handshakeTimeout bounds every step of the handshake, so a hung instance
// cannot hang the second launch.
const handshakeTimeout = 3 * time.Second

// Requests and replies of the handshake, one line each.
const (
	reqShow       = "show"
	reqLoginURL   = "dashboard-url" // a fresh one-time dashboard login link
	reqAddress    = "address"       // the /v1 URL the running instance serves
	replyShown    = "shown"         // the window was brought forward
	replyHeadless = "headless"      // the running instance has no window
)

// errAlreadyRunning is returned by acquireInstance when another FreeLane
// owns the data directory; the error's text is the running one's reply.
var errAlreadyRunning = errors.New("FreeLane is already running")

// RunningError is what a second launch learns from the first.
type RunningError struct {
	// Reply is replyShown or replyHeadless.
	Reply string
	// Endpoint is the running instance's /v1 URL, if it said.
	Endpoint string
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("FreeLane is already running (%s) at %s", e.Reply, e.Endpoint)
}

func (e *RunningError) Unwrap() error { return errAlreadyRunning }

// instance is the first launch's end of the handshake.
type instance struct {
	ln   net.Listener
	path string
	log  *slog.Logger

	mu       sync.Mutex
	onShow   func() bool // brings the window forward; false when there is none
	endpoint string
	loginURL func() string // mints a dashboard login link; nil until serving

	done chan struct{}
}

// acquireInstance makes this process the data directory's FreeLane, or
// returns a *RunningError after asking the running one to show itself.
func acquireInstance(dataDir string, log *slog.Logger) (*instance, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the data directory: %w", err)
	}
	path, note, err := locateSocket(dataDir)
	if err != nil {
		return nil, err
	}
	if note != "" {
		log.Warn(note)
	}
	// Claiming is one step under a lock: between another launch's bind and
	// its listen the socket refuses connections like a stale one, and
	// without the lock this launch would remove it and claim a second
	// instance.
	unlock, err := lockClaim(path)
	if err != nil {
		return nil, err
	}
	defer unlock()
	for attempt := 0; attempt < 2; attempt++ {
		ln, err := net.Listen("unix", path)
		if socketsUnsupported(err) {
			// Windows before 10 (1803) and Wine have no Unix sockets: run
			// without the single-instance check rather than not at all.
			log.Warn("this system has no Unix sockets, so a second FreeLane on the same data directory is not detected; start only one", "err", err)
			done := make(chan struct{})
			close(done)
			return &instance{path: path, log: log, done: done}, nil
		}
		if err == nil {
			_ = os.Chmod(path, 0o600)
			in := &instance{ln: ln, path: path, log: log, done: make(chan struct{})}
			go in.serve()
			return in, nil
		}
		// The socket exists: either someone answers on it, or it is a
		// leftover of an instance that died without removing it. Only a
		// socket of this user's is asked, or removed.
		if oerr := checkOwner(path); oerr != nil {
			return nil, oerr
		}
		reply, endpoint, derr := askShow(path)
		if errors.Is(derr, errForeignPeer) {
			return nil, derr
		}
		if derr == nil {
			return nil, &RunningError{Reply: reply, Endpoint: endpoint}
		}
		if attempt == 0 && isStale(derr) {
			log.Info("removing a stale instance socket left by a FreeLane that did not stop cleanly", "path", path)
			_ = os.Remove(path)
			continue
		}
		return nil, fmt.Errorf("checking for a running FreeLane on %s: %w", path, errors.Join(err, derr))
	}
	return nil, fmt.Errorf("could not claim %s", path)
}

// maxSocketPath is the longest Unix socket path every OS accepts (the
// sun_path field is 104 bytes on macOS, 108 on Linux, with a final NUL).
const maxSocketPath = 103

// socketPath is the instance socket for a data directory: inside it when
// it is private and the path is short enough, else in the user's runtime
// directory under a name derived from the data directory, so deep data
// directories work too (see locateSocket).
func socketPath(dataDir string) (string, error) {
	path, _, err := locateSocket(dataDir)
	return path, err
}

// errForeignPeer marks an instance socket answered by another user's
// process.
var errForeignPeer = errors.New("the process on the single-instance socket belongs to another user")

// isStale reports whether dialling failed because nobody listens.
func isStale(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && ne.Op == "dial"
}

// askShow is the second launch's end of the handshake.
func askShow(path string) (reply, endpoint string, err error) {
	c, err := net.DialTimeout("unix", path, handshakeTimeout)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	if uid, err := peerUID(c); err == nil && uid != os.Getuid() {
		return "", "", fmt.Errorf("%w (user id %d, not yours, %d) on %s: it is not your FreeLane and its answer is not trusted",
			errForeignPeer, uid, os.Getuid(), path)
	}
	_ = c.SetDeadline(clock.Deadline(handshakeTimeout))
	if _, err := io.WriteString(c, reqShow+"\n"); err != nil {
		return "", "", fmt.Errorf("asking the running FreeLane: %w", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", "", fmt.Errorf("reading the running FreeLane's answer: %w", err)
	}
	reply, endpoint, _ = strings.Cut(strings.TrimSpace(line), " ")
	return reply, endpoint, nil
}

// setShow installs what a "show" request does, and the endpoint reported
// back; until then a second launch hears "headless".
func (in *instance) setShow(show func() bool, endpoint string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.onShow, in.endpoint = show, endpoint
}

// setLoginURL installs what a "dashboard-url" request answers with.
func (in *instance) setLoginURL(mint func() string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.loginURL = mint
}

// askLoginURL asks the data directory's running FreeLane for a fresh
// dashboard login link. Only the running instance can mint one, since the
// codes live in its memory; the socket is the user's own (0600), so
// whoever can ask could read the data directory anyway.
func askLoginURL(dataDir string) (string, error) {
	return askRunning(dataDir, reqLoginURL)
}

// askAddress asks the data directory's running FreeLane for the /v1 URL it
// serves, for freelane connect to point tools at the FreeLane that runs
// rather than at the configured or default port.
func askAddress(dataDir string) (string, error) {
	return askRunning(dataDir, reqAddress)
}

// askRunning sends one request to the data directory's running FreeLane
// and returns its answer, an http URL.
func askRunning(dataDir, req string) (string, error) {
	path, err := socketPath(dataDir)
	if err != nil {
		return "", err
	}
	// An answer from someone else's process would send the user (or the
	// user's tools) to that process, so the socket and the peer must be
	// the user's own.
	if err := checkOwner(path); err != nil {
		return "", err
	}
	c, err := net.DialTimeout("unix", path, handshakeTimeout)
	if err != nil {
		return "", fmt.Errorf("no FreeLane is running with the data directory %s (start it with freelane serve): %w", dataDir, err)
	}
	defer c.Close()
	if uid, err := peerUID(c); err == nil && uid != os.Getuid() {
		return "", fmt.Errorf("%w (user id %d, not yours, %d) on %s: it is not your FreeLane and its answer is not trusted",
			errForeignPeer, uid, os.Getuid(), path)
	}
	_ = c.SetDeadline(clock.Deadline(handshakeTimeout))
	if _, err := io.WriteString(c, req+"\n"); err != nil {
		return "", fmt.Errorf("asking the running FreeLane: %w", err)
	}
	line, err := bufio.NewReader(io.LimitReader(c, 4096)).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading the running FreeLane's answer (is it older than this command?): %w", err)
	}
	u := strings.TrimSpace(line)
	if !strings.HasPrefix(u, "http") {
		return "", errNotServing
	}
	return u, nil
}

// errNotServing is a running FreeLane's answer before it listens.
var errNotServing = errors.New("the running FreeLane is not serving yet; try again in a moment")

func (in *instance) serve() {
	defer close(in.done)
	for {
		c, err := in.ln.Accept()
		if err != nil {
			return // closed
		}
		in.handle(c)
	}
}

// handle answers one connection. Connections are handled one at a time:
// they are rare, and it keeps two launches from racing to show the window.
func (in *instance) handle(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(clock.Deadline(handshakeTimeout))
	line, err := bufio.NewReader(io.LimitReader(c, 256)).ReadString('\n')
	if err != nil {
		return
	}
	in.mu.Lock()
	show, endpoint, mint := in.onShow, in.endpoint, in.loginURL
	in.mu.Unlock()
	switch strings.TrimSpace(line) {
	case reqShow:
	case reqLoginURL:
		answer := "not-serving"
		if mint != nil {
			answer = mint()
		}
		fmt.Fprintf(c, "%s\n", answer)
		return
	case reqAddress:
		answer := "not-serving"
		if endpoint != "" {
			answer = endpoint
		}
		fmt.Fprintf(c, "%s\n", answer)
		return
	default:
		return
	}
	reply := replyHeadless
	if show != nil && show() {
		reply = replyShown
	}
	in.log.Info("another launch of FreeLane asked for the window", "answer", reply)
	fmt.Fprintf(c, "%s %s\n", reply, endpoint)
}

// Close stops answering and removes the socket.
func (in *instance) Close() error {
	if in.ln == nil {
		return nil
	}
	err := in.ln.Close()
	<-in.done
	// The listener removes the socket file itself on Unix; this covers the
	// rest.
	if rerr := os.Remove(in.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}
