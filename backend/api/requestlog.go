package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"freelane/backend/control"
	"freelane/backend/llm"
	"freelane/backend/store"
)

// NextCursorHeader carries the cursor of the request log's next page in
// the answer to GET /api/requests; it is absent on the last page. The
// body stays a plain list of traces, as every caller has read it.
const NextCursorHeader = "X-FreeLane-Next-Cursor"

// RequestDetail is one request as GET /api/requests/{id} answers it: its
// trace, and its bodies when body logging kept them.
type RequestDetail struct {
	llm.Trace
	// BodyLogging says whether body logging is on now (request_log.bodies).
	BodyLogging bool `json:"body_logging"`
	// Bodies are what the client sent and received, redacted and cut to
	// request_log.max_body_kb; absent when none were kept.
	Bodies *store.StoredBodies `json:"bodies,omitempty"`
}

// The values the request log's filters take.
var (
	logClasses = []llm.Class{llm.OK, llm.RateLimited, llm.Quota, llm.Transient, llm.Soft, llm.Credential, llm.Gone,
		llm.TooLong, llm.Caller, llm.Cancelled}
	logDialects = []llm.Dialect{llm.DialectOpenAI, llm.DialectResponses, llm.DialectAnthropic, llm.DialectGemini}
	logCaches   = []llm.CacheOutcome{llm.CacheHit, llm.CacheMiss, llm.CacheBypassed, llm.CacheRefreshed, store.CacheNone}
	logStatuses = []store.StatusClass{"2xx", "3xx", "4xx", "5xx"}
)

// requestLogParams are the query parameters GET /api/requests reads; any
// other is refused, so a misspelt filter is not silently ignored.
var requestLogParams = []string{"limit", "cursor", "sort", "order", "q", "id", "from", "to", "before",
	"chain", "backend", "class", "dialect", "status", "cache", "stream", "session", "instance"}

// badParam writes the 400 of a query parameter.
func badParam(w http.ResponseWriter, param, msg string) {
	WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", msg, param)
}

// oneOf is the list of allowed values as a sentence: "a, b or c".
func oneOf[T ~string](vals []T) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = string(v)
	}
	return joinList(s, "or")
}

// enumParam reads the query parameter name, when given, into dst, which
// must then be one of allowed; otherwise it writes the error, the words
// must followed by the values allowed, and reports false.
func enumParam[T ~string](w http.ResponseWriter, q url.Values, name, must string, allowed []T, dst *T) bool {
	v := q.Get(name)
	if v == "" {
		return true
	}
	if !slices.Contains(allowed, T(v)) {
		badParam(w, name, must+oneOf(allowed))
		return false
	}
	*dst = T(v)
	return true
}

// requestQuery reads and checks the query of GET /api/requests. ok is
// false when the error is written.
func requestQuery(w http.ResponseWriter, q url.Values) (rq store.RequestQuery, search string, ok bool) {
	for k, v := range q {
		if !slices.Contains(requestLogParams, k) {
			badParam(w, k, fmt.Sprintf("%q is not a filter of the request log; it takes %s", k, joinList(requestLogParams, "and")))
			return rq, "", false
		}
		if len(v) > 1 {
			badParam(w, k, fmt.Sprintf("%s is given %d times; give it once", k, len(v)))
			return rq, "", false
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			badParam(w, "limit", "limit must be a number from 1 to 1000 (rows per page)")
			return rq, "", false
		}
		rq.Limit = n
	}
	name := func(param string, dst *string) bool {
		v := q.Get(param)
		if len(v) > store.MaxFilterValue || !utf8.ValidString(v) {
			badParam(w, param, fmt.Sprintf("%s must be a name of at most %d characters", param, store.MaxFilterValue))
			return false
		}
		*dst = v
		return true
	}
	if !name("chain", &rq.Chain) || !name("backend", &rq.Backend) || !name("instance", &rq.Instance) {
		return rq, "", false
	}
	if v := q.Get("id"); v != "" {
		if len(v) > maxRequestID || strings.IndexFunc(v, notIDRune) >= 0 {
			badParam(w, "id", fmt.Sprintf("id must be a request id: at most %d letters, digits, '_' or '-', as in the X-FreeLane-Request-Id header", maxRequestID))
			return rq, "", false
		}
		rq.ID = v
	}
	if v := q.Get("session"); v != "" {
		if len(v) > 16 || strings.IndexFunc(v, notHexRune) >= 0 {
			badParam(w, "session", "session must be the 16 hex digits the request log shows for a session")
			return rq, "", false
		}
		rq.Session = v
	}
	if !enumParam(w, q, "class", "class must be ", logClasses, &rq.Class) ||
		!enumParam(w, q, "dialect", "dialect must be ", logDialects, &rq.Dialect) ||
		!enumParam(w, q, "status", "status must be a class of HTTP statuses: ", logStatuses, &rq.Status) ||
		!enumParam(w, q, "cache", "cache must be what the response cache did: ", logCaches, &rq.Cache) {
		return rq, "", false
	}
	if v := q.Get("stream"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			badParam(w, "stream", "stream must be true (streamed requests only) or false (the others)")
			return rq, "", false
		}
		rq.Stream = &b
	}
	times := []struct {
		param string
		dst   *time.Time
	}{{"from", &rq.From}, {"to", &rq.To}, {"before", &rq.Before}}
	for _, tp := range times {
		v := q.Get(tp.param)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			badParam(w, tp.param, tp.param+" must be an RFC 3339 time, such as 2026-12-04T09:30:00Z")
			return rq, "", false
		}
		*tp.dst = t
	}
	if !rq.From.IsZero() && !rq.To.IsZero() && !rq.From.Before(rq.To) {
		badParam(w, "to", "to must be later than from")
		return rq, "", false
	}
	if v := q.Get("sort"); v != "" {
		if !slices.Contains(store.RequestSorts, store.RequestSort(v)) {
			badParam(w, "sort", "sort must be "+oneOf(store.RequestSorts))
			return rq, "", false
		}
		rq.Sort = store.RequestSort(v)
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		rq.Asc = true
	default:
		badParam(w, "order", "order must be desc (newest or largest first, the default) or asc")
		return rq, "", false
	}
	if v := q.Get("cursor"); v != "" {
		rq.Cursor = v
	}
	search = strings.TrimSpace(q.Get("q"))
	if utf8.RuneCountInString(search) > store.MaxSearchText || !utf8.ValidString(search) {
		badParam(w, "q", fmt.Sprintf("q, the search, must be at most %d characters of text", store.MaxSearchText))
		return rq, "", false
	}
	return rq, search, true
}

func notHexRune(r rune) bool { return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') }

// requests serves GET /api/requests: one page of the request log, the
// cursor of the next in NextCursorHeader.
func (h *adminHandlers) requests(w http.ResponseWriter, r *http.Request) {
	rq, search, ok := requestQuery(w, r.URL.Query())
	if !ok {
		return
	}
	page, err := h.searchRequests(r, rq, search)
	if err != nil {
		if isBadCursor(err) {
			badParam(w, "cursor", "cursor is not one this page of the request log gave, or it was given for another sort; start again from the first page")
			return
		}
		WriteError(w, http.StatusInternalServerError, "server_error", "internal",
			"the request log could not be read; see FreeLane's log for why, and try again", "")
		h.s.o.Logger.Error("reading the request log failed", "err", err)
		return
	}
	if page.Next != "" {
		w.Header().Set(NextCursorHeader, page.Next)
	}
	traces := page.Traces
	if traces == nil {
		traces = []llm.Trace{}
	}
	writeJSON(w, http.StatusOK, traces)
}

// searchRequests runs rq with the search: a request id finds that
// request (the X-FreeLane-Request-Id a user was told to note), and any
// other text, or an id no row has, is searched for in names and text.
func (h *adminHandlers) searchRequests(r *http.Request, rq store.RequestQuery, search string) (store.RequestPage, error) {
	if search == "" {
		return h.a.QueryRequests(r.Context(), rq)
	}
	if len(search) <= maxRequestID && strings.IndexFunc(search, notIDRune) < 0 && rq.Cursor == "" {
		byID := rq
		byID.ID = search
		page, err := h.a.QueryRequests(r.Context(), byID)
		if err != nil || len(page.Traces) > 0 {
			return page, err
		}
	}
	rq.Text = search
	return h.a.QueryRequests(r.Context(), rq)
}

func isBadCursor(err error) bool { return errors.Is(err, store.ErrBadCursor) }

// request serves GET /api/requests/{id}.
func (h *adminHandlers) request(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > maxRequestID || strings.IndexFunc(id, notIDRune) >= 0 {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value",
			fmt.Sprintf("a request id is at most %d letters, digits, '_' or '-', such as req_0190a1b2c3d4e5f60718293a4b5c", maxRequestID), "id")
		return
	}
	t, found, err := h.a.Request(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	if !found {
		fail(w, &control.Error{Status: http.StatusNotFound, Code: "unknown_request", Param: "id",
			Message: fmt.Sprintf("there is no request %q: it never was, or the request log no longer keeps it", id)})
		return
	}
	d := RequestDetail{Trace: t, BodyLogging: h.s.BodyLogging() > 0}
	b, kept, err := h.a.RequestBodies(r.Context(), id)
	if err != nil {
		h.s.o.Logger.Warn("reading a request's bodies failed", "err", err)
	} else if kept {
		d.Bodies = &b
	}
	writeJSON(w, http.StatusOK, d)
}
