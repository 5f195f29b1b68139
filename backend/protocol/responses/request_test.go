package responses

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"freelane/backend/llm"
)

// Every refusal names its parameter and says what to send instead.
func TestParseRefusals(t *testing.T) {
	many := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	meta := map[string]string{}
	for i := range MaxMetadata + 1 {
		meta[fmt.Sprintf("k%d", i)] = "v"
	}
	var pairs []string
	for k, v := range meta {
		pairs = append(pairs, fmt.Sprintf("%q:%q", k, v))
	}
	for _, c := range []struct{ body, param, msg string }{
		{`{"model":"m","input":"x","tools":` + many(MaxTools+1, `{"type":"function","name":"f"}`) + `}`, "tools", "a request may declare at most 1024 tools"},
		{`{"model":"m","input":` + many(MaxItems+1, `"x"`) + `}`, "input[0]", "input[0] must be an object"},
		{`{"model":"m","input":` + many(MaxItems+1, `{"role":"user","content":"x"}`) + `}`, "input", "input may hold at most 50000 items"},
		{`{"model":"m","input":"x","metadata":{` + strings.Join(pairs, ",") + `}}`, "metadata", "metadata may hold at most 16 pairs"},
		{`{"model":"m","input":"x","metadata":{"` + strings.Repeat("k", 65) + `":"v"}}`, "metadata", "metadata keys may have at most 64 bytes"},
		{`{"model":"m","input":"x","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`, "metadata", "metadata values may have at most 512 bytes"},
		{`{"model":"m","input":"x","metadata":{"k":1}}`, "metadata", "metadata values must be strings"},
		{`{"model":"m","input":"x","previous_response_id":"` + strings.Repeat("r", 129) + `"}`, "previous_response_id", "previous_response_id is too long"},
		{`{"model":"m","input":"x","previous_response_id":5}`, "previous_response_id", "previous_response_id must be a string"},
		{`{"model":"m","input":"x","store":"yes"}`, "store", "store must be true or false"},
		{`{"model":"m","input":"x","stream":1}`, "stream", "stream must be true or false"},
		{`{"model":"m","input":"x","background":true}`, "background", "background responses are not supported"},
		{`{"model":"m","input":"x","conversation":"conv_1"}`, "conversation", "conversation objects are not supported"},
		{`{"model":"m","input":"x","prompt":{"id":"p"}}`, "prompt", "prompt templates are not supported"},
		{`{"model":"m","input":"x","tool_choice":"any"}`, "tool_choice", "tool_choice must be"},
		{`{"model":"m","input":"x","temperature":"hot"}`, "temperature", "temperature must be a number"},
		{`{"model":"m","input":"x","instructions":["a"]}`, "instructions", "instructions must be a string"},
		{`{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0]", "input[0]: item references are not supported"},
		{`{"model":"m","input":[{"type":"compaction"}]}`, "input[0].encrypted_content", "input[0].encrypted_content is required"},
		{`{"model":"m","input":[{"content":"x"}]}`, "input[0].type", "input[0].type is required"},
		{`{"model":"m","input":[{"role":"user","content":[{"text":"x"}]}]}`, "input[0].content[0].type", "input[0].content[0].type is required"},
		{`{"model":"m","input":[{"role":"user"}]}`, "input[0].content", "input[0].content is required"},
		{`{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, "input[0].output", "input[0].output is required"},
		{`{"model":"m","input":"x"} x`, "", "request body is not valid JSON"},
		{`[1]`, "", "request body must be a JSON object"},
	} {
		_, err := Codec.ParseRequest(llm.Chat, []byte(c.body))
		var bad *llm.BadRequestError
		if !errors.As(err, &bad) || bad.Param != c.param || !strings.HasPrefix(bad.Message, c.msg) {
			t.Errorf("%.80s: %v (param %q)", c.body, err, paramOf(bad))
		}
	}
}

func paramOf(b *llm.BadRequestError) string {
	if b == nil {
		return ""
	}
	return b.Param
}

// What the Responses API lets a client send is accepted, also where
// FreeLane does nothing with it.
func TestParseAccepts(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","input":"x","include":["reasoning.encrypted_content"],"prompt_cache_key":"k","service_tier":"flex","truncation":"auto","user":"u","safety_identifier":"s","parallel_tool_calls":true,"top_p":1,"store":null,"background":false,"conversation":null}`,
		`{"model":"m","previous_response_id":"resp_1"}`,
		`{"model":"m","input":[{"type":"mcp_list_tools","id":"x"}],"tools":[{"type":"mcp","server_label":"s"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}}`,
	} {
		if _, err := Codec.ParseRequest(llm.Chat, []byte(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	if _, err := Codec.ParseRequest(llm.Embeddings, []byte(`{"model":"m","input":"x"}`)); err == nil {
		t.Error("an embeddings request was parsed as a response")
	}
}

// A continued request is the stored conversation and then its own input;
// a conversation over the item limit is refused.
func TestWithHistory(t *testing.T) {
	r, err := Codec.ParseRequest(llm.Chat, []byte(`{"model":"m","input":"Second","previous_response_id":"resp_1","instructions":"New"}`))
	if err != nil {
		t.Fatal(err)
	}
	cont, err := WithHistory(r, []byte(`[{"type":"message","role":"user","content":"First"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Answer"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cont.Conversation()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 5 || c.Messages[0].Parts[0].Text != "First" || c.Messages[4].Parts[0].Text != "Second" ||
		c.Messages[2].Parts[0].ToolResult.Name != "f" || len(c.System) != 1 || c.System[0].Text != "New" || !cont.Needs.Has(llm.CapTools) {
		t.Errorf("conversation %+v needs %v", c, cont.Needs)
	}
	if _, err := WithHistory(r, []byte(`{}`)); err == nil {
		t.Error("a stored conversation that is not an array was taken")
	}
	big := "[" + strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"x"},`, MaxItems), ",") + "]"
	r2, _ := Codec.ParseRequest(llm.Chat, []byte(`{"model":"m","input":["x"],"previous_response_id":"resp_1"}`))
	if r2 != nil {
		t.Fatal("an input of strings was accepted")
	}
	r3, err := Codec.ParseRequest(llm.Chat, []byte(`{"model":"m","input":[{"role":"user","content":"x"}],"previous_response_id":"resp_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	var bad *llm.BadRequestError
	if _, err := WithHistory(r3, []byte(big)); !errors.As(err, &bad) || bad.Param != "previous_response_id" {
		t.Errorf("over the item limit: %v", err)
	}
}
