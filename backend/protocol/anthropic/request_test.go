package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"freelane/backend/llm"
)

const hello = `[{"role":"user","content":"hi"}]`

func TestParseRequest(t *testing.T) {
	for _, c := range []struct {
		name   string
		body   string
		model  string
		max    int
		stream bool
		needs  llm.Caps
	}{
		{"minimal", `{"model":"claude-haiku-4-5","max_tokens":100,"messages":` + hello + `}`, "claude-haiku-4-5", 100, false, 0},
		{"stream", `{"stream":true,"model":"auto","max_tokens":1,"messages":` + hello + `}`, "auto", 1, true, 0},
		{"escaped model", `{"model":"au\u0074o","max_tokens":5,"messages":` + hello + `}`, "auto", 5, false, 0},
		{"tools", `{"model":"m","max_tokens":5,"messages":` + hello + `,"tools":[{"name":"f","input_schema":{"type":"object"}}]}`, "m", 5, false, llm.CapTools},
		{"empty tools", `{"model":"m","max_tokens":5,"messages":` + hello + `,"tools":[ ]}`, "m", 5, false, 0},
		{"image", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}`, "m", 5, false, llm.CapVision},
		{"image in a tool result", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"url","url":"u"}}]}]}]}`, "m", 5, false, llm.CapVision},
		{"the word image in text", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"image"}]}]}`, "m", 5, false, 0},
		{"system message and unknown fields", `{"model":"m","max_tokens":5,"context_management":{},"output_config":{"effort":"low"},"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi","cache_control":{"type":"ephemeral"}}]}`, "m", 5, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Codec.ParseRequest(llm.Chat, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Model != c.model || r.MaxTokens != c.max || r.Stream != c.stream || r.Needs != c.needs ||
				r.Dialect != llm.DialectAnthropic || r.Endpoint != llm.Chat || r.WantsUsage != c.stream {
				t.Errorf("got model %q max %d stream %v needs %b dialect %s usage %v", r.Model, r.MaxTokens, r.Stream, r.Needs, r.Dialect, r.WantsUsage)
			}
			if _, err := r.Conversation(); err != nil {
				t.Errorf("Conversation: %v", err)
			}
		})
	}
}

func TestParseRequestRefuses(t *testing.T) {
	for _, c := range []struct {
		name, body, param, says string
	}{
		{"not JSON", `{"model":`, "", "not valid JSON"},
		{"trailing data", `{"model":"m"} x`, "", "not valid JSON"},
		{"array", `[1]`, "", "JSON object"},
		{"no model", `{"max_tokens":5,"messages":` + hello + `}`, "model", "model is required"},
		{"empty model", `{"model":"","max_tokens":5,"messages":` + hello + `}`, "model", "model is required"},
		{"model number", `{"model":5,"max_tokens":5,"messages":` + hello + `}`, "model", "must be a string"},
		{"no max_tokens", `{"model":"m","messages":` + hello + `}`, "max_tokens", "max_tokens is required"},
		{"zero max_tokens", `{"model":"m","max_tokens":0,"messages":` + hello + `}`, "max_tokens", "positive integer"},
		{"negative max_tokens", `{"model":"m","max_tokens":-1,"messages":` + hello + `}`, "max_tokens", "positive integer"},
		{"float max_tokens", `{"model":"m","max_tokens":1.5,"messages":` + hello + `}`, "max_tokens", "positive integer"},
		{"string max_tokens", `{"model":"m","max_tokens":"5","messages":` + hello + `}`, "max_tokens", "positive integer"},
		{"no messages", `{"model":"m","max_tokens":5}`, "messages", "messages is required"},
		{"messages object", `{"model":"m","max_tokens":5,"messages":{}}`, "messages", "must be an array"},
		{"empty messages", `{"model":"m","max_tokens":5,"messages":[]}`, "messages", "at least one"},
		{"message not object", `{"model":"m","max_tokens":5,"messages":["hi"]}`, "messages[0]", "must be an object"},
		{"no role", `{"model":"m","max_tokens":5,"messages":[{"content":"hi"}]}`, "messages[0].role", "role is required"},
		{"bad role", `{"model":"m","max_tokens":5,"messages":[{"role":"tool","content":"hi"}]}`, "messages[0].role", `"user" or "assistant"`},
		{"no content", `{"model":"m","max_tokens":5,"messages":[{"role":"user"}]}`, "messages[0].content", "content is required"},
		{"content number", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":1}]}`, "messages[0].content", "string or an array"},
		{"block not object", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":["hi"]}]}`, "messages[0].content[0]", "content block object"},
		{"block without type", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "messages[0].content[0].type", "type is required"},
		{"stream string", `{"model":"m","max_tokens":5,"stream":"yes","messages":` + hello + `}`, "stream", "true or false"},
		{"model too long", `{"model":"` + strings.Repeat("a", llm.MaxModelName+1) + `","max_tokens":5,"messages":` + hello + `}`, "model", "too long"},
		{"huge model", `{"model":"` + strings.Repeat("a", 1<<20) + `","max_tokens":5,"messages":` + hello + `}`, "model", "too long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Codec.ParseRequest(llm.Chat, []byte(c.body))
			var bad *llm.BadRequestError
			if !errors.As(err, &bad) {
				t.Fatalf("got %v, want a BadRequestError", err)
			}
			if bad.Param != c.param || !strings.Contains(bad.Message, c.says) || len(bad.Message) > 300 {
				t.Errorf("param %q message %q, want param %q saying %q", bad.Param, bad.Message, c.param, c.says)
			}
		})
	}
	if _, err := Codec.ParseRequest(llm.Embeddings, []byte(`{}`)); err == nil {
		t.Error("embeddings accepted")
	}
}

func TestConversationRefusesWrongTypes(t *testing.T) {
	r, err := Codec.ParseRequest(llm.Chat, []byte(`{"model":"m","max_tokens":5,"temperature":"hot","messages":`+hello+`}`))
	if err != nil {
		t.Fatal(err)
	}
	var bad *llm.BadRequestError
	if _, err := r.Conversation(); !errors.As(err, &bad) || !strings.Contains(bad.Message, "temperature") {
		t.Errorf("got %v, want a refusal naming temperature", err)
	}
}

func TestRewrite(t *testing.T) {
	body := `{ "model" : "auto", "max_tokens": 20000, "thinking": {"type":"enabled","budget_tokens":16000},
  "temperature": 0.5, "top_k": 3, "stop_sequences": ["x"], "metadata": {"user_id": "u"},
  "tool_choice": {"type":"auto","disable_parallel_tool_use":true}, "tools": [{"name":"f","input_schema":{"type":"object"}}],
  "messages": ` + hello + ` }`
	r, err := Codec.ParseRequest(llm.Chat, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		model string
		e     llm.Edits
		want  string
	}{
		{"model only", "claude-opus-4-1", llm.Edits{User: "h"},
			strings.Replace(strings.Replace(body, `"auto"`, `"claude-opus-4-1"`, 1), `"user_id": "u"`, `"user_id": "h"`, 1)},
		{"no pseudonym: no user_id", "m", llm.Edits{},
			strings.Replace(strings.Replace(body, `"auto"`, `"m"`, 1), `{"user_id": "u"}`, `{}`, 1)},
		{"add usage is a no-op", "m\"x", llm.Edits{AddUsage: true, User: "h"},
			strings.Replace(strings.Replace(body, `"auto"`, `"m\"x"`, 1), `"user_id": "u"`, `"user_id": "h"`, 1)},
		{"max within limit", "m", llm.Edits{MaxOutput: 64000, User: "h"},
			strings.Replace(strings.Replace(body, `"auto"`, `"m"`, 1), `"user_id": "u"`, `"user_id": "h"`, 1)},
		{"drop by OpenAI names", "m", llm.Edits{Drop: []string{"top_k", "stop", "user", "parallel_tool_calls", "seed", "max_tokens"}},
			`{"model" : "m","max_tokens": 20000,"thinking": {"type":"enabled","budget_tokens":16000},"temperature": 0.5,"tool_choice": {"type":"auto"},"tools": [{"name":"f","input_schema":{"type":"object"}}],"messages": ` + hello + `}`},
		{"clamp keeps the budget below the max", "m", llm.Edits{MaxOutput: 8192, User: "h"},
			`{"model" : "m","max_tokens": 8192,"thinking": {"type":"enabled","budget_tokens":8191},"temperature": 0.5,"top_k": 3,"stop_sequences": ["x"],"metadata": {"user_id": "h"},"tool_choice": {"type":"auto","disable_parallel_tool_use":true},"tools": [{"name":"f","input_schema":{"type":"object"}}],"messages": ` + hello + `}`},
		{"clamp below any budget drops thinking", "m", llm.Edits{MaxOutput: 1000, Drop: []string{"reasoning_effort", "tool_choice"}, User: "h"},
			`{"model" : "m","max_tokens": 1000,"temperature": 0.5,"top_k": 3,"stop_sequences": ["x"],"metadata": {"user_id": "h"},"tools": [{"name":"f","input_schema":{"type":"object"}}],"messages": ` + hello + `}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := string(r.Body(c.model, c.e))
			if got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not JSON")
			}
		})
	}
	if string(r.Raw()) != body {
		t.Error("Rewrite changed the client's body")
	}
}

func TestEncodeRequestCases(t *testing.T) {
	user := func(s string) llm.Message {
		return llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: s}}}
	}
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name string
		conv llm.Conversation
		e    llm.Edits
		want map[string]string // top-level member → its JSON, "" for absent
	}{
		{"default max", llm.Conversation{Messages: []llm.Message{user("a")}}, llm.Edits{},
			map[string]string{"max_tokens": "4096", "stream": "", "system": "", "tools": "", "tool_choice": ""}},
		{"upstream max is the default", llm.Conversation{Messages: []llm.Message{user("a")}}, llm.Edits{MaxOutput: 1000},
			map[string]string{"max_tokens": "1000"}},
		{"client max clamped", llm.Conversation{MaxOutput: 5000, Messages: []llm.Message{user("a")}}, llm.Edits{MaxOutput: 1000},
			map[string]string{"max_tokens": "1000"}},
		{"budget too big for the client's max", llm.Conversation{MaxOutput: 2000, Reasoning: &llm.Reasoning{BudgetTokens: 5000}, Messages: []llm.Message{user("a")}}, llm.Edits{},
			map[string]string{"max_tokens": "2000", "thinking": `{"type":"enabled","budget_tokens":1999}`}},
		{"no room to think", llm.Conversation{MaxOutput: 1024, Reasoning: &llm.Reasoning{Effort: "low"}, Messages: []llm.Message{user("a")}}, llm.Edits{},
			map[string]string{"max_tokens": "1024", "thinking": ""}},
		{"default grows for the budget within the upstream's limit", llm.Conversation{Reasoning: &llm.Reasoning{Effort: "medium"}, Messages: []llm.Message{user("a")}}, llm.Edits{MaxOutput: 6000},
			map[string]string{"max_tokens": "6000", "thinking": `{"type":"enabled","budget_tokens":4096}`}},
		{"minimal effort thinks not", llm.Conversation{Reasoning: &llm.Reasoning{Effort: "minimal"}, Messages: []llm.Message{user("a")}}, llm.Edits{},
			map[string]string{"thinking": ""}},
		{"disabled", llm.Conversation{Reasoning: &llm.Reasoning{Disabled: true}, Temperature: f(0.3), Messages: []llm.Message{user("a")}}, llm.Edits{},
			map[string]string{"thinking": "", "temperature": "0.3"}},
		{"thinking dropped", llm.Conversation{Reasoning: &llm.Reasoning{Effort: "high"}, Messages: []llm.Message{user("a")}}, llm.Edits{Drop: []string{"reasoning_effort"}},
			map[string]string{"thinking": "", "max_tokens": "4096"}},
		{"prefill turns thinking off", llm.Conversation{Reasoning: &llm.Reasoning{Effort: "low"}, Messages: []llm.Message{user("a"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "{"}}}}}, llm.Edits{},
			map[string]string{"thinking": ""}},
		{"unsigned tool call turns thinking off", llm.Conversation{Reasoning: &llm.Reasoning{Effort: "low"}, Messages: []llm.Message{user("a"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c", Name: "f"}}}},
			{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c"}}}}}}, llm.Edits{},
			map[string]string{"thinking": ""}},
		{"signed tool call keeps thinking", llm.Conversation{Reasoning: &llm.Reasoning{Effort: "low"}, Messages: []llm.Message{user("a"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartReasoning, Text: "t", Signature: "s"}, {Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c", Name: "f"}}}},
			{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c"}}}}}}, llm.Edits{},
			map[string]string{"thinking": `{"type":"enabled","budget_tokens":1024}`}},
		{"earlier plain turns keep thinking", llm.Conversation{Reasoning: &llm.Reasoning{Effort: "low"}, Messages: []llm.Message{user("a"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "b"}}}, user("c")}}, llm.Edits{},
			map[string]string{"thinking": `{"type":"enabled","budget_tokens":1024}`}},
		{"json object", llm.Conversation{ResponseFormat: &llm.ResponseFormat{Type: "json_object"}, Messages: []llm.Message{user("a")}}, llm.Edits{},
			map[string]string{"system": `"Respond with a single valid JSON object and nothing else: no prose, no code fences."`}},
		{"json dropped", llm.Conversation{ResponseFormat: &llm.ResponseFormat{Type: "json_object"}, Messages: []llm.Message{user("a")}}, llm.Edits{Drop: []string{"response_format"}},
			map[string]string{"system": ""}},
		{"tool choice none", llm.Conversation{Tools: []llm.Tool{{Name: "f"}}, ToolChoice: &llm.ToolChoice{Mode: llm.ToolNone}, Messages: []llm.Message{user("a")}}, llm.Edits{},
			map[string]string{"tool_choice": `{"type":"none"}`}},
		{"tool choice required", llm.Conversation{Tools: []llm.Tool{{Name: "f"}}, ToolChoice: &llm.ToolChoice{Mode: llm.ToolRequired}, Messages: []llm.Message{user("a")}}, llm.Edits{},
			map[string]string{"tool_choice": `{"type":"any"}`}},
		{"stream", llm.Conversation{Stream: true, Messages: []llm.Message{user("a")}}, llm.Edits{},
			map[string]string{"stream": "true"}},
		{"adjacent users merged", llm.Conversation{Messages: []llm.Message{user("a"), user("b"), {Role: llm.RoleAssistant}}}, llm.Edits{},
			map[string]string{"messages": `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`}},
		{"tool result after a user turn goes first", llm.Conversation{Messages: []llm.Message{
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c", Name: "f"}}}},
			user("also this"),
			{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c"}}}},
		}}, llm.Edits{},
			map[string]string{"messages": `[{"role":"user","content":[{"type":"text","text":"(start of conversation)"}]},{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c"},{"type":"text","text":"also this"}]}]`}},
		{"image data with a wrong type is sniffed", llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
			{Kind: llm.PartImage, Image: &llm.Image{MediaType: "application/octet-stream", Data: "/9j/4AAQSkZJRgABAQ"}}}}}}, llm.Edits{},
			map[string]string{"messages": `[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQSkZJRgABAQ"}}]}]`}},
		{"tool result with an image", llm.Conversation{Messages: []llm.Message{{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c",
			Content: []llm.Part{{Kind: llm.PartText, Text: "see"}, {Kind: llm.PartImage, Image: &llm.Image{URL: "https://x/y.png"}}}}}}}}}, llm.Edits{},
			map[string]string{"messages": `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}]`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, err := Codec.EncodeRequest(&c.conv, "m", c.e)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			for k, want := range c.want {
				if string(got[k]) != want {
					t.Errorf("%s = %s, want %s", k, got[k], want)
				}
			}
		})
	}
	if _, err := Codec.EncodeRequest(&llm.Conversation{}, "m", llm.Edits{}); err == nil {
		t.Error("a conversation without messages was encoded")
	}
	bad := llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartImage, Image: &llm.Image{URL: "data:image/png,notbase64"}}}}}}
	if _, err := Codec.EncodeRequest(&bad, "m", llm.Edits{}); err == nil {
		t.Error("a data URL that is not base64 was encoded")
	}
}

func TestObjectSchemaAndArguments(t *testing.T) {
	for in, want := range map[string]string{
		``:                                  `{"type":"object"}`,
		`null`:                              `{"type":"object"}`,
		`{}`:                                `{"type":"object"}`,
		`{"properties": {"a": {}}}`:         `{"type":"object","properties":{"a":{}}}`,
		`{"type":"object","properties":{}}`: `{"type":"object","properties":{}}`,
		`{"type":"string"}`:                 `{"type":"object"}`,
		`[1]`:                               `{"type":"object"}`,
		`{"type":["object","null"]}`:        `{"type":"object"}`,
	} {
		if got := string(objectSchema(json.RawMessage(in))); got != want {
			t.Errorf("objectSchema(%s) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		``:                `{}`,
		` {"a": [1, 2]} `: `{"a":[1,2]}`,
		`{"a":`:           `{"_raw":"{\"a\":"}`,
		`[1]`:             `{"_raw":"[1]"}`,
		`"<b>"`:           `{"_raw":"\"<b>\""}`,
	} {
		if got := string(arguments(in)); got != want {
			t.Errorf("arguments(%s) = %s, want %s", in, got, want)
		}
	}
}
