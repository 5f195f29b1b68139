package api

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"freelane/backend/clock"
)

// Wrong inbound tokens are counted per peer: the account for a caller on
// this machine, the address (an IPv6 caller's /64, which one machine
// usually holds whole) for one on the network. A peer past the limit gets
// 429 with Retry-After, and its token is not even checked until the window
// ends, so guessing is held to a few tries a minute per peer. Answering at
// once rather than holding the request keeps a guesser from tying up
// FreeLane's connections, and tells an honest, misconfigured tool when to
// try again.
//
// The user's own account (and any loopback caller where accounts cannot be
// told apart) is counted and logged but never throttled: it can read the
// token from the user's files anyway, and throttling it would let one
// misconfigured tool lock the user's other tools out. A right token from
// another peer is never slowed by someone else's failures.
const (
	// tokenFailLimit wrong tokens within tokenFailWindow throttle a peer
	// until the window ends.
	tokenFailLimit  = 5
	tokenFailWindow = time.Minute
	// maxTokenPeers bounds the table. Past it, new peers' failures are
	// counted together, and those peers are refused with 429 after a
	// wrong token but still served with the right one.
	maxTokenPeers = 1024
)

// tooManyTokensMessage answers a throttled peer.
const tooManyTokensMessage = "too many wrong inbound tokens from this caller (%d within a minute), so FreeLane does not check its tokens for %ds; set the right token (server.token in FreeLane's config, or FREELANE_TOKEN) as the tool's API key"

// peerKey names a peer in the table without allocating.
type peerKey struct {
	kind CallerKind
	uid  uint32
	addr netip.Addr
	// overflow is the one bucket of the peers the table had no room for.
	overflow bool
}

func (k peerKey) String() string {
	switch {
	case k.overflow:
		return "callers past the first " + strconv.Itoa(maxTokenPeers)
	case k.kind == CallerNetwork && k.addr.Is6():
		return netip.PrefixFrom(k.addr, 64).String()
	case k.kind == CallerNetwork:
		return k.addr.String()
	case k.kind == CallerUnknown:
		return "this machine"
	}
	return Caller{Kind: k.kind, UID: k.uid, UIDKnown: k.uid != math.MaxUint32}.String()
}

// peerOf returns c's key and whether c may be throttled.
func peerOf(c Caller) (peerKey, bool) {
	switch c.Kind {
	case CallerNetwork:
		a := c.Addr
		if a.Is6() {
			a = netip.PrefixFrom(a, 64).Masked().Addr()
		}
		return peerKey{kind: CallerNetwork, addr: a}, true
	case CallerOtherAccount:
		uid := c.UID
		if !c.UIDKnown {
			uid = math.MaxUint32
		}
		return peerKey{kind: CallerOtherAccount, uid: uid}, true
	case CallerSelf:
		return peerKey{kind: CallerSelf, uid: c.UID}, false
	}
	return peerKey{kind: CallerUnknown}, false
}

// peerFails is one peer's record.
type peerFails struct {
	// windowStart and fails count toward the limit; blockedUntil is set
	// once it is reached.
	windowStart  time.Time
	fails        int
	blockedUntil time.Time
	// wrong and throttled are the tries since the last log line.
	wrong, throttled int
}

// tokenLimiter counts wrong inbound tokens per peer, throttles peers past
// the limit and logs one line per peer per window. Its flush runs on a
// clock timer that exists only while there are counts to log.
type tokenLimiter struct {
	clock clock.Clock
	log   *slog.Logger

	mu    sync.Mutex
	peers map[peerKey]*peerFails
	// flushPending is set while a flush timer is armed.
	flushPending bool
}

func newTokenLimiter(c clock.Clock, log *slog.Logger) *tokenLimiter {
	return &tokenLimiter{clock: c, log: log, peers: map[peerKey]*peerFails{}}
}

// throttled reports whether k must wait, and how long, counting the try
// when it must.
func (l *tokenLimiter) throttled(k peerKey) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.peers[k]
	if p == nil {
		return 0, false
	}
	now := l.clock.Now()
	if !now.Before(p.blockedUntil) {
		return 0, false
	}
	p.throttled++
	l.armLocked()
	return p.blockedUntil.Sub(now), true
}

// fail counts a wrong token from k; a peer that may be throttled is, once
// it reaches the limit. It returns how long the peer must wait when the
// failure was counted in the overflow bucket and that is throttled.
func (l *tokenLimiter) fail(k peerKey, throttle bool) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	p := l.peers[k]
	if p == nil {
		if len(l.peers) >= maxTokenPeers {
			l.sweepLocked(now)
		}
		if len(l.peers) >= maxTokenPeers {
			k = peerKey{overflow: true}
			if p = l.peers[k]; p == nil {
				// The overflow bucket may exceed the bound by one.
				p = &peerFails{}
				l.peers[k] = p
			}
		} else {
			p = &peerFails{}
			l.peers[k] = p
		}
	}
	p.wrong++
	l.armLocked()
	if !throttle {
		return 0, false
	}
	if now.Sub(p.windowStart) >= tokenFailWindow {
		p.windowStart, p.fails = now, 0
	}
	p.fails++
	if p.fails >= tokenFailLimit {
		p.blockedUntil = p.windowStart.Add(tokenFailWindow)
	}
	if k.overflow && now.Before(p.blockedUntil) {
		return p.blockedUntil.Sub(now), true
	}
	return 0, false
}

// sweepLocked drops the records that neither throttle nor wait to be
// logged.
func (l *tokenLimiter) sweepLocked(now time.Time) {
	for k, p := range l.peers {
		if p.wrong == 0 && p.throttled == 0 && !now.Before(p.blockedUntil) && now.Sub(p.windowStart) >= tokenFailWindow {
			delete(l.peers, k)
		}
	}
}

// armLocked makes sure a flush is due a window from now.
func (l *tokenLimiter) armLocked() {
	if l.flushPending {
		return
	}
	l.flushPending = true
	l.clock.AfterFunc(tokenFailWindow, l.flush)
}

// flush logs one line per peer with failures since the last flush, never
// the tokens themselves, and forgets what no longer matters.
func (l *tokenLimiter) flush() {
	type line struct {
		peer             string
		wrong, throttled int
	}
	l.mu.Lock()
	var lines []line
	for k, p := range l.peers {
		if p.wrong+p.throttled > 0 {
			lines = append(lines, line{k.String(), p.wrong, p.throttled})
			p.wrong, p.throttled = 0, 0
		}
	}
	l.sweepLocked(l.clock.Now())
	l.flushPending = false
	l.mu.Unlock()
	for _, ln := range lines {
		n := ln.wrong + ln.throttled
		msg := fmt.Sprintf("%d wrong inbound tokens from %s in the last minute", n, ln.peer)
		if n == 1 {
			msg = "1 wrong inbound token from " + ln.peer + " in the last minute"
		}
		if ln.throttled > 0 {
			msg += fmt.Sprintf("; %d of them came past the limit of %d a minute and were answered 429 unchecked", ln.throttled, tokenFailLimit)
		}
		l.log.Warn(msg, "peer", ln.peer, "count", n, "throttled", ln.throttled)
	}
}

// checkToken lets a request with the right inbound token through. A wrong
// or missing token is counted for the caller's peer; a peer past the limit
// is answered 429 without its token being checked.
func (s *Server) checkToken(w http.ResponseWriter, r *http.Request, c Caller, no refusal) bool {
	key, throttle := peerOf(c)
	if throttle {
		if wait, ok := s.tokens.throttled(key); ok {
			s.tooManyTokens(w, r, no, wait)
			return false
		}
	}
	if s.o.Token.Match(s.presentedToken(r)) {
		return true
	}
	if wait, ok := s.tokens.fail(key, throttle); ok {
		s.tooManyTokens(w, r, no, wait)
		return false
	}
	no.write(w, r, http.StatusUnauthorized, no.typ, no.code, no.msg, "")
	return false
}

func (s *Server) tooManyTokens(w http.ResponseWriter, r *http.Request, no refusal, wait time.Duration) {
	secs := max(int(math.Ceil(wait.Seconds())), 1)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	no.write(w, r, http.StatusTooManyRequests, "rate_limit_error", "too_many_wrong_tokens",
		fmt.Sprintf(tooManyTokensMessage, tokenFailLimit, secs), "")
}
