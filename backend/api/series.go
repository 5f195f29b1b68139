package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"freelane/backend/llm"
	"freelane/backend/metrics"
)

// Series is what the admin API needs for the dashboard's charts.
type Series interface {
	// Series returns one window of the time series of every request, one
	// backend's calls or one chain's requests.
	Series(ctx context.Context, q metrics.SeriesQuery) (metrics.SeriesView, error)
}

// seriesWindowNames lists the windows for the error message.
func seriesWindowNames() string {
	names := make([]string, len(metrics.SeriesWindows))
	for i, w := range metrics.SeriesWindows {
		names[i] = w.Name
	}
	return strings.Join(names, ", ")
}

// seriesQuery reads window, backend and chain, or says what is wrong.
func seriesQuery(r *http.Request) (q metrics.SeriesQuery, field string, err error) {
	v := r.URL.Query()
	name := strings.TrimSpace(v.Get("window"))
	if name == "" {
		name = "1h"
	}
	w, ok := metrics.LookupSeriesWindow(name)
	if !ok {
		return q, "window", fmt.Errorf("window must be one of %s, got %q", seriesWindowNames(), llm.Truncate(name, 40))
	}
	q.Window = w
	for _, f := range []struct {
		name string
		dst  *string
	}{{"backend", &q.Backend}, {"chain", &q.Chain}} {
		s := v.Get(f.name)
		if len(s) > llm.MaxModelName || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return q, f.name, fmt.Errorf("%s must be a name of at most %d characters without control characters", f.name, llm.MaxModelName)
		}
		*f.dst = s
	}
	if q.Backend != "" && q.Chain != "" {
		return q, "chain", fmt.Errorf("give backend or chain, not both: a series is of one backend, one chain, or (with neither) every request")
	}
	return q, "", nil
}

func (h *adminHandlers) series(w http.ResponseWriter, r *http.Request) {
	q, field, err := seriesQuery(r)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", err.Error(), field)
		return
	}
	v, err := h.a.Series(r.Context(), q)
	if err != nil {
		h.s.o.Logger.Warn("could not read the time series", "window", q.Window.Name, "err", err)
		WriteError(w, http.StatusInternalServerError, "server_error", "internal",
			"The chart history could not be read from the database. Check the log for the reason, then reload the page.", "")
		return
	}
	writeJSON(w, http.StatusOK, v)
}
