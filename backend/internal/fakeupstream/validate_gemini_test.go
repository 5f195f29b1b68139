package fakeupstream

import (
	"net/http"
	"strings"
	"testing"
)

// gemValid are bodies the real Gemini API accepts.
var gemValid = map[string]string{
	"minimal":      gemBody,
	"no role":      `{"contents":[{"parts":[{"text":"hi"}]}]}`,
	"snake case":   `{"contents":[{"role":"user","parts":[{"text":"look"},{"inline_data":{"mime_type":"image/png","data":"iVBORw0KGgo="}}]}],"system_instruction":{"parts":[{"text":"Be terse."}]},"generation_config":{"max_output_tokens":64}}`,
	"config":       `{"contents":[{"role":"user","parts":[{"text":"hi"},{"fileData":{"mimeType":"application/pdf","fileUri":"https://generativelanguage.googleapis.com/v1beta/files/abc"}}]}],"systemInstruction":{"role":"system","parts":[{"text":"Be terse."}]},"generationConfig":{"temperature":0.2,"maxOutputTokens":64,"stopSequences":["END"],"thinkingConfig":{"thinkingBudget":0}},"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`,
	"url-safe b64": `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"-_-_"}}]}]}`,
	"tool round trip": `{"contents":[
		{"role":"user","parts":[{"text":"Weather in Paris and Lyon?"}]},
		{"role":"model","parts":[{"thought":true,"text":"thinking"},{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"},{"functionCall":{"name":"get_weather","args":{"city":"Lyon"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp":18}}},{"functionResponse":{"name":"get_weather","response":{"temp":20}}}]},
		{"role":"model","parts":[{"text":"18 and 20"}]},
		{"role":"user","parts":[{"text":"thanks"}]}],
		"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City","nullable":true},"units":{"type":"STRING","enum":["c","f"],"format":"enum"},"days":{"type":"array","items":{"type":"integer","minimum":1,"maximum":7},"maxItems":"3"},"when":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"required":["city"],"propertyOrdering":["city","units"]}}]},{"googleSearch":{}}],
		"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}`,
	"json schema parameters": `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"function_declarations":[{"name":"f","parametersJsonSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false}}]}]}`,
}

func TestGeminiValidBodies(t *testing.T) {
	s, c := newServer(t)
	for name, body := range gemValid {
		resp := postWire(t, c, gemURL(s, "g", "generateContent"), body)
		got := readBody(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d: %s", name, resp.StatusCode, got)
		}
	}
}

func TestGeminiValidation(t *testing.T) {
	contents := func(c ...string) string { return `{"contents":[` + strings.Join(c, ",") + `]}` }
	parts := func(p ...string) string { return contents(`{"role":"user","parts":[` + strings.Join(p, ",") + `]}`) }
	const user = `{"role":"user","parts":[{"text":"hi"}]}`
	call := `{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]}`
	answer := func(names ...string) string {
		var ps []string
		for _, n := range names {
			ps = append(ps, `{"functionResponse":{"name":"`+n+`","response":{}}}`)
		}
		return `{"role":"user","parts":[` + strings.Join(ps, ",") + `]}`
	}
	tool := func(params string) string {
		return `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"f","parameters":` + params + `}]}]}`
	}
	for _, tc := range []struct {
		name, body, field, want string
	}{
		{"openai body", `{"model":"g","messages":[{"role":"user","content":"hi"}]}`, "", `Invalid JSON payload received. Unknown name "messages": Cannot find field.`},
		{"no contents", `{}`, "contents", "* GenerateContentRequest.contents: contents is not specified"},
		{"empty contents", `{"contents":[]}`, "contents", "contents is not specified"},
		{"contents object", `{"contents":{"parts":[{"text":"x"}]}}`, "contents", "Invalid value at 'contents'"},
		{"assistant role", contents(`{"role":"assistant","parts":[{"text":"x"}]}`), "contents[0].role", "Please use a valid role: user, model."},
		{"system role", contents(`{"role":"system","parts":[{"text":"x"}]}`), "contents[0].role", "Please use a valid role: user, model."},
		{"function role", contents(user, `{"role":"function","parts":[{"text":"x"}]}`), "contents[1].role", "Please use a valid role: user, model."},
		{"content key", contents(`{"role":"user","content":"x"}`), "contents[0]", `Unknown name "content" at 'contents[0]': Cannot find field.`},
		{"no parts", contents(`{"role":"user"}`), "contents[0].parts", "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty."},
		{"empty parts", contents(user, `{"role":"model","parts":[]}`), "contents[1].parts", "contents[1].parts: contents.parts must not be empty."},
		{"empty part", parts(`{}`), "contents[0].parts[0].data", "* GenerateContentRequest.contents[0].parts[0].data: required oneof field 'data' must have one initialized field"},
		{"empty text", parts(`{"text":""}`), "contents[0].parts[0].data", "required oneof field 'data' must have one initialized field"},
		{"thought alone", parts(`{"thought":true}`), "contents[0].parts[0].data", "required oneof field 'data'"},
		{"two data", parts(`{"text":"x","inlineData":{"mimeType":"image/png","data":"aGk="}}`), "contents[0].parts[0]", "oneof field 'data' is already set. Cannot set 'inlineData'"},
		{"openai part", parts(`{"type":"text","text":"x"}`), "contents[0].parts[0]", `Unknown name "type" at 'contents[0].parts[0]': Cannot find field.`},
		{"text number", parts(`{"text":5}`), "contents[0].parts[0].text", "Invalid value at 'contents[0].parts[0].text'"},
		{"no mime type", parts(`{"inlineData":{"data":"aGk="}}`), "contents[0].parts[0].inline_data.mime_type", "mime_type is not specified"},
		{"no data", parts(`{"inlineData":{"mimeType":"image/png"}}`), "contents[0].parts[0].inline_data.data", "data is not specified"},
		{"bad base64", parts(`{"inlineData":{"mimeType":"image/png","data":"data:image/png;base64,aGk="}}`), "contents[0].parts[0].inline_data.data", "Invalid value at 'contents[0].parts[0].inline_data.data' (TYPE_BYTES)"},
		{"blob extra", parts(`{"inlineData":{"mimeType":"image/png","data":"aGk=","url":"x"}}`), "contents[0].parts[0].inline_data", `Unknown name "url"`},
		{"no file uri", parts(`{"fileData":{"mimeType":"image/png"}}`), "contents[0].parts[0].file_data.file_uri", "file_uri is not specified"},
		{"call no name", contents(user, `{"role":"model","parts":[{"functionCall":{"args":{}}}]}`), "contents[1].parts[0].function_call.name", "function_call.name: Name cannot be empty."},
		{"call string args", contents(user, `{"role":"model","parts":[{"functionCall":{"name":"f","args":"{}"}}]}`), "contents[1].parts[0].function_call.args", "Invalid value at 'contents[1].parts[0].function_call.args'"},
		{"response no call", contents(user, answer("get_weather")), "contents[1]", "Please ensure that function response turn comes immediately after a function call turn."},
		{"response first", contents(answer("get_weather")), "contents[0]", "function response turn comes immediately after a function call turn"},
		{"response after text", contents(user, `{"role":"model","parts":[{"text":"ok"}]}`, answer("get_weather")), "contents[2]", "function response turn comes immediately after a function call turn"},
		{"response count", contents(user, call, answer("get_weather", "get_weather")), "contents[2]", "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."},
		{"response name", contents(user, call, answer("get_time")), "contents[2]", `no call is named "get_time"`},
		{"call first", contents(call), "contents[0]", "Please ensure that function call turn comes immediately after a user turn or after a function response turn."},
		{"call after model", contents(user, `{"role":"model","parts":[{"text":"ok"}]}`, call), "contents[2]", "function call turn comes immediately after a user turn"},
		{"system parts", `{"contents":[` + user + `],"systemInstruction":{"parts":[{"content":"x"}]}}`, "system_instruction.parts[0]", `Unknown name "content" at 'system_instruction.parts[0]'`},
		{"openai tool", `{"contents":[` + user + `],"tools":[{"type":"function","function":{"name":"f"}}]}`, "tools[0]", `Unknown name "type" at 'tools[0]': Cannot find field.`},
		{"declaration no name", `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"description":"x"}]}]}`, "tools[0].function_declarations[0].name", "* GenerateContentRequest.tools[0].function_declarations[0].name: Name cannot be empty."},
		{"declaration bad name", `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"get weather"}]}]}`, "tools[0].function_declarations[0].name", "Invalid function name."},
		{"declaration strict", `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"f","strict":true}]}]}`, "tools[0].function_declarations[0]", `Unknown name "strict"`},
		{"additionalProperties", tool(`{"type":"object","properties":{},"additionalProperties":false}`), "tools[0].function_declarations[0].parameters", `Invalid JSON payload received. Unknown name "additionalProperties" at 'tools[0].function_declarations[0].parameters': Cannot find field.`},
		{"$schema", tool(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`), "tools[0].function_declarations[0].parameters", `Unknown name "$schema" at 'tools[0].function_declarations[0].parameters'`},
		{"nested additionalProperties", tool(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","additionalProperties":{"type":"string"}}}}`), "tools[0].function_declarations[0].parameters.properties[1].value", `Unknown name "additionalProperties" at 'tools[0].function_declarations[0].parameters.properties[1].value'`},
		{"items const", tool(`{"type":"array","items":{"const":"x"}}`), "tools[0].function_declarations[0].parameters.items", `Unknown name "const" at 'tools[0].function_declarations[0].parameters.items'`},
		{"anyOf oneOf", tool(`{"anyOf":[{"oneOf":[{"type":"string"}]}]}`), "tools[0].function_declarations[0].parameters.any_of[0]", `Unknown name "oneOf" at 'tools[0].function_declarations[0].parameters.any_of[0]'`},
		{"$ref", tool(`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{}}`), "tools[0].function_declarations[0].parameters", `Unknown name "$defs"`},
		{"exclusiveMinimum", tool(`{"type":"integer","exclusiveMinimum":0}`), "tools[0].function_declarations[0].parameters", `Unknown name "exclusiveMinimum"`},
		{"type list", tool(`{"type":"object","properties":{"a":{"type":["string","null"]}}}`), "tools[0].function_declarations[0].parameters.properties[0].value.type", "Invalid value at 'tools[0].function_declarations[0].parameters.properties[0].value.type'"},
		{"type unknown", tool(`{"type":"any"}`), "tools[0].function_declarations[0].parameters.type", "Invalid value at 'tools[0].function_declarations[0].parameters.type'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			field, msg := validateGemini(mustObject(t, tc.body))
			if !strings.Contains(msg, tc.want) || field != tc.field {
				t.Errorf("got field %q message %q, want field %q and %q", field, msg, tc.field, tc.want)
			}
		})
	}
}

// gemBadRequest is a Gemini error with google.rpc.BadRequest details.
type gemBadRequest struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type            string `json:"@type"`
			FieldViolations []struct {
				Field       string `json:"field"`
				Description string `json:"description"`
			} `json:"fieldViolations"`
		} `json:"details"`
	} `json:"error"`
}

func TestGeminiValidationEnvelope(t *testing.T) {
	s, c := newServer(t)
	resp := postWire(t, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"object","additionalProperties":false}}]}]}`)
	body := readBody(t, resp)
	e := decode[gemBadRequest](t, body)
	if resp.StatusCode != 400 || e.Error.Code != 400 || e.Error.Status != "INVALID_ARGUMENT" || !strings.Contains(e.Error.Message, `Unknown name "additionalProperties"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if len(e.Error.Details) != 1 || e.Error.Details[0].Type != "type.googleapis.com/google.rpc.BadRequest" || e.Error.Details[0].FieldViolations[0].Field != "tools[0].function_declarations[0].parameters" {
		t.Errorf("details %s", body)
	}
	if resp.Header.Get("Content-Type") != "application/json; charset=UTF-8" {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
}
