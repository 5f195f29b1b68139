package llm

import "testing"

func TestAppendDeltaText(t *testing.T) {
	events := `{"choices":[{"delta":{"role":"assistant","content":"Hel"}}]}
{"choices":[{"delta":{"content":"lo \"you\""}}]}
{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}
{"choices":[],"usage":{"prompt_tokens":3}}`
	if got := string(AppendDeltaText(nil, []byte(events))); got != `Hello "you"{"a":1}` {
		t.Errorf("stream text %q", got)
	}
	answer := `{"id":"x","choices":[{"message":{"role":"assistant","content":"Hi there"},"finish_reason":"stop"}]}`
	if got := string(AppendDeltaText(nil, []byte(answer))); got != "Hi there" {
		t.Errorf("answer text %q", got)
	}
}
