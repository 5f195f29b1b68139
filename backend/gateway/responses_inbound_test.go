package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"freelane/backend/internal/fakeupstream"
)

// OpenAI's Go SDK calls FreeLane's /v1/responses, the API Codex CLI and the
// openai SDKs' newer code use: the chain behind it is the mixed one of an
// Anthropic, a Gemini and an OpenAI-compatible backend, none of which
// speaks the Responses API, so every answer arrives translated.

func helloResponse(model string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")}}
}

var weatherFunction = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
	Name: "get_weather", Description: openai.String("The weather in a city"), Strict: openai.Bool(true),
	Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required": []string{"city"}, "additionalProperties": false},
}}

// streamed is what a client saw of a Responses stream.
type streamed struct {
	types     []string
	text      string
	items     []responses.ResponseOutputItemUnion
	completed *responses.Response
	args      string
}

func collect(t *testing.T, s interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
}) (streamed, error) {
	t.Helper()
	var out streamed
	var seq int64
	for s.Next() {
		ev := s.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("event %s has sequence_number %d, want %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq++
		out.types = append(out.types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			out.text += ev.Delta
		case "response.function_call_arguments.delta":
			out.args += ev.Delta
		case "response.output_item.done":
			out.items = append(out.items, ev.Item)
		case "response.completed":
			r := ev.Response
			out.completed = &r
		}
	}
	return out, s.Err()
}

func TestResponsesClientsAreServedByEveryDialect(t *testing.T) {
	for _, c := range []struct {
		name   string
		faults []string
		served string
	}{
		{"from anthropic", nil, "claude-x"},
		{"from gemini", []string{"claude-x"}, "gemini-y"},
		{"from openai", []string{"claude-x", "gemini-y"}, "llama-z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := mixedEnv(t)
			for _, m := range c.faults {
				e.up.Set(m, fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503},
					fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503})
			}
			cl := sdkClient(e)
			ctx := context.Background()

			var raw *http.Response
			r, err := cl.Responses.New(ctx, helloResponse("mixed"), option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.OutputText(); got != "Hello from "+c.served {
				t.Fatalf("output text %q", got)
			}
			if !strings.HasPrefix(r.ID, "resp_") || r.Status != responses.ResponseStatusCompleted || r.Object != "response" ||
				r.Usage.InputTokens == 0 || r.Usage.OutputTokens == 0 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens {
				t.Errorf("response %s status %q usage %+v", r.ID, r.Status, r.Usage)
			}
			if !strings.HasSuffix(raw.Header.Get("X-FreeLane-Backend"), "/"+c.served) {
				t.Errorf("backend %q", raw.Header.Get("X-FreeLane-Backend"))
			}

			got, err := collect(t, cl.Responses.NewStreaming(ctx, helloResponse("mixed")))
			if err != nil {
				t.Fatal(err)
			}
			if got.text != "Hello from "+c.served {
				t.Errorf("streamed text %q", got.text)
			}
			want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
			if len(got.types) < 8 || strings.Join(got.types[:4], " ") != strings.Join(want, " ") ||
				got.types[len(got.types)-1] != "response.completed" {
				t.Fatalf("events %v", got.types)
			}
			tail := strings.Join(got.types[len(got.types)-4:], " ")
			if tail != "response.output_text.done response.content_part.done response.output_item.done response.completed" {
				t.Errorf("closing events %s", tail)
			}
			if cr := got.completed; cr == nil || cr.OutputText() != "Hello from "+c.served || cr.Usage.OutputTokens == 0 ||
				cr.Status != responses.ResponseStatusCompleted {
				t.Errorf("response.completed %+v", got.completed)
			}
		})
	}
}

// A function tool is called, streamed and not, and its output answered on
// the next turn, from backends of every dialect.
func TestResponsesToolCallRound(t *testing.T) {
	for _, served := range []string{"claude-x", "gemini-y", "llama-z"} {
		t.Run(served, func(t *testing.T) {
			e := mixedEnv(t)
			for _, m := range []string{"claude-x", "gemini-y"} {
				if m == served {
					break
				}
				e.up.Set(m, fakeupstream.Behavior{Status: 503})
			}
			cl := sdkClient(e)
			ctx := context.Background()
			params := helloResponse("mixed")
			params.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris?")}
			params.Tools = []responses.ToolUnionParam{weatherFunction}

			e.up.Set(served, fakeupstream.Behavior{ToolCall: true}, fakeupstream.Behavior{ToolCall: true}, fakeupstream.Behavior{})
			r, err := cl.Responses.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			var call responses.ResponseOutputItemUnion
			for _, it := range r.Output {
				if it.Type == "function_call" {
					call = it
				}
			}
			if call.Name != "get_weather" || call.Arguments.OfString != `{"city":"Paris"}` || call.CallID == "" || !strings.HasPrefix(call.ID, "fc_") {
				t.Fatalf("output %s", r.RawJSON())
			}

			got, err := collect(t, cl.Responses.NewStreaming(ctx, params))
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(got.types, " ")
			if !strings.Contains(joined, "response.output_item.added") || !strings.Contains(joined, "response.function_call_arguments.done") ||
				got.args != `{"city":"Paris"}` || len(got.items) != 1 || got.items[0].Type != "function_call" ||
				got.items[0].Arguments.OfString != `{"city":"Paris"}` || got.completed == nil {
				t.Fatalf("streamed call: events %s args %q items %+v", joined, got.args, got.items)
			}
			if len(got.completed.Output) != 1 || got.completed.Output[0].Name != "get_weather" {
				t.Errorf("completed output %s", got.completed.RawJSON())
			}

			// The next turn sends the call and its output back.
			out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp_c":18}`)
			out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
			params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("What is the weather in Paris?", responses.EasyInputMessageRoleUser),
				responses.ResponseInputItemParamOfFunctionCall(call.Arguments.OfString, call.CallID, call.Name),
				out,
			}}
			r, err = cl.Responses.New(ctx, params)
			if err != nil {
				t.Fatalf("tool output turn: %v", err)
			}
			if r.OutputText() == "" {
				t.Error("no answer to the tool output")
			}
			sent := lastRequest(t, e, served)
			want := map[string]string{"claude-x": `"tool_use_id":"` + call.CallID + `"`, "gemini-y": `"functionResponse"`,
				"llama-z": `"tool_call_id":"` + call.CallID + `"`}[served]
			if !strings.Contains(string(sent.Body), want) {
				t.Errorf("the tool output did not reach %s: %s", served, sent.Body)
			}
		})
	}
}

// A 429 moves the request on, as for any client.
func TestResponsesFailOver(t *testing.T) {
	for _, stream := range []bool{false, true} {
		e := mixedEnv(t)
		e.up.Set("claude-x", fakeupstream.Behavior{Status: 429, Headers: map[string]string{"Retry-After": "30"}})
		cl := sdkClient(e)
		var raw *http.Response
		text := ""
		if stream {
			got, err := collect(t, cl.Responses.NewStreaming(context.Background(), helloResponse("mixed"), option.WithResponseInto(&raw)))
			if err != nil {
				t.Fatal(err)
			}
			text = got.text
		} else {
			r, err := cl.Responses.New(context.Background(), helloResponse("mixed"), option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			text = r.OutputText()
		}
		if text != "Hello from gemini-y" {
			t.Errorf("stream=%v: text %q", stream, text)
		}
		if got := raw.Header.Get("X-FreeLane-Attempts"); got != claude+"=429; "+gem+"=ok" {
			t.Errorf("stream=%v: attempts %q", stream, got)
		}
	}
}

// A stream cut after it reached the client ends with response.failed, and
// an error event the SDK raises, never with response.completed.
func TestResponsesBrokenStreamFails(t *testing.T) {
	for _, served := range []string{"claude-x", "gemini-y", "llama-z"} {
		t.Run(served, func(t *testing.T) { brokenStream(t, served) })
	}
}

func brokenStream(t *testing.T, served string) {
	e := mixedEnv(t)
	for _, m := range []string{"claude-x", "gemini-y"} {
		if m == served {
			break
		}
		e.up.Set(m, fakeupstream.Behavior{Status: 503})
	}
	e.up.Set(served, fakeupstream.Behavior{CutAfter: 1})
	cl := sdkClient(e)
	got, err := collect(t, cl.Responses.NewStreaming(context.Background(), helloResponse("mixed")))
	var se interface{ Error() string }
	if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), "incomplete") {
		t.Fatalf("err %v after events %v", err, got.types)
	}
	if got.text != "Hello" || got.completed != nil || got.types[len(got.types)-1] != "response.failed" {
		t.Errorf("text %q events %v", got.text, got.types)
	}

	// On the wire: response.failed with the stream's id and the error,
	// then the error event; no response.completed.
	res, err := http.Post(e.base+"/v1/responses", "application/json", strings.NewReader(`{"model":"mixed","input":"Say hello","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var names []string
	var failed struct {
		Response struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Error  struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"response"`
	}
	var created struct {
		Response struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	sc := bufio.NewScanner(res.Body)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			names = append(names, n)
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			switch name {
			case "response.created":
				_ = json.Unmarshal([]byte(d), &created)
			case "response.failed":
				_ = json.Unmarshal([]byte(d), &failed)
			}
		}
	}
	if names[len(names)-2] != "response.failed" || names[len(names)-1] != "error" || strings.Contains(strings.Join(names, " "), "completed") {
		t.Fatalf("events %v", names)
	}
	if failed.Response.ID != created.Response.ID || failed.Response.Status != "failed" || failed.Response.Error.Code != "stream_interrupted" {
		t.Errorf("response.failed %+v (created %s)", failed, created.Response.ID)
	}
}

// A stored response is continued by its id: the backend is sent the whole
// conversation, the client only the new turn. An unknown id is a 404 in
// OpenAI's words.
func TestResponsesPreviousResponseID(t *testing.T) {
	e := mixedEnv(t)
	cl := sdkClient(e)
	ctx := context.Background()
	first := helloResponse("mixed")
	first.Instructions = openai.String("Answer briefly.")
	r1, err := cl.Responses.New(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	next := responses.ResponseNewParams{Model: "mixed", PreviousResponseID: openai.String(r1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("And once more")}}
	got, err := collect(t, cl.Responses.NewStreaming(ctx, next))
	if err != nil {
		t.Fatal(err)
	}
	sent := string(lastRequest(t, e, "claude-x").Body)
	for _, want := range []string{"Say hello", "Hello from claude-x", "And once more"} {
		if !strings.Contains(sent, want) {
			t.Errorf("the continued request lacks %q: %s", want, sent)
		}
	}
	if strings.Contains(sent, "Answer briefly.") {
		t.Errorf("the first turn's instructions were carried over: %s", sent)
	}
	// The streamed response is stored too and continues in turn.
	r3, err := cl.Responses.New(ctx, responses.ResponseNewParams{Model: "mixed", PreviousResponseID: openai.String(got.completed.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Third")}})
	if err != nil {
		t.Fatal(err)
	}
	sent = string(lastRequest(t, e, "claude-x").Body)
	if strings.Count(sent, "Hello from claude-x") != 2 || !strings.Contains(sent, "Third") {
		t.Errorf("third turn sent %s", sent)
	}
	stored, err := cl.Responses.Get(ctx, r3.ID, responses.ResponseGetParams{})
	if err != nil || stored.ID != r3.ID || stored.OutputText() != r3.OutputText() {
		t.Errorf("get %v: %+v", err, stored)
	}

	_, err = cl.Responses.New(ctx, responses.ResponseNewParams{Model: "mixed", PreviousResponseID: openai.String("resp_unknown"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Param != "previous_response_id" ||
		apiErr.Code != "previous_response_not_found" || apiErr.Message != "Previous response with id 'resp_unknown' not found." {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err = cl.Responses.Get(ctx, "resp_unknown", responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("get unknown: %v", err)
	}

	// store:false, as Codex sends it, keeps nothing.
	nostore := helloResponse("mixed")
	nostore.Store = openai.Bool(false)
	r4, err := cl.Responses.New(ctx, nostore)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = cl.Responses.Get(ctx, r4.ID, responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("a store:false response was stored: %v", err)
	}
}

// Codex's compaction: the conversation is summarised by the chain, and the
// compacted items it gets back start its next turn.
func TestResponsesCompact(t *testing.T) {
	e := mixedEnv(t)
	cl := sdkClient(e)
	ctx := context.Background()
	e.up.Set("claude-x", fakeupstream.Behavior{Chunks: []string{"The user asked for a greeting; it was given."}}, fakeupstream.Behavior{})
	c, err := cl.Responses.Compact(ctx, responses.ResponseCompactParams{Model: "mixed",
		Instructions: openai.String("You are a coding agent."),
		Input: responses.ResponseCompactParamsInputUnion{OfResponseInputItemArray: []responses.ResponseInputItemUnionParam{
			responses.ResponseInputItemParamOfMessage("Say hello", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("Hello from the assistant", responses.EasyInputMessageRoleAssistant),
			responses.ResponseInputItemParamOfMessage("Now fix the bug in main.go", responses.EasyInputMessageRoleUser),
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Output) != 3 || c.Output[0].Type != "message" || c.Output[1].Type != "message" || c.Output[2].Type != "compaction" ||
		c.Output[2].EncryptedContent == "" || c.Object != "response.compaction" {
		t.Fatalf("compacted %s", c.RawJSON())
	}
	sent := string(lastRequest(t, e, "claude-x").Body)
	if !strings.Contains(sent, "Now fix the bug in main.go") || !strings.Contains(sent, "handoff summary") {
		t.Errorf("summary request %s", sent)
	}

	// The next turn starts from the compacted items, as Codex sends them.
	items := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Say hello", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("Now fix the bug in main.go", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfCompaction(c.Output[2].EncryptedContent),
		responses.ResponseInputItemParamOfMessage("Go on", responses.EasyInputMessageRoleUser),
	}
	r, err := cl.Responses.New(ctx, responses.ResponseNewParams{Model: "mixed", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}})
	if err != nil || r.OutputText() == "" {
		t.Fatalf("turn after compaction: %v", err)
	}
	sent = string(lastRequest(t, e, "claude-x").Body)
	if !strings.Contains(sent, "The user asked for a greeting; it was given.") || !strings.Contains(sent, "Go on") {
		t.Errorf("the summary did not reach the backend: %s", sent)
	}
}

// Bad input is refused before routing, in OpenAI's envelope; tools no
// backend can run are dropped and the drop shows in the request log.
func TestResponsesBadInputAndDroppedTools(t *testing.T) {
	e := mixedEnv(t)
	for _, c := range []struct{ body, param, message string }{
		{`{"model":"mixed","input":42}`, "input", "input must be a string or an array of input items"},
		{`{"model":"mixed"}`, "input", "input is required: a string, or an array of input items"},
		{`{"input":"hi"}`, "model", `model is required: use "auto", a chain name or provider/model`},
		{`{"model":"mixed","input":[{"type":"message","role":"robot","content":"x"}]}`, "input[0].role", `input[0].role must be "user", "assistant", "system" or "developer"`},
		{`{"model":"mixed","input":"hi","max_output_tokens":-1}`, "max_output_tokens", "max_output_tokens must be a positive integer (at most 999999999)"},
		{`{"model":"mixed","input":"hi","tools":[{"type":"function"}]}`, "tools[0].name", "tools[0].name is required: the function's name"},
		{`{"model":"mixed","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id", "input[0].call_id is required: the call_id of the function_call it answers"},
	} {
		r := e.post("/v1/responses", c.body)
		var body struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    string  `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil || r.status != http.StatusBadRequest || body.Error.Message != c.message ||
			body.Error.Type != "invalid_request_error" || body.Error.Param == nil || *body.Error.Param != c.param {
			t.Errorf("%s: %d %s", c.body, r.status, r.body)
		}
	}
	if r := e.post("/v1/responses", `{"model":"mixed","input":"hi","tools":[{"type":"web_search"},{"type":"local_shell"}]}`); r.status != http.StatusOK {
		t.Fatalf("hosted tools: %d %s", r.status, r.body)
	}
	if sent := string(lastRequest(t, e, "claude-x").Body); strings.Contains(sent, "web_search") {
		t.Errorf("a hosted tool reached the backend: %s", sent)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := e.do("GET", "/api/requests", "", nil)
		if strings.Contains(string(r.body), "tools dropped (no backend runs them): web_search, local_shell") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dropped tools are not in the request log: %.2000s", r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The Node OpenAI SDK's responses.create and responses.stream, through the
// same chain while its first backend fails.
func TestResponsesNodeSDK(t *testing.T) {
	dir, err := filepath.Abs("testdata/clients")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Fatalf("the Node client libraries are not installed: run `make deps-test` (%v)", err)
	}
	e := mixedEnv(t)
	e.up.Set("claude-x", fakeupstream.Behavior{Status: 529}, fakeupstream.Behavior{Status: 529}, fakeupstream.Behavior{Status: 529},
		fakeupstream.Behavior{Status: 529}, fakeupstream.Behavior{Status: 529}, fakeupstream.Behavior{Status: 529})
	e.up.Set("gemini-y", fakeupstream.Behavior{ToolCall: true}, fakeupstream.Behavior{}, fakeupstream.Behavior{}, fakeupstream.Behavior{},
		fakeupstream.Behavior{CutAfter: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "openai-responses.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FREELANE_URL="+e.base+"/v1", "FREELANE_MODEL=mixed")
	cmd.Stderr = io.Discard
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		ToolName  string   `json:"tool_name"`
		ToolArgs  string   `json:"tool_args"`
		AfterTool string   `json:"after_tool"`
		Streamed  string   `json:"streamed"`
		Final     string   `json:"final"`
		Events    []string `json:"events"`
		Continued string   `json:"continued"`
		Broken    string   `json:"broken"`
		Before    string   `json:"before_break"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	if got.ToolName != "get_weather" || got.ToolArgs != `{"city":"Paris"}` || got.AfterTool == "" {
		t.Errorf("tool round %+v", got)
	}
	if got.Streamed != "Hello from gemini-y" || got.Final != got.Streamed || got.Continued == "" ||
		len(got.Events) == 0 || got.Events[len(got.Events)-1] != "response.completed" {
		t.Errorf("stream %+v", got)
	}
	if !strings.Contains(got.Broken, "incomplete") || got.Before != "Hello" {
		t.Errorf("broken stream: threw %q after %q", got.Broken, got.Before)
	}
}

// A Codex turn deep in a session, with developer messages, reasoning items
// (OpenAI's encrypted ones and FreeLane's own), custom and function tool
// calls and their outputs, a web search trace and hosted tools, is accepted
// by each dialect's vendor, which refuses what its real API refuses.
func TestResponsesCodexHistoryReachesEveryDialect(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("..", "protocol", "responses", "testdata", "parse", "codex.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	req["model"] = "mixed"
	// A reasoning item FreeLane wrote from an Anthropic answer, with its
	// signature, follows the history.
	items := req["input"].([]any)
	req["input"] = append(items,
		map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": "Thought."}},
			"encrypted_content": "freelane.reasoning.v1.eyJzIjoic2lnLTEifQ=="},
		map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "Done."}}},
		map[string]any{"type": "message", "role": "user", "content": "Next"})
	for _, served := range []string{"claude-x", "gemini-y", "llama-z"} {
		t.Run(served, func(t *testing.T) {
			e := mixedEnv(t)
			for _, m := range []string{"claude-x", "gemini-y"} {
				if m == served {
					break
				}
				e.up.Set(m, fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{Status: 503})
			}
			b, _ := json.Marshal(req)
			r := e.post("/v1/responses", string(b))
			if r.status != http.StatusOK || !strings.Contains(string(r.body), "response.completed") {
				t.Fatalf("%d %q %.600s", r.status, r.attempts(), r.body)
			}
			if !strings.HasSuffix(r.header.Get("X-FreeLane-Backend"), "/"+served) {
				t.Errorf("served by %q (%s)", r.header.Get("X-FreeLane-Backend"), r.attempts())
			}
			sent := string(lastRequest(t, e, served).Body)
			if served == "claude-x" && !strings.Contains(sent, `"signature":"sig-1"`) {
				t.Errorf("the signed reasoning did not go back to Anthropic: %s", sent)
			}
			if strings.Contains(sent, "gAAAAAB") || strings.Contains(sent, "web_search") {
				t.Errorf("OpenAI-only content reached %s: %s", served, sent)
			}
		})
	}
}

// Codex's newer compaction is an ordinary streamed turn whose input ends
// with a compaction_trigger item; it wants a stream whose one output item
// is the compaction, and sends that item back on its next turns.
func TestResponsesCompactionTrigger(t *testing.T) {
	e := mixedEnv(t)
	e.up.Set("claude-x", fakeupstream.Behavior{Chunks: []string{"Greeted the user; next, fix main.go."}})
	history := `{"type":"message","role":"user","content":[{"type":"input_text","text":"Say hello"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"}]},
		{"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"command\":[\"ls\"]}"},
		{"type":"function_call_output","call_id":"c1","output":"main.go"}`
	body := `{"model":"mixed","stream":true,"store":false,"tools":[{"type":"function","name":"shell","parameters":{"type":"object"}}],
		"input":[` + history + `,{"type":"compaction_trigger"}]}`
	r := e.post("/v1/responses", body)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var names []string
	var items []map[string]any
	for _, line := range strings.Split(string(r.body), "\n") {
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, n)
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"response.output_item.done"`) {
			var ev struct {
				Item map[string]any `json:"item"`
			}
			_ = json.Unmarshal([]byte(d), &ev)
			items = append(items, ev.Item)
		}
	}
	want := "response.created response.in_progress response.output_item.added response.output_item.done response.completed"
	if strings.Join(names, " ") != want || len(items) != 1 || items[0]["type"] != "compaction" {
		t.Fatalf("events %v items %v", names, items)
	}
	sent := string(lastRequest(t, e, "claude-x").Body)
	if !strings.Contains(sent, "handoff summary") || !strings.Contains(sent, "main.go") || strings.Contains(sent, "compaction_trigger") {
		t.Errorf("summary request %s", sent)
	}

	// Not streamed, the same answer as one response.
	r = e.post("/v1/responses", strings.Replace(body, `"stream":true`, `"stream":false`, 1))
	var whole struct {
		Output []map[string]any `json:"output"`
	}
	if err := json.Unmarshal(r.body, &whole); err != nil || len(whole.Output) != 1 || whole.Output[0]["type"] != "compaction" {
		t.Fatalf("%d %s", r.status, r.body)
	}

	// The next turn: the user's messages, the compaction, a new message.
	enc, _ := json.Marshal(items[0]["encrypted_content"])
	e.up.Set("claude-x")
	next := `{"model":"mixed","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Say hello"}]},
		{"type":"compaction","encrypted_content":` + string(enc) + `},{"type":"message","role":"user","content":"Go on"}]}`
	if r := e.post("/v1/responses", next); r.status != http.StatusOK {
		t.Fatalf("next turn %d %s", r.status, r.body)
	}
	if sent := string(lastRequest(t, e, "claude-x").Body); !strings.Contains(sent, "Greeted the user; next, fix main.go.") {
		t.Errorf("the summary did not reach the backend: %s", sent)
	}
}

// Codex, taking FreeLane for OpenAI itself, first asks for a WebSocket;
// 426 sends it to HTTP at once instead of after five retries.
func TestResponsesWebSocketRefused(t *testing.T) {
	e := mixedEnv(t)
	r := e.raw(http.MethodGet, "/v1/responses", "", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket",
		"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
	if r.status != http.StatusUpgradeRequired || !strings.Contains(string(r.body), `"code":"websocket_not_supported"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := e.raw(http.MethodGet, "/v1/responses", "", nil); r.status != http.StatusNotFound {
		t.Fatalf("plain GET: %d %s", r.status, r.body)
	}
}
