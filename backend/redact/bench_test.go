package redact_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"freelane/backend/redact"
)

// keys returns n random-looking keys of 40 characters.
func keys(n int) []redact.Secret {
	var out []redact.Secret
	for i := range n {
		out = append(out, redact.Key(fmt.Sprintf("sk-%04d-%x", i, [16]byte{byte(i), byte(i * 7), 3, 1, 4, 1, 5, 9, 2, 6, byte(i * 13), 5, 3, 5, 8, 9})))
	}
	return out
}

// answer is a kilobyte of a typical answer: a JSON chat completion whose
// text has escapes (\n, \", \u00e9), as nearly every answer has.
var answer = func() []byte {
	var b strings.Builder
	b.WriteString(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`)
	for b.Len() < 1000 {
		b.WriteString(`Here is the caf\u00e9 plan:\n1. \"Do\" the thing; 100% sure. `)
	}
	b.WriteString(`"},"finish_reason":"stop"}]}`)
	return []byte(b.String())
}()

// withCopies is the same kilobyte with three copies of the first key: as
// it is, upper case and in base64.
func withCopies(k string) []byte {
	s := string(answer)
	n := len(s) / 4
	return []byte(s[:n] + k + s[n:2*n] + strings.ToUpper(k) + s[2*n:3*n] +
		base64.StdEncoding.EncodeToString([]byte("user:"+k)) + s[3*n:])
}

func BenchmarkBytes(b *testing.B) {
	for _, n := range []int{4, 50} {
		secrets := keys(n)
		r := redact.New(secrets...)
		b.Run(fmt.Sprintf("no-match/1KB/%d-secrets", n), func(b *testing.B) {
			b.SetBytes(int64(len(answer)))
			b.ReportAllocs()
			for b.Loop() {
				_ = r.Bytes(answer)
			}
		})
		in := withCopies(secrets[0].Value)
		b.Run(fmt.Sprintf("three-copies/1KB/%d-secrets", n), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				_ = r.Bytes(in)
			}
		})
	}
	// A stream event: the common unit of work on the relay path.
	r := redact.New(keys(20)...)
	ev := []byte(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" token"}}]}`)
	b.Run("no-match/stream-event/20-secrets", func(b *testing.B) {
		b.SetBytes(int64(len(ev)))
		b.ReportAllocs()
		for b.Loop() {
			_ = r.Bytes(ev)
		}
	})
}
