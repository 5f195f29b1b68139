package pseudonym

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestStableAndKeyed(t *testing.T) {
	a := New([]byte("install one secret"))
	b := New([]byte("install two secret"))
	const raw = "0b7c4a1e-3f2d-4c55-9e21-aa0f5d3b7c10"
	s := a.Session(raw)
	if len(s) != Size {
		t.Fatalf("session key %q has %d digits, want %d", s, len(s), Size)
	}
	if _, err := hex.DecodeString(s); err != nil {
		t.Fatalf("session key %q is not hex: %v", s, err)
	}
	if again := a.Session(raw); again != s {
		t.Fatalf("the same session gave %q then %q", s, again)
	}
	if other := a.Session(raw + "x"); other == s {
		t.Fatal("two sessions share a key")
	}
	if b.Session(raw) == s {
		t.Fatal("two installs give the same session key: the secret is not used")
	}
	if strings.Contains(s, raw) || strings.Contains(a.User(raw), raw) {
		t.Fatal("a pseudonym holds the raw value")
	}
}

func TestDomainsApart(t *testing.T) {
	p := New([]byte("secret"))
	for _, raw := range []string{"x", "user_abc_account__session_1", `{"session_id":"s"}`} {
		if p.Session(raw) == p.User(raw) {
			t.Fatalf("session key and user pseudonym of %q coincide", raw)
		}
	}
}

func TestEmpty(t *testing.T) {
	p := New([]byte("secret"))
	if p.Session("") != "" || p.User("") != "" {
		t.Fatal("an empty identifier must have no pseudonym")
	}
	var none *Pseudonyms
	if none.Session("s") != "" || none.User("u") != "" {
		t.Fatal("the nil hasher must hash nothing")
	}
	if New(nil) != nil {
		t.Fatal("an empty secret must make the nil hasher")
	}
}

func TestSecretCopied(t *testing.T) {
	secret := []byte("secret")
	p := New(secret)
	before := p.Session("s")
	secret[0] = 'X'
	if p.Session("s") != before {
		t.Fatal("changing the caller's slice changed the pseudonyms")
	}
}

func BenchmarkSession(b *testing.B) {
	p := New([]byte("secret"))
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Session("0b7c4a1e-3f2d-4c55-9e21-aa0f5d3b7c10")
	}
}
