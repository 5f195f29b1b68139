package openai

import (
	"encoding/json"
	"testing"

	"freelane/backend/llm"
)

// An upstream's quirks edit the client's body: dropped parameters go, a
// max_tokens over the model's limit is lowered, and nothing else changes
// meaning. A body the edits do not touch keeps its bytes.
func TestRewriteAppliesTheUpstreamsEdits(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		e    llm.Edits
		want string
	}{
		{"drops what the model rejects",
			`{"model":"auto","messages":[{"role":"user","content":"hi"}],"parallel_tool_calls":true,"reasoning_effort":"high"}`,
			llm.Edits{Drop: []string{"parallel_tool_calls", "reasoning_effort"}},
			`{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{"drops the first member too",
			`{"seed":7, "model":"auto", "messages":[{"role":"user","content":"hi"}]}`,
			llm.Edits{Drop: []string{"seed"}},
			`{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{"lowers max_tokens",
			`{"model":"auto","max_tokens":100000,"messages":[{"role":"user","content":"hi"}]}`,
			llm.Edits{MaxOutput: 8192},
			`{"model":"m","max_tokens":8192,"messages":[{"role":"user","content":"hi"}]}`},
		{"leaves a smaller max_tokens",
			`{"model":"auto","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`,
			llm.Edits{MaxOutput: 8192},
			`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`},
		{"nothing to drop keeps the bytes",
			`{ "model" : "auto",  "messages":[{"role":"user","content":"hi"}] }`,
			llm.Edits{Drop: []string{"stream_options"}, MaxOutput: 10},
			`{ "model" : "m",  "messages":[{"role":"user","content":"hi"}] }`},
		{"dropped stream_options are not asked for again",
			`{"model":"auto","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			llm.Edits{AddUsage: true, Drop: []string{"stream_options"}},
			`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"usage still asked for while dropping something else",
			`{"model":"auto","stream":true,"user":"u1","messages":[{"role":"user","content":"hi"}]}`,
			llm.Edits{AddUsage: true, Drop: []string{"user"}},
			`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseRequest(llm.Chat, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			got := r.Body("m", c.e)
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if !json.Valid(got) {
				t.Errorf("not JSON: %s", got)
			}
		})
	}
}
