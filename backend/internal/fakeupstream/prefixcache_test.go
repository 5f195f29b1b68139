package fakeupstream

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func postJSON(t *testing.T, url, body string, header map[string]string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	return out
}

func num(m map[string]any, path ...string) float64 {
	var v any = m
	for _, p := range path {
		o, _ := v.(map[string]any)
		v = o[p]
	}
	f, _ := v.(float64)
	return f
}

func TestPrefixCacheCountsRepeatedPrefixes(t *testing.T) {
	s := Start()
	defer s.Close()
	s.SetDefault(Behavior{PrefixCache: true})
	long := strings.Repeat("the same long system prompt ", 40)
	chat := func(last string) string {
		return `{"model":"m","messages":[{"role":"system","content":"` + long + `"},{"role":"user","content":"` + last + `"}]}`
	}
	first := postJSON(t, s.URL+"/chat/completions", chat("one"), nil)
	if c := num(first, "usage", "prompt_tokens_details", "cached_tokens"); c != 0 {
		t.Errorf("the first body has %v cached tokens", c)
	}
	second := postJSON(t, s.URL+"/chat/completions", chat("two"), nil)
	prompt, cached := num(second, "usage", "prompt_tokens"), num(second, "usage", "prompt_tokens_details", "cached_tokens")
	if cached <= 0 || cached >= prompt {
		t.Errorf("a repeated prefix: %v of %v prompt tokens cached", cached, prompt)
	}
	if got := s.Requests(); len(got) != 2 || !bytes.Equal(got[1].Body, []byte(chat("two"))) {
		t.Errorf("the bodies were not recorded as sent")
	}

	ant := func(last string, breakpoint bool) string {
		cc := ""
		if breakpoint {
			cc = `,"cache_control":{"type":"ephemeral"}`
		}
		return `{"model":"a","max_tokens":5,"system":[{"type":"text","text":"` + long + `"` + cc + `}],"messages":[{"role":"user","content":"` + last + `"}]}`
	}
	h := map[string]string{"anthropic-version": "2023-06-01", "x-api-key": "k"}
	w := postJSON(t, s.URL+"/messages", ant("one", true), h)
	if num(w, "usage", "cache_creation_input_tokens") <= 0 || num(w, "usage", "cache_read_input_tokens") != 0 {
		t.Errorf("the first body with a breakpoint writes the cache: %v", w["usage"])
	}
	r := postJSON(t, s.URL+"/messages", ant("two", true), h)
	if num(r, "usage", "cache_read_input_tokens") <= 0 || num(r, "usage", "cache_creation_input_tokens") != 0 {
		t.Errorf("the second body reads the cache: %v", r["usage"])
	}
	n := postJSON(t, s.URL+"/messages", ant("three", false), h)
	if num(n, "usage", "cache_read_input_tokens") != 0 || num(n, "usage", "cache_creation_input_tokens") != 0 {
		t.Errorf("no breakpoint, no cache on Anthropic: %v", n["usage"])
	}
}
