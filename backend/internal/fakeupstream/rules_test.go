package fakeupstream

import (
	"strings"
	"testing"
)

// namedTool is a coding agent's own tool with arguments that need escaping.
var namedTool = Behavior{ToolCall: true, ToolName: "Bash", ToolArgs: `{"command":"echo \"hi\" > out.txt"}`}

func TestNamedToolCall(t *testing.T) {
	s, c := newServer(t)
	s.Set("m", namedTool)

	got := decode[completion](t, readBody(t, post(t, c, s.URL+"/chat/completions", chatBody("m", false))))
	if tc := got.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "Bash" || tc[0].Function.Arguments != namedTool.ToolArgs {
		t.Errorf("chat tool calls = %+v", tc)
	}
	st := readStream(t, post(t, c, s.URL+"/chat/completions", chatBody("m", true)))
	if st.err != nil || st.args != namedTool.ToolArgs || st.finish != "tool_calls" {
		t.Errorf("chat stream: args %q, finish %q, err %v", st.args, st.finish, st.err)
	}

	ant := mustJSON(t, string(readBody(t, antPost(t, s, c, antBody("m", false)))))
	block := ant["content"].([]any)[0].(map[string]any)
	if block["name"] != "Bash" || block["input"].(map[string]any)["command"] != `echo "hi" > out.txt` {
		t.Errorf("anthropic block = %v", block)
	}
	as := readAnt(t, antPost(t, s, c, antBody("m", true)))
	if as.err != nil || as.partial != namedTool.ToolArgs || as.stop != "tool_use" {
		t.Errorf("anthropic stream: partial %q, stop %q, err %v", as.partial, as.stop, as.err)
	}

	s.Set("g", namedTool)
	gs := readGem(t, postWire(t, c, gemURL(s, "g", "streamGenerateContent")+"?alt=sse", gemBody))
	if gs.err != nil || gs.calls != 1 {
		t.Fatalf("gemini stream %q: err %v", gs.raw, gs.err)
	}
	if fc := gs.chunks[0].Candidates[0].Content.Parts[0].FunctionCall; fc.Name != "Bash" || fc.Args["command"] != `echo "hi" > out.txt` {
		t.Errorf("gemini functionCall = %+v", fc)
	}
}

func TestRulesPickByBody(t *testing.T) {
	s, c := newServer(t)
	// The tool call answers the first turn; the turn that carries the
	// tool's result gets text, whatever else was asked in between.
	s.SetRules("m",
		Rule{Contains: "MARKER-7", Behavior: Behavior{Chunks: []string{"done"}}},
		Rule{Lacks: "MARKER-7", Contains: "run it", Behavior: namedTool},
	)
	s.SetRules("", Rule{Contains: "title", Behavior: Behavior{Chunks: []string{"A title"}}})
	s.Set("m", Behavior{Status: 503})

	answer := func(content string) string {
		body := `{"model":"m","messages":[{"role":"user","content":"` + content + `"}]}`
		return string(readBody(t, post(t, c, s.URL+"/chat/completions", body)))
	}
	if got := answer("please run it"); !strings.Contains(got, `"name":"Bash"`) {
		t.Errorf("first turn = %s", got)
	}
	if got := answer("make a title"); !strings.Contains(got, "A title") {
		t.Errorf("rule for every model = %s", got)
	}
	if got := answer("run it: result MARKER-7"); !strings.Contains(got, `"content":"done"`) {
		t.Errorf("second turn = %s", got)
	}
	resp := post(t, c, s.URL+"/chat/completions", chatBody("m", false))
	if readBody(t, resp); resp.StatusCode != 503 {
		t.Errorf("unmatched request got %d, want the script's 503", resp.StatusCode)
	}
	if n := s.Calls("m"); n != 4 {
		t.Errorf("Calls = %d, want 4: rules still count", n)
	}

	s.SetRules("m")
	if got := answer("please run it"); strings.Contains(got, "Bash") {
		t.Errorf("SetRules with no rules left them: %s", got)
	}
	s.Reset()
	if got := answer("make a title"); strings.Contains(got, "A title") {
		t.Errorf("Reset left the rules: %s", got)
	}
}
