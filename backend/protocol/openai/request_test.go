package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"freelane/backend/llm"
)

const userMsg = `[{"role":"user","content":"hi"}]`

func TestParseRequestValid(t *testing.T) {
	tests := []struct {
		name    string
		ep      llm.Endpoint
		body    string
		model   string
		stream  bool
		usage   bool
		options bool
	}{
		{"chat minimal", llm.Chat, `{"model":"auto","messages":` + userMsg + `}`, "auto", false, false, false},
		{"chat stream", llm.Chat, `{"model":"auto","stream":true,"messages":` + userMsg + `}`, "auto", true, false, false},
		{"chat stream false", llm.Chat, `{"model":"auto","stream":false,"messages":` + userMsg + `}`, "auto", false, false, false},
		{"chat stream null", llm.Chat, `{"model":"auto","stream":null,"messages":` + userMsg + `}`, "auto", false, false, false},
		{"chat stream with usage", llm.Chat, `{"model":"auto","stream":true,"stream_options":{"include_usage":true},"messages":` + userMsg + `}`, "auto", true, true, true},
		{"chat stream options without usage", llm.Chat, `{"stream_options":{"include_usage":false},"stream":true,"model":"auto","messages":` + userMsg + `}`, "auto", true, false, true},
		{"chat stream options empty", llm.Chat, `{"stream_options":{},"stream":true,"model":"auto","messages":` + userMsg + `}`, "auto", true, false, true},
		{"chat stream options null", llm.Chat, `{"stream_options":null,"stream":true,"model":"auto","messages":` + userMsg + `}`, "auto", true, false, false},
		{"chat provider/model", llm.Chat, `{"model":"openrouter/meta-llama/llama-3.3-70b:free","messages":` + userMsg + `}`, "openrouter/meta-llama/llama-3.3-70b:free", false, false, false},
		{"chat escaped model", llm.Chat, `{"model":"au\u0074o","messages":` + userMsg + `}`, "auto", false, false, false},
		{"chat whitespace", llm.Chat, " \r\n\t{ \"messages\" : " + userMsg + " ,\n\"model\"\t:\"m\" }\n\n", "m", false, false, false},
		{"chat with tool and tool-call messages", llm.Chat, `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`, "m", false, false, false},
		{"completions string prompt", llm.Completions, `{"model":"m","prompt":"Once upon"}`, "m", false, false, false},
		{"completions empty prompt", llm.Completions, `{"model":"m","prompt":""}`, "m", false, false, false},
		{"completions array prompt stream", llm.Completions, `{"model":"m","prompt":["a","b"],"stream":true}`, "m", true, false, false},
		{"embeddings string", llm.Embeddings, `{"model":"m","input":"text"}`, "m", false, false, false},
		{"embeddings array", llm.Embeddings, `{"input":["a","b"],"model":"m","encoding_format":"float"}`, "m", false, false, false},
		{"embeddings stream false", llm.Embeddings, `{"input":"a","model":"m","stream":false}`, "m", false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRequest(tc.ep, []byte(tc.body))
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			if r.Endpoint != tc.ep || r.Model != tc.model || r.Stream != tc.stream || r.WantsUsage != tc.usage || r.Source().(*source).hasStreamOptions != tc.options {
				t.Errorf("got endpoint %s model %q stream %v usage %v options %v, want %s %q %v %v %v",
					r.Endpoint, r.Model, r.Stream, r.WantsUsage, r.Source().(*source).hasStreamOptions, tc.ep, tc.model, tc.stream, tc.usage, tc.options)
			}
			if r.Size() != len(tc.body) {
				t.Errorf("Size = %d, want %d", r.Size(), len(tc.body))
			}
		})
	}
}

func TestParseRequestErrors(t *testing.T) {
	tests := []struct {
		name  string
		ep    llm.Endpoint
		body  string
		param string
		msg   string // substring of the message
	}{
		{"empty", llm.Chat, ``, "", "not valid JSON"},
		{"not JSON", llm.Chat, `model=auto`, "", "not valid JSON"},
		{"array", llm.Chat, `[{"model":"auto"}]`, "", "must be a JSON object"},
		{"string", llm.Chat, `"auto"`, "", "must be a JSON object"},
		{"number", llm.Chat, `42`, "", "must be a JSON object"},
		{"null", llm.Chat, `null`, "", "must be a JSON object"},
		{"truncated", llm.Chat, `{"model":"auto","messages":`, "messages", "not valid JSON"},
		{"truncated after value", llm.Chat, `{"model":"auto"`, "", "not valid JSON"},
		{"missing comma", llm.Chat, `{"model":"auto" "messages":[]}`, "", "not valid JSON"},
		{"trailing comma", llm.Chat, `{"model":"auto","messages":` + userMsg + `,}`, "", "not valid JSON"},
		{"bad value inside a field", llm.Chat, `{"model":"auto","messages":[1,]}`, "messages", "not valid JSON"},
		{"trailing object", llm.Chat, `{"model":"auto","messages":` + userMsg + `} {}`, "", "data after the JSON object"},
		{"trailing garbage", llm.Chat, `{"model":"auto","messages":` + userMsg + `}x`, "", "data after the JSON object"},
		{"two bodies", llm.Chat, `{"model":"auto","messages":` + userMsg + "}\n" + `{"model":"auto","messages":` + userMsg + `}`, "", "data after the JSON object"},
		{"model missing", llm.Chat, `{"messages":` + userMsg + `}`, "model", "model is required"},
		{"model empty", llm.Chat, `{"model":"","messages":` + userMsg + `}`, "model", "model is required"},
		{"model null", llm.Chat, `{"model":null,"messages":` + userMsg + `}`, "model", "model is required"},
		{"model number", llm.Chat, `{"model":4,"messages":` + userMsg + `}`, "model", "model must be a string"},
		{"model object", llm.Chat, `{"model":{"id":"x"},"messages":` + userMsg + `}`, "model", "model must be a string"},
		{"stream not bool", llm.Chat, `{"model":"m","stream":"yes","messages":` + userMsg + `}`, "stream", "stream must be true or false"},
		{"stream_options not object", llm.Chat, `{"model":"m","stream_options":"usage","messages":` + userMsg + `}`, "stream_options", "stream_options"},
		{"messages missing", llm.Chat, `{"model":"m"}`, "messages", "messages is required"},
		{"messages null", llm.Chat, `{"model":"m","messages":null}`, "messages", "messages is required"},
		{"messages empty", llm.Chat, `{"model":"m","messages":[]}`, "messages", "at least one message"},
		{"messages object", llm.Chat, `{"model":"m","messages":{"role":"user"}}`, "messages", "must be an array"},
		{"messages string", llm.Chat, `{"model":"m","messages":"hi"}`, "messages", "must be an array"},
		{"messages of numbers", llm.Chat, `{"model":"m","messages":[1]}`, "messages", "must be an array of message objects"},
		{"role missing", llm.Chat, `{"model":"m","messages":[{"content":"hi"}]}`, "messages[0].role", "messages[0].role is required"},
		{"role empty in second", llm.Chat, `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"","content":"b"}]}`, "messages[1].role", "messages[1].role is required"},
		{"role null message", llm.Chat, `{"model":"m","messages":[{"role":"user"},null]}`, "messages[1].role", "messages[1].role is required"},
		{"prompt missing", llm.Completions, `{"model":"m","messages":` + userMsg + `}`, "prompt", "prompt is required"},
		{"prompt null", llm.Completions, `{"model":"m","prompt":null}`, "prompt", "prompt is required"},
		{"input missing", llm.Embeddings, `{"model":"m","prompt":"x"}`, "input", "input is required"},
		{"embeddings stream", llm.Embeddings, `{"model":"m","input":"x","stream":true}`, "stream", "cannot be streamed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRequest(tc.ep, []byte(tc.body))
			if err == nil {
				t.Fatalf("ParseRequest accepted %q: %+v", tc.body, r)
			}
			var bre *llm.BadRequestError
			if !errors.As(err, &bre) {
				t.Fatalf("error %T %v is not a *llm.BadRequestError", err, err)
			}
			if bre.Param != tc.param {
				t.Errorf("Param = %q, want %q (message %q)", bre.Param, tc.param, bre.Message)
			}
			if !strings.Contains(bre.Message, tc.msg) {
				t.Errorf("Message = %q, want it to contain %q", bre.Message, tc.msg)
			}
			if err.Error() != bre.Message {
				t.Errorf("Error() = %q, want the message", err.Error())
			}
		})
	}
}

func mustParse(t testing.TB, ep llm.Endpoint, body string) *llm.Request {
	t.Helper()
	r, err := ParseRequest(ep, []byte(body))
	if err != nil {
		t.Fatalf("ParseRequest(%q): %v", body, err)
	}
	return r
}

// quote is s as encoding/json writes it without HTML escaping, as the
// model's value in a body is written.
func quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// TestBodyReplacesOnlyTheModel checks Body byte for byte: every body is a
// template where MODEL stands for the model value.
func TestBodyReplacesOnlyTheModel(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"pick","description":"Pick a \"model\": any","parameters":{"type":"object","properties":{"model":{"type":"string","enum":["auto","x"]}},"required":["model"]}}}]`
	tests := []struct {
		name     string
		ep       llm.Endpoint
		tmpl     string
		in, out  string // model values, unquoted
		addUsage bool
	}{
		{"compact", llm.Chat, `{"model":MODEL,"messages":` + userMsg + `}`, "auto", "llama-3.3-70b-versatile", false},
		{"whitespace everywhere", llm.Chat, " \n{\n\t\"messages\" :\t" + userMsg + " ,\r\n  \"model\"   :   MODEL   ,\n \"temperature\" : 0.20 , \"n\":1 }\n ", "auto", "m", false},
		{"unicode", llm.Chat, `{"messages":[{"role":"user","content":"你好 🙂 \u00e9"}],"model":MODEL,"n":1}`, "模型", "qwen-max", false},
		{"escaped model in", llm.Chat, `{"model":MODEL,"messages":` + userMsg + `}`, "a\"uto\\", "b", false},
		{"escapes needed out", llm.Chat, `{"model":MODEL,"messages":` + userMsg + `}`, "auto", "we\"ird\\mo<del>&\n", false},
		{"model id with slashes", llm.Chat, `{"model":MODEL,"messages":` + userMsg + `}`, "openrouter/meta-llama/llama-3.3-70b:free", "meta-llama/llama-3.3-70b:free", false},
		{"model text inside strings", llm.Chat, `{"messages":[{"role":"user","content":"{\"model\":\"auto\"}"}],"model":MODEL}`, "auto", "m", false},
		{"nested model keys are kept", llm.Chat, `{"messages":` + userMsg + `,` + tools + `,"metadata":{"model":"auto"},"model":MODEL,"response_format":{"type":"json_schema","json_schema":{"name":"model","schema":{"properties":{"model":{"const":"auto"}}}}}}`, "auto", "gpt-4o-mini", false},
		{"model last with nested model first", llm.Chat, `{"metadata":{"model":"auto"},"messages":` + userMsg + `,"model":MODEL}`, "auto", "x", true},
		{"completions", llm.Completions, `{"prompt":"model: auto","model":MODEL,"max_tokens":5}`, "auto", "m", true},
		{"embeddings", llm.Embeddings, `{"input":["model"],"model":MODEL}`, "auto", "text-embedding-3-small", true},
		{"not a stream: no usage", llm.Chat, `{"model":MODEL,"stream":false,"messages":` + userMsg + `}`, "auto", "m", true},
		{"stream without addUsage", llm.Chat, `{"model":MODEL,"stream":true,"messages":` + userMsg + `}`, "auto", "m", false},
		{"client stream_options kept", llm.Chat, `{"model":MODEL,"stream":true,"stream_options":{"include_usage":false},"messages":` + userMsg + `}`, "auto", "m", true},
		{"client stream_options with usage kept", llm.Chat, `{"stream":true,"stream_options":{"include_usage":true},"messages":` + userMsg + `,"model":MODEL}`, "auto", "m", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Replace(tc.tmpl, "MODEL", quote(tc.in), 1)
			want := strings.Replace(tc.tmpl, "MODEL", quote(tc.out), 1)
			inBytes := []byte(in)
			r, err := ParseRequest(tc.ep, inBytes)
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			if r.Model != tc.in {
				t.Fatalf("Model = %q, want %q", r.Model, tc.in)
			}
			got := r.Body(tc.out, llm.Edits{AddUsage: tc.addUsage})
			if string(got) != want {
				t.Errorf("Body:\n got %s\nwant %s", got, want)
			}
			if !json.Valid(got) {
				t.Errorf("Body is not valid JSON: %s", got)
			}
			if string(inBytes) != in {
				t.Errorf("Body changed the client's bytes: %s", inBytes)
			}
			// A second backend gets its own body from the same request.
			again := r.Body("other", llm.Edits{AddUsage: tc.addUsage})
			if want2 := strings.Replace(tc.tmpl, "MODEL", `"other"`, 1); string(again) != want2 {
				t.Errorf("second Body:\n got %s\nwant %s", again, want2)
			}
			if string(got) != want {
				t.Errorf("first Body changed by the second call: %s", got)
			}
		})
	}
}

func TestBodyInjectsUsageOnlyForStreamsWithoutOptions(t *testing.T) {
	const field = `"stream_options":{"include_usage":true},`
	tests := []struct {
		name     string
		body     string
		addUsage bool
		inject   bool
	}{
		{"stream", `{"model":"auto","stream":true,"messages":` + userMsg + `}`, true, true},
		{"stream leading whitespace", "\n  {  \"stream\": true, \"model\": \"auto\", \"messages\": " + userMsg + "}", true, true},
		{"stream options null", `{"stream_options":null,"model":"auto","stream":true,"messages":` + userMsg + `}`, true, true},
		{"stream not asked", `{"model":"auto","stream":true,"messages":` + userMsg + `}`, false, false},
		{"no stream", `{"model":"auto","messages":` + userMsg + `}`, true, false},
		{"stream false", `{"model":"auto","stream":false,"messages":` + userMsg + `}`, true, false},
		{"client options", `{"model":"auto","stream":true,"stream_options":{"include_usage":false},"messages":` + userMsg + `}`, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustParse(t, llm.Chat, tc.body)
			got := r.Body("auto", llm.Edits{AddUsage: tc.addUsage})
			want := tc.body
			switch {
			case tc.inject && strings.Contains(tc.body, `"stream_options":null`):
				// A client's explicit null is replaced, not shadowed.
				want = strings.Replace(tc.body, `"stream_options":null`, `"stream_options":{"include_usage":true}`, 1)
			case tc.inject:
				i := strings.IndexByte(tc.body, '{') + 1
				want = tc.body[:i] + field + tc.body[i:]
			}
			if string(got) != want {
				t.Errorf("Body:\n got %s\nwant %s", got, want)
			}
			if !json.Valid(got) {
				t.Fatalf("Body is not valid JSON: %s", got)
			}
			// The upstream must see include_usage exactly when injected or
			// when the client asked for it.
			re, err := ParseRequest(llm.Chat, got)
			if err != nil {
				t.Fatalf("reparse: %v", err)
			}
			if wantUsage := tc.inject || r.WantsUsage; re.WantsUsage != wantUsage {
				t.Errorf("upstream include_usage = %v, want %v", re.WantsUsage, wantUsage)
			}
			if r.WantsUsage && tc.inject {
				t.Error("client wants usage although it did not ask")
			}
		})
	}
}

// topLevel decodes a JSON object into its fields with compacted values.
func topLevel(t *testing.T, b []byte) map[string]string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%q", err, b)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			t.Fatalf("compact %q: %v", k, err)
		}
		out[k] = buf.String()
	}
	return out
}

func FuzzParseRequest(f *testing.F) {
	f.Add(0, []byte(`{"model":"auto","messages":[{"role":"user","content":"hi"}]}`))
	f.Add(0, []byte(`{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	f.Add(0, []byte(`{"model":"auto","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`))
	f.Add(0, []byte(`{"stream_options":null,"stream":true,"messages":[{"role":"user"}],"model":"a","model":null}`))
	f.Add(0, []byte(" {\"messages\" : [ {\"role\":\"user\",\"content\":\"\\u00e9 \\\"q\\\"\"} ] , \"model\" : \"m\\/x\" }\n"))
	f.Add(0, []byte(`{"model":"auto","messages":[{"role":"user"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"model":{"type":"string"}}}}}]}`))
	f.Add(1, []byte(`{"model":"m","prompt":"x","stream":true}`))
	f.Add(1, []byte(`{"model":"m","prompt":["a",1,null],"suffix":null}`))
	f.Add(2, []byte(`{"model":"m","input":["a","b"]}`))
	f.Add(2, []byte(`{"model":"m","input":"a","stream":true}`))
	f.Add(0, []byte(`{"model":"a","messages":[{"role":"user"}]} {}`))
	f.Add(0, []byte(`[]`))
	f.Add(0, bigChatBody())
	eps := []llm.Endpoint{llm.Chat, llm.Completions, llm.Embeddings}
	f.Fuzz(func(t *testing.T, ep int, body []byte) {
		endpoint := eps[uint(ep)%uint(len(eps))]
		in := bytes.Clone(body)
		r, err := ParseRequest(endpoint, body)
		if err != nil {
			var bre *llm.BadRequestError
			if !errors.As(err, &bre) {
				t.Fatalf("error %T is not a *llm.BadRequestError: %v", err, err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("ParseRequest accepted invalid JSON %q", body)
		}
		if r.Model == "" {
			t.Fatal("accepted a request without a model")
		}
		for _, addUsage := range []bool{true, false} {
			out := r.Body("x", llm.Edits{AddUsage: addUsage})
			if !json.Valid(out) {
				t.Fatalf("Body(%v) is not valid JSON:\n in %q\nout %q", addUsage, body, out)
			}
			got := topLevel(t, out)
			want := topLevel(t, in)
			want["model"] = `"x"`
			// The client's end-user identifiers never go upstream as
			// they are; with no pseudonym in the edits they go.
			delete(want, "user")
			delete(want, "safety_identifier")
			if addUsage && r.Stream && !r.Source().(*source).hasStreamOptions {
				if _, ok := want["stream_options"]; !ok {
					want["stream_options"] = `{"include_usage":true}`
				}
			}
			if !maps.Equal(got, want) {
				keys := slices.Sorted(maps.Keys(got))
				t.Fatalf("Body(%v) changed more than the model:\n in %q\nout %q\nkeys %q\n got %q\nwant %q", addUsage, body, out, keys, got, want)
			}
		}
		if !bytes.Equal(body, in) {
			t.Fatal("ParseRequest or Body modified the input")
		}
	})
}

// bigChatBody is a realistic chat request of about 4 KB: a system prompt,
// a short conversation with a tool call, and three tools with schemas, the
// shape an IDE agent sends.
func bigChatBody() []byte {
	type fn struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  any    `json:"parameters"`
	}
	tool := func(name, desc string, props map[string]any, req ...string) map[string]any {
		return map[string]any{"type": "function", "function": fn{name, desc, map[string]any{
			"type": "object", "properties": props, "required": req, "additionalProperties": false,
		}}}
	}
	str := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	body := map[string]any{
		"model":       "auto",
		"temperature": 0.2,
		"max_tokens":  2048,
		"stream":      true,
		"messages": []any{
			map[string]any{"role": "system", "content": "You are a careful senior software engineer working inside the user's editor. " +
				"Answer concisely, show code in fenced blocks, prefer small focused diffs, explain trade-offs briefly, " +
				"and never invent APIs: when unsure, read the file first with the tools you have. " +
				"The workspace is a Go module with a Svelte frontend; tests run with go test ./... and npm test."},
			map[string]any{"role": "user", "content": "The router sometimes returns 502 when one provider is rate limited. Can you look at backend/router/router.go and explain the failover loop?"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_8f2b1c", "type": "function",
				"function": map[string]any{"name": "read_file", "arguments": `{"path":"backend/router/router.go","start_line":120,"end_line":220}`},
			}}},
			map[string]any{"role": "tool", "tool_call_id": "call_8f2b1c", "content": strings.Repeat("// run is the failover loop shared by streams and plain requests.\n", 12)},
			map[string]any{"role": "user", "content": "Thanks. Now suggest a test that shows the 429 case, with table-driven cases — and explain «why» in one paragraph. 谢谢!"},
		},
		"tools": []any{
			tool("read_file", "Read a range of lines from a file in the workspace.", map[string]any{
				"path": str("Path relative to the workspace root."), "start_line": map[string]any{"type": "integer", "minimum": 1},
				"end_line": map[string]any{"type": "integer", "minimum": 1},
			}, "path"),
			tool("search_code", "Search the workspace for a regular expression and return matching lines with context.", map[string]any{
				"query": str("RE2 regular expression."), "glob": str("Optional file glob such as **/*.go."),
				"context_lines": map[string]any{"type": "integer", "default": 2},
			}, "query"),
			tool("apply_patch", "Apply a unified diff to the workspace. Fails if the patch does not apply cleanly.", map[string]any{
				"patch": str("A unified diff with a/ and b/ prefixes."), "dry_run": map[string]any{"type": "boolean"},
				"model": str("Not the request model: a nested key that must never be rewritten."),
			}, "patch"),
		},
		"tool_choice": "auto",
		"user":        "ide-plugin/1.4.2",
	}
	b, err := json.MarshalIndent(body, "", " ")
	if err != nil {
		panic(err)
	}
	return b
}

func TestBigChatBodyIsRealistic(t *testing.T) {
	b := bigChatBody()
	if len(b) < 3500 || len(b) > 5000 {
		t.Fatalf("benchmark body is %d bytes, want about 4 KB", len(b))
	}
	r := mustParse(t, llm.Chat, string(b))
	out := r.Body("groq/llama-3.3-70b-versatile", llm.Edits{AddUsage: true})
	if !json.Valid(out) {
		t.Fatal("rewritten body is not valid JSON")
	}
	if got := topLevel(t, out)["model"]; got != `"groq/llama-3.3-70b-versatile"` {
		t.Fatalf("model = %s", got)
	}
	if !bytes.Contains(out, []byte(`"model": {`)) {
		t.Fatal("the nested model property of a tool was rewritten")
	}
}

func BenchmarkParseRequest(b *testing.B) {
	body := bigChatBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRequest(llm.Chat, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBody(b *testing.B) {
	body := bigChatBody()
	r, err := ParseRequest(llm.Chat, body)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if out := r.Body("llama-3.3-70b-versatile", llm.Edits{AddUsage: true}); len(out) == 0 {
			b.Fatal("empty body")
		}
	}
}
