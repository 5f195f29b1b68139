package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"freelane/backend/dialects"
	"freelane/backend/llm"
)

// What a client's headers ask of the response cache, and who asks: the
// caller's identity, which keeps one caller's entries from another.
func TestCacheHeaders(t *testing.T) {
	s := New(Options{Dialects: dialects.Registry()})
	d, _ := dialects.Registry().Lookup(llm.DialectOpenAI)
	read := func(remote string, h map[string][]string) (llm.CacheDirective, *httptest.ResponseRecorder, bool) {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		r.RemoteAddr = remote
		for k, vs := range h {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
		w := httptest.NewRecorder()
		req := &llm.Request{}
		ok := s.cacheHeaders(w, r, d, req)
		return req.Cache, w, ok
	}
	cases := []struct {
		h    map[string][]string
		want llm.CacheDirective
	}{
		{nil, llm.CacheDirective{}},
		{map[string][]string{"Cache-Control": {"no-cache"}}, llm.CacheDirective{Mode: llm.CacheRefresh}},
		{map[string][]string{"Cache-Control": {"No-Store"}}, llm.CacheDirective{Mode: llm.CacheBypass}},
		{map[string][]string{"Cache-Control": {"no-store, no-cache"}}, llm.CacheDirective{Mode: llm.CacheBypass}},
		{map[string][]string{"Cache-Control": {"no-cache", "no-store"}}, llm.CacheDirective{Mode: llm.CacheBypass}},
		{map[string][]string{"Cache-Control": {"max-age=30"}}, llm.CacheDirective{MaxAge: 30 * time.Second, HasMaxAge: true}},
		{map[string][]string{"Cache-Control": {`max-age="0", private`}}, llm.CacheDirective{HasMaxAge: true}},
		{map[string][]string{"Cache-Control": {"max-age=soon, max-age=-1, must-revalidate"}}, llm.CacheDirective{}},
		{map[string][]string{"Cache-Control": {"max-age=99999999999999999999999"}}, llm.CacheDirective{MaxAge: maxCacheAge * time.Second, HasMaxAge: true}},
		{map[string][]string{"Cache-Control": {"max-age=999999999999"}}, llm.CacheDirective{MaxAge: maxCacheAge * time.Second, HasMaxAge: true}},
		{map[string][]string{"X-FreeLane-Cache": {" OFF "}}, llm.CacheDirective{Mode: llm.CacheBypass}},
		{map[string][]string{"X-FreeLane-Cache": {"on"}, "Cache-Control": {"no-cache"}}, llm.CacheDirective{Mode: llm.CacheRefresh, OptIn: true}},
	}
	for _, c := range cases {
		got, _, ok := read("192.0.2.7:4000", c.h)
		c.want.Caller = "net:192.0.2.7"
		if !ok || got != c.want {
			t.Errorf("%v: %+v, want %+v", c.h, got, c.want)
		}
	}
	if a, _, _ := read("192.0.2.8:4000", nil); a.Caller != "net:192.0.2.8" {
		t.Errorf("another caller is %q", a.Caller)
	}
	_, w, ok := read("192.0.2.7:4000", map[string][]string{"X-FreeLane-Cache": {"sometimes" + strings.Repeat("x", 200)}})
	if ok || w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `X-FreeLane-Cache must be \"off\" or \"on\", got \"sometimesxxx`) ||
		!strings.Contains(w.Body.String(), `"code":"invalid_cache_header"`) || strings.Contains(w.Body.String(), strings.Repeat("x", 100)) {
		t.Errorf("a bad value: %v %d %s", ok, w.Code, w.Body)
	}
}
