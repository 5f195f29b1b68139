package gateway_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"freelane/backend/internal/fakeupstream"
)

// clientUsage is the usage an answer reports to its client, read in the
// client's own dialect: the prompt as that dialect counts it, and the
// prompt tokens read from a cache.
type clientUsage struct{ prompt, cached int }

// usageSeen reads the usage from a client's answer or stream.
func usageSeen(t *testing.T, dialect string, stream bool, body []byte) clientUsage {
	t.Helper()
	var docs [][]byte
	if !stream {
		docs = [][]byte{body}
	} else {
		for _, ev := range bytes.Split(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
			for _, line := range bytes.Split(ev, []byte("\n")) {
				if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && d[0] == '{' {
					docs = append(docs, d)
				}
			}
		}
	}
	var u clientUsage
	for _, d := range docs {
		var v struct {
			Usage *struct {
				PromptTokens  *int `json:"prompt_tokens"`
				PromptDetails *struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
				InputTokens  *int `json:"input_tokens"`
				InputDetails *struct {
					Cached int `json:"cached_tokens"`
				} `json:"input_tokens_details"`
				CacheRead *int `json:"cache_read_input_tokens"`
			} `json:"usage"`
			Message *struct {
				Usage *struct {
					InputTokens *int `json:"input_tokens"`
					CacheRead   *int `json:"cache_read_input_tokens"`
				} `json:"usage"`
			} `json:"message"`
			Response *struct {
				Usage *struct {
					InputTokens  int `json:"input_tokens"`
					InputDetails struct {
						Cached int `json:"cached_tokens"`
					} `json:"input_tokens_details"`
				} `json:"usage"`
			} `json:"response"`
			Gemini *struct {
				Prompt int `json:"promptTokenCount"`
				Cached int `json:"cachedContentTokenCount"`
			} `json:"usageMetadata"`
		}
		if err := json.Unmarshal(d, &v); err != nil {
			t.Fatalf("%s answer: %v %s", dialect, err, d)
		}
		set := func(dst *int, p *int) {
			if p != nil && *p != 0 {
				*dst = *p
			}
		}
		switch dialect {
		case "openai":
			if v.Usage != nil {
				set(&u.prompt, v.Usage.PromptTokens)
				if v.Usage.PromptDetails != nil {
					u.cached = v.Usage.PromptDetails.Cached
				}
			}
		case "responses":
			if v.Usage != nil && v.Usage.InputTokens != nil {
				u.prompt = *v.Usage.InputTokens
				if v.Usage.InputDetails != nil {
					u.cached = v.Usage.InputDetails.Cached
				}
			}
			if v.Response != nil && v.Response.Usage != nil && v.Response.Usage.InputTokens != 0 {
				u.prompt, u.cached = v.Response.Usage.InputTokens, v.Response.Usage.InputDetails.Cached
			}
		case "anthropic":
			// message_start reports the input, message_delta may again.
			if v.Message != nil && v.Message.Usage != nil {
				set(&u.prompt, v.Message.Usage.InputTokens)
				set(&u.cached, v.Message.Usage.CacheRead)
			}
			if v.Usage != nil {
				set(&u.prompt, v.Usage.InputTokens)
				set(&u.cached, v.Usage.CacheRead)
			}
		case "gemini":
			if v.Gemini != nil && v.Gemini.Prompt != 0 {
				u.prompt, u.cached = v.Gemini.Prompt, v.Gemini.Cached
			}
		}
	}
	return u
}

// Prompt tokens an upstream read from its cache reach the client in its own
// dialect's words, relayed and translated: OpenAI's and Gemini's prompt
// counts include them, Anthropic's input_tokens leaves them out.
func TestCachedPromptTokensReachTheClientInItsDialect(t *testing.T) {
	e := dialectsEnv(t)
	const cached = 1000
	for _, up := range []string{upOpenAI, upAnthropic, upGemini} {
		e.up.Set(up[strings.IndexByte(up, '/')+1:], fakeupstream.Behavior{CachedTokens: cached})
		for _, in := range inbounds {
			for _, stream := range []bool{false, true} {
				name := in.name + "/" + up + "/stream=" + boolText(stream)
				path, body := in.request(up, stream)
				r := e.post(path, body)
				if r.status != 200 {
					t.Errorf("%s: %d %s", name, r.status, r.body)
					continue
				}
				tr := e.traceOf(r.header.Get("X-FreeLane-Request-Id"))
				// The neutral prompt counts every input token, cached or
				// not; the fake's uncached part of "hi" is a few tokens.
				total := tr.Usage.PromptTokens
				if tr.Usage.CacheReadTokens != cached || total <= cached || total > cached+20 {
					t.Errorf("%s: neutral usage %+v, want %d cached of the prompt", name, tr.Usage, cached)
					continue
				}
				want := clientUsage{prompt: total, cached: cached}
				if in.name == "anthropic" {
					want.prompt = total - cached
				}
				if got := usageSeen(t, in.name, stream, r.body); got != want {
					t.Errorf("%s: the client sees prompt %d with %d cached, want %d with %d: %s", name, got.prompt, got.cached, want.prompt, want.cached, r.body)
				}
			}
		}
	}
}
