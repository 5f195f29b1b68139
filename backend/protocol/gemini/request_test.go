package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"freelane/backend/llm"
)

const hello = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`

func TestParseRequestErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		body  string
		param string
		msg   string
	}{
		{"empty", ``, "", "empty"},
		{"not JSON", `contents=hi`, "", "not valid JSON"},
		{"truncated", `{"contents":[`, "", "not valid JSON"},
		{"array", `[` + hello + `]`, "", "must be a JSON object"},
		{"no contents", `{"generationConfig":{}}`, "contents", "contents is required"},
		{"null contents", `{"contents":null}`, "contents", "contents is required"},
		{"contents object", `{"contents":{"parts":[]}}`, "contents", "must be an array"},
		{"empty contents", `{"contents":[]}`, "contents", "at least one"},
		{"content string", `{"contents":["hi"]}`, "contents[0]", "Content object"},
		{"bad role", `{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}`, "contents[0].role", `"user" or "model"`},
		{"role number", `{"contents":[{"role":1,"parts":[{"text":"x"}]}]}`, "contents[0].role", `"user" or "model"`},
		{"no parts", `{"contents":[{"role":"user"}]}`, "contents[0].parts", "at least one part"},
		{"empty parts", `{"contents":[{"role":"user","parts":[]}]}`, "contents[0].parts", "at least one part"},
		{"parts object", `{"contents":[{"role":"user","parts":{"text":"x"}}]}`, "contents[0].parts", "array of Part"},
		{"part string", `{"contents":[{"role":"user","parts":["x"]}]}`, "contents[0].parts", "parts[0] must be a Part"},
		{"second content", `{"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model"}]}`, "contents[1].parts", "at least one part"},
		{"system string", `{"systemInstruction":"be nice","contents":[{"parts":[{"text":"x"}]}]}`, "systemInstruction", "Content object"},
		{"tools object", `{"tools":{},"contents":[{"parts":[{"text":"x"}]}]}`, "tools", "array"},
		{"config array", `{"generation_config":[],"contents":[{"parts":[{"text":"x"}]}]}`, "generation_config", "object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRequest(llm.Chat, []byte(c.body))
			var bad *llm.BadRequestError
			if !errors.As(err, &bad) {
				t.Fatalf("got %v, want a bad request", err)
			}
			if bad.Param != c.param || !strings.Contains(bad.Message, c.msg) {
				t.Errorf("param %q message %q, want %q containing %q", bad.Param, bad.Message, c.param, c.msg)
			}
		})
	}
	if _, err := ParseRequest(llm.Embeddings, []byte(hello)); err == nil {
		t.Error("embeddings accepted")
	}
	_, err := ParseRequestFor(llm.Chat, strings.Repeat("m", llm.MaxModelName+1), false, []byte(hello))
	var bad *llm.BadRequestError
	if !errors.As(err, &bad) || bad.Code != "model_too_long" || len(bad.Message) > 200 {
		t.Errorf("long model: %v", err)
	}
}

func TestParseRequestFields(t *testing.T) {
	for _, c := range []struct {
		name  string
		body  string
		needs llm.Caps
		max   int
	}{
		{"plain", hello, 0, 0},
		{"no role", `{"contents":[{"parts":[{"text":"hi"}]}]}`, 0, 0},
		{"inline image", `{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":"AA=="}}]}]}`, llm.CapVision, 0},
		{"snake image", `{"contents":[{"parts":[{"inline_data":{"mime_type":"image/webp","data":"AA=="}}]}]}`, llm.CapVision, 0},
		{"file image", `{"contents":[{"parts":[{"fileData":{"mimeType":"image/jpeg","fileUri":"https://x/y.jpg"}}]}]}`, llm.CapVision, 0},
		{"pdf is not vision", `{"contents":[{"parts":[{"inlineData":{"mimeType":"application/pdf","data":"AA=="}}]}]}`, 0, 0},
		{"tools", `{"tools":[{"functionDeclarations":[{"name":"f"}]}],` + hello[1:], llm.CapTools, 0},
		{"snake tools", `{"tools":[{"function_declarations":[{"name":"f"}]}],` + hello[1:], llm.CapTools, 0},
		{"search only", `{"tools":[{"googleSearch":{}}],` + hello[1:], 0, 0},
		{"empty declarations", `{"tools":[{"functionDeclarations":[]}],` + hello[1:], 0, 0},
		{"json", `{"generationConfig":{"responseMimeType":"application/json","maxOutputTokens":900},` + hello[1:], llm.CapJSON, 900},
		{"snake json", `{"generation_config":{"response_mime_type":"application/json","max_output_tokens":12},` + hello[1:], llm.CapJSON, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseRequestFor(llm.Chat, "gemini-2.5-flash", false, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Needs != c.needs || r.MaxTokens != c.max || r.Stream || r.WantsUsage || r.Model != "gemini-2.5-flash" {
				t.Errorf("needs %b max %d stream %v, want %b %d", r.Needs, r.MaxTokens, r.Stream, c.needs, c.max)
			}
			if _, err := r.Conversation(); err != nil {
				t.Errorf("Conversation: %v", err)
			}
		})
	}
	r, _ := ParseRequest(llm.Chat, []byte(hello))
	if r.Model != "" || r.Dialect != llm.DialectGemini || r.Endpoint != llm.Chat {
		t.Errorf("ParseRequest: model %q dialect %s", r.Model, r.Dialect)
	}
}

func TestRewrite(t *testing.T) {
	body := `{"contents":[{"parts":[{"text":"hi"}]}], "tools": [{"functionDeclarations":[{"name":"f"}]}],
 "toolConfig":{"functionCallingConfig":{"mode":"ANY"}},
 "generationConfig": {"temperature": 0.5, "top_p": 0.9, "maxOutputTokens": 8192, "thinkingConfig": {"thinkingBudget": 100}}}`
	r, err := ParseRequestFor(llm.Chat, "m", true, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		edits llm.Edits
		want  string // "" is the body unchanged
	}{
		{"none", llm.Edits{AddUsage: true}, ""},
		{"clamp not needed", llm.Edits{MaxOutput: 10000}, ""},
		{"drop absent", llm.Edits{Drop: []string{"seed", "user", "stop"}}, ""},
		{"clamp", llm.Edits{MaxOutput: 4096},
			`{"contents":[{"parts":[{"text":"hi"}]}],"tools": [{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}},"generationConfig": {"temperature": 0.5,"top_p": 0.9,"maxOutputTokens": 4096,"thinkingConfig": {"thinkingBudget": 100}}}`},
		{"drop sampling", llm.Edits{Drop: []string{"temperature", "top_p", "reasoning_effort"}},
			`{"contents":[{"parts":[{"text":"hi"}]}],"tools": [{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}},"generationConfig": {"maxOutputTokens": 8192}}`},
		{"drop tools", llm.Edits{Drop: []string{"tools"}},
			`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig": {"temperature": 0.5, "top_p": 0.9, "maxOutputTokens": 8192, "thinkingConfig": {"thinkingBudget": 100}}}`},
		{"drop tool choice", llm.Edits{Drop: []string{"tool_choice"}},
			`{"contents":[{"parts":[{"text":"hi"}]}],"tools": [{"functionDeclarations":[{"name":"f"}]}],"generationConfig": {"temperature": 0.5, "top_p": 0.9, "maxOutputTokens": 8192, "thinkingConfig": {"thinkingBudget": 100}}}`},
		{"drop own name", llm.Edits{Drop: []string{"thinkingConfig"}},
			`{"contents":[{"parts":[{"text":"hi"}]}],"tools": [{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}},"generationConfig": {"temperature": 0.5,"top_p": 0.9,"maxOutputTokens": 8192}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := r.Body("other-model", c.edits)
			want := c.want
			if want == "" {
				want = body
			}
			if string(got) != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			if !json.Valid(got) {
				t.Errorf("not JSON: %s", got)
			}
		})
	}
	huge, _ := ParseRequest(llm.Chat, []byte(`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":"99999999999"}}`))
	if got := huge.Body("", llm.Edits{MaxOutput: 100}); !bytes.Contains(got, []byte(`"maxOutputTokens":100`)) {
		t.Errorf("a huge string limit is not clamped: %s", got)
	}
}

func TestConversationPairsResponses(t *testing.T) {
	body := `{"contents":[
	{"role":"user","parts":[{"text":"go"}]},
	{"role":"model","parts":[{"functionCall":{"name":"f","args":{"n":1}}},{"functionCall":{"name":"g"}},{"functionCall":{"name":"f","args":{"n":2}}},{"functionCall":{"id":"own","name":"h"}}]},
	{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"r":1}}},{"functionResponse":{"name":"h","id":"own","response":{"error":"boom"}}},{"functionResponse":{"name":"f","response":{"r":2}}},{"text":"and?"},{"functionResponse":{"name":"g","response":{}}},{"functionResponse":{"name":"zzz","response":{"output":"stray"}}}]}
	]}`
	r, err := ParseRequest(llm.Chat, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Conversation()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range c.Messages {
		for _, p := range m.Parts {
			switch p.Kind {
			case llm.PartToolCall:
				got = append(got, "call "+p.ToolCall.ID+" "+p.ToolCall.Name+" "+p.ToolCall.Arguments)
			case llm.PartToolResult:
				got = append(got, "result "+p.ToolResult.CallID+" "+p.ToolResult.Name+" "+p.ToolResult.Content[0].Text+" "+map[bool]string{true: "error", false: "ok"}[p.ToolResult.IsError])
			case llm.PartText:
				got = append(got, string(m.Role)+" "+p.Text)
			}
		}
	}
	want := []string{
		"user go",
		`call call_0 f {"n":1}`, "call call_1 g {}", `call call_2 f {"n":2}`, "call own h {}",
		`result call_0 f {"r":1} ok`, "result own h boom error", `result call_2 f {"r":2} ok`,
		"user and?", "result call_1 g {} ok", "result call_4 zzz stray ok",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestConversationTypeError(t *testing.T) {
	r, err := ParseRequest(llm.Chat, []byte(`{"contents":[{"parts":[{"text":5}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Conversation()
	var bad *llm.BadRequestError
	if !errors.As(err, &bad) || bad.Param != "contents.parts.text" || bad.Message != "contents.parts.text must be a string, not a JSON number" {
		t.Errorf("got %#v", err)
	}
}
