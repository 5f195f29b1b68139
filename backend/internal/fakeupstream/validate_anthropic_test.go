package fakeupstream

import (
	"net/http"
	"strings"
	"testing"
)

// antValid are bodies the real Messages API accepts.
var antValid = map[string]string{
	"minimal": `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`,
	"blocks and system": `{"model":"m","max_tokens":16,"system":[{"type":"text","text":"Be terse.","cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"Look:"},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
			{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}}]}],
		"temperature":0.2,"top_p":0.9,"top_k":40,"stop_sequences":["END"],"metadata":{"user_id":"u1"},"stream":false}`,
	"tool round trip": `{"model":"m","max_tokens":16,
		"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
			{"type":"web_search_20250305","name":"web_search","max_uses":2}],
		"tool_choice":{"type":"tool","name":"get_weather"},
		"messages":[{"role":"user","content":"Weather in Paris?"},
			{"role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_02","name":"get_weather","input":{"city":"Lyon"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"18C"},{"type":"tool_result","tool_use_id":"toolu_02","content":[{"type":"text","text":"20C"}],"is_error":false},{"type":"text","text":"Thanks"}]}]}`,
	"thinking": `{"model":"m","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},"temperature":1,
		"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"Hello"}]},{"role":"user","content":"more"}]}`,
	"thinking disabled": `{"model":"m","max_tokens":16,"thinking":{"type":"disabled"},"temperature":0,"messages":[{"role":"user","content":"hi"}]}`,
	"prefill":           `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":""}]}`,
	"nulls are absent":  `{"model":"m","max_tokens":16,"temperature":null,"system":null,"messages":[{"role":"user","content":"hi"}]}`,
}

func TestAnthropicValidBodies(t *testing.T) {
	s, c := newServer(t)
	for name, body := range antValid {
		resp := antPost(t, s, c, body)
		got := readBody(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d: %s", name, resp.StatusCode, got)
		}
	}
}

func TestAnthropicValidation(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	msgs := func(m ...string) string {
		return `{"model":"m","max_tokens":16,"messages":[` + strings.Join(m, ",") + `]}`
	}
	with := func(extra string) string {
		return `{"model":"m","max_tokens":16,"messages":[` + user + `],` + extra + `}`
	}
	block := func(b string) string { return msgs(`{"role":"user","content":[` + b + `]}`) }
	toolUse := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]}`
	schema := `"input_schema":{"type":"object"}`
	for _, tc := range []struct {
		name, body, want string
	}{
		{"extra field", with(`"n":2`), "n: Extra inputs are not permitted"},
		{"openai field", with(`"stream_options":{"include_usage":true}`), "stream_options: Extra inputs are not permitted"},
		{"no model", `{"max_tokens":16,"messages":[` + user + `]}`, "model: Field required"},
		{"model number", `{"model":5,"max_tokens":16,"messages":[` + user + `]}`, "model: Input should be a valid string"},
		{"no max_tokens", `{"model":"m","messages":[` + user + `]}`, "max_tokens: Field required"},
		{"max_tokens zero", `{"model":"m","max_tokens":0,"messages":[` + user + `]}`, "max_tokens: Input should be greater than or equal to 1"},
		{"max_tokens negative", `{"model":"m","max_tokens":-5,"messages":[` + user + `]}`, "max_tokens: Input should be greater than or equal to 1"},
		{"max_tokens string", `{"model":"m","max_tokens":"16","messages":[` + user + `]}`, "max_tokens: Input should be a valid integer"},
		{"max_tokens fraction", `{"model":"m","max_tokens":1.5,"messages":[` + user + `]}`, "max_tokens: Input should be a valid integer"},
		{"stream string", with(`"stream":"yes"`), "stream: Input should be a valid boolean"},
		{"no messages", `{"model":"m","max_tokens":16}`, "messages: Field required"},
		{"messages object", `{"model":"m","max_tokens":16,"messages":{}}`, "messages: Input should be a valid list"},
		{"no message", msgs(), "messages: at least one message is required"},
		{"system role", msgs(`{"role":"system","content":"be nice"}`, user), `messages: Unexpected role "system". The Messages API accepts a top-level ` + "`system`" + ` parameter, not "system" as an input message role.`},
		{"tool role", msgs(user, `{"role":"tool","content":"x"}`), "messages.1.role: Input should be 'user' or 'assistant'"},
		{"no role", msgs(`{"content":"x"}`), "messages.0.role: Field required"},
		{"no content", msgs(`{"role":"user"}`), "messages.0.content: Field required"},
		{"message extra", msgs(`{"role":"user","content":"x","name":"bob"}`), "messages.0.name: Extra inputs are not permitted"},
		{"first assistant", msgs(`{"role":"assistant","content":"x"}`, user), `messages: first message must use the "user" role`},
		{"two users", msgs(user, user), `messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row`},
		{"two assistants", msgs(user, `{"role":"assistant","content":"a"}`, `{"role":"assistant","content":"b"}`), `found multiple "assistant" roles in a row`},
		{"empty content", msgs(`{"role":"user","content":""}`), "messages.0: all messages must have non-empty content except for the optional final assistant message"},
		{"empty blocks", msgs(`{"role":"user","content":[]}`), "messages.0: all messages must have non-empty content"},
		{"empty assistant inside", msgs(user, `{"role":"assistant","content":""}`, user), "messages.1: all messages must have non-empty content"},
		{"empty text block", block(`{"type":"text","text":""}`), "messages: text content blocks must be non-empty"},
		{"unknown block", block(`{"type":"input_text","text":"x"}`), "messages.0.content.0: Input tag 'input_text' found using 'type' does not match any of the expected tags"},
		{"image no source", block(`{"type":"image"}`), "messages.0.content.0.image.source: Field required"},
		{"image no media type", block(`{"type":"image","source":{"type":"base64","data":"aGk="}}`), "messages.0.content.0.image.source.base64.media_type: Field required"},
		{"image bad media type", block(`{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"aGk="}}`), "media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"},
		{"image no data", block(`{"type":"image","source":{"type":"base64","media_type":"image/png"}}`), "messages.0.content.0.image.source.base64.data: Field required"},
		{"image bad base64", block(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}`), "image.source.base64.data: Invalid base64 data"},
		{"image data url", block(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"data:image/png;base64,aGk="}}`), "Invalid base64 data"},
		{"image url without url", block(`{"type":"image","source":{"type":"url"}}`), "image.source.url.url: Field required"},
		{"image openai style", block(`{"type":"image","source":{"type":"image_url","url":"https://x"}}`), "Input tag 'image_url' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'"},
		{"tool_use unanswered", msgs(user, toolUse, user), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"tool_use id repeated", msgs(user, toolUse, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`, toolUse,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`), "messages.3.content: `tool_use` ids must be unique"},
		{"tool_use last", msgs(user, toolUse), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"},
		{"tool_result after text", msgs(user, toolUse, `{"role":"user","content":[{"type":"text","text":"here"},{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"},
		{"tool_result unknown id", msgs(user, toolUse, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"},{"type":"tool_result","tool_use_id":"toolu_9","content":"ok"}]}`), "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"tool_result first turn", block(`{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}`), "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"},
		{"tool_result no id", block(`{"type":"tool_result","content":"ok"}`), "messages.0.content.0.tool_result.tool_use_id: Field required"},
		{"tool_use in user", block(`{"type":"tool_use","id":"toolu_1","name":"f","input":{}}`), "messages.0.content.0: tool_use blocks can only be in assistant messages"},
		{"tool_use bad id", msgs(user, `{"role":"assistant","content":[{"type":"tool_use","id":"call 1","name":"f","input":{}}]}`), "messages.1.content.0.tool_use.id: String should match pattern"},
		{"tool_use string input", msgs(user, `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":"{}"}]}`), "messages.1.content.0.tool_use.input: Input should be a valid dictionary"},
		{"thinking no signature", msgs(user, `{"role":"assistant","content":[{"type":"thinking","thinking":"x"}]}`), "messages.1.content.0.thinking.signature: Field required"},
		{"budget too small", with(`"thinking":{"type":"enabled","budget_tokens":512}`), "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"},
		{"no budget", with(`"thinking":{"type":"enabled"}`), "thinking.enabled.budget_tokens: Field required"},
		{"budget over max", `{"model":"m","max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + user + `]}`, "`max_tokens` must be greater than `thinking.budget_tokens`"},
		{"thinking temperature", `{"model":"m","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":1024},"temperature":0.7,"messages":[` + user + `]}`, "`temperature` may only be set to 1 when thinking is enabled"},
		{"thinking bad type", with(`"thinking":{"type":"on"}`), "thinking: Input tag 'on'"},
		{"temperature high", with(`"temperature":1.5`), "temperature: Input should be less than or equal to 1"},
		{"temperature negative", with(`"temperature":-0.1`), "temperature: Input should be greater than or equal to 0"},
		{"temperature string", with(`"temperature":"hot"`), "temperature: Input should be a valid number"},
		{"stop not list", with(`"stop_sequences":"END"`), "stop_sequences: Input should be a valid list"},
		{"system image", with(`"system":[{"type":"image","source":{}}]`), "system.0.type: Input should be 'text'"},
		{"system number", with(`"system":5`), "system: Input should be a valid string or a valid list"},
		{"tool no name", with(`"tools":[{` + schema + `}]`), "tools.0.custom.name: Field required"},
		{"tool bad name", with(`"tools":[{"name":"get weather",` + schema + `}]`), "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"},
		{"tool no schema", with(`"tools":[{"name":"f"}]`), "tools.0.custom.input_schema: Field required"},
		{"tool openai shape", with(`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`), "tools.0: Input tag 'function' found using 'type' does not match any of the expected tags"},
		{"tool schema not object", with(`"tools":[{"name":"f","input_schema":{"type":"array"}}]`), "tools.0.custom.input_schema.type: Input should be 'object'"},
		{"tool schema no type", with(`"tools":[{"name":"f","input_schema":{"properties":{}}}]`), "tools.0.custom.input_schema.type: Input should be 'object'"},
		{"tool names repeat", with(`"tools":[{"name":"f",` + schema + `},{"name":"f",` + schema + `}]`), "tools: Tool names must be unique."},
		{"tool_choice no name", with(`"tools":[{"name":"f",` + schema + `}],"tool_choice":{"type":"tool"}`), "tool_choice.tool.name: Field required"},
		{"tool_choice string", with(`"tool_choice":"auto"`), "tool_choice: Input should be a valid dictionary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := validateAnthropic(mustObject(t, tc.body))
			if !strings.Contains(msg, tc.want) {
				t.Errorf("message %q, want it to contain %q", msg, tc.want)
			}
		})
	}
}

func TestAnthropicValidationEnvelope(t *testing.T) {
	s, c := newServer(t)
	resp := antPost(t, s, c, `{"model":"m","max_tokens":16,"messages":[{"role":"system","content":"x"}]}`)
	body := readBody(t, resp)
	e := decode[antErrorBody](t, body)
	if resp.StatusCode != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.HasPrefix(e.Error.Message, `messages: Unexpected role "system"`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	// A request refused by validation still names its model, so it counts.
	if n := s.Calls("m"); n != 1 {
		t.Errorf("Calls = %d, want 1", n)
	}
}

// mustObject parses a JSON object or fails the test.
func mustObject(t *testing.T, body string) object {
	t.Helper()
	o, err := parseObject([]byte(body))
	if err != nil {
		t.Fatalf("parsing %s: %v", body, err)
	}
	return o
}
