package api

import (
	"net"
	"net/http"
	"net/url"

	"freelane/backend/auth"
)

// CSRFHeader is the header every admin write must carry, holding the
// session's token: the dashboard reads it from the freelane_csrf_PORT
// cookie, other clients from GET /api/session.
const CSRFHeader = "X-FreeLane-CSRF"

// LoginParam is the query parameter of a dashboard login link.
const LoginParam = "login"

// SessionView is the answer of GET /api/session.
type SessionView struct {
	// CSRF is the token to send in the X-FreeLane-CSRF header of every
	// write (every method but GET and HEAD).
	CSRF string `json:"csrf"`
}

// Messages of the session checks; the README lists them.
const (
	sessionRequiredMessage = "the admin API needs a dashboard session: open the dashboard link `freelane serve` printed, or run `freelane dashboard-url` on this machine for a new one (a link works once, within 10 minutes)"
	csrfRequiredMessage    = "admin API writes need the X-FreeLane-CSRF header with the token GET /api/session returns; the dashboard sends it itself, so reload the page if you see this there"
	metricsMessage         = "/metrics is open only to this machine; from elsewhere send the inbound token (Authorization: Bearer) or use a dashboard session"
)

// sessionCookie names the session cookie after the server's port: cookies
// are kept per host, not per port, so two FreeLanes on one machine would
// otherwise sign each other's dashboards out.
func sessionCookie(r *http.Request) string { return cookieName("freelane_session", r) }

// csrfCookie names the cookie the dashboard reads its anti-CSRF token
// from. The page derives the same name from location.port, which is the
// port of the Host header its requests carry.
func csrfCookie(r *http.Request) string { return cookieName("freelane_csrf", r) }

func cookieName(base string, r *http.Request) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		return base + "_" + port
	}
	return base
}

// session returns the request's valid session cookie value, or "".
func (s *Server) session(r *http.Request) string {
	c, err := r.Cookie(sessionCookie(r))
	if err != nil || !s.sessions.Valid(c.Value) {
		return ""
	}
	return c.Value
}

// requireSession lets through only requests of a dashboard session, and
// writes only with the session's anti-CSRF header.
func (s *Server) requireSession(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.session(r)
		if sess == "" {
			WriteError(w, http.StatusUnauthorized, "authentication_error", "session_required", sessionRequiredMessage, "")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !s.sessions.CheckCSRF(sess, r.Header.Get(CSRFHeader)) {
			WriteError(w, http.StatusForbidden, "authentication_error", "csrf_token_required", csrfRequiredMessage, "")
			return
		}
		next(w, r)
	}
}

// sessionInfo serves GET /api/session.
func (s *Server) sessionInfo(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, SessionView{CSRF: s.sessions.CSRF(s.session(r))})
}

// login exchanges a one-time login code for a session cookie and sends the
// browser on to the dashboard without the code, so that it stays out of
// the history. A used, expired or foreign code signs nobody in; the page
// then shows how to get a new link.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	code := q.Get(LoginParam)
	q.Del(LoginParam)
	w.Header().Set("Cache-Control", "no-store")
	dashboardHeaders(w, r)
	if s.sessions.Redeem(code) {
		sess := s.sessions.NewSession()
		maxAge := int(auth.SessionTTL.Seconds())
		http.SetCookie(w, &http.Cookie{
			Name: sessionCookie(r), Value: sess, Path: "/",
			MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		})
		// Readable by the page on purpose: only a page of this origin can
		// read it, and writes must echo it in the X-FreeLane-CSRF header.
		http.SetCookie(w, &http.Cookie{
			Name: csrfCookie(r), Value: s.sessions.CSRF(sess), Path: "/",
			MaxAge: maxAge, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		})
		s.o.Logger.Info("dashboard signed in with a login link", "remote", r.RemoteAddr)
	} else {
		q.Set("login_failed", "1")
		s.o.Logger.Warn("a dashboard login link was refused: it was used already, has expired or comes from an earlier run", "remote", r.RemoteAddr)
	}
	// Always to the dashboard's root: the links point there, and a fixed
	// path cannot be turned into a redirect to another site.
	to := url.URL{Path: "/", RawQuery: q.Encode()}
	http.Redirect(w, r, to.String(), http.StatusSeeOther)
}

// NewLoginCode mints a one-time login code for a dashboard link.
func (s *Server) NewLoginCode() string { return s.sessions.NewLoginCode() }

// metricsAccess lets /metrics be scraped by the user's own programs
// freely and by anyone else with the inbound token or a dashboard session.
func (s *Server) metricsAccess(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.admitMetrics(w, r) {
			return
		}
		next(w, r)
	}
}
