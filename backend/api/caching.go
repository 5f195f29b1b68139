package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"freelane/backend/llm"
)

// Caching is what the caching view of the admin API needs.
type Caching interface {
	// Caching reports what prompt caching and the response cache did over
	// the window that ends now.
	Caching(ctx context.Context, window time.Duration) (any, error)
}

// Bounds of the caching view's window.
const (
	defaultCachingWindow = 24 * time.Hour
	minCachingWindow     = time.Minute
	maxCachingWindow     = 30 * 24 * time.Hour
)

// mountCaching adds the caching view to the admin API.
func (h *adminHandlers) mountCaching(route func(string, http.HandlerFunc)) {
	route("GET /api/caching", h.caching)
}

func (h *adminHandlers) caching(w http.ResponseWriter, r *http.Request) {
	window, err := cachingWindow(r.URL.Query().Get("window"))
	if err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", err.Error(), "window")
		return
	}
	v, err := h.a.Caching(r.Context(), window)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "server_error", "internal", "the caching figures could not be read: "+err.Error(), "")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// cachingWindow reads the window parameter: a duration such as 90m or
// 24h, or a number of days such as 7d; empty is a day.
func cachingWindow(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return defaultCachingWindow, nil
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if n, err = strconv.Atoi(days); err == nil && n > 0 && n <= int(maxCachingWindow/(24*time.Hour)) {
			d = time.Duration(n) * 24 * time.Hour
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d < minCachingWindow || d > maxCachingWindow {
		return 0, fmt.Errorf("window must be a duration from 1m to 30d, such as 1h, 24h or 7d, got %q", llm.Truncate(s, 40))
	}
	return d, nil
}
