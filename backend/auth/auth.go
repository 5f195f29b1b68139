// Package auth holds FreeLane's credentials for who may talk to it: the
// dashboard's sessions (a per-install secret, and one-time login codes
// that the dashboard's page exchanges for a signed session token) and the
// inbound token that /v1 callers present when one is configured.
//
// A secret link is printed where only the user can read it; the page it
// opens trades the code for a session token, keeps the token in its own
// origin's storage and sends it in a header on every call. Nothing the
// browser sends by itself (a cookie) grants anything: browsers send the
// cookies of 127.0.0.1 to every port, so any local server a signed-in user
// visits would receive them.
package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"freelane/backend/clock"
	"freelane/backend/vault"
)

// Lifetimes of what Sessions hands out.
const (
	// LoginTTL is how long a login code may wait to be used. It is short
	// because the code travels through terminals, logs and clipboards.
	LoginTTL = 10 * time.Minute
	// SessionTTL is how long a dashboard session lasts before the user has
	// to open a new login link.
	SessionTTL = 30 * 24 * time.Hour
)

// secretFile holds the per-install secret, sealed by the vault, in the
// data directory.
const secretFile = "admin.secret"

// sealLabel binds the sealed secret to its purpose, so that no other
// sealed value can be passed off as it.
const sealLabel = "freelane-admin-session"

// maxSessionLen bounds the session tokens Expires looks at: a real one is
// under 100 characters, so anything much longer is refused before any
// work is spent on it.
const maxSessionLen = 256

// maxPendingCodes bounds the login codes kept at once, so that minting in
// a loop cannot grow memory without end; the oldest codes go first.
const maxPendingCodes = 64

// Sessions mints login codes and session tokens and checks them. It is
// safe for concurrent use.
type Sessions struct {
	secret []byte
	clock  clock.Clock

	mu sync.Mutex
	// codes maps the SHA-256 of every unused login code to its expiry.
	// Only hashes are kept, so a copy of the process memory's map holds no
	// usable code, and codes die with the process.
	codes map[[sha256.Size]byte]time.Time
}

// Open loads the per-install secret from the data directory, or creates it
// at first start. It is sealed with the vault, as the provider keys are,
// so a copy of the data directory without the master key opens no
// dashboard. A secret that no longer opens (the master key was lost) is
// replaced, which signs every dashboard out and loses nothing else.
func Open(ctx context.Context, dataDir string, v *vault.Vault, c clock.Clock, log *slog.Logger) (*Sessions, error) {
	if log == nil {
		log = slog.Default()
	}
	path := filepath.Join(dataDir, secretFile)
	secret, err := load(path, v)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			log.Warn("the dashboard secret cannot be opened; making a new one, which signs every dashboard session out", "path", path, "err", err)
		}
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("making the dashboard secret: %w", err)
		}
		sealed := v.Seal(base64.StdEncoding.EncodeToString(secret), sealLabel)
		if err := os.WriteFile(path, []byte(sealed+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("storing the dashboard secret: %w", err)
		}
	}
	return New(secret, c), nil
}

func load(path string, v *vault.Vault) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	plain, err := v.Open(strings.TrimSpace(string(raw)), sealLabel)
	if err != nil {
		return nil, err
	}
	secret, err := base64.StdEncoding.DecodeString(plain)
	if err != nil || len(secret) < 32 {
		return nil, errors.New("the stored secret is damaged")
	}
	return secret, nil
}

// New returns Sessions over a secret of at least 32 bytes.
func New(secret []byte, c clock.Clock) *Sessions {
	return &Sessions{secret: secret, clock: clock.OrReal(c), codes: map[[sha256.Size]byte]time.Time{}}
}

// NewLoginCode returns a fresh one-time login code, valid for LoginTTL.
func (s *Sessions) NewLoginCode() string {
	code := randomToken()
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prune(now)
	for len(s.codes) >= maxPendingCodes {
		var oldest [sha256.Size]byte
		var at time.Time
		for h, exp := range s.codes {
			if at.IsZero() || exp.Before(at) {
				oldest, at = h, exp
			}
		}
		delete(s.codes, oldest)
	}
	s.codes[sha256.Sum256([]byte(code))] = now.Add(LoginTTL)
	return code
}

// prune forgets expired codes; s.mu is held.
func (s *Sessions) prune(now time.Time) {
	for h, exp := range s.codes {
		if !now.Before(exp) {
			delete(s.codes, h)
		}
	}
}

// Redeem uses up a login code and reports whether it was valid: minted by
// this process, not used before and not expired.
func (s *Sessions) Redeem(code string) bool {
	if code == "" {
		return false
	}
	h := sha256.Sum256([]byte(code))
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.codes[h]
	delete(s.codes, h)
	return ok && now.Before(exp)
}

// NewSession returns a new session token and the time it expires. It is
// signed with the per-install secret, so sessions survive a restart
// without being stored anywhere.
func (s *Sessions) NewSession() (token string, expires time.Time) {
	now := s.clock.Now()
	body := randomToken() + "." + strconv.FormatInt(now.Unix(), 10)
	return body + "." + s.mac("session", body), time.Unix(now.Unix(), 0).Add(SessionTTL)
}

// Valid reports whether a session token is one NewSession made and has
// not expired.
func (s *Sessions) Valid(token string) bool {
	_, ok := s.Expires(token)
	return ok
}

// Expires returns when a valid session token expires; ok is false for a
// token NewSession did not make, or one that has expired.
func (s *Sessions) Expires(token string) (expires time.Time, ok bool) {
	if len(token) > maxSessionLen {
		return time.Time{}, false
	}
	body, sig, ok := cutLast(token)
	if !ok || !hmac.Equal([]byte(sig), []byte(s.mac("session", body))) {
		return time.Time{}, false
	}
	_, issued, ok := cutLast(body)
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(issued, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	at := time.Unix(n, 0)
	now := s.clock.Now()
	expires = at.Add(SessionTTL)
	// A session dated in the future was not made by this clock.
	if !now.Before(expires) || at.After(now.Add(time.Minute)) {
		return time.Time{}, false
	}
	return expires, true
}

func (s *Sessions) mac(purpose, msg string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// randomToken returns 128 random bits, URL-safe.
func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Token is the inbound token /v1 callers must present when one is set. Only
// its SHA-256 is kept, and it is compared in constant time.
type Token struct {
	sum [sha256.Size]byte
	set bool
}

// NewToken keeps the hash of t; an empty t is no token.
func NewToken(t string) Token {
	if t == "" {
		return Token{}
	}
	return Token{sum: sha256.Sum256([]byte(t)), set: true}
}

// Set reports whether a token is configured.
func (t Token) Set() bool { return t.set }

// Match reports whether presented is the token.
func (t Token) Match(presented string) bool {
	if !t.set || presented == "" {
		return false
	}
	sum := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1
}
