package gateway_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"freelane/backend/internal/fakeupstream"
)

// Gemini's function calls carry no ids, so FreeLane makes them. A session
// whose tool turns a Gemini backend answered must still be valid for an
// Anthropic backend when the chain fails over to it mid-session: Anthropic
// refuses a conversation in which two tool_use blocks share an id.
func TestToolCallIDsStayUniqueAcrossAFailover(t *testing.T) {
	e := mixedEnv(t)
	if r := e.do("POST", "/api/chains", `{"name":"gemfirst","backends":["gem/gemini-y","claude/claude-x"],"strategy":"ordered"}`, nil); r.status != 201 {
		t.Fatalf("create chain: %d %s", r.status, r.body)
	}
	e.up.Set("gemini-y", fakeupstream.Behavior{ToolCall: true}, fakeupstream.Behavior{ToolCall: true}, fakeupstream.Behavior{Status: 429})

	msgs := []any{map[string]any{"role": "user", "content": "weather twice"}}
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	turn := func() reply {
		b, _ := json.Marshal(msgs)
		return e.post("/v1/chat/completions", fmt.Sprintf(`{"model":"gemfirst","messages":%s,"tools":%s}`, b, tools))
	}
	var ids []string
	for i := range 2 {
		r := turn()
		var c struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(r.body, &c); err != nil || r.status != 200 || len(c.Choices) != 1 {
			t.Fatalf("turn %d: %d %s", i, r.status, r.body)
		}
		m := c.Choices[0].Message
		call := m["tool_calls"].([]any)[0].(map[string]any)
		id := call["id"].(string)
		ids = append(ids, id)
		msgs = append(msgs, m, map[string]any{"role": "tool", "tool_call_id": id, "content": `{"temp_c":18}`})
	}
	if ids[0] == ids[1] {
		t.Fatalf("both calls got the id %q", ids[0])
	}
	r := turn()
	if r.status != 200 || r.header.Get("X-FreeLane-Backend") != "claude/claude-x" {
		t.Fatalf("after the failover: %d by %q: %s (attempts %s)", r.status, r.header.Get("X-FreeLane-Backend"), r.body, r.attempts())
	}
}
