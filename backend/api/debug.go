package api

import (
	"net/http"
	"net/http/pprof"
	"strconv"
)

// maxProfileSeconds bounds a CPU profile or an execution trace, so that a
// request cannot keep the profiler busy for longer than a report needs.
const maxProfileSeconds = 120

// Messages of /debug/pprof; the README lists them.
const (
	profilingOffMessage      = "profiling is off: set debug: {pprof: true} in FreeLane's config to serve /debug/pprof/"
	profilingStrangerMessage = "/debug/pprof/ is open only to the account running FreeLane and to a dashboard session (X-FreeLane-Session): a profile shows what the process is doing"
	profileSecondsMessage    = "seconds must be a whole number from 1 to 120"
)

// SetProfiling turns /debug/pprof/ on or off.
func (s *Server) SetProfiling(on bool) { s.profiling.Store(on) }

// mountDebug adds /debug/pprof/ to the server. The routes answer only
// while profiling is on.
func (s *Server) mountDebug() {
	s.mux.Handle("GET /debug/pprof/", s.debugAccess(http.HandlerFunc(pprof.Index)))
	s.mux.Handle("GET /debug/pprof/cmdline", s.debugAccess(http.HandlerFunc(pprof.Cmdline)))
	s.mux.Handle("GET /debug/pprof/profile", s.debugAccess(boundSeconds(http.HandlerFunc(pprof.Profile))))
	s.mux.Handle("GET /debug/pprof/symbol", s.debugAccess(http.HandlerFunc(pprof.Symbol)))
	s.mux.Handle("GET /debug/pprof/trace", s.debugAccess(boundSeconds(http.HandlerFunc(pprof.Trace))))
}

// debugAccess admits the account running FreeLane, which can read the
// process's memory anyway, and a dashboard session. The inbound token is
// not enough: it lets a program use the models, not look inside the
// router, and neither is server.local_users: any.
func (s *Server) debugAccess(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.profiling.Load() {
			WriteError(w, http.StatusNotFound, "invalid_request_error", "profiling_off", profilingOffMessage, "")
			return
		}
		switch c := callerOf(r); {
		case c.Kind == CallerSelf, c.Kind == CallerUnknown, s.session(r) != "":
		default:
			WriteError(w, http.StatusForbidden, "permission_error", "profiling_not_allowed", profilingStrangerMessage, "")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// boundSeconds refuses a profile longer than maxProfileSeconds; pprof's
// own default of 30 s (1 s for a trace) applies when none is given.
func boundSeconds(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.URL.Query().Get("seconds"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxProfileSeconds {
				WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", profileSecondsMessage, "seconds")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
