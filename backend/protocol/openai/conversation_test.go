package openai

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"freelane/backend/llm"
)

func TestConversationRefusals(t *testing.T) {
	const head = `{"model":"m","messages":[`
	tests := []struct {
		name  string
		body  string
		param string
		says  string
	}{
		{"audio part", head + `{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAA","format":"wav"}}]}]}`,
			"messages[0].content[0].type", "cannot be translated"},
		{"file part", head + `{"role":"user","content":[{"type":"text","text":"x"},{"type":"file","file":{"file_id":"f"}}]}]}`,
			"messages[0].content[1].type", "cannot be translated"},
		{"unknown part", head + `{"role":"user","content":[{"type":"video"}]}]}`, "messages[0].content[0].type", "unknown type"},
		{"content not a part", head + `{"role":"user","content":[1]}]}`, "messages[0].content[0]", "content part"},
		{"content number", head + `{"role":"user","content":5}]}`, "messages[0].content", "string or an array"},
		{"image in assistant", head + `{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
			"messages[0].content[0].type", "cannot carry"},
		{"unknown role", head + `{"role":"robot","content":"x"}]}`, "messages[0].role", "robot"},
		{"tool without id", head + `{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id", "required"},
		{"image without url", head + `{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, "messages[0].content[0].image_url.url", "required"},
		{"data url not base64", head + `{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`,
			"messages[0].content[0].image_url.url", "base64"},
		{"data url without type", head + `{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:;base64,abc"}}]}]}`,
			"messages[0].content[0].image_url.url", "media type"},
		{"file url", head + `{"role":"user","content":[{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}]}]}`,
			"messages[0].content[0].image_url.url", "http(s)"},
		{"call without name", head + `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}]}`,
			"messages[0].tool_calls[0].function.name", "required"},
		{"orphan function result", head + `{"role":"function","name":"f","content":"x"}]}`, "messages[0].name", "no earlier function_call"},
		{"custom call", head + `{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"x"}}]}]}`,
			"messages[0].tool_calls[0].type", "custom"},
		{"custom tool", head + `{"role":"user","content":"x"}],"tools":[{"type":"custom","custom":{"name":"x"}}]}`, "tools[0].type", "only function tools"},
		{"tool without name", head + `{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name", "required"},
		{"parameters not an object", head + `{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`,
			"tools[0].function.parameters", "schema"},
		{"tool choice word", head + `{"role":"user","content":"x"}],"tool_choice":"sometimes"}`, "tool_choice", "sometimes"},
		{"tool choice allowed tools", head + `{"role":"user","content":"x"}],"tool_choice":{"type":"allowed_tools","allowed_tools":{}}}`, "tool_choice.type", "allowed_tools"},
		{"tool choice without name", head + `{"role":"user","content":"x"}],"tool_choice":{"type":"function"}}`, "tool_choice", "name"},
		{"response format type", head + `{"role":"user","content":"x"}],"response_format":{"type":"yaml"}}`, "response_format.type", "yaml"},
		{"schema missing", head + `{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}}`, "response_format.json_schema", "required"},
		{"stop number", head + `{"role":"user","content":"x"}],"stop":3}`, "stop", "string"},
		{"temperature string", head + `{"role":"user","content":"x"}],"temperature":"hot"}`, "temperature", "string"},
		{"tool calls string", head + `{"role":"assistant","tool_calls":"x"}]}`, "messages.tool_calls", "must be an array, not a JSON string"},
		{"seed float", head + `{"role":"user","content":"x"}],"seed":1.5}`, "seed", "seed must be an integer, not a JSON number 1.5"},
		{"data url without data", head + `{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,"}}]}]}`,
			"messages[0].content[0].image_url.url", "without data"},
		{"negative max tokens", head + `{"role":"user","content":"x"}],"max_tokens":-1}`, "max_tokens", "positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRequest(llm.Chat, []byte(tc.body))
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			_, err = r.Conversation()
			var bad *llm.BadRequestError
			if !errors.As(err, &bad) {
				t.Fatalf("got %v, want a BadRequestError", err)
			}
			if bad.Param != tc.param || !strings.Contains(bad.Message, tc.says) {
				t.Errorf("got param %q message %q, want param %q and a message with %q", bad.Param, bad.Message, tc.param, tc.says)
			}
		})
	}
}

func TestConversationOtherEndpoints(t *testing.T) {
	for ep, body := range map[llm.Endpoint]string{
		llm.Completions: `{"model":"m","prompt":"Once"}`,
		llm.Embeddings:  `{"model":"m","input":"x"}`,
	} {
		r, err := ParseRequest(ep, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Conversation()
		var bad *llm.BadRequestError
		if !errors.As(err, &bad) || !strings.Contains(bad.Message, "cannot be translated") || bad.Code != "unsupported_endpoint" {
			t.Errorf("%s: got %v", ep, err)
		}
	}
}

func TestConversationFields(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name string
		body string
		want func(c *llm.Conversation) bool
	}{
		{"max_completion_tokens", `"max_completion_tokens":100`, func(c *llm.Conversation) bool { return c.MaxOutput == 100 }},
		{"larger of both limits", `"max_completion_tokens":100,"max_tokens":200`, func(c *llm.Conversation) bool { return c.MaxOutput == 200 }},
		{"empty stop", `"stop":""`, func(c *llm.Conversation) bool { return c.Stop == nil }},
		{"null values", `"stop":null,"tool_choice":null,"temperature":null,"stream":null`, func(c *llm.Conversation) bool {
			return c.Stop == nil && c.ToolChoice == nil && c.Temperature == nil && !c.Stream
		}},
		{"zero temperature kept", `"temperature":0`, func(c *llm.Conversation) bool { return reflect.DeepEqual(c.Temperature, f(0)) }},
		{"effort none", `"reasoning_effort":"none"`, func(c *llm.Conversation) bool { return c.Reasoning != nil && c.Reasoning.Disabled }},
		{"openrouter budget", `"reasoning":{"max_tokens":2000}`, func(c *llm.Conversation) bool {
			return c.Reasoning != nil && c.Reasoning.BudgetTokens == 2000
		}},
		{"openrouter effort", `"reasoning":{"effort":"low"}`, func(c *llm.Conversation) bool { return c.Reasoning.Effort == "low" }},
		{"openrouter off", `"reasoning":{"enabled":false}`, func(c *llm.Conversation) bool { return c.Reasoning.Disabled }},
		{"legacy function choice", `"function_call":{"name":"f"}`, func(c *llm.Conversation) bool {
			return *c.ToolChoice == llm.ToolChoice{Mode: llm.ToolNamed, Name: "f"}
		}},
		{"tool choice wins over legacy", `"function_call":"none","tool_choice":"auto"`, func(c *llm.Conversation) bool {
			return c.ToolChoice.Mode == llm.ToolAuto
		}},
		{"no usage without stream", `"stream_options":{"include_usage":true}`, func(c *llm.Conversation) bool { return !c.IncludeUsage && !c.Stream }},
		{"compact schema", `"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{ "type" : "object" }}}`, func(c *llm.Conversation) bool {
			return string(c.ResponseFormat.Schema) == `{"type":"object"}`
		}},
		{"empty metadata", `"metadata":{}`, func(c *llm.Conversation) bool { return c.Metadata == nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := conversation(t, []byte(`{"model":"m","messages":[{"role":"user","content":"x"}],`+tc.body+`}`))
			if !tc.want(c) {
				t.Errorf("got %s", dump(t, c))
			}
		})
	}
}

func TestConversationMessages(t *testing.T) {
	c := conversation(t, []byte(`{"model":"m","messages":[
		{"role":"developer","content":""},
		{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
		{"role":"user","content":null},
		{"role":"assistant","content":"","refusal":"I can't help with that."},
		{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"refusal","refusal":"y"}],"reasoning":"r","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"p"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,QUJD"}}]},
		{"role":"tool","tool_call_id":"unknown","content":"q"},
		{"role":"user","content":"next"},
		{"role":"tool","tool_call_id":"c1","content":"late"}
	]}`))
	want := &llm.Conversation{
		System: []llm.Part{{Kind: llm.PartText, Text: "a\n\nb"}},
		Messages: []llm.Message{
			{Role: llm.RoleUser},
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "I can't help with that."}}},
			{Role: llm.RoleAssistant, Parts: []llm.Part{
				{Kind: llm.PartReasoning, Text: "r"},
				{Kind: llm.PartText, Text: "x\n\ny"},
				{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c1", Name: "f", Arguments: "{}"}},
			}},
			{Role: llm.RoleTool, Parts: []llm.Part{
				{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c1", Name: "f", Content: []llm.Part{
					{Kind: llm.PartText, Text: "p"},
					{Kind: llm.PartImage, Image: &llm.Image{MediaType: "image/jpeg", Data: "QUJD"}},
				}}},
				{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "unknown", Content: []llm.Part{{Kind: llm.PartText, Text: "q"}}}},
			}},
			{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "next"}}},
			{Role: llm.RoleTool, Parts: []llm.Part{
				{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c1", Name: "f", Content: []llm.Part{{Kind: llm.PartText, Text: "late"}}}},
			}},
		},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got\n%s\nwant\n%s", dump(t, c), dump(t, want))
	}
}

// FuzzConversation decodes arbitrary bodies: it must never panic, and a
// conversation it accepts must survive encoding and decoding again, where
// the dialect can say all of it.
func FuzzConversation(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,QQ=="}}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"required"}`,
		`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","function_call":{"name":"f","arguments":""}},{"role":"function","name":"f","content":"y"}],"functions":[{"name":"f"}],"function_call":{"name":"f"}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":["a"],"temperature":0,"reasoning_effort":"none","response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object"}}},"stream":true,"stream_options":{"include_usage":true}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseRequest(llm.Chat, body)
		if err != nil {
			return
		}
		c, err := r.Conversation()
		if err != nil {
			var bad *llm.BadRequestError
			if !errors.As(err, &bad) {
				t.Fatalf("not a BadRequestError: %v", err)
			}
			return
		}
		out, err := Codec.EncodeRequest(c, "m", llm.Edits{})
		if len(c.System) == 0 && len(c.Messages) == 0 {
			if err == nil {
				t.Fatal("an empty conversation encoded")
			}
			return
		}
		if err != nil {
			t.Fatalf("EncodeRequest: %v", err)
		}
		if !lossless(c) {
			return
		}
		r2, err := ParseRequest(llm.Chat, out)
		if err != nil {
			t.Fatalf("re-parse %s: %v", out, err)
		}
		again, err := r2.Conversation()
		if err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		if want := withoutReasoning(c); !reflect.DeepEqual(again, want) {
			t.Fatalf("round trip differs:\n%s\n%s", dump(t, again), dump(t, want))
		}
	})
}

// lossless reports whether the chat dialect can say all of c: no images
// returned by tools, no reasoning budget, no nameless schema.
func lossless(c *llm.Conversation) bool {
	if c.Reasoning != nil && c.Reasoning.BudgetTokens > 0 {
		return false
	}
	if c.ResponseFormat != nil && c.ResponseFormat.Type == "json_schema" && c.ResponseFormat.Name == "" {
		return false
	}
	for _, m := range c.Messages {
		for _, p := range m.Parts {
			if p.Kind != llm.PartToolResult {
				continue
			}
			for _, rp := range p.ToolResult.Content {
				if rp.Kind == llm.PartImage {
					return false
				}
			}
		}
	}
	return true
}
