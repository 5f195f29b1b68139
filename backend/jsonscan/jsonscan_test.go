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
