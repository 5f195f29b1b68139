package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"freelane/backend/hub"
)

// SessionHeader carries the dashboard's session token on every /api call
// and on /metrics. It is the only thing that grants a session: no cookie
// does, because browsers send the cookies of 127.0.0.1 to every port of
// it, so any local server a signed-in user visits would receive them. A
// page of another origin cannot send a custom header to FreeLane without a
// CORS preflight, which FreeLane never grants, so the header also stops
// cross-site writes.
const SessionHeader = "X-FreeLane-Session"

// LoginFragment is the key of the one-time code in the fragment of a
// dashboard login link (http://127.0.0.1:7788/#login=CODE). A fragment is
// never sent to a server, so no server, proxy or access log sees the code;
// the page reads it and exchanges it with POST /api/login.
const LoginFragment = "login"

// SocketSessionPrefix starts the websocket subprotocol that carries the
// session token: browsers cannot set headers on a websocket, so the
// dashboard offers the subprotocols hub.Protocol and
// SocketSessionPrefix+token, and the server selects hub.Protocol. The URL
// carries no credential.
const SocketSessionPrefix = hub.Protocol + ".session."

// LoginRequest is the body of POST /api/login.
type LoginRequest struct {
	// Code is the one-time code from the login link's fragment.
	Code string `json:"code"`
}

// LoginView is the answer of POST /api/login.
type LoginView struct {
	// Session is the token to send in the X-FreeLane-Session header of
	// every /api call, and in the websocket's subprotocols.
	Session string `json:"session"`
	// Expires is when the session ends; the dashboard then needs a new
	// login link.
	Expires time.Time `json:"expires"`
}

// SessionView is the answer of GET /api/session.
type SessionView struct {
	// Expires is when the session the request carried ends.
	Expires time.Time `json:"expires"`
}

// Messages of the session checks; the README lists them.
const (
	sessionRequiredMessage = "the admin API needs a dashboard session: open the dashboard link `freelane serve` printed, or run `freelane dashboard-url` on this machine for a new one (a link works once, within 10 minutes)"
	loginFailedMessage     = "this dashboard login link was used already, has expired or comes from an earlier run of FreeLane: run `freelane dashboard-url` on this machine for a new one (a link works once, within 10 minutes)"
	metricsMessage         = "/metrics is open only to this machine; from elsewhere send the inbound token (Authorization: Bearer) or a dashboard session (X-FreeLane-Session)"
)

// session returns the request's valid session token, or "". It is read
// from SessionHeader, and on a websocket upgrade also from the offered
// subprotocols, which is the only place a browser's websocket can carry
// it.
func (s *Server) session(r *http.Request) string {
	if tok := r.Header.Get(SessionHeader); tok != "" {
		if s.sessions.Valid(tok) {
			return tok
		}
		return ""
	}
	if !websocket.IsWebSocketUpgrade(r) {
		return ""
	}
	for _, p := range websocket.Subprotocols(r) {
		if tok, ok := strings.CutPrefix(p, SocketSessionPrefix); ok && s.sessions.Valid(tok) {
			return tok
		}
	}
	return ""
}

// requireSession lets through only requests that carry a dashboard
// session.
func (s *Server) requireSession(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.session(r) == "" {
			WriteError(w, http.StatusUnauthorized, "authentication_error", "session_required", sessionRequiredMessage, "")
			return
		}
		next(w, r)
	}
}

// sessionInfo serves GET /api/session: it answers only a signed-in page
// (requireSession refuses the others with 401), with its session's end.
func (s *Server) sessionInfo(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	exp, _ := s.sessions.Expires(s.session(r))
	writeJSON(w, http.StatusOK, SessionView{Expires: exp})
}

// login serves POST /api/login: it exchanges a one-time login code for a
// session token. A used, expired or foreign code signs nobody in; the page
// then shows how to get a new link. Neither the code nor the token is
// logged.
func (h *adminHandlers) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	var in LoginRequest
	if !h.decode(w, r, &in) {
		return
	}
	log := h.s.o.Logger
	if !h.s.sessions.Redeem(in.Code) {
		log.Warn("a dashboard login link was refused: it was used already, has expired or comes from an earlier run", "remote", r.RemoteAddr)
		WriteError(w, http.StatusUnauthorized, "authentication_error", "login_failed", loginFailedMessage, "code")
		return
	}
	tok, exp := h.s.sessions.NewSession()
	log.Info("dashboard signed in with a login link", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, LoginView{Session: tok, Expires: exp})
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
