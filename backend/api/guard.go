package api

import (
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// The /v1 guard keeps web pages of other sites away from inference. Local
// tools and SDKs send no Origin and no Sec-Fetch-Site header and are let
// through; a browser always sends Origin on a cross-origin POST, and
// Sec-Fetch-Site on every request, so a page on another site is refused
// before anything is routed or billed. Sites the user runs a web UI on can
// be let in with allowed_origins, which also answers their CORS preflight.

// corsExposeHeaders are FreeLane's own answer headers a web UI may read.
const corsExposeHeaders = "X-FreeLane-Request-Id, X-FreeLane-Backend, X-FreeLane-Attempts, Retry-After"

// SetAllowedOrigins replaces the origins (scheme://host[:port]) whose web
// pages may call /v1.
func (s *Server) SetAllowedOrigins(origins []string) {
	m := make(map[string]bool, len(origins))
	for _, o := range origins {
		m[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	s.origins.Store(&m)
}

func (s *Server) originAllowed(origin string) bool {
	m := s.origins.Load()
	return origin != "" && m != nil && (*m)[strings.ToLower(origin)]
}

// ownOrigin reports whether an Origin header names the page's own server,
// that is, the dashboard. The Host guard has already checked r.Host.
func ownOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, r.Host)
}

// guardV1 runs in front of every /v1 route, in this order: CORS preflight,
// the browser checks, the caller's account and the inbound token, the
// body's media type.
func (s *Server) guardV1(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		allowed := s.originAllowed(origin)
		// The answer depends on the Origin, so caches must key on it.
		w.Header().Add("Vary", "Origin")
		if allowed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		}
		if r.Method == http.MethodOptions {
			s.preflight(w, r, origin, allowed)
			return
		}
		if !allowed {
			switch {
			case origin != "" && !ownOrigin(origin, r):
				s.v1Error(w, r, http.StatusForbidden, "invalid_request_error", "origin_not_allowed",
					"FreeLane's /v1 does not answer web pages of other sites (Origin "+quoteHost(origin)+"), since any site could then spend your keys; if you run a web UI against FreeLane, add its origin to allowed_origins in the config", "")
				return
			case strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site"):
				s.v1Error(w, r, http.StatusForbidden, "invalid_request_error", "origin_not_allowed",
					"FreeLane's /v1 does not answer cross-site browser requests (Sec-Fetch-Site: cross-site), since any site could then spend your keys; if you run a web UI against FreeLane, add its origin to allowed_origins in the config", "")
				return
			}
		}
		if !s.admitV1(w, r) {
			return
		}
		if r.Method == http.MethodPost {
			if ct := r.Header.Get("Content-Type"); ct != "" {
				mt, _, err := mime.ParseMediaType(ct)
				if err != nil || mt != "application/json" {
					s.v1Error(w, r, http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
						"the request body must be JSON sent with Content-Type: application/json, got "+quoteHost(ct)+"; with curl, add -H 'Content-Type: application/json'", "")
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// preflight answers a CORS preflight. Only origins in allowed_origins get
// the Access-Control-Allow-* headers; for anyone else the answer carries
// none, which the browser reads as a refusal, and says why for whoever
// looks at the network panel.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request, origin string, allowed bool) {
	h := w.Header()
	h.Set("Allow", "GET, POST, OPTIONS")
	switch {
	case allowed:
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		// The request headers a web UI may send: the body's type, and
		// the key headers and the others of every dialect.
		h.Set("Access-Control-Allow-Headers", s.sf.corsAllow)
		h.Set("Access-Control-Max-Age", "600")
		// Chrome asks before a public page may reach a private address;
		// an origin the user listed may.
		if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
			h.Set("Access-Control-Allow-Private-Network", "true")
		}
		w.WriteHeader(http.StatusNoContent)
	case origin == "":
		w.WriteHeader(http.StatusNoContent)
	default:
		s.v1Error(w, r, http.StatusForbidden, "invalid_request_error", "origin_not_allowed",
			"FreeLane's /v1 does not answer web pages of other sites (Origin "+quoteHost(origin)+"); if you run a web UI against FreeLane, add its origin to allowed_origins in the config", "")
	}
}

// presentedToken is the key a caller sent, in any of the ways the SDKs of
// the registered dialects send one: a key header of any dialect, in
// registry order, or the query parameter of the dialect the request
// claims.
func (s *Server) presentedToken(r *http.Request) string {
	for _, k := range s.sf.keys {
		if key, ok := k.Key(r.Header); ok {
			return key
		}
	}
	if d, ok := s.clientDialect(r); ok && d.Inbound.KeyQuery != "" {
		return r.URL.Query().Get(d.Inbound.KeyQuery)
	}
	return ""
}

// dashboardCSP lets the dashboard load only its own scripts, styles and
// images and talk only to its own server (the websocket included), and
// forbids framing it anywhere. Inline styles are allowed because the
// components set style attributes; inline scripts are not.
func dashboardCSP(r *http.Request) string {
	return "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; " +
		"connect-src 'self' ws://" + r.Host + " wss://" + r.Host + "; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// dashboardHeaders are set on every page of the dashboard.
func dashboardHeaders(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", dashboardCSP(r))
	// No Referer may tell another site which dashboard screen linked to
	// it, or carry a login code a page failed to clear from its URL.
	h.Set("Referrer-Policy", "no-referrer")
}

// Nosniff makes every answer, refusals included, declare that its
// Content-Type is to be believed: a browser must not run a JSON error or a
// model's answer as a script or a page.
func Nosniff(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}
