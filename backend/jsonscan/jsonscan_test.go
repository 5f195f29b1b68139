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
