package protocol_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/openai"
)

// A dialect that upstreams speak must say how they are called.
func TestRegistryRefusesAKindWithoutAWire(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a provider kind without an outbound wire")
		}
	}()
	protocol.NewRegistry(protocol.Dialect{Codec: openai.Codec, Kind: "toy"})
}

// A dialect only clients speak needs no outbound part at all.
func TestRegistryTakesADialectWithoutOutbound(t *testing.T) {
	r := protocol.NewRegistry(protocol.Dialect{Codec: openai.Codec})
	if d, ok := r.Lookup(llm.DialectOpenAI); !ok || d.Outbound.Wire != nil || len(r.Kinds()) != 0 {
		t.Errorf("Lookup = %+v, %v; Kinds = %v", d, ok, r.Kinds())
	}
}

func TestSaysKeyInvalid(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{`{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`, true},
		{`{"error":{"code":400,"message":"Bad","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`, true},
		{`[{"error":{"code":400,"message":"API key expired. Please renew the API key."}}]`, true},
		{`{"error":"Invalid API key"}`, true},
		{`{"message":"invalid api key given"}`, true},
		{`{"detail":"Invalid API Key"}`, true},
		{`invalid api key`, true},
		{`<html>invalid api key</html>`, false},
		{`{"error":{"code":400,"message":"pageSize is too large","details":[{"reason":"BAD_PAGE"}]}}`, false},
		{`{"error":{"message":"model not found"}}`, false},
		{``, false},
	} {
		if got := protocol.SaysKeyInvalid([]byte(c.body)); got != c.want {
			t.Errorf("SaysKeyInvalid(%s) = %v, want %v", c.body, got, c.want)
		}
	}
}

func TestCapabilitiesRead(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want []string
		chat bool
	}{
		{`{"function_calling":true,"vision":{"supported":true},"thinking":{"supported":false},"completion_chat":true}`, []string{"tools", "vision"}, true},
		{`["JSON_MODE","tool_use","nonsense"]`, []string{"json", "tools"}, true},
		{`{"completion_chat":false}`, nil, false},
		{`"odd"`, nil, true},
		{``, nil, true},
	} {
		var caps protocol.Capabilities
		chat := caps.Read(json.RawMessage(c.raw))
		if got := caps.Sorted(); !reflect.DeepEqual(got, c.want) || chat != c.chat {
			t.Errorf("Read(%s) = %v, chat %v; want %v, chat %v", c.raw, got, chat, c.want, c.chat)
		}
	}
}

func TestTokenCountIsLenient(t *testing.T) {
	for raw, want := range map[string]protocol.TokenCount{
		`128000`: 128000, `"32768"`: 32768, `null`: 0, `-5`: 0, `1e12`: 0, `"NaN"`: 0, `{}`: 0, `4096.7`: 4096,
	} {
		var n protocol.TokenCount
		if err := json.Unmarshal([]byte(raw), &n); err != nil || n != want {
			t.Errorf("%s: %d, %v; want %d", raw, n, err, want)
		}
	}
	if got := protocol.FirstCount(0, 0, 7, 9); got != 7 {
		t.Errorf("FirstCount = %d", got)
	}
}
