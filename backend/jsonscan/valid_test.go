package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	`{}`, `[]`, ` {"a":1} `, `{"a":[1,2,{"b":null}],"c":"x\"y\\u00e9"}`, `"s"`, `0`, `-0`, `-1.5e+10`, `1E5`, `true`, `false`, `null`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":" w"},"finish_reason":null}],"usage":null}`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	"{\"a\":\"\xff\xfe\"}", `{"a" : 1 , "b" : [ ] }`,
	// Not valid.
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`, `01`, `1.`, `.5`, `-`, `1e`, `1e+`, `tru`, `nul`, `"abc`, "\"a\x01\"",
	`"\x"`, `"\u12"`, `"\u12g4"`, `[1 2]`, `{"a":1 "b":2}`, `[}`, `{]`, `1 2`, `{"a":1}}`, `[[]`, `"\`, `{"a":1}x`, `-a`, `+1`,
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

var chunkEvent = []byte(`{"id":"chatcmpl-fake49831","object":"chat.completion.chunk","created":1796412079,"model":"m","system_fingerprint":"fp_fake","choices":[{"index":0,"delta":{"content":" word3"},"logprobs":null,"finish_reason":null}],"usage":null}`)

func BenchmarkValid(b *testing.B) {
	b.SetBytes(int64(len(chunkEvent)))
	for b.Loop() {
		if !Valid(chunkEvent) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkEncodingJSONValid(b *testing.B) {
	b.SetBytes(int64(len(chunkEvent)))
	for b.Loop() {
		if !json.Valid(chunkEvent) {
			b.Fatal("invalid")
		}
	}
}

func TestValidDeep(t *testing.T) {
	for _, n := range []int{5000, 10000, 10001} {
		deep := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		if got, want := Valid(deep), json.Valid(deep); got != want {
			t.Errorf("%d nested arrays: Valid %v, json.Valid %v", n, got, want)
		}
	}
}

func TestPickValidMatchesValidAndPick(t *testing.T) {
	for _, c := range append(validCases, `{"choices":[],"usage":{"a":1}}`, `{"usage":1,"usage":2}`, `{"Usage":1}`,
		`{"u\u0073age":[1]}`, `{"choices":{}} `, ` {} `, `{} x`) {
		checkPickValid(t, []byte(c))
	}
}

func FuzzPickValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Add([]byte(`{"choices":[{"delta":{}}],"usage":null,"error":{"message":"x"}}`))
	f.Fuzz(checkPickValid)
}

// checkPickValid fails t unless PickValid agrees with json.Valid, and
// with Pick wherever Pick may be used (a valid object).
func checkPickValid(t *testing.T, b []byte) {
	keys := []string{"choices", "usage", "error"}
	got := make([][]byte, len(keys))
	valid, picked := PickValid(b, keys, got)
	if want := json.Valid(b); valid != want {
		t.Fatalf("PickValid(%q) valid = %v, json.Valid says %v", b, valid, want)
	}
	i := SkipSpace(b, 0)
	if !valid || b[i] != '{' {
		if picked {
			t.Fatalf("PickValid(%q) picked from what is not a valid object", b)
		}
		return
	}
	want := make([][]byte, len(keys))
	if wp := Pick(b[i:], keys, want); wp != picked {
		t.Fatalf("PickValid(%q) picked = %v, Pick says %v", b, picked, wp)
	}
	if !picked {
		return
	}
	for k := range keys {
		if string(got[k]) != string(want[k]) || (got[k] == nil) != (want[k] == nil) {
			t.Fatalf("PickValid(%q)[%s] = %q, Pick says %q", b, keys[k], got[k], want[k])
		}
	}
}

func BenchmarkPickValid(b *testing.B) {
	keys := []string{"choices", "usage", "error"}
	vals := make([][]byte, len(keys))
	b.SetBytes(int64(len(chunkEvent)))
	b.Run("one_pass", func(b *testing.B) {
		for b.Loop() {
			if v, p := PickValid(chunkEvent, keys, vals); !v || !p {
				b.Fatal("not picked")
			}
		}
	})
	b.Run("valid_then_pick", func(b *testing.B) {
		for b.Loop() {
			if !Valid(chunkEvent) || !Pick(chunkEvent, keys, vals) {
				b.Fatal("not picked")
			}
		}
	})
}
