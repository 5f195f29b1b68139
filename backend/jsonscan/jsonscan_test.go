package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// AppendString must write what encoding/json writes without its HTML
// escapes.
func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c\n\x00\xff日\u2028<&>")
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want.Bytes())
		}
	})
}

func TestSyntaxError(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":`:     "unexpected end of input",
		`{"a":1} x`: "data after the JSON value",
		`{"a" 1}`:   "invalid character '1' after object key (at byte 6)",
		``:          "unexpected end of input",
	} {
		if got := SyntaxError([]byte(body)); got != want {
			t.Errorf("SyntaxError(%q) = %q, want %q", body, got, want)
		}
	}
}

func TestIntAndCountFollowEncodingJSON(t *testing.T) {
	for _, v := range []string{"0", "7", "-3", "123456789", "1234567890", "123456789012345678", "1234567890123456789",
		"1.5", "1e3", "-0", `"5"`, "true", "[]", "null"} {
		var n int
		decodes := json.Unmarshal([]byte(v), &n) == nil
		if Int([]byte(v)) && !decodes {
			t.Errorf("Int(%s) says an int holds it, encoding/json refuses it", v)
		}
		if c, ok := Count([]byte(v)); ok && (!decodes || c != n || c < 0) {
			t.Errorf("Count(%s) = %d, encoding/json reads %d (ok %v)", v, c, n, decodes)
		}
	}
	if !Int(nil) || !Null(nil) || !Null([]byte("null")) || Null([]byte(`"null"`)) {
		t.Error("an absent member is null and an int")
	}
	if n, ok := Count([]byte("812")); !ok || n != 812 {
		t.Errorf("Count(812) = %d %v", n, ok)
	}
}
