package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// CacheHeader is the response cache's header: a request's "off" or "on",
// an answer's hit, miss, bypass or refresh.
const CacheHeader = "X-FreeLane-Cache"

// maxCacheAge bounds a Cache-Control max-age, in seconds, so that a huge
// number cannot overflow a duration; no entry lives that long anyway.
const maxCacheAge = 10 * 365 * 24 * 3600

// cacheHeaders reads what the client's headers ask of the response cache
// into req.Cache, with the caller's identity, whose answers the cache
// keeps apart from every other caller's. A X-FreeLane-Cache value other
// than off or on is refused with a 400 in d's dialect; ok is false when
// that answer is written. Cache-Control directives FreeLane has no use
// for are ignored, as HTTP caches do.
func (s *Server) cacheHeaders(w http.ResponseWriter, r *http.Request, d protocol.Dialect, req *llm.Request) bool {
	req.Cache = llm.CacheDirective{Caller: s.callerIdentity(r)}
	for _, line := range r.Header.Values("Cache-Control") {
		for _, dir := range strings.Split(line, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store":
				req.Cache.Mode = llm.CacheBypass
			case "no-cache":
				if req.Cache.Mode != llm.CacheBypass {
					req.Cache.Mode = llm.CacheRefresh
				}
			case "max-age":
				n, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(val), `"`), 10, 63)
				if errors.Is(err, strconv.ErrRange) {
					// A number too large to hold is as good as forever,
					// as HTTP caches read it.
					n, err = maxCacheAge, nil
				}
				if err != nil {
					continue
				}
				req.Cache.MaxAge, req.Cache.HasMaxAge = time.Duration(min(n, maxCacheAge))*time.Second, true
			}
		}
	}
	v := strings.TrimSpace(r.Header.Get(CacheHeader))
	switch strings.ToLower(v) {
	case "":
	case "off":
		req.Cache.Mode = llm.CacheBypass
	case "on":
		req.Cache.OptIn = true
	default:
		writeIn(w, d, "invalid_request_error", protocol.ErrorInfo{Status: http.StatusBadRequest, Code: "invalid_cache_header",
			Message: fmt.Sprintf("%s must be %q or %q, got %q", CacheHeader, "off", "on", llm.Truncate(v, maxHeaderEcho))})
		return false
	}
	return true
}

// cacheOutcome writes what the response cache did with req, when it had
// a part in it.
func cacheOutcome(h http.Header, req *llm.Request) {
	if req != nil && req.Cache.Outcome != "" {
		h.Set(CacheHeader, string(req.Cache.Outcome))
	}
}
