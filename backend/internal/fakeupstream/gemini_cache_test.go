package fakeupstream

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// cacheBody is a cachedContents.create body whose system instruction is
// about chars characters long.
func cacheBody(model string, chars int) string {
	return `{"model":"models/` + model + `","systemInstruction":{"parts":[{"text":"` + strings.Repeat("x", chars) + `"}]},"ttl":"300s"}`
}

func TestGeminiCacheCreateAndUse(t *testing.T) {
	s, c := newServer(t)
	s.RequireKey("k1")
	resp := post(t, c, s.GeminiURL()+"/cachedContents", cacheBody("gem-x", 8000), "x-goog-api-key", "k1")
	b := readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	created := decode[struct {
		Name       string `json:"name"`
		Model      string `json:"model"`
		ExpireTime string `json:"expireTime"`
		UpdateTime string `json:"updateTime"`
	}](t, b)
	exp, err1 := time.Parse(time.RFC3339Nano, created.ExpireTime)
	upd, err2 := time.Parse(time.RFC3339Nano, created.UpdateTime)
	if !strings.HasPrefix(created.Name, "cachedContents/") || created.Model != "models/gem-x" || err1 != nil || err2 != nil || exp.Sub(upd) != 300*time.Second {
		t.Fatalf("created %s", b)
	}
	if s.CacheCreates() != 1 || s.Calls("gem-x") != 0 {
		t.Errorf("creates %d, calls %d: a creation is not a call", s.CacheCreates(), s.Calls("gem-x"))
	}

	use := `{"cachedContent":"` + created.Name + `",` + gemBody[1:]
	resp = post(t, c, gemURL(s, "gem-x", "generateContent"), use, "x-goog-api-key", "k1")
	b = readBody(t, resp)
	usage := decode[struct {
		UsageMetadata struct {
			Prompt int `json:"promptTokenCount"`
			Cached int `json:"cachedContentTokenCount"`
		} `json:"usageMetadata"`
	}](t, b).UsageMetadata
	if resp.StatusCode != http.StatusOK || usage.Cached < 2000 || usage.Prompt <= usage.Cached {
		t.Fatalf("use: %d %s", resp.StatusCode, b)
	}

	// Beside a system instruction of the request's own it is refused.
	both := `{"cachedContent":"` + created.Name + `","systemInstruction":{"parts":[{"text":"hi"}]},` + gemBody[1:]
	resp = post(t, c, gemURL(s, "gem-x", "generateContent"), both, "x-goog-api-key", "k1")
	if b := readBody(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "CachedContent can not be used") {
		t.Errorf("with systemInstruction: %d %s", resp.StatusCode, b)
	}
	// Another model may not use it.
	resp = post(t, c, gemURL(s, "gem-other", "generateContent"), use, "x-goog-api-key", "k1")
	if b := readBody(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "has to be the same") {
		t.Errorf("another model: %d %s", resp.StatusCode, b)
	}
	// Once gone, it is not found.
	s.DropCaches()
	resp = post(t, c, gemURL(s, "gem-x", "generateContent"), use, "x-goog-api-key", "k1")
	if b := readBody(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "CachedContent not found") {
		t.Errorf("dropped: %d %s", resp.StatusCode, b)
	}
}

func TestGeminiCacheBelongsToItsKey(t *testing.T) {
	s, c := newServer(t)
	name := s.AddCache("gem-x", "k1", 4096)
	use := `{"cachedContent":"` + name + `",` + gemBody[1:]
	resp := post(t, c, gemURL(s, "gem-x", "generateContent"), use, "x-goog-api-key", "k2")
	if b := readBody(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `"PERMISSION_DENIED"`) {
		t.Errorf("another key: %d %s", resp.StatusCode, b)
	}
	resp = post(t, c, gemURL(s, "gem-x", "generateContent"), use, "x-goog-api-key", "k1")
	if b := readBody(t, resp); resp.StatusCode != http.StatusOK {
		t.Errorf("its key: %d %s", resp.StatusCode, b)
	}
}

func TestGeminiCacheRefusals(t *testing.T) {
	s, c := newServer(t)
	resp := post(t, c, s.GeminiURL()+"/cachedContents", cacheBody("gem-x", 400))
	b := readBody(t, resp)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "Cached content is too small. total_token_count=") ||
		!strings.Contains(string(b), "min_total_token_count=1024") || !strings.Contains(string(b), `"INVALID_ARGUMENT"`) {
		t.Errorf("too small: %d %s", resp.StatusCode, b)
	}
	s.SetCacheMinTokens(50)
	if resp := post(t, c, s.GeminiURL()+"/cachedContents", cacheBody("gem-x", 400)); resp.StatusCode != http.StatusOK {
		t.Errorf("above a lowered minimum: %d %s", resp.StatusCode, readBody(t, resp))
	}
	s.FailCacheCreates(http.StatusTooManyRequests)
	resp = post(t, c, s.GeminiURL()+"/cachedContents", cacheBody("gem-x", 400))
	if b := readBody(t, resp); resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), "RESOURCE_EXHAUSTED") {
		t.Errorf("failing: %d %s", resp.StatusCode, b)
	}
	if s.CacheCreates() != 1 {
		t.Errorf("creates %d, want the one that succeeded", s.CacheCreates())
	}
	resp = post(t, c, s.GeminiURL()+"/cachedContents", `{"model":"gem-x","ttl":"300s"}`)
	if b := readBody(t, resp); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("model without models/: %d %s", resp.StatusCode, b)
	}
}
