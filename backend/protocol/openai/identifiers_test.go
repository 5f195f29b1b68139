package openai

import (
	"bytes"
	"encoding/json"
	"testing"

	"freelane/backend/llm"
)

func TestClientIdentifiers(t *testing.T) {
	body := []byte(`{"model":"m", "prompt_cache_key":"conv-1", "messages":[{"role":"user","content":"hi"}], "user":"alice@example.com", "stream":true}`)
	r, err := ParseRequest(llm.Chat, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.ClientSession != "conv-1" || r.ClientUser != "alice@example.com" {
		t.Fatalf("session %q user %q", r.ClientSession, r.ClientUser)
	}
	// The same dialect: the user replaced in place, the cache key and
	// every other byte the client's.
	got := string(r.Body("m2", llm.Edits{User: "h", AddUsage: true}))
	want := `{"stream_options":{"include_usage":true},"model":"m2", "prompt_cache_key":"conv-1", "messages":[{"role":"user","content":"hi"}], "user":"h", "stream":true}`
	if got != want {
		t.Errorf("Body:\n got %s\nwant %s", got, want)
	}
	got = string(r.Body("m2", llm.Edits{}))
	want = `{"model":"m2", "prompt_cache_key":"conv-1", "messages":[{"role":"user","content":"hi"}], "stream":true}`
	if got != want {
		t.Errorf("Body without a pseudonym:\n got %s\nwant %s", got, want)
	}
	// The client's own key is kept over FreeLane's.
	if got := string(r.Body("m2", llm.Edits{Session: "s"})); bytes.Contains([]byte(got), []byte(`"s"`)) {
		t.Errorf("the client's prompt_cache_key was replaced: %s", got)
	}
	got = string(r.Body("m2", llm.Edits{Drop: []string{"stream_options"}, MaxOutput: 5}))
	if bytes.Contains([]byte(got), []byte("alice")) || !json.Valid([]byte(got)) {
		t.Errorf("edited body %s", got)
	}

	safety := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"safety_identifier":"bob","user":"carol"}`)
	r, err = ParseRequest(llm.Chat, safety)
	if err != nil {
		t.Fatal(err)
	}
	if r.ClientUser != "bob" && r.ClientUser != "carol" {
		t.Errorf("user %q", r.ClientUser)
	}
	if got := string(r.Body("m", llm.Edits{})); got != `{"model":"m","messages":[{"role":"user","content":"hi"}]}` {
		t.Errorf("both identifiers must go: %s", got)
	}
}

func TestSessionBecomesTheCacheKey(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	r, err := ParseRequest(llm.Chat, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.Body("m", llm.Edits{Session: "s1", AddUsage: true})); got != `{"stream_options":{"include_usage":true},"prompt_cache_key":"s1","model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}` {
		t.Errorf("Body %s", got)
	}
	got := r.Body("m", llm.Edits{Session: "s1", Drop: []string{"temperature"}, MaxOutput: 1})
	if !bytes.Contains(got, []byte(`"prompt_cache_key":"s1"`)) || !json.Valid(got) {
		t.Errorf("edited Body %s", got)
	}
	if got := r.Body("m", llm.Edits{Session: "s1", Drop: []string{"prompt_cache_key"}}); bytes.Contains(got, []byte("s1")) {
		t.Errorf("a dropped prompt_cache_key was sent: %s", got)
	}
}

func TestClientIdentifiersBounded(t *testing.T) {
	long := bytes.Repeat([]byte("k"), llm.MaxIdentifier+1)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"prompt_cache_key":"` + string(long) + `","user":"` + string(long) + `","n":1}`)
	r, err := ParseRequest(llm.Chat, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.ClientSession != "" || r.ClientUser != "" {
		t.Errorf("an over-long identifier was read: %d, %d bytes", len(r.ClientSession), len(r.ClientUser))
	}
	if out := r.Body("m", llm.Edits{}); bytes.Contains(out, []byte(`"user":`)) {
		t.Errorf("the over-long user went upstream: %s", out)
	}
}

func TestEncodeIdentifiers(t *testing.T) {
	c := &llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "hi",
		Cache: &llm.CachePoint{TTL: "1h"}}}}}}
	out, err := Codec.EncodeRequest(c, "m", llm.Edits{Session: "sess", User: "h"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(out, &got)
	if got["prompt_cache_key"] != "sess" || got["user"] != "h" {
		t.Errorf("body %s", out)
	}
	if bytes.Contains(out, []byte("cache_control")) || bytes.Contains(out, []byte("1h")) {
		t.Errorf("a breakpoint reached an OpenAI body: %s", out)
	}
	out, _ = Codec.EncodeRequest(c, "m", llm.Edits{Session: "sess", User: "h", Drop: []string{"user", "prompt_cache_key"}})
	if bytes.Contains(out, []byte("sess")) || bytes.Contains(out, []byte(`"user":`)) {
		t.Errorf("dropped identifiers sent: %s", out)
	}
	out, _ = Codec.EncodeRequest(c, "m", llm.Edits{})
	if bytes.Contains(out, []byte("prompt_cache_key")) || bytes.Contains(out, []byte(`"user":`)) {
		t.Errorf("identifiers without a session: %s", out)
	}
}
