package auth_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/auth"
	"freelane/backend/internal/clocktest"
	"freelane/backend/vault"
)

func TestSecretIsSealedAndKept(t *testing.T) {
	dir := t.TempDir()
	v, err := vault.Open(context.Background(), vault.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := clocktest.Following(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s1, err := auth.Open(context.Background(), dir, v, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := s1.NewSession()
	st, err := os.Stat(filepath.Join(dir, "admin.secret"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin.secret: %v %v", err, st)
	}
	// A restart keeps the secret, so the session stays valid.
	s2, err := auth.Open(context.Background(), dir, v, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s2.Valid(sess) {
		t.Error("a session did not survive the restart")
	}
	// Under another master key the secret is replaced: sessions end.
	other := t.TempDir()
	raw, _ := os.ReadFile(filepath.Join(dir, "admin.secret"))
	_ = os.WriteFile(filepath.Join(other, "admin.secret"), raw, 0o600)
	v2, _ := vault.Open(context.Background(), vault.Options{DataDir: other})
	s3, err := auth.Open(context.Background(), other, v2, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s3.Valid(sess) {
		t.Error("a session opened under another master key")
	}
}

func TestSessionsRefuseTampering(t *testing.T) {
	c := clocktest.Following(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := auth.New([]byte(strings.Repeat("k", 32)), c)
	sess, _ := s.NewSession()
	for _, bad := range []string{"", "x", sess + "x", strings.Replace(sess, ".", ",", 1), "a.1.b", sess + strings.Repeat(".", 300)} {
		if s.Valid(bad) {
			t.Errorf("%q is valid", bad)
		}
	}
	if auth.New([]byte(strings.Repeat("j", 32)), c).Valid(sess) {
		t.Error("a session is valid under another secret")
	}
}

// TestSessionExpiry checks that a session lasts SessionTTL from its
// making, that Expires says so, and that the clock is what ends it.
func TestSessionExpiry(t *testing.T) {
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	c := clocktest.Following(start)
	s := auth.New([]byte(strings.Repeat("k", 32)), c)
	sess, expires := s.NewSession()
	if !expires.Equal(start.Add(auth.SessionTTL)) {
		t.Errorf("NewSession says it expires at %s, want %s", expires, start.Add(auth.SessionTTL))
	}
	if got, ok := s.Expires(sess); !ok || !got.Equal(expires) {
		t.Errorf("Expires = %s %v, want %s true", got, ok, expires)
	}
	c.Advance(auth.SessionTTL - time.Minute)
	if !s.Valid(sess) {
		t.Error("a session ended before its lifetime")
	}
	c.Advance(2 * time.Minute)
	if _, ok := s.Expires(sess); ok || s.Valid(sess) {
		t.Error("a session outlived its lifetime")
	}
}

func TestLoginCodes(t *testing.T) {
	c := clocktest.Following(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := auth.New([]byte(strings.Repeat("k", 32)), c)
	code := s.NewLoginCode()
	if !s.Redeem(code) || s.Redeem(code) {
		t.Error("a code must work exactly once")
	}
	late := s.NewLoginCode()
	c.Advance(auth.LoginTTL)
	if s.Redeem(late) || s.Redeem("") || s.Redeem("made-up") {
		t.Error("an expired, empty or made-up code worked")
	}
	// Minting in a loop keeps a bounded number of codes: the newest work.
	var last string
	for range 1000 {
		last = s.NewLoginCode()
	}
	if !s.Redeem(last) {
		t.Error("the newest code does not work")
	}
}

func TestToken(t *testing.T) {
	tok := auth.NewToken("0123456789abcdef")
	if !tok.Set() || !tok.Match("0123456789abcdef") || tok.Match("0123456789abcde") || tok.Match("") {
		t.Error("token matching")
	}
	if none := auth.NewToken(""); none.Set() || none.Match("") || none.Match("x") {
		t.Error("no token must match nothing")
	}
}
