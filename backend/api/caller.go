package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"

	"freelane/backend/sockowner"
)

// Who is calling: a loopback connection is not the same as the user. Other
// accounts of a shared machine reach 127.0.0.1 too, and must not spend the
// user's keys or read the answers FreeLane keeps for them. The kernel knows
// which account owns the other end of a loopback connection, so FreeLane
// asks it once per connection and treats a program of another account like
// a caller from the network: it needs the inbound token.
//
// Root counts as the user's own account. Root can read the user's files
// (the key vault's master key, the database) and the memory of the
// FreeLane process anyway, so refusing it would protect nothing and would
// only break tools run with sudo.

// CallerKind says where a request's connection comes from.
type CallerKind uint8

const (
	// CallerUnknown is a loopback connection on a system that does not
	// say who owns the other end; it is trusted as the user's own.
	CallerUnknown CallerKind = iota
	// CallerSelf is a program of the account running FreeLane, or root.
	CallerSelf
	// CallerOtherAccount is a program of another account on this machine,
	// or a loopback connection whose owner could not be read.
	CallerOtherAccount
	// CallerNetwork is a connection from another address than loopback.
	CallerNetwork
)

// Caller is who is at the other end of a request's connection, as the
// kernel tells it. It is worked out once per connection.
type Caller struct {
	Kind CallerKind
	// UID is the account's user id, for CallerSelf and CallerOtherAccount
	// when UIDKnown.
	UID      uint32
	UIDKnown bool
	// Addr is the remote address, IPv4 unmapped.
	Addr netip.Addr
}

// Identity is a stable name for the caller, for marking what it stored:
// "uid:N" for a program of account N on this machine (also when it sent
// the inbound token: the kernel's word is narrower than a shared token),
// "uid:unknown" for a loopback caller whose owner could not be read,
// "net:IP" for a caller on the network, and "local" for any loopback caller
// on a system that does not tell accounts apart (they were all one caller
// before, and still are there).
func (c Caller) Identity() string {
	switch c.Kind {
	case CallerSelf, CallerOtherAccount:
		if !c.UIDKnown {
			return "uid:unknown"
		}
		return "uid:" + strconv.FormatUint(uint64(c.UID), 10)
	case CallerNetwork:
		if !c.Addr.IsValid() {
			return "net:unknown"
		}
		return "net:" + c.Addr.String()
	}
	return "local"
}

// String names the caller for log lines and messages.
func (c Caller) String() string {
	switch c.Kind {
	case CallerSelf, CallerOtherAccount:
		if !c.UIDKnown {
			return "an account whose user id could not be read"
		}
		return "uid " + strconv.FormatUint(uint64(c.UID), 10)
	case CallerNetwork:
		if !c.Addr.IsValid() {
			return "an unknown address"
		}
		return c.Addr.String()
	}
	return "this machine"
}

// connKey keys the connection's *connCaller in a request's context.
type connKey struct{}

// connCaller caches the classification of one connection.
type connCaller struct {
	conn   net.Conn
	once   sync.Once
	caller Caller
}

// ConnContext is an http.Server ConnContext that remembers each
// connection, so that its caller is looked up at most once, on the first
// request that needs it, and never again for the later requests of a
// kept-alive connection.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connCaller{conn: c})
}

// callerOf returns who sent r. Behind ConnContext the answer is the
// connection's, cached; without it (a server built elsewhere) it is worked
// out for each request from the request's addresses.
func callerOf(r *http.Request) Caller {
	if cc, ok := r.Context().Value(connKey{}).(*connCaller); ok {
		cc.once.Do(func() {
			cc.caller = classify(addrPort(cc.conn.LocalAddr()), addrPort(cc.conn.RemoteAddr()))
		})
		return cc.caller
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	remote, _ := netip.ParseAddrPort(r.RemoteAddr)
	return classify(addrPort(local), remote)
}

func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPort{}
}

// selfUID is the account running FreeLane.
var selfUID = uint32(os.Getuid())

// peerUID and ownersKnown are variables so that tests can play a system
// that gives no owner.
var (
	peerUID     = sockowner.PeerUIDAddrPort
	ownersKnown = sync.OnceValue(checkOwners)
)

// classify works out who is at remote, a connection's other end, from
// local, this end.
func classify(local, remote netip.AddrPort) Caller {
	addr := remote.Addr().Unmap()
	if !addr.IsLoopback() {
		return Caller{Kind: CallerNetwork, Addr: addr}
	}
	if ownersKnown() != nil {
		return Caller{Kind: CallerUnknown, Addr: addr}
	}
	uid, err := peerUID(local, remote)
	switch {
	case errors.Is(err, sockowner.ErrUnsupported):
		return Caller{Kind: CallerUnknown, Addr: addr}
	case err != nil:
		// The other end has gone or cannot be read: whoever it was, it is
		// not known to be the user, so it is treated as a stranger.
		return Caller{Kind: CallerOtherAccount, Addr: addr}
	case uid == selfUID || uid == 0:
		return Caller{Kind: CallerSelf, UID: uid, UIDKnown: true, Addr: addr}
	}
	return Caller{Kind: CallerOtherAccount, UID: uid, UIDKnown: true, Addr: addr}
}

// checkOwners makes one loopback connection to itself and asks who owns
// its other end. Where that does not name this account, owners cannot be
// known on this system, and loopback callers are trusted as before rather
// than every one of the user's own tools being refused.
func checkOwners() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	defer d.Close()
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	uid, err := peerUID(addrPort(c.LocalAddr()), addrPort(c.RemoteAddr()))
	if err != nil {
		return err
	}
	if uid != selfUID {
		return fmt.Errorf("a connection of this process was said to belong to user id %d, not %d", uid, selfUID)
	}
	return nil
}

// warnUnknownOwners says once, at start, when this system cannot tell
// FreeLane's own account from others.
func (s *Server) warnUnknownOwners() {
	if s.o.AllLocalUsers {
		return
	}
	if err := ownersKnown(); err != nil {
		s.o.Logger.Warn("this system does not say which account a loopback connection comes from, so every program on this machine is trusted as the user's own; set an inbound token (server.token or FREELANE_TOKEN) to keep other accounts out",
			"reason", err.Error())
	}
}

// localTrusted reports whether c is served like the user's own programs
// without the inbound token: the user's account, root, any loopback
// caller where owners cannot be known, and other accounts when
// server.local_users is any.
func (s *Server) localTrusted(c Caller) bool {
	switch c.Kind {
	case CallerSelf, CallerUnknown:
		return true
	case CallerOtherAccount:
		return s.o.AllLocalUsers
	}
	return false
}

// refusal is how a route refuses a caller without the right token: the
// writer of its error shape (v1Error for /v1) and the 401's words.
type refusal struct {
	write          func(w http.ResponseWriter, r *http.Request, status int, typ, code, msg, param string)
	typ, code, msg string
}

// writeAPIError is WriteError in v1Error's form, for routes outside /v1.
func writeAPIError(w http.ResponseWriter, _ *http.Request, status int, typ, code, msg, param string) {
	WriteError(w, status, typ, code, msg, param)
}

// strangerMessage is what a caller that is not trusted reads when no
// inbound token is set, so none could let it in.
func strangerMessage(c Caller) string {
	if c.Kind == CallerNetwork {
		return "FreeLane answers other machines only with its inbound token, and none is set: set server.token in FreeLane's config (or FREELANE_TOKEN) and send it as the API key"
	}
	return "FreeLane answers only programs of the account running it, and this request came from another account on this machine (" + c.String() + "); " +
		"to let other accounts in, set an inbound token (server.token in FreeLane's config, or FREELANE_TOKEN) and give it to them as their API key, or set server.local_users: any in the config to trust every account"
}

// admitV1 decides whether a /v1 request may go on, answering it in its
// dialect when not: with an inbound token set everyone must send it; without
// one, the user's own programs are served and everyone else is refused.
func (s *Server) admitV1(w http.ResponseWriter, r *http.Request) bool {
	c := callerOf(r)
	if !s.o.Token.Set() {
		if s.localTrusted(c) {
			return true
		}
		s.v1Error(w, r, http.StatusUnauthorized, "invalid_request_error", "local_user_not_allowed", strangerMessage(c), "")
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="FreeLane"`)
	return s.checkToken(w, r, c, refusal{write: s.v1Error, typ: "invalid_request_error", code: "invalid_api_key", msg: s.sf.tokenRequired})
}

// metricsStrangerMessage answers another account's scrape of /metrics.
const metricsStrangerMessage = "/metrics is open only to the account running FreeLane; other accounts and other machines send the inbound token (Authorization: Bearer) or a dashboard session (X-FreeLane-Session)"

// admitMetrics lets the user's own programs scrape /metrics freely, and
// anyone else with the inbound token or a dashboard session.
func (s *Server) admitMetrics(w http.ResponseWriter, r *http.Request) bool {
	c := callerOf(r)
	if s.localTrusted(c) || s.session(r) != "" {
		return true
	}
	msg := metricsMessage
	switch {
	case c.Kind == CallerNetwork:
	case !s.o.Token.Set():
		msg = strangerMessage(c)
	default:
		msg = metricsStrangerMessage
	}
	if !s.o.Token.Set() {
		WriteError(w, http.StatusUnauthorized, "authentication_error", "token_required", msg, "")
		return false
	}
	return s.checkToken(w, r, c, refusal{write: writeAPIError, typ: "authentication_error", code: "token_required", msg: msg})
}
