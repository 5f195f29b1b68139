package api

import (
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/logtest"
)

// logBuffer is a log destination tests can read while handlers write.
type logBuffer struct{ logtest.Buffer }

// waitFor waits for the log to hold want: the flush runs in a timer's own
// goroutine once the clock has been moved.
func (l *logBuffer) waitFor(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(l.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q; it holds:\n%s", want, l.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return l.String()
}

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func stranger(uid uint32) Caller {
	return Caller{Kind: CallerOtherAccount, UID: uid, UIDKnown: true, Addr: netip.MustParseAddr("127.0.0.1")}
}

func TestTokenLimiterThrottlesAfterFive(t *testing.T) {
	clk := clocktest.New(t0)
	l := newTokenLimiter(clk, slog.New(slog.DiscardHandler))
	nobody, _ := peerOf(stranger(65534))
	other, _ := peerOf(stranger(1001))
	for i := range tokenFailLimit {
		if _, ok := l.throttled(nobody); ok {
			t.Fatalf("throttled after %d failures", i)
		}
		l.fail(nobody, true)
	}
	clk.Advance(10 * time.Second)
	wait, ok := l.throttled(nobody)
	if !ok || wait != 50*time.Second {
		t.Fatalf("after %d failures: throttled %v for %v, want 50s", tokenFailLimit, ok, wait)
	}
	if _, ok := l.throttled(other); ok {
		t.Error("another account is throttled for nobody's failures")
	}
	clk.Advance(50 * time.Second)
	if _, ok := l.throttled(nobody); ok {
		t.Error("still throttled once the minute is over")
	}
	// A new window, a new allowance.
	for range tokenFailLimit - 1 {
		l.fail(nobody, true)
	}
	if _, ok := l.throttled(nobody); ok {
		t.Error("throttled before the limit in the second window")
	}
}

func TestTokenLimiterNeverThrottlesTheUser(t *testing.T) {
	clk := clocktest.New(t0)
	l := newTokenLimiter(clk, slog.New(slog.DiscardHandler))
	self, throttle := peerOf(Caller{Kind: CallerSelf, UID: 1000, UIDKnown: true})
	if throttle {
		t.Fatal("the user's own account may be throttled")
	}
	for range 100 {
		l.fail(self, throttle)
	}
	if _, ok := l.throttled(self); ok {
		t.Error("the user's own account is throttled")
	}
	if _, throttle := peerOf(Caller{Kind: CallerUnknown}); throttle {
		t.Error("loopback callers that cannot be told apart may be throttled")
	}
}

func TestTokenLimiterLogsOneLinePerPeer(t *testing.T) {
	clk := clocktest.New(t0)
	var log logBuffer
	l := newTokenLimiter(clk, slog.New(slog.NewTextHandler(&log, nil)))
	nobody, _ := peerOf(stranger(65534))
	lan, _ := peerOf(Caller{Kind: CallerNetwork, Addr: netip.MustParseAddr("2001:db8:1:2:aa::5")})
	lanToo, _ := peerOf(Caller{Kind: CallerNetwork, Addr: netip.MustParseAddr("2001:db8:1:2:bb::9")})
	if lan != lanToo {
		t.Error("two addresses of one /64 are two peers")
	}
	for range 300 {
		if _, ok := l.throttled(nobody); !ok {
			l.fail(nobody, true)
		}
	}
	l.fail(lan, true)
	if log.String() != "" {
		t.Fatalf("logged before the minute was over: %s", log.String())
	}
	clk.Advance(tokenFailWindow)
	log.waitFor(t, "300 wrong inbound tokens from uid 65534 in the last minute; 295 of them came past the limit of 5 a minute and were answered 429 unchecked")
	out := log.waitFor(t, "1 wrong inbound token from 2001:db8:1:2::/64 in the last minute")
	if n := strings.Count(out, "level=WARN"); n != 2 {
		t.Errorf("%d lines for two peers:\n%s", n, out)
	}
	if !strings.Contains(out, "peer=\"uid 65534\" count=300 throttled=295") {
		t.Errorf("the line lacks its attributes:\n%s", out)
	}
	// Nothing new, nothing logged: the next flush only comes with new
	// failures.
	clk.Advance(tokenFailWindow)
	l.fail(nobody, true)
	clk.Advance(tokenFailWindow)
	out = log.waitFor(t, "1 wrong inbound token from uid 65534")
	if n := strings.Count(out, "level=WARN"); n != 3 {
		t.Errorf("%d lines, want 3:\n%s", n, out)
	}
}

func TestTokenLimiterIsBounded(t *testing.T) {
	clk := clocktest.New(t0)
	l := newTokenLimiter(clk, slog.New(slog.DiscardHandler))
	for i := range 3 * maxTokenPeers {
		l.fail(peerKey{kind: CallerOtherAccount, uid: uint32(10000 + i)}, true)
	}
	l.mu.Lock()
	n := len(l.peers)
	l.mu.Unlock()
	if n > maxTokenPeers+1 {
		t.Fatalf("%d peers in a table bounded at %d", n, maxTokenPeers)
	}
	// The overflow bucket throttles the peers it holds, after the check.
	late := peerKey{kind: CallerOtherAccount, uid: 99999}
	if _, ok := l.throttled(late); ok {
		t.Error("a peer the table has no room for is throttled before its token is checked")
	}
	if _, ok := l.fail(late, true); !ok {
		t.Error("the overflow bucket is not throttled after thousands of failures")
	}
	// Once the window and the log line are behind, the room is given back.
	clk.Advance(tokenFailWindow)
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		n = len(l.peers)
		l.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n != 0 {
		t.Errorf("%d peers kept after their window", n)
	}
}
