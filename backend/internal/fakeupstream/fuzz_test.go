package fakeupstream

import (
	"strings"
	"testing"
)

// FuzzValidate feeds arbitrary bodies to both validators: they must never
// panic, and a body either parses as an object or is refused before
// validation.
func FuzzValidate(f *testing.F) {
	for _, b := range antValid {
		f.Add(b)
	}
	for _, b := range gemValid {
		f.Add(b)
	}
	f.Add(`{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use"}]}]}`)
	f.Add(`{"contents":[{"parts":[{"functionResponse":{}}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"items":{"anyOf":[{}]}}}]}]}`)
	f.Add(`{"a":1,"a":null}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		o, err := parseObject([]byte(body))
		if err != nil {
			return
		}
		_ = validateAnthropic(o)
		_, _ = validateGemini(o)
	})
}

func TestGeminiSchemaDepth(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, 100) + `{"type":"string"}` + strings.Repeat("}", 100)
	body := `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":` + deep + `}]}]}`
	if _, msg := validateGemini(mustObject(t, body)); !strings.Contains(msg, "maximum depth") {
		t.Errorf("message %q", msg)
	}
}
