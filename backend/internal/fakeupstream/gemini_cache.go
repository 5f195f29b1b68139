package fakeupstream

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"freelane/backend/jsonscan"
)

// Gemini's explicit caches: POST /v1beta/cachedContents creates one from
// a prefix of a request (model, contents, systemInstruction, tools,
// toolConfig, ttl), and generateContent refers to it with cachedContent.
// As on the real API a cache belongs to the key that made it, refuses to
// be made below a minimum number of tokens, and may not be used together
// with a systemInstruction, tools or a toolConfig of the request's own.

// DefaultCacheMinTokens is the smallest cache the fake Gemini makes until
// SetCacheMinTokens changes it: the Flash models' minimum.
const DefaultCacheMinTokens = 1024

// geminiCache is one cache the fake Gemini made.
type geminiCache struct {
	model   string
	key     string
	tokens  int
	expires time.Time
}

// geminiCacheFields are the members of a cachedContents.create body.
var geminiCacheFields = names("model", "contents", "tools", "toolConfig", "systemInstruction", "ttl", "expireTime", "displayName")

// SetCacheMinTokens sets the fewest tokens (the fake's estimate, a token
// per four characters of the cached members) a cache may hold; a smaller
// one is refused with Gemini's 400 "Cached content is too small".
func (s *Server) SetCacheMinTokens(n int) {
	s.mu.Lock()
	s.cacheMin = n
	s.mu.Unlock()
}

// FailCacheCreates makes every cache creation fail with status, in
// Gemini's error shape for it; 0 lets them succeed again.
func (s *Server) FailCacheCreates(status int) {
	s.mu.Lock()
	s.cacheFail = status
	s.mu.Unlock()
}

// CacheCreates returns the number of caches created (not refused) since
// Start or Reset.
func (s *Server) CacheCreates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cacheMade
}

// DropCaches forgets every cache, as if they had all expired: requests
// that name one get Gemini's 403 "CachedContent not found".
func (s *Server) DropCaches() {
	s.mu.Lock()
	clear(s.caches)
	s.mu.Unlock()
}

// AddCache makes a cache of tokens tokens for model and key without a
// request and returns its name, for tests that send cachedContent
// themselves.
func (s *Server) AddCache(model, key string, tokens int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addCacheLocked(model, key, tokens, time.Hour)
}

// addCacheLocked records a cache; the caller holds mu.
func (s *Server) addCacheLocked(model, key string, tokens int, ttl time.Duration) string {
	name := "cachedContents/fake" + strconv.FormatUint(s.ids.Add(1), 10)
	s.caches[name] = geminiCache{model: model, key: key, tokens: tokens, expires: s.clock.Now().Add(ttl)}
	s.cacheMade++
	return name
}

// geminiCacheRoute reports whether path is the collection of caches.
func geminiCacheRoute(path string) bool {
	return path == "/v1beta/cachedContents" || path == "/v1/cachedContents"
}

// geminiRequestKey is the key a Gemini request carries.
func geminiRequestKey(r *http.Request) string {
	if key := r.Header.Get("X-Goog-Api-Key"); key != "" {
		return key
	}
	return r.URL.Query().Get("key")
}

// createCache answers POST /cachedContents.
func (x *exchange) createCache(r *http.Request, allowed bool, parseErr error) {
	if !x.admitGeminiKey(r) {
		return
	}
	switch {
	case !allowed:
		x.geminiError(http.StatusNotFound, "Method not found.", "", nil)
		return
	case parseErr != nil:
		x.geminiError(http.StatusBadRequest, "Invalid JSON payload received. "+parseErr.Error(), "", nil)
		return
	}
	body := x.gem.body
	if f, m := checkFields(body, geminiCacheFields, ""); m != "" {
		x.geminiError(http.StatusBadRequest, m, f, nil)
		return
	}
	raw, _ := lookup(body, geminiCacheFields, "model")
	model, _ := asString(raw)
	id, ok := strings.CutPrefix(model, "models/")
	if !ok || id == "" {
		x.geminiError(http.StatusBadRequest, "* CreateCachedContentRequest.cached_content.model: model must be a resource name of the form models/{model}", "cached_content.model", nil)
		return
	}
	ttl := time.Hour
	if raw, ok := lookup(body, geminiCacheFields, "ttl"); ok {
		s, _ := asString(raw)
		secs, err := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64)
		if !strings.HasSuffix(s, "s") || err != nil || secs <= 0 {
			x.geminiError(http.StatusBadRequest, "Invalid value at 'cached_content.ttl' (type.googleapis.com/google.protobuf.Duration), "+strconv.Quote(s), "cached_content.ttl", nil)
			return
		}
		ttl = time.Duration(secs * float64(time.Second))
	}
	chars := 0
	for _, k := range []string{"contents", "system_instruction", "tools", "tool_config"} {
		if v, ok := lookup(body, geminiCacheFields, k); ok {
			chars += len(v)
		}
	}
	n := tokens(chars)
	s := x.s
	s.mu.Lock()
	fail, minTokens := s.cacheFail, s.cacheMin
	s.mu.Unlock()
	if fail != 0 {
		x.t.b = Behavior{}
		x.geminiScriptedError(fail)
		return
	}
	if n < minTokens {
		x.geminiError(http.StatusBadRequest, "Cached content is too small. total_token_count="+strconv.Itoa(n)+", min_total_token_count="+strconv.Itoa(minTokens), "", nil)
		return
	}
	now := s.clock.Now().UTC()
	s.mu.Lock()
	name := s.addCacheLocked(id, geminiRequestKey(r), n, ttl)
	s.mu.Unlock()
	b := append(x.out[:0], `{"name":`...)
	b = jsonscan.AppendString(b, name)
	b = append(b, `,"model":`...)
	b = jsonscan.AppendString(b, model)
	b = append(b, `,"createTime":"`...)
	b = now.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","updateTime":"`...)
	b = now.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","expireTime":"`...)
	b = now.Add(ttl).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","usageMetadata":{"totalTokenCount":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, "}}"...)
	x.out = b
	x.w.Header()["Content-Type"] = ctGeminiJSON
	_, _ = x.w.Write(x.out)
}

// admitGeminiKey checks the key as the Gemini endpoints do and answers a
// missing or wrong one.
func (x *exchange) admitGeminiKey(r *http.Request) bool {
	key := geminiRequestKey(r)
	switch {
	case x.t.key != "" && key == "":
		x.geminiError(http.StatusForbidden, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.", "", nil)
	case x.t.key != "" && key != x.t.key:
		x.geminiKeyInvalid(nil)
	default:
		return true
	}
	return false
}

// useCache checks the cachedContent a generateContent request names, if
// any, and answers what the real API answers a wrong one with. It reports
// whether the request may go on; the cache's tokens are then in
// x.gem.cacheTokens.
func (x *exchange) useCache(r *http.Request) bool {
	raw, ok := lookup(x.gem.body, geminiFields, "cached_content")
	if !ok {
		return true
	}
	name, _ := asString(raw)
	for _, k := range []string{"system_instruction", "tools", "tool_config"} {
		if _, ok := lookup(x.gem.body, geminiFields, k); ok {
			x.geminiError(http.StatusBadRequest, "CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request.", "", nil)
			return false
		}
	}
	s := x.s
	s.mu.Lock()
	c, found := s.caches[name]
	if found && !s.clock.Now().Before(c.expires) {
		delete(s.caches, name)
		found = false
	}
	s.mu.Unlock()
	switch {
	case !found || c.key != geminiRequestKey(r):
		x.geminiError(http.StatusForbidden, "CachedContent not found (or permission denied)", "", nil)
		return false
	case c.model != x.req.Model:
		x.geminiError(http.StatusBadRequest, "Model used by GenerateContent request (models/"+x.req.Model+") and CachedContent (models/"+c.model+") has to be the same!", "", nil)
		return false
	}
	x.gem.cacheTokens = c.tokens
	return true
}
