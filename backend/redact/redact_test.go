package redact_test

import (
	"encoding/json"
	"strings"
	"testing"

	"freelane/backend/redact"
)

const planted = "sk-PLANTED-0123456789abcdef"

func TestStringReplacesEverySecret(t *testing.T) {
	r := redact.New(redact.Key(planted), redact.Header("hdr-secret-value"), redact.Key("k"))
	in := "bad key " + planted + ", header hdr-secret-value, k stays k"
	got := r.String(in)
	want := "bad key [redacted key], header [redacted], k stays k"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestShortSecretsAreNotPatterns(t *testing.T) {
	r := redact.New(redact.Key("k"), redact.Key("1234567"))
	if got := r.String("mock key 1234567"); got != "mock key 1234567" {
		t.Errorf("a short secret was used as a pattern: %q", got)
	}
}

func TestLongerSecretWins(t *testing.T) {
	r := redact.New(redact.Header("sk-PLANTED"), redact.Key(planted))
	if got := r.String(planted); got != redact.KeyMarker {
		t.Errorf("got %q", got)
	}
}

func TestBytesRedactsJSONEscapes(t *testing.T) {
	r := redact.New(redact.Key(planted))
	esc := `{"error":{"message":"bad key \u0073k-PLANTED-0123456789abcdef","n":1.50}}`
	got := r.Bytes([]byte(esc))
	var v struct {
		Error struct {
			Message string      `json:"message"`
			N       json.Number `json:"n"`
		} `json:"error"`
	}
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(v.Error.Message, planted) || v.Error.Message != "bad key [redacted key]" || v.Error.N != "1.50" {
		t.Errorf("got %s", got)
	}
	plain := []byte(`{"error":"nothing here \n"}`)
	if got := r.Bytes(plain); &got[0] != &plain[0] {
		t.Errorf("an unchanged body was copied: %s", got)
	}
}

func TestNilAndEmpty(t *testing.T) {
	var r *redact.Redactor
	if r.String(planted) != planted || string(r.Bytes([]byte(planted))) != planted {
		t.Error("a nil Redactor changed text")
	}
	r = redact.New()
	r.Set([]redact.Secret{redact.Key(planted)})
	r.Set(nil)
	if r.String(planted) != planted {
		t.Error("Set(nil) kept an old secret")
	}
}

func TestCovers(t *testing.T) {
	shared := redact.New(redact.Key(planted), redact.Header("hdr-secret-value"))
	if !shared.Covers(redact.New(redact.Key(planted))) || !shared.Covers(redact.New()) || !shared.Covers(nil) {
		t.Error("a subset is not covered")
	}
	if shared.Covers(redact.New(redact.Key("another-key-0123456789"))) || redact.New().Covers(shared) {
		t.Error("a secret it does not know is covered")
	}
}
