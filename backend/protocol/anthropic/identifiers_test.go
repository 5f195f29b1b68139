package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"freelane/backend/llm"
)

func TestClientIdentifiers(t *testing.T) {
	long := strings.Repeat("x", llm.MaxIdentifier+1)
	for _, c := range []struct {
		name, userID      string
		session, wantUser string
	}{
		{"legacy Claude Code", "user_9f86d081884c7d65_account_4b1c_session_0b7c4a1e-3f2d-4c55-9e21-aa0f5d3b7c10",
			"0b7c4a1e-3f2d-4c55-9e21-aa0f5d3b7c10", "user_9f86d081884c7d65_account_4b1c_session_0b7c4a1e-3f2d-4c55-9e21-aa0f5d3b7c10"},
		{"legacy without account", "user_9f86_account__session_s-1", "s-1", "user_9f86_account__session_s-1"},
		{"JSON Claude Code", `{"device_id":"d1","account_uuid":"a1","session_id":"s-2"}`, "s-2", `{"device_id":"d1","account_uuid":"a1","session_id":"s-2"}`},
		{"another client", "alice@example.com", "", "alice@example.com"},
		{"broken JSON", `{"session_id":`, "", `{"session_id":`},
		{"too long", long, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta, _ := json.Marshal(map[string]string{"user_id": c.userID})
			body := `{"model":"m","max_tokens":5,"metadata":` + string(meta) + `,"messages":[{"role":"user","content":"hi"}]}`
			r, err := Codec.ParseRequest(llm.Chat, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if r.ClientSession != c.session || r.ClientUser != c.wantUser {
				t.Errorf("session %q user %q, want %q %q", r.ClientSession, r.ClientUser, c.session, c.wantUser)
			}
			// Whatever the value, it never goes upstream: the pseudonym
			// takes its place, or nothing does.
			for _, e := range []llm.Edits{{User: "h"}, {User: "h", Drop: []string{"top_k"}, MaxOutput: 3}, {}} {
				out := r.Body("m2", e)
				if bytes.Contains(out, []byte(c.userID[:min(len(c.userID), 16)])) {
					t.Errorf("the raw user_id reached the upstream body: %s", out)
				}
				want := `"metadata":{"user_id":"h"}`
				if e.User == "" {
					want = `"metadata":{}`
				}
				if !bytes.Contains(out, []byte(want)) || !json.Valid(out) {
					t.Errorf("edits %+v: body %s lacks %s", e, out, want)
				}
			}
		})
	}
}

func TestCacheControlKept(t *testing.T) {
	body := `{"model":"m","max_tokens":100,
	  "system":[{"type":"text","text":"rules","cache_control":{"type":"ephemeral","ttl":"1h"}}],
	  "tools":[{"name":"a","input_schema":{"type":"object"}},{"name":"b","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
	  "messages":[
	    {"role":"user","content":[{"type":"text","text":"q1"}]},
	    {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"a","input":{}}]},
	    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r","cache_control":{"type":"ephemeral","ttl":"5m"}},
	      {"type":"text","text":"q2","cache_control":{"type":"ephemeral","ttl":"2d"}}]}]}`
	r, err := Codec.ParseRequest(llm.Chat, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Conversation()
	if err != nil {
		t.Fatal(err)
	}
	if c.System[0].Cache == nil || c.System[0].Cache.TTL != "1h" {
		t.Errorf("system breakpoint %+v", c.System[0].Cache)
	}
	if c.Tools[0].Cache != nil || c.Tools[1].Cache == nil || c.Tools[1].Cache.TTL != "" {
		t.Errorf("tool breakpoints %+v %+v", c.Tools[0].Cache, c.Tools[1].Cache)
	}
	last := c.Messages[len(c.Messages)-1]
	tool := c.Messages[len(c.Messages)-2]
	if tool.Parts[0].Cache == nil || tool.Parts[0].Cache.TTL != "5m" {
		t.Errorf("tool result breakpoint %+v", tool.Parts[0].Cache)
	}
	if last.Parts[0].Cache == nil || last.Parts[0].Cache.TTL != "" {
		t.Errorf("an unknown ttl must be the default: %+v", last.Parts[0].Cache)
	}
	out, err := Codec.EncodeRequest(c, "m", llm.Edits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"system":[{"type":"text","text":"rules","cache_control":{"type":"ephemeral","ttl":"1h"}}]`,
		`{"name":"b","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}`,
		`"tool_use_id":"toolu_1","content":"r","cache_control":{"type":"ephemeral","ttl":"5m"}}`,
		`{"type":"text","text":"q2","cache_control":{"type":"ephemeral"}}`,
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("encoded body lacks %s:\n%s", want, out)
		}
	}
}

func TestAtMostFourBreakpoints(t *testing.T) {
	c := &llm.Conversation{MaxOutput: 10}
	cp := &llm.CachePoint{}
	c.Tools = []llm.Tool{{Name: "t", Cache: cp}}
	c.System = []llm.Part{{Kind: llm.PartText, Text: "s", Cache: cp}}
	for _, text := range []string{"u1", "u2", "u3", "u4"} {
		c.Messages = append(c.Messages,
			llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: text, Cache: cp}}},
			llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "a"}}})
	}
	out, err := Codec.EncodeRequest(c, "m", llm.Edits{})
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(out, []byte(`"cache_control"`)); n != 4 {
		t.Fatalf("%d breakpoints, want 4: %s", n, out)
	}
	// The latest four are kept: those of the messages.
	for _, text := range []string{"u1", "u2", "u3", "u4"} {
		if !bytes.Contains(out, []byte(`"text":"`+text+`","cache_control"`)) {
			t.Errorf("the breakpoint of %s is gone: %s", text, out)
		}
	}
}

func TestEncodedUserIsThePseudonym(t *testing.T) {
	c := &llm.Conversation{MaxOutput: 10, Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "hi"}}}}}
	out, _ := Codec.EncodeRequest(c, "m", llm.Edits{User: "h", Session: "s"})
	if !bytes.Contains(out, []byte(`"metadata":{"user_id":"h"}`)) || bytes.Contains(out, []byte(`"s"`)) {
		t.Errorf("body %s", out)
	}
	out, _ = Codec.EncodeRequest(c, "m", llm.Edits{})
	if bytes.Contains(out, []byte("metadata")) {
		t.Errorf("no pseudonym, yet metadata: %s", out)
	}
}
