// Package pseudonym turns the identifiers callers send (a conversation's
// session id, an end user's id) into keyed hashes, so that upstreams can
// still tell one session or one user from another, for their prompt
// caches and abuse limits, without ever learning the caller's own value.
//
// The hashes are HMAC-SHA256 under a secret of this install: the same
// value gives the same pseudonym for as long as the secret lives, nobody
// without the secret can compute or reverse one, and two installs give
// unrelated pseudonyms to the same value.
package pseudonym

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Size is the length of a pseudonym in hex digits: 128 bits, far more
// than enough to keep the sessions and users of one install apart.
const Size = 32

// The domain labels that keep a session's pseudonym and a user's apart
// even for the same raw value.
const (
	sessionLabel = "freelane session\x00"
	userLabel    = "freelane user\x00"
)

// Pseudonyms hashes identifiers under one secret. Its methods are safe
// for concurrent use. The nil *Pseudonyms hashes nothing: every method
// returns "", so a server made without a secret sends no identifier
// upstream rather than the caller's own.
type Pseudonyms struct {
	key []byte
}

// New makes the hasher for secret (the gateway passes the vault's
// Derive("pseudonyms")). An empty secret makes the nil hasher: a keyed
// hash under no key would be an ordinary hash, which anyone could
// recompute from a guessed identifier.
func New(secret []byte) *Pseudonyms {
	if len(secret) == 0 {
		return nil
	}
	return &Pseudonyms{key: append([]byte(nil), secret...)}
}

// Session is the session key of a raw session id: Size hex digits, ""
// for an empty id.
func (p *Pseudonyms) Session(raw string) string { return p.sum(sessionLabel, raw) }

// User is the pseudonym of a raw end-user id: Size hex digits, "" for an
// empty id. It never equals the session key of the same value.
func (p *Pseudonyms) User(raw string) string { return p.sum(userLabel, raw) }

func (p *Pseudonyms) sum(label, raw string) string {
	if p == nil || raw == "" {
		return ""
	}
	mac := hmac.New(sha256.New, p.key)
	mac.Write([]byte(label))
	mac.Write([]byte(raw))
	var buf [sha256.Size]byte
	sum := mac.Sum(buf[:0])
	return hex.EncodeToString(sum[:Size/2])
}
