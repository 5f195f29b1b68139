package redact_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"freelane/backend/redact"
)

// The secrets the fuzz target plants: a long key, a header value with the
// punctuation that escapes change, and a short key that counts only whole.
var fuzzSecrets = []redact.Secret{
	redact.Key(key),
	redact.Header("hdr Value/with+odd~~chars?>"),
	redact.Key("Sh0rtKey9"),
}

// plant builds a text from a fuzzer's program: each step writes either a
// few literal bytes or a piece of a secret in one of the encodings the
// Redactor must see through.
func plant(prog []byte) string {
	var b strings.Builder
	next := func(i *int) byte {
		if *i >= len(prog) {
			return 0
		}
		c := prog[*i]
		*i++
		return c
	}
	for i := 0; i < len(prog); {
		op := next(&i)
		if op%3 == 0 {
			n := int(next(&i) % 8)
			for range n {
				b.WriteByte(next(&i))
			}
			continue
		}
		s := fuzzSecrets[int(op/3)%len(fuzzSecrets)].Value
		start := int(next(&i)) % len(s)
		if op%3 == 2 {
			start = 0 // whole secrets are common in the corpus
		}
		n := len(s) - start
		if l := int(next(&i)); l%2 == 0 {
			n = min(n, l/2)
		}
		frag := s[start : start+n]
		mask := next(&i)
		switch next(&i) % 9 {
		case 0:
			b.WriteString(frag)
		case 1:
			b.WriteString(strings.ToUpper(frag))
		case 2:
			for j := range len(frag) {
				c := frag[j]
				if mask>>(j%8)&1 == 1 {
					c = strings.ToUpper(string(c))[0]
				} else {
					c = strings.ToLower(string(c))[0]
				}
				b.WriteByte(c)
			}
		case 3:
			for j := range len(frag) {
				if mask>>(j%8)&1 == 1 {
					fmt.Fprintf(&b, "%%%02X", frag[j])
				} else {
					b.WriteByte(frag[j])
				}
			}
		case 4:
			for j := range len(frag) {
				if mask>>(j%8)&1 == 1 {
					fmt.Fprintf(&b, `\u%04x`, frag[j])
				} else {
					b.WriteByte(frag[j])
				}
			}
		case 5:
			b.WriteString(strings.NewReplacer("/", `\/`, " ", "+").Replace(frag))
		default:
			encs := []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding}
			prefix := []byte("user:"[:mask%3])
			e := encs[int(mask/3)%len(encs)].EncodeToString(append(prefix, frag...))
			if mask&0x80 != 0 {
				e = strings.ReplaceAll(e, "/", `\/`)
			}
			b.WriteString(e)
		}
	}
	return b.String()
}

// FuzzRedact checks that no output holds a 16-character run of a secret,
// or a short secret whole, in any encoding the Redactor knows: neither for
// a text planted with encoded pieces of the secrets nor for the fuzzer's
// raw bytes.
func FuzzRedact(f *testing.F) {
	f.Add([]byte{1, 0, 1, 0, 0})
	f.Add([]byte{2, 0, 1, 0, 1, 0, 3, 'a', 'b', 'c', 2, 0, 1, 0xff, 4})
	f.Add([]byte{5, 0, 1, 0x0f, 3, 8, 0, 1, 0x81, 7})
	f.Add([]byte{1, 2, 36, 0, 0, 1, 0, 1, 0, 2})
	f.Add([]byte("sk-LEAKME-0123456789abcdefgh"))
	f.Add([]byte(`c2stTEVBS01FLTAxMjM0NTY3ODlhYmNkZWZnaA==`))
	r := redact.New(fuzzSecrets...)
	var values []string
	for _, s := range fuzzSecrets {
		values = append(values, s.Value)
	}
	f.Fuzz(func(t *testing.T, prog []byte) {
		for _, in := range []string{plant(prog), string(prog)} {
			out := r.String(in)
			if l := leak(out, values...); l != "" {
				t.Fatalf("from %q: %s", in, l)
			}
			if b := string(r.Bytes([]byte(in))); b != out {
				t.Fatalf("from %q: Bytes gave %q, String %q", in, b, out)
			}
		}
	})
}
