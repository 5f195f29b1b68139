// Package api is FreeLane's HTTP surface: the inference endpoints that
// tools call, in every registered dialect (built from the registry, see
// dialect.go), the admin plane under /api, /healthz, and the dashboard's
// static files.
package api

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"freelane/backend/auth"
	"freelane/backend/clock"
	"freelane/backend/defaults"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/pseudonym"
	"freelane/backend/router"
	"freelane/backend/tokens"
)

// Options configure the API server.
type Options struct {
	Router *router.Router
	// Dialects are the wire formats clients may speak: every route under
	// them, how a caller's key is read and in which envelope a refusal is
	// written come from their Inbound parts. nil serves no inference
	// route at all.
	Dialects *protocol.Registry
	// MaxBody is the largest request body accepted, in bytes (default
	// 16 MiB).
	MaxBody int64
	// BodyReadTimeout bounds receiving one request body (default 60 s).
	// It is a read deadline on the connection that is lifted once the body
	// is in, so it never cuts a long answer.
	BodyReadTimeout time.Duration
	// MaxInflightBody caps the bytes of request bodies held at once
	// (default 256 MiB); requests past it get 503 with Retry-After.
	MaxInflightBody int64
	// Assets is the dashboard (the built frontend); nil serves nothing at /.
	Assets  fs.FS
	Logger  *slog.Logger
	Version string
	// Clock dates the health answer (default: the wall clock).
	Clock clock.Clock
	// Sessions admits the dashboard to /api; nil makes a set nobody can
	// sign in to, so the admin plane is never left open by omission.
	Sessions *auth.Sessions
	// Token, when set, is required from every /v1 caller.
	Token auth.Token
	// AllLocalUsers trusts programs of every account on this machine like
	// the user's own (server.local_users: any); otherwise other accounts
	// need the Token.
	AllLocalUsers bool
	// Answers stores the answers clients continue by id; nil stores none,
	// and a continued conversation is then never found.
	Answers ResponseStore
	// Redactor removes the configured secrets from every answer before it
	// is stored; nil stores answers as they came.
	Redactor Redactor
	// Tasks are the tasks a client may name in X-FreeLane-Task; nil
	// knows only the built-in classes.
	Tasks Tasks
	// Team reports this instance's view of the state a team shares; nil
	// outside a team.
	Team Team
	// Pseudonyms hashes the session and end-user ids callers send, so
	// upstreams see only keyed hashes of them; nil sends none at all.
	Pseudonyms *pseudonym.Pseudonyms
	// Bodies keeps request and answer bodies while body logging is on
	// (SetBodyLogging); nil keeps none.
	Bodies BodyLog
}

// Server serves the API.
type Server struct {
	o       Options
	mux     *http.ServeMux
	maxBody atomic.Int64
	paused  atomic.Bool
	// profiling serves /debug/pprof/ (debug.pprof).
	profiling atomic.Bool
	// origins are the allowed_origins, lower-cased.
	origins  atomic.Pointer[map[string]bool]
	sessions *auth.Sessions
	// bodyLog is the bytes body logging keeps of each body, 0 when off.
	bodyLog atomic.Int64
	// readTimeout is the body read deadline in nanoseconds.
	readTimeout atomic.Int64
	budget      byteBudget
	// tokens counts wrong inbound tokens and throttles their senders.
	tokens *tokenLimiter
	// sf is the inference surface the dialects make.
	sf surface
}

// SetPaused pauses or resumes routing. While paused every /v1 request is
// answered with 503 at once, so tools fail fast instead of hanging, and the
// dashboard keeps working.
func (s *Server) SetPaused(on bool) { s.paused.Store(on) }

// Paused reports whether routing is paused.
func (s *Server) Paused() bool { return s.paused.Load() }

// PausedMessage is what clients read while routing is paused.
const PausedMessage = "FreeLane is paused: routing was paused from the tray or the dashboard; choose Resume there to serve requests again"

// unlessPaused answers 503 while routing is paused and otherwise calls h.
func (s *Server) unlessPaused(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.paused.Load() {
			w.Header().Set("Retry-After", "30")
			s.v1Error(w, r, http.StatusServiceUnavailable, "service_unavailable", "freelane_paused", PausedMessage, "")
			return
		}
		h(w, r)
	}
}

// SetMaxBody changes the request body limit for the next requests.
func (s *Server) SetMaxBody(n int64) {
	if n > 0 {
		s.maxBody.Store(n)
	}
}

// SetBodyLimits changes the body read deadline and the in-flight byte
// budget for the next requests; zero values leave a limit as it is.
func (s *Server) SetBodyLimits(readTimeout time.Duration, inflight int64) {
	if readTimeout > 0 {
		s.readTimeout.Store(int64(readTimeout))
	}
	if inflight > 0 {
		s.budget.max.Store(inflight)
	}
}

// New returns a Server; mount its Handler on an http.Server.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxBody <= 0 {
		o.MaxBody = defaults.MaxBodyMB * defaults.MiB
	}
	o.Clock = clock.OrReal(o.Clock)
	if o.Sessions == nil {
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		o.Sessions = auth.New(secret, o.Clock)
	}
	if o.Dialects == nil {
		o.Dialects = protocol.NewRegistry()
	}
	s := &Server{o: o, mux: http.NewServeMux(), sessions: o.Sessions, tokens: newTokenLimiter(o.Clock, o.Logger), sf: newSurface(o.Dialects)}
	s.warnUnknownOwners()
	s.maxBody.Store(o.MaxBody)
	s.readTimeout.Store(int64(cmp.Or(o.BodyReadTimeout, defaults.BodyReadTimeout)))
	s.budget.max.Store(cmp.Or(o.MaxInflightBody, defaults.MaxInflightBodyMB*defaults.MiB))
	for _, d := range s.sf.dialects {
		for _, rt := range d.Inbound.Routes {
			s.mux.HandleFunc(rt.Pattern, s.handler(d, rt))
		}
	}
	for _, p := range s.sf.prefixes {
		s.mux.HandleFunc(p, s.unknownEndpoint)
	}
	s.mux.HandleFunc("GET /healthz", s.health)
	s.mountDebug()
	var files http.Handler = http.NotFoundHandler()
	if o.Assets != nil {
		files = http.FileServerFS(o.Assets)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			WriteError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", r.Method+" is not allowed here", "")
			return
		}
		dashboardHeaders(w, r)
		files.ServeHTTP(w, r)
	})
	return s
}

// Handler returns the root handler. Put a HostGuard in front of it.
func (s *Server) Handler() http.Handler {
	v1 := s.guardV1(s.mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.sf.guarded(r.URL.Path) {
			v1.ServeHTTP(w, r)
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    string  `json:"code,omitempty"`
	Param   *string `json:"param"`
}

// WriteError writes an error in the OpenAI shape
// {"error":{"message","type","code","param"}}.
func WriteError(w http.ResponseWriter, status int, typ, code, msg, param string) {
	body := errorBody{Error: errorDetail{Message: msg, Type: typ, Code: code}}
	if param != "" {
		body.Error.Param = &param
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// requestBody reads a /v1 request's body within the size limit, the
// in-flight budget and the read deadline, or answers why it could not.
// The deadline covers the body only: it is lifted before routing, so that
// nothing after the body on this connection (a long answer, the next
// request on a kept-alive connection) runs under it.
func (s *Server) requestBody(w http.ResponseWriter, r *http.Request) (*heldBody, bool) {
	limit := s.maxBody.Load()
	timeout := time.Duration(s.readTimeout.Load())
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(clock.Deadline(timeout))
	held, err := readBody(w, r, limit, &s.budget)
	if err != nil {
		s.bodyReadError(w, r, err, limit, timeout)
		return nil, false
	}
	_ = rc.SetReadDeadline(time.Time{})
	if t, ok := w.(*bodyTap); ok {
		t.keepRequest(held.data)
	}
	return held, true
}

// serve routes a parsed request and writes the answer, or the failure, in
// d's dialect.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, d protocol.Dialect, req *llm.Request) {
	// The tokenizer's tables load only once something is routed, since an
	// idle router has no use for them.
	tokens.Prefetch()
	if !s.routingHeaders(w, r, d, req) {
		return
	}
	if req.Stream {
		s.stream(w, r, d, req, nil)
		return
	}
	res, f := s.o.Router.Complete(r.Context(), req)
	if f != nil {
		s.fail(w, d.Codec, f)
		return
	}
	writeAnswer(w, req, res, res.Response.Body)
}

// unknownEndpoint answers a path under a dialect's prefix that FreeLane
// does not serve with a JSON 404 in the dialect the request implies, and
// logs the path (never the body), so a tool that calls something new
// shows up in the log.
func (s *Server) unknownEndpoint(w http.ResponseWriter, r *http.Request) {
	path := llm.Truncate(r.URL.Path, 200)
	s.o.Logger.Info("unknown endpoint", "method", r.Method, "path", path, "status", http.StatusNotFound)
	msg := fmt.Sprintf("%s %s is not an endpoint FreeLane serves", r.Method, path)
	if s.sf.listed != "" {
		msg += "; it routes " + s.sf.listed
	}
	s.v1Error(w, r, http.StatusNotFound, "invalid_request_error", "unknown_endpoint", msg, "")
}

// fail writes a routing failure in the client's dialect. Caller errors
// carry the upstream's own body, which is passed on unchanged when the
// upstream spoke the client's dialect and the body is an error of it.
func (s *Server) fail(w http.ResponseWriter, codec protocol.Codec, f *router.Failure) {
	if f.ID != "" {
		// The id finds the failure in the request log, as it finds an answer.
		w.Header()[headerRequestID] = []string{f.ID}
	}
	if f.Class == llm.Cancelled {
		// Nobody is listening; the status only matters for logs.
		w.WriteHeader(f.Status)
		return
	}
	if len(f.Attempts) > 0 {
		w.Header().Set("X-FreeLane-Attempts", router.AttemptsHeader(f.Attempts))
	}
	if !f.RetryAt.IsZero() {
		// Whole seconds, rounded up: a client that comes back at once
		// would find the same limits.
		secs := int(math.Ceil(f.RetryAt.Sub(s.o.Clock.Now()).Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	if f.Body != nil && f.Dialect == codec.Dialect() {
		if e, ok := codec.DecodeError(f.Body); ok && e.Message != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.Status)
			_, _ = w.Write(f.Body)
			return
		}
	}
	s.o.Logger.Warn("request failed", "status", f.Status, "code", f.Code, "reason", f.Message)
	protocol.WriteError(w, codec, protocol.ErrorInfo{Status: f.Status, Code: f.Code, Message: f.Message})
}

// Team is an instance's view of what the instances of a team share.
type Team interface {
	// TeamStatus is the view as /healthz shows it; degraded is set while
	// a shared part is unreachable and the instance serves on its own.
	TeamStatus() (status any, degraded bool)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	t := s.o.Router.Table()
	body := map[string]any{
		"status":       "ok",
		"version":      s.o.Version,
		"backends":     len(t.Backends()),
		"chains":       t.Chains(),
		"missing_keys": t.MissingKeys(),
		"time":         s.o.Clock.Now().UTC().Format(time.RFC3339),
	}
	if s.o.Team != nil {
		// Still 200: the instance serves. A load balancer's health check
		// must not take every instance out because the shared state is
		// down; the status word says it is on its own.
		team, degraded := s.o.Team.TeamStatus()
		body["team"] = team
		if degraded {
			body["status"] = "degraded"
		}
	}
	writeJSON(w, http.StatusOK, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "server_error", "encode_failed", err.Error(), "")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
