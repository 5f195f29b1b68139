package responses

import (
	"bytes"
	"encoding/json"
	"testing"

	"freelane/backend/llm"
)

func TestClientIdentifiers(t *testing.T) {
	body := []byte(`{"model":"m","input":"hi","prompt_cache_key":"0199-conv","user":"old","safety_identifier":"new"}`)
	r, err := Codec.ParseRequest(llm.Chat, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.ClientSession != "0199-conv" || r.ClientUser != "new" {
		t.Fatalf("session %q user %q", r.ClientSession, r.ClientUser)
	}
	if got := string(r.Body("m2", llm.Edits{User: "h"})); got != `{"model":"m2","input":"hi","prompt_cache_key":"0199-conv","user":"h","safety_identifier":"h"}` {
		t.Errorf("Body %s", got)
	}
	if got := string(r.Body("m2", llm.Edits{})); got != `{"model":"m2","input":"hi","prompt_cache_key":"0199-conv"}` {
		t.Errorf("Body without a pseudonym %s", got)
	}
	items := []byte(`[{"type":"message","role":"user","content":"before"}]`)
	cont, err := WithHistory(r, items)
	if err != nil {
		t.Fatal(err)
	}
	if cont.ClientSession != r.ClientSession || cont.ClientUser != r.ClientUser {
		t.Error("a continued request lost its identifiers")
	}
}

func TestEncodeIdentifiers(t *testing.T) {
	c := &llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "hi"}}}}}
	out, err := Codec.EncodeRequest(c, "m", llm.Edits{Session: "sess", User: "h"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(out, &got)
	if got["prompt_cache_key"] != "sess" || got["user"] != "h" {
		t.Errorf("body %s", out)
	}
	out, _ = Codec.EncodeRequest(c, "m", llm.Edits{})
	if bytes.Contains(out, []byte("prompt_cache_key")) || bytes.Contains(out, []byte(`"user":`)) {
		t.Errorf("identifiers without a session: %s", out)
	}
}
