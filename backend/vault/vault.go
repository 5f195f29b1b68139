// Package vault encrypts API keys at rest. Keys are sealed with AES-256-GCM
// under a master key kept in the operating system's keychain where there is
// one (Secret Service on Linux, Keychain on macOS, Credential Manager on
// Windows), otherwise in a 0600 file in the data directory. The database
// only ever holds ciphertext.
package vault

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zalando/go-keyring"

	"freelane/backend/clock"
)

// Keychain entry names.
const (
	keyringService = "FreeLane"
	keyringUser    = "master-key"
	fileName       = "master.key"
)

// ErrLocked is returned when the master key that sealed the stored keys
// cannot be found (e.g. the keychain is not reachable in this session).
var ErrLocked = errors.New("vault: the master key is not available")

// Source says where the master key lives.
type Source string

// Master key sources.
const (
	Keychain Source = "keychain"
	File     Source = "file"
	// Given is a master key handed over by whoever started FreeLane
	// (FREELANE_VAULT_KEY), which every instance of a team shares.
	Given Source = "given"
)

// ErrBadKey is returned by FromKey for text that is not a master key.
var ErrBadKey = errors.New("vault: not a base64-encoded 32-byte master key")

// FromKey makes a vault from a master key given as base64 text, as
// NewKey writes one: instances of a team that share one database must
// seal and open its keys with the same master key. The error never
// quotes the text.
func FromKey(encoded string) (*Vault, error) {
	key, err := decodeKey(encoded)
	if err != nil {
		return nil, ErrBadKey
	}
	return newVault(key, Given)
}

// NewKey returns a new random master key as base64 text, for FromKey.
func NewKey() string { return strings.TrimSpace(encodeKey(newKey())) }

// Vault seals and opens secrets. It is safe for concurrent use.
type Vault struct {
	aead   cipher.AEAD
	source Source
	// root is an HMAC key derived from the master key, from which Derive
	// makes keys for other uses; the master key itself only seals.
	root []byte
}

// Options choose where the master key is kept.
type Options struct {
	DataDir string
	// UseKeychain tries the OS keychain first. Tests and headless servers
	// without a Secret Service switch it off (FREELANE_KEYCHAIN=off).
	UseKeychain bool
	// KeychainTimeout bounds a keychain call; a keychain that does not
	// answer (no session bus, a locked prompt nobody sees) must not stall
	// the start. Default 3 s.
	KeychainTimeout time.Duration
	// Clock times the keychain calls (default: the wall clock).
	Clock clock.Clock
}

// Open finds or creates the master key. A master key file in the data
// directory wins (it is what earlier runs used when no keychain was there);
// otherwise the keychain is asked, and a new key is stored in the keychain
// or, failing that, in the file.
func Open(ctx context.Context, o Options) (*Vault, error) {
	if o.KeychainTimeout <= 0 {
		o.KeychainTimeout = 3 * time.Second
	}
	path := filepath.Join(o.DataDir, fileName)
	if raw, err := os.ReadFile(path); err == nil {
		key, err := decodeKey(string(raw))
		if err != nil {
			return nil, fmt.Errorf("vault: %s: %w", path, err)
		}
		return newVault(key, File)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("vault: reading %s: %w", path, err)
	}
	if o.UseKeychain {
		s, err := withTimeout(ctx, o.Clock, o.KeychainTimeout, func() (string, error) { return keyring.Get(keyringService, keyringUser) })
		if err == nil {
			key, derr := decodeKey(s)
			if derr != nil {
				return nil, fmt.Errorf("vault: keychain entry: %w", derr)
			}
			return newVault(key, Keychain)
		}
		if errors.Is(err, keyring.ErrNotFound) {
			key := newKey()
			if _, err := withTimeout(ctx, o.Clock, o.KeychainTimeout, func() (string, error) {
				return "", keyring.Set(keyringService, keyringUser, encodeKey(key))
			}); err == nil {
				return newVault(key, Keychain)
			}
		}
	}
	key := newKey()
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	if err := os.WriteFile(path, []byte(encodeKey(key)), 0o600); err != nil {
		return nil, fmt.Errorf("vault: writing %s: %w", path, err)
	}
	return newVault(key, File)
}

func withTimeout(ctx context.Context, clk clock.Clock, d time.Duration, f func() (string, error)) (string, error) {
	type res struct {
		s   string
		err error
	}
	// The keychain library has no context; the call is left to finish on
	// its own if it hangs, which only happens once per start.
	c := make(chan res, 1)
	go func() {
		s, err := f()
		c <- res{s, err}
	}()
	t, expired := clock.OrReal(clk).NewTimer(d)
	defer t.Stop()
	select {
	case r := <-c:
		return r.s, r.err
	case <-expired:
		return "", errors.New("vault: the keychain did not answer in time")
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func newKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

func encodeKey(k []byte) string { return base64.StdEncoding.EncodeToString(k) + "\n" }

func decodeKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(k) != 32 {
		return nil, errors.New("not a 256-bit master key")
	}
	return k, nil
}

func newVault(key []byte, src Source) (*Vault, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("freelane vault derive root"))
	return &Vault{aead: aead, source: src, root: mac.Sum(nil)}, nil
}

// Derive returns a 32-byte secret for one use, named by label (e.g.
// "pseudonyms"): stable for as long as the master key is, different for
// every label, and telling nothing about the master key or the other
// labels' secrets.
func (v *Vault) Derive(label string) []byte {
	mac := hmac.New(sha256.New, v.root)
	mac.Write([]byte(label))
	return mac.Sum(nil)
}

// Source tells where the master key is kept.
func (v *Vault) Source() Source { return v.source }

// Seal encrypts plaintext; label (e.g. the provider name) is bound to the
// ciphertext so a sealed key cannot be moved to another provider's row.
func (v *Vault) Seal(plaintext, label string) string {
	nonce := make([]byte, v.aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := v.aead.Seal(nonce, nonce, []byte(plaintext), []byte(label))
	return base64.StdEncoding.EncodeToString(out)
}

// Open decrypts what Seal produced with the same label.
func (v *Vault) Open(sealed, label string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < v.aead.NonceSize() {
		return "", fmt.Errorf("%w: damaged ciphertext", ErrLocked)
	}
	n := v.aead.NonceSize()
	pt, err := v.aead.Open(nil, raw[:n], raw[n:], []byte(label))
	if err != nil {
		return "", fmt.Errorf("%w: it does not open this key (was it sealed under another master key?)", ErrLocked)
	}
	return string(pt), nil
}

// Mask shows enough of a key to recognise it: "sk-...a1b2".
func Mask(key string) string {
	if key == "" {
		return ""
	}
	prefix := ""
	if i := strings.IndexAny(key, "-_"); i > 0 && i <= 8 {
		prefix = key[:i+1]
	}
	if len(key) < 12 {
		return prefix + "..."
	}
	return prefix + "..." + key[len(key)-4:]
}
