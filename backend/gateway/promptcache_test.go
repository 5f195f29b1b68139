package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"freelane/backend/internal/fakeupstream"
	"freelane/backend/llm"
)

// postHeaders posts body to path with the given headers.
func (e *env) postHeaders(path, body string, h map[string]string) reply {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

var pseudonymRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// member is the string value of a top-level member of a JSON body, ""
// when it has none.
func member(t *testing.T, body []byte, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("upstream body is not JSON: %v", err)
	}
	var s string
	_ = json.Unmarshal(m[name], &s)
	return s
}

// Claude Code's metadata.user_id in its current form: a JSON object in a
// string.
func claudeUserID(session string) string {
	b, _ := json.Marshal(map[string]string{"device_id": "dev-5f1e2a9c7b", "account_uuid": "acct-77aa01", "session_id": session})
	return string(b)
}

// anthropicTurn is turn n of a Claude Code conversation, with its
// breakpoints on the system prompt, the tools and the last message.
func anthropicTurn(model, userID string, n int) string {
	var msgs []string
	for i := range n {
		msgs = append(msgs, `{"role":"user","content":[{"type":"text","text":"question `+strconv.Itoa(i)+`"}]}`,
			`{"role":"assistant","content":[{"type":"text","text":"answer `+strconv.Itoa(i)+`"}]}`)
	}
	msgs = append(msgs, `{"role":"user","content":[{"type":"text","text":"question `+strconv.Itoa(n)+`","cache_control":{"type":"ephemeral"}}]}`)
	uid, _ := json.Marshal(userID)
	return `{"model":"` + model + `", "max_tokens":1024,
  "system":[{"type":"text","text":"` + strings.Repeat("You are Claude Code. ", 60) + `","cache_control":{"type":"ephemeral","ttl":"1h"}}],
  "tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}},"cache_control":{"type":"ephemeral"}}],
  "metadata":{"user_id":` + string(uid) + `},
  "messages":[` + strings.Join(msgs, ",") + `]}`
}

// TestSameDialectPassesBytesAndBreakpoints: a client's body reaches an
// upstream of its own dialect byte for byte, cache_control, anthropic-beta,
// prompt_cache_key and cachedContent included; only the model name and
// the end user's id (now FreeLane's pseudonym) differ. The fake vendor's
// prompt cache then finds the second turn's prefix.
func TestSameDialectPassesBytesAndBreakpoints(t *testing.T) {
	e := mixedEnv(t)
	e.up.SetDefault(fakeupstream.Behavior{PrefixCache: true})
	const rawSession = "0b7c4a1e-3f2d-4c55-9e21-aa0f5d3b7c10"
	uid := claudeUserID(rawSession)
	h := map[string]string{"anthropic-version": "2023-06-01", "anthropic-beta": "prompt-caching-2024-07-31,extended-cache-ttl-2025-04-11"}

	var users []string
	for n := 1; n <= 2; n++ {
		body := anthropicTurn(claude, uid, n)
		r := e.postHeaders("/v1/messages", body, h)
		if r.status != http.StatusOK {
			t.Fatalf("turn %d: %d %s", n, r.status, r.body)
		}
		got := lastRequest(t, e, "claude-x")
		var meta struct {
			Metadata struct {
				UserID string `json:"user_id"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(got.Body, &meta)
		user := meta.Metadata.UserID
		if !pseudonymRe.MatchString(user) {
			t.Fatalf("metadata.user_id upstream is %q, want FreeLane's pseudonym", user)
		}
		users = append(users, user)
		rawUID, _ := json.Marshal(uid)
		want := strings.Replace(strings.Replace(body, `"model":"`+claude+`"`, `"model":"claude-x"`, 1), string(rawUID), `"`+user+`"`, 1)
		if string(got.Body) != want {
			t.Errorf("turn %d: the upstream body is not the client's:\n got %s\nwant %s", n, got.Body, want)
		}
		if got.Header.Get("Anthropic-Beta") != h["anthropic-beta"] {
			t.Errorf("anthropic-beta upstream is %q", got.Header.Get("Anthropic-Beta"))
		}
		var usage struct {
			Usage struct {
				Read  int `json:"cache_read_input_tokens"`
				Write int `json:"cache_creation_input_tokens"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(r.body, &usage)
		if n == 1 && (usage.Usage.Write == 0 || usage.Usage.Read != 0) {
			t.Errorf("turn 1 should write the cache: %s", r.body)
		}
		if n == 2 && usage.Usage.Read == 0 {
			t.Errorf("turn 2 should read the cache the first wrote: %s", r.body)
		}
	}
	if users[0] != users[1] {
		t.Errorf("the user's pseudonym changed between turns: %q, %q", users[0], users[1])
	}

	// OpenAI: prompt_cache_key is the client's, the user the pseudonym.
	chatBody := `{"model":"` + groq + `",
  "prompt_cache_key":"my-own-key", "user":"alice@example.com",
  "messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`
	if r := e.post("/v1/chat/completions", chatBody); r.status != http.StatusOK {
		t.Fatalf("chat: %d %s", r.status, r.body)
	}
	got := lastRequest(t, e, "llama-z")
	user := member(t, got.Body, "user")
	if !pseudonymRe.MatchString(user) {
		t.Fatalf("user upstream is %q", user)
	}
	want := strings.Replace(strings.Replace(chatBody, `"model":"`+groq+`"`, `"model":"llama-z"`, 1), `"alice@example.com"`, `"`+user+`"`, 1)
	if string(got.Body) != want {
		t.Errorf("the upstream chat body is not the client's:\n got %s\nwant %s", got.Body, want)
	}

	// Gemini: the model is in the path, so the body is the client's own,
	// cachedContent and all.
	cache := e.up.AddCache("gemini-y", "AIza-test-key", 2048)
	gemBody := `{"cachedContent":"` + cache + `", "contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	if r := e.post("/v1beta/models/"+gem+":generateContent", gemBody); r.status != http.StatusOK {
		t.Fatalf("gemini: %d %s", r.status, r.body)
	}
	if got := lastRequest(t, e, "gemini-y"); string(got.Body) != gemBody {
		t.Errorf("the upstream Gemini body is not the client's:\n got %s\nwant %s", got.Body, gemBody)
	}
}

// TestSessionBecomesAStableCacheKey: a caller's session, however its
// dialect names it, reaches an OpenAI-style upstream as one
// prompt_cache_key for all its turns, another for another session, and
// never as the caller's own value; neither do its user ids.
func TestSessionBecomesAStableCacheKey(t *testing.T) {
	e := mixedEnv(t)
	raws := []string{"0b7c4a1e-3f2d-4c55-9e21-aa0f5d3b7c10", "9d2f6b11-0000-4c55-9e21-aa0f5d3b7c10", "dev-5f1e2a9c7b", "acct-77aa01",
		"alice@example.com", "codex-conv-42", "header-session-7", "ide-user-3"}
	h := map[string]string{"anthropic-version": "2023-06-01"}
	type call struct {
		name string
		send func(n int) reply
	}
	calls := []call{
		{"claude code", func(n int) reply {
			return e.postHeaders("/v1/messages", anthropicTurn(groq, claudeUserID(raws[0]), n), h)
		}},
		{"claude code legacy", func(n int) reply {
			return e.postHeaders("/v1/messages", anthropicTurn(groq, "user_9f86d081884c7d65_account_"+raws[3]+"_session_"+raws[1], n), h)
		}},
		{"codex", func(n int) reply {
			body := `{"model":"` + groq + `","prompt_cache_key":"` + raws[5] + `","instructions":"be brief","input":"turn ` + strconv.Itoa(n) + `","store":false}`
			return e.postHeaders("/v1/responses", body, map[string]string{"session_id": raws[5]})
		}},
		{"gemini with the header", func(n int) reply {
			body := `{"contents":[{"role":"user","parts":[{"text":"turn ` + strconv.Itoa(n) + `"}]}]}`
			return e.postHeaders("/v1beta/models/"+groq+":generateContent", body, map[string]string{"X-FreeLane-Session": raws[6]})
		}},
		{"openai with the header", func(n int) reply {
			body := `{"model":"` + groq + `","user":"` + raws[7] + `","messages":[{"role":"user","content":"turn ` + strconv.Itoa(n) + `"}]}`
			return e.postHeaders("/v1/chat/completions", body, map[string]string{"X-FreeLane-Session": raws[6] + "-b"})
		}},
	}
	keys := map[string]string{}
	for _, c := range calls {
		var first string
		for n := 1; n <= 3; n++ {
			if r := c.send(n); r.status != http.StatusOK {
				t.Fatalf("%s turn %d: %d %s", c.name, n, r.status, r.body)
			}
			got := lastRequest(t, e, "llama-z")
			key := member(t, got.Body, "prompt_cache_key")
			if !pseudonymRe.MatchString(key) {
				t.Fatalf("%s turn %d: prompt_cache_key %q, want a pseudonym: %s", c.name, n, key, got.Body)
			}
			if n == 1 {
				first = key
			} else if key != first {
				t.Errorf("%s: prompt_cache_key moved from %s to %s at turn %d", c.name, first, key, n)
			}
			if u := member(t, got.Body, "user"); u != "" && (!pseudonymRe.MatchString(u) || u == key) {
				t.Errorf("%s: user upstream %q", c.name, u)
			}
		}
		for other, k := range keys {
			if k == first {
				t.Errorf("%s and %s share the prompt_cache_key %s", c.name, other, k)
			}
		}
		keys[c.name] = first
	}
	// Claude Code's user id reaches the OpenAI upstream only as a hash.
	for _, r := range e.up.Requests() {
		for _, raw := range raws {
			if bytes.Contains(r.Body, []byte(raw)) {
				t.Errorf("%s reached the upstream as it was: %s", raw, r.Body)
			}
		}
		for k, vs := range r.Header {
			for _, v := range vs {
				for _, raw := range raws {
					if strings.Contains(v, raw) {
						t.Errorf("%s reached the upstream in header %s", raw, k)
					}
				}
			}
		}
	}
	// One session's key is the same whichever dialect named it.
	e.up.Reset()
	body := `{"model":"` + groq + `","messages":[{"role":"user","content":"hi"}]}`
	resp := e.postHeaders("/v1/chat/completions", body, map[string]string{"X-FreeLane-Session": raws[6]})
	key := member(t, lastRequest(t, e, "llama-z").Body, "prompt_cache_key")
	if key != keys["gemini with the header"] {
		t.Errorf("the header's session has key %s from OpenAI and %s from Gemini", key, keys["gemini with the header"])
	}
	// The trace names the session by the key's first 16 digits.
	tr := e.do("GET", "/api/requests/"+resp.header.Get("X-FreeLane-Request-Id"), "", nil)
	var trace llm.Trace
	if err := json.Unmarshal(tr.body, &trace); err != nil || trace.Session != key[:16] {
		t.Errorf("trace session %q, want %q: %s", trace.Session, key[:16], tr.body)
	}
	// An absurd header is refused, in the client's dialect.
	r := e.postHeaders("/v1/chat/completions", body, map[string]string{"X-FreeLane-Session": strings.Repeat("s", 600)})
	if r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(), "X-FreeLane-Session is too long") {
		t.Errorf("an over-long session header: %d %s", r.status, r.body)
	}
}

// cachedRe finds each dialect's count of prompt tokens read from the
// cache, in an answer or a stream.
var cachedRe = map[string]*regexp.Regexp{
	"openai":    regexp.MustCompile(`"prompt_tokens_details":\{"cached_tokens":(\d+)`),
	"responses": regexp.MustCompile(`"input_tokens_details":\{"cached_tokens":(\d+)`),
	"anthropic": regexp.MustCompile(`"cache_read_input_tokens":(\d+)`),
	"gemini":    regexp.MustCompile(`"cachedContentTokenCount":(\d+)`),
}

// TestCachedTokensReachTheCaller: whichever vendor served it, a client
// reads the tokens its prompt cache saved in its own dialect's usage, in
// an answer and in a stream.
func TestCachedTokensReachTheCaller(t *testing.T) {
	e := mixedEnv(t)
	e.up.SetDefault(fakeupstream.Behavior{CachedTokens: 40})
	h := map[string]string{"anthropic-version": "2023-06-01"}
	for _, backend := range []string{claude, gem, groq} {
		for _, stream := range []bool{false, true} {
			s := strconv.FormatBool(stream)
			for dialect, send := range map[string]func() reply{
				"openai": func() reply {
					return e.post("/v1/chat/completions", `{"model":"`+backend+`","stream":`+s+`,"stream_options":`+map[bool]string{true: `{"include_usage":true}`, false: "null"}[stream]+`,"messages":[{"role":"user","content":"hi"}]}`)
				},
				"responses": func() reply {
					return e.post("/v1/responses", `{"model":"`+backend+`","stream":`+s+`,"input":"hi","store":false}`)
				},
				"anthropic": func() reply {
					return e.postHeaders("/v1/messages", `{"model":"`+backend+`","max_tokens":50,"stream":`+s+`,"messages":[{"role":"user","content":"hi"}]}`, h)
				},
				"gemini": func() reply {
					verb := map[bool]string{true: ":streamGenerateContent?alt=sse", false: ":generateContent"}[stream]
					return e.post("/v1beta/models/"+backend+verb, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
				},
			} {
				r := send()
				if r.status != http.StatusOK {
					t.Errorf("%s client, %s, stream %v: %d %s", dialect, backend, stream, r.status, r.body)
					continue
				}
				m := cachedRe[dialect].FindAllSubmatch(r.body, -1)
				if len(m) == 0 || string(m[len(m)-1][1]) != "40" {
					t.Errorf("%s client, %s, stream %v: no 40 cached tokens in its usage:\n%s", dialect, backend, stream, r.body)
				}
			}
		}
	}
}

// openAITurn is turn n of an OpenAI-style conversation with a long system
// prompt and a tool, and no cache breakpoints, as OpenAI clients send.
func openAITurn(model string, n int) string {
	msgs := []string{`{"role":"system","content":"` + strings.Repeat("You are a coding agent. ", 60) + `"}`}
	for i := range n {
		msgs = append(msgs, `{"role":"user","content":"question `+strconv.Itoa(i)+`"}`, `{"role":"assistant","content":"answer `+strconv.Itoa(i)+`"}`)
	}
	msgs = append(msgs, `{"role":"user","content":"question `+strconv.Itoa(n)+`"}`)
	return `{"model":"` + model + `","messages":[` + strings.Join(msgs, ",") + `],
  "tools":[{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]}`
}

// TestSessionGetsBreakpointsOnAnthropic: an OpenAI-style client's
// conversation, which names its session but marks no breakpoints, reaches
// an Anthropic upstream with breakpoints on the tools, the system prompt
// and its last message, so that its next turn reads the prefix from the
// vendor's cache; without a session nothing is marked.
func TestSessionGetsBreakpointsOnAnthropic(t *testing.T) {
	e := mixedEnv(t)
	e.up.SetDefault(fakeupstream.Behavior{PrefixCache: true})
	var cached []string
	for n := 1; n <= 3; n++ {
		r := e.postHeaders("/v1/chat/completions", openAITurn(claude, n), map[string]string{"X-FreeLane-Session": "conv-1"})
		if r.status != http.StatusOK {
			t.Fatalf("turn %d: %d %s", n, r.status, r.body)
		}
		got := lastRequest(t, e, "claude-x")
		if c := bytes.Count(got.Body, []byte(`"cache_control"`)); c != 3 {
			t.Errorf("turn %d: %d breakpoints upstream, want 3: %s", n, c, got.Body)
		}
		m := cachedRe["openai"].FindSubmatch(r.body)
		if m == nil {
			cached = append(cached, "0")
		} else {
			cached = append(cached, string(m[1]))
		}
	}
	if cached[0] != "0" || cached[1] == "0" || cached[2] == "0" {
		t.Errorf("cached tokens by turn = %v, want none on the first and some on the next", cached)
	}
	// Without a session the conversation is sent as it came.
	if r := e.post("/v1/chat/completions", openAITurn(claude, 4)); r.status != http.StatusOK {
		t.Fatalf("no session: %d %s", r.status, r.body)
	}
	if got := lastRequest(t, e, "claude-x"); bytes.Contains(got.Body, []byte(`"cache_control"`)) {
		t.Errorf("a request without a session got breakpoints: %s", got.Body)
	}
}
