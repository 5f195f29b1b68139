package vault

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpenAndFileMasterKey(t *testing.T) {
	dir := t.TempDir()
	v, err := Open(context.Background(), Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if v.Source() != File {
		t.Fatalf("source %s", v.Source())
	}
	info, err := os.Stat(filepath.Join(dir, fileName))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("master key file: %v %v", info, err)
	}
	sealed := v.Seal("sk-live-secret-a1b2", "groq")
	if strings.Contains(sealed, "secret") {
		t.Fatal("ciphertext contains the plaintext")
	}
	if v.Seal("sk-live-secret-a1b2", "groq") == sealed {
		t.Error("two seals of the same key are equal: the nonce is not random")
	}
	// A second Open (a restart) reads the same master key.
	v2, err := Open(context.Background(), Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v2.Open(sealed, "groq")
	if err != nil || got != "sk-live-secret-a1b2" {
		t.Fatalf("open after restart: %q %v", got, err)
	}
	// Bound to its label.
	if _, err := v2.Open(sealed, "cerebras"); !errors.Is(err, ErrLocked) {
		t.Errorf("opened under another label: %v", err)
	}
	// Another master key cannot open it.
	other, _ := Open(context.Background(), Options{DataDir: t.TempDir()})
	if _, err := other.Open(sealed, "groq"); !errors.Is(err, ErrLocked) {
		t.Errorf("opened with another master key: %v", err)
	}
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		"sk-proj-abcdefghijkla1b2": "sk-...a1b2",
		"gsk_0123456789abcdefWXYZ": "gsk_...WXYZ",
		"abcdefghijklmnop":         "...mnop",
		"short":                    "...",
		"":                         "",
	} {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGivenKeyIsShared: two vaults made from the same given key open
// each other's seals, one from another key does not, and a bad key is
// refused without being quoted.
func TestGivenKeyIsShared(t *testing.T) {
	key := NewKey()
	a, err := FromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FromKey(key + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Open(a.Seal("sk-secret", "groq"), "groq"); err != nil || got != "sk-secret" {
		t.Fatalf("b opened a's seal as %q, %v", got, err)
	}
	other, _ := FromKey(NewKey())
	if _, err := other.Open(a.Seal("sk-secret", "groq"), "groq"); err == nil {
		t.Fatal("a vault of another key opened the seal")
	}
	if a.Source() != Given {
		t.Errorf("source %q", a.Source())
	}
	for _, bad := range []string{"", "bm90LWEta2V5", key[:20], "!!!not base64!!!"} {
		if _, err := FromKey(bad); !errors.Is(err, ErrBadKey) || (bad != "" && strings.Contains(err.Error(), bad)) {
			t.Errorf("FromKey(%q) = %v", bad, err)
		}
	}
}
