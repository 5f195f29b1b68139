package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"freelane/backend/llm"
)

func ptr[T any](v T) *T { return &v }

func user(text string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: text}}}
}

func encode(t *testing.T, c *llm.Conversation, e llm.Edits) map[string]any {
	t.Helper()
	b, err := Codec.EncodeRequest(c, "ignored", e)
	if err != nil {
		t.Fatal(err)
	}
	checkGenaiRequest(t, b)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["model"]; ok {
		t.Error("the body names the model")
	}
	return m
}

// at walks a decoded body by keys and indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestEncodeGenerationConfig(t *testing.T) {
	base := func() *llm.Conversation { return &llm.Conversation{Messages: []llm.Message{user("hi")}} }
	for _, c := range []struct {
		name  string
		conv  func(*llm.Conversation)
		edits llm.Edits
		want  string // generationConfig, "null" when absent
	}{
		{"nothing", func(*llm.Conversation) {}, llm.Edits{}, `null`},
		{"no default max", func(*llm.Conversation) {}, llm.Edits{MaxOutput: 1000}, `null`},
		{"clamped", func(c *llm.Conversation) { c.MaxOutput = 5000 }, llm.Edits{MaxOutput: 1000}, `{"maxOutputTokens":1000}`},
		{"limits", func(c *llm.Conversation) {
			c.Stop = []string{"1", "2", "3", "4", "5", "6"}
			c.Seed = ptr(int64(1) << 40)
		}, llm.Edits{}, `{"stopSequences":["1","2","3","4","5"]}`},
		{"dropped max", func(c *llm.Conversation) { c.MaxOutput = 5000 }, llm.Edits{Drop: []string{"max_tokens"}}, `null`},
		{"under the clamp", func(c *llm.Conversation) { c.MaxOutput = 500 }, llm.Edits{MaxOutput: 1000}, `{"maxOutputTokens":500}`},
		{"sampling", func(c *llm.Conversation) {
			c.Temperature, c.TopP, c.TopK = ptr(0.0), ptr(0.5), ptr(3)
			c.Seed, c.PresencePenalty, c.FrequencyPenalty = ptr(int64(7)), ptr(0.1), ptr(-0.2)
			c.Stop = []string{"x"}
		}, llm.Edits{}, `{"frequencyPenalty":-0.2,"presencePenalty":0.1,"seed":7,"stopSequences":["x"],"temperature":0,"topK":3,"topP":0.5}`},
		{"dropped", func(c *llm.Conversation) {
			c.Temperature, c.TopP, c.TopK, c.Seed = ptr(1.0), ptr(0.5), ptr(3), ptr(int64(7))
			c.Stop = []string{"x"}
			c.ResponseFormat = &llm.ResponseFormat{Type: "json_object"}
			c.Reasoning = &llm.Reasoning{Effort: "low"}
		}, llm.Edits{Drop: []string{"temperature", "top_p", "top_k", "seed", "stop", "response_format", "reasoning_effort"}}, `null`},
		{"json object", func(c *llm.Conversation) { c.ResponseFormat = &llm.ResponseFormat{Type: "json_object"} }, llm.Edits{}, `{"responseMimeType":"application/json"}`},
		{"text format", func(c *llm.Conversation) { c.ResponseFormat = &llm.ResponseFormat{Type: "text"} }, llm.Edits{}, `null`},
		{"disabled", func(c *llm.Conversation) { c.Reasoning = &llm.Reasoning{Disabled: true} }, llm.Edits{}, `{"thinkingConfig":{"thinkingBudget":0}}`},
		{"minimal", func(c *llm.Conversation) { c.Reasoning = &llm.Reasoning{Effort: "minimal"} }, llm.Edits{}, `{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":512}}`},
		{"low", func(c *llm.Conversation) { c.Reasoning = &llm.Reasoning{Effort: "low"} }, llm.Edits{}, `{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024}}`},
		{"medium", func(c *llm.Conversation) { c.Reasoning = &llm.Reasoning{Effort: "medium"} }, llm.Edits{}, `{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}`},
		{"budget", func(c *llm.Conversation) { c.Reasoning = &llm.Reasoning{BudgetTokens: 3000} }, llm.Edits{}, `{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":3000}}`},
		{"huge budget", func(c *llm.Conversation) { c.Reasoning = &llm.Reasoning{BudgetTokens: 1 << 20} }, llm.Edits{}, `{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":24576}}`},
		{"unknown effort", func(c *llm.Conversation) { c.Reasoning = &llm.Reasoning{Effort: "extreme"} }, llm.Edits{}, `null`},
	} {
		t.Run(c.name, func(t *testing.T) {
			conv := base()
			c.conv(conv)
			m := encode(t, conv, c.edits)
			if got := js(m["generationConfig"]); got != c.want {
				t.Errorf("generationConfig %s, want %s", got, c.want)
			}
		})
	}
}

func TestEncodeTools(t *testing.T) {
	tools := []llm.Tool{
		{Name: "f", Description: "does f", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)},
		{Name: "g", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: "h"},
	}
	for _, c := range []struct {
		choice *llm.ToolChoice
		drop   []string
		tools  string
		config string
	}{
		{nil, nil, `[{"functionDeclarations":[{"description":"does f","name":"f","parameters":{"properties":{"a":{"type":"STRING"}},"type":"OBJECT"}},{"name":"g"},{"name":"h"}]}]`, `null`},
		{&llm.ToolChoice{Mode: llm.ToolAuto}, nil, "", `{"functionCallingConfig":{"mode":"AUTO"}}`},
		{&llm.ToolChoice{Mode: llm.ToolNone}, nil, "", `{"functionCallingConfig":{"mode":"NONE"}}`},
		{&llm.ToolChoice{Mode: llm.ToolRequired}, nil, "", `{"functionCallingConfig":{"mode":"ANY"}}`},
		{&llm.ToolChoice{Mode: llm.ToolNamed, Name: "g"}, nil, "", `{"functionCallingConfig":{"allowedFunctionNames":["g"],"mode":"ANY"}}`},
		{&llm.ToolChoice{Mode: llm.ToolNamed, Name: "g"}, []string{"tool_choice"}, "", `null`},
		{&llm.ToolChoice{Mode: llm.ToolRequired}, []string{"tools"}, "null", `null`},
	} {
		m := encode(t, &llm.Conversation{Messages: []llm.Message{user("hi")}, Tools: tools, ToolChoice: c.choice}, llm.Edits{Drop: c.drop})
		if c.tools != "" && js(m["tools"]) != c.tools {
			t.Errorf("%+v: tools %s, want %s", c.choice, js(m["tools"]), c.tools)
		}
		if js(m["toolConfig"]) != c.config {
			t.Errorf("%+v: toolConfig %s, want %s", c.choice, js(m["toolConfig"]), c.config)
		}
	}
}

func TestEncodeContents(t *testing.T) {
	call := func(id, name, args string) llm.Part {
		return llm.Part{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: id, Name: name, Arguments: args}}
	}
	result := func(id, text string, isErr bool, extra ...llm.Part) llm.Message {
		content := append([]llm.Part{{Kind: llm.PartText, Text: text}}, extra...)
		return llm.Message{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: id, Content: content, IsError: isErr}}}}
	}
	img := llm.Part{Kind: llm.PartImage, Image: &llm.Image{MediaType: "image/png", Data: "iVBORw0KGgo="}}
	conv := &llm.Conversation{
		System: []llm.Part{{Kind: llm.PartText, Text: "sys"}, {Kind: llm.PartText, Text: ""}},
		Messages: []llm.Message{
			user("one"), user("two"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{
				{Kind: llm.PartReasoning, Text: "foreign thinking", Signature: "not base64!"},
				call("a", "f", `{"x":1}`), call("b", "f", ``), call("c", "g", `[1,2]`), call("d", "g", `not json`),
			}},
			result("a", `{"ok":true}`, false),
			result("b", "plain", false),
			result("c", "failed", true, img),
			result("d", `{"x":1}`, true),
			{Role: llm.RoleAssistant},
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Kind: llm.PartImage, Image: &llm.Image{URL: "https://example.com/a"}},
				{Kind: llm.PartImage, Image: &llm.Image{URL: "https://example.com/b.GIF#frag"}},
				{Kind: llm.PartImage, Image: &llm.Image{URL: "data:image/webp;base64,UklGRg=="}},
				{Kind: llm.PartImage, Image: &llm.Image{URL: "data:text/plain,hello"}},
				{Kind: llm.PartImage, Image: &llm.Image{URL: "ftp://example.com/c.png"}},
			}},
		},
	}
	m := encode(t, conv, llm.Edits{})
	checkContentsOf(t, m["contents"])
	if js(m["systemInstruction"]) != `{"parts":[{"text":"sys"}]}` {
		t.Errorf("system %s", js(m["systemInstruction"]))
	}

	if _, err := Codec.EncodeRequest(&llm.Conversation{Messages: []llm.Message{result("zzz", "x", false)}}, "", llm.Edits{}); err == nil {
		t.Error("a result to no call was encoded without a name")
	}
	named := &llm.Conversation{Messages: []llm.Message{{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "zzz", Name: "known"}}}}}}
	if m := encode(t, named, llm.Edits{}); js(at(m, "contents", 0, "parts", 0)) != `{"functionResponse":{"name":"known","response":{"content":""}}}` {
		t.Errorf("named result %s", js(at(m, "contents", 0, "parts", 0)))
	}
	if _, err := Codec.EncodeRequest(&llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser}}}, "", llm.Edits{}); err == nil {
		t.Error("an empty conversation was encoded")
	}
}

// checkContentsOf checks the contents of TestEncodeContents part by part.
func checkContentsOf(t *testing.T, contents any) {
	t.Helper()
	checks := []struct {
		path []any
		want string
	}{
		{[]any{0}, `{"parts":[{"text":"one"},{"text":"two"}],"role":"user"}`},
		{[]any{1, "role"}, `"model"`},
		{[]any{1, "parts", 0}, `{"functionCall":{"args":{"x":1},"name":"f"}}`},
		{[]any{1, "parts", 1}, `{"functionCall":{"args":{},"name":"f"}}`},
		{[]any{1, "parts", 2}, `{"functionCall":{"args":{"arguments":"[1,2]"},"name":"g"}}`},
		{[]any{1, "parts", 3}, `{"functionCall":{"args":{"arguments":"not json"},"name":"g"}}`},
		{[]any{2, "parts", 0}, `{"functionResponse":{"name":"f","response":{"ok":true}}}`},
		{[]any{2, "parts", 1}, `{"functionResponse":{"name":"f","response":{"content":"plain"}}}`},
		{[]any{2, "parts", 2}, `{"functionResponse":{"name":"g","response":{"error":"failed"}}}`},
		{[]any{2, "parts", 3}, `{"inlineData":{"data":"iVBORw0KGgo=","mimeType":"image/png"}}`},
		{[]any{2, "parts", 4}, `{"functionResponse":{"name":"g","response":{"error":"{\"x\":1}"}}}`},
		{[]any{2, "parts", 5}, `{"fileData":{"fileUri":"https://example.com/a","mimeType":"image/jpeg"}}`},
		{[]any{2, "parts", 6}, `{"fileData":{"fileUri":"https://example.com/b.GIF#frag","mimeType":"image/gif"}}`},
		{[]any{2, "parts", 7}, `{"inlineData":{"data":"UklGRg==","mimeType":"image/webp"}}`},
		{[]any{2, "parts", 8}, `null`},
		{[]any{3}, `null`},
	}
	for _, c := range checks {
		if got := js(at(contents, c.path...)); got != c.want {
			t.Errorf("contents%v = %s, want %s", c.path, got, c.want)
		}
	}
}

func TestSanitizeSchema(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false,"$schema":"x","title":"T"}`,
			`{"properties":{"a":{"type":"STRING"}},"title":"T","type":"OBJECT"}`},
		{`{"type":"object"}`, `null`},
		{`{"type":"object","properties":{}}`, `null`},
		{`true`, `null`},
		{`[1]`, `null`},
		{`not json`, `null`},
		{`{"type":"object","properties":{"o":{"type":"object"},"n":{"type":"object","properties":{"x":{"type":"integer","format":"int64"}}}}}`,
			`{"properties":{"n":{"properties":{"x":{"format":"int64","type":"INTEGER"}},"type":"OBJECT"},"o":{}},"type":"OBJECT"}`},
		{`{"type":"object","properties":{"u":{"oneOf":[{"type":"string"},{"type":"number","format":"uri"}]}}}`,
			`{"properties":{"u":{"anyOf":[{"type":"STRING"},{"type":"NUMBER"}]}},"type":"OBJECT"}`},
		{`{"type":"object","properties":{"u":{"type":["string","number","null"]}}}`,
			`{"properties":{"u":{"anyOf":[{"type":"STRING"},{"type":"NUMBER"}],"nullable":true}},"type":"OBJECT"}`},
		{`{"type":"object","properties":{"e":{"enum":[1,2]},"s":{"enum":["a","b"]},"c":{"const":3}}}`,
			`{"properties":{"c":{},"e":{},"s":{"enum":["a","b"],"type":"STRING"}},"type":"OBJECT"}`},
		{`{"type":"object","properties":{"r":{"allOf":[{"$ref":"#/$defs/X"}],"description":"d"},"t":{"items":[{"type":"string"}]},"i":{"items":{"type":"string"}}}}`,
			`{"properties":{"i":{"items":{"type":"STRING"},"type":"ARRAY"},"r":{"description":"d"},"t":{}},"type":"OBJECT"}`},
		{`{"properties":{"a":{"type":"string"}},"required":["a","b",3]}`, `{"properties":{"a":{"type":"STRING"}}}`},
		{`{"properties":{"a":{"type":"string"}},"required":["a","b"]}`, `{"properties":{"a":{"type":"STRING"}},"required":["a"]}`},
		{`{"properties":{"a":{"type":"string","minLength":"1","description":5,"nullable":"yes","maxItems":2}},"propertyOrdering":["b","a"],"title":null}`,
			`{"properties":{"a":{"maxItems":2,"type":"STRING"}},"propertyOrdering":["a"]}`},
	} {
		s, ok := sanitizeSchema(json.RawMessage(c.in))
		got := js(s)
		if !ok {
			got = "null"
		}
		if got != c.want {
			t.Errorf("sanitizeSchema(%s)\n = %s\nwant %s", c.in, got, c.want)
		}
	}
	// A hostile depth is cut, not followed.
	deep := strings.Repeat(`{"type":"array","items":`, 5000) + `{"type":"string"}` + strings.Repeat(`}`, 5000)
	deep = `{"type":"object","properties":{"d":` + deep + `}}`
	if s, ok := sanitizeSchema(json.RawMessage(deep)); !ok || len(js(s)) > 2000 {
		t.Errorf("deep schema: ok %v, %d bytes", ok, len(js(s)))
	}
}

func TestToJSONSchema(t *testing.T) {
	in := `{"type":"OBJECT","properties":{"a":{"type":"STRING","format":"enum","enum":["x"],"nullable":true},"b":{"type":"ARRAY","items":{"type":"INTEGER","format":"int32"}},"c":{"anyOf":[{"type":"NUMBER"}]}},"propertyOrdering":["a","b"],"required":["a"]}`
	want := `{"properties":{"a":{"enum":["x"],"type":["string","null"]},"b":{"items":{"format":"int32","type":"integer"},"type":"array"},"c":{"anyOf":[{"type":"number"}]}},"required":["a"],"type":"object"}`
	if got := string(toJSONSchema(json.RawMessage(in))); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if toJSONSchema(nil) != nil || toJSONSchema(json.RawMessage(`"x"`)) != nil {
		t.Error("a non-object schema converted")
	}
}
