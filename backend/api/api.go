// Package api is FreeLane's HTTP surface: the OpenAI-compatible /v1 endpoints
// that tools call, /healthz, and the dashboard's static files.
package api

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"freelane/backend/auth"
	"freelane/backend/clock"
	"freelane/backend/defaults"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/anthropic"
	"freelane/backend/protocol/openai"
	"freelane/backend/router"
)

// Options configure the API server.
type Options struct {
	Router *router.Router
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
	// Responses stores Responses API answers; nil stores none, and a
	// previous_response_id is then never found.
	Responses ResponseStore
	// Redactor removes the configured secrets from every answer before it
	// is stored; nil stores answers as they came.
	Redactor Redactor
}

// Server serves the API.
type Server struct {
	o       Options
	mux     *http.ServeMux
	maxBody atomic.Int64
	paused  atomic.Bool
	// origins are the allowed_origins, lower-cased.
	origins  atomic.Pointer[map[string]bool]
	sessions *auth.Sessions
	// readTimeout is the body read deadline in nanoseconds.
	readTimeout atomic.Int64
	budget      byteBudget
	// tokens counts wrong inbound tokens and throttles their senders.
	tokens *tokenLimiter
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
			v1Error(w, r, http.StatusServiceUnavailable, "service_unavailable", "freelane_paused", PausedMessage, "")
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
	s := &Server{o: o, mux: http.NewServeMux(), sessions: o.Sessions, tokens: newTokenLimiter(o.Clock, o.Logger)}
	s.warnUnknownOwners()
	s.maxBody.Store(o.MaxBody)
	s.readTimeout.Store(int64(cmp.Or(o.BodyReadTimeout, defaults.BodyReadTimeout)))
	s.budget.max.Store(cmp.Or(o.MaxInflightBody, defaults.MaxInflightBodyMB*defaults.MiB))
	s.mux.HandleFunc("POST /v1/chat/completions", s.unlessPaused(s.routed(openai.Codec, llm.Chat)))
	s.mux.HandleFunc("POST /v1/completions", s.unlessPaused(s.routed(openai.Codec, llm.Completions)))
	s.mux.HandleFunc("POST /v1/embeddings", s.unlessPaused(s.routed(openai.Codec, llm.Embeddings)))
	s.mux.HandleFunc("POST /v1/messages", s.unlessPaused(s.routed(anthropic.Codec, llm.Chat)))
	s.mux.HandleFunc("POST /v1/messages/count_tokens", s.unlessPaused(s.countTokens(anthropic.Codec, anthropic.ParseCountTokens)))
	s.mux.HandleFunc("POST /v1/responses", s.unlessPaused(s.responsesCreate))
	s.mux.HandleFunc("POST /v1/responses/compact", s.unlessPaused(s.responsesCompact))
	s.mux.HandleFunc("GET /v1/responses/{id}", s.unlessPaused(s.responsesGet))
	s.mux.HandleFunc("GET /v1/responses", s.responsesSocket)
	s.mux.HandleFunc("POST /v1beta/models/{call...}", s.unlessPaused(s.gemini))
	s.mux.HandleFunc("POST /v1/models/{call...}", s.unlessPaused(s.gemini))
	s.mux.HandleFunc("GET /v1beta/models", s.unlessPaused(s.geminiModels))
	s.mux.HandleFunc("GET /v1beta/models/{model...}", s.unlessPaused(s.geminiModelInfo))
	s.mux.HandleFunc("GET /v1/models", s.unlessPaused(s.models))
	s.mux.HandleFunc("GET /v1/models/{model...}", s.unlessPaused(s.model))
	s.mux.HandleFunc("GET /healthz", s.health)
	s.mux.HandleFunc("/v1/", s.unknownEndpoint)
	s.mux.HandleFunc("/v1beta/", s.unknownEndpoint)
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
		if p := r.URL.Path; p == "/v1" || strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/v1beta/") {
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
	return held, true
}

// routed serves one routed endpoint of a client dialect: the codec parses
// the body, the router serves it, and answers and errors go back in the
// client's dialect.
func (s *Server) routed(codec protocol.Codec, ep llm.Endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		held, ok := s.requestBody(w, r)
		if !ok {
			return
		}
		defer held.release()
		req, err := codec.ParseRequest(ep, held.data)
		if err != nil {
			writeBadRequest(w, codec, err)
			return
		}
		req.Forward = forwarded(codec, r.Header)
		s.serve(w, r, codec, req)
	}
}

// serve routes a parsed request and writes the answer, or the failure, in
// the codec's dialect.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, codec protocol.Codec, req *llm.Request) {
	req.Path = callPath(r)
	if req.Stream {
		s.stream(w, r, codec, req)
		return
	}
	res, f := s.o.Router.Complete(r.Context(), req)
	if f != nil {
		s.fail(w, codec, f)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(res.Response.Body)))
	h.Set("X-FreeLane-Request-Id", res.ID)
	h.Set("X-FreeLane-Backend", res.Backend.Name())
	h.Set("X-FreeLane-Attempts", router.AttemptsHeader(res.Attempts))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(res.Response.Body)
}

// unknownEndpoint answers a path under /v1 or /v1beta that FreeLane does
// not serve with a JSON 404 in the dialect the path implies, and logs the
// path (never the body), so a tool that calls something new shows up in
// the log.
func (s *Server) unknownEndpoint(w http.ResponseWriter, r *http.Request) {
	path := llm.Truncate(r.URL.Path, 200)
	s.o.Logger.Info("unknown endpoint", "method", r.Method, "path", path, "status", http.StatusNotFound)
	v1Error(w, r, http.StatusNotFound, "invalid_request_error", "unknown_endpoint",
		fmt.Sprintf("%s %s is not an endpoint FreeLane serves; it routes /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses, /v1/models, /v1/messages and /v1beta/models/MODEL:generateContent", r.Method, path), "")
}

// fail writes a routing failure in the client's dialect. Caller errors
// carry the upstream's own body, which is passed on unchanged when the
// upstream spoke the client's dialect and the body is an error of it.
func (s *Server) fail(w http.ResponseWriter, codec protocol.Codec, f *router.Failure) {
	if f.Class == llm.Cancelled {
		// Nobody is listening; the status only matters for logs.
		w.WriteHeader(f.Status)
		return
	}
	if len(f.Attempts) > 0 {
		w.Header().Set("X-FreeLane-Attempts", router.AttemptsHeader(f.Attempts))
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
	writeError(w, codec, protocol.ErrorInfo{Status: f.Status, Code: f.Code, Message: f.Message})
}

// writeBadRequest refuses a request the codec could not parse.
func writeBadRequest(w http.ResponseWriter, codec protocol.Codec, err error) {
	info := protocol.ErrorInfo{Status: http.StatusBadRequest, Code: "invalid_request", Message: err.Error()}
	var bad *llm.BadRequestError
	if errors.As(err, &bad) {
		info.Code, info.Param = cmp.Or(bad.Code, "invalid_request"), bad.Param
	}
	writeError(w, codec, info)
}

// writeError writes an error body in the codec's dialect.
func writeError(w http.ResponseWriter, codec protocol.Codec, e protocol.ErrorInfo) {
	b := codec.EncodeError(e)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}

type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) modelList() []modelEntry {
	t := s.o.Router.Table()
	var data []modelEntry
	for _, c := range t.Chains() {
		data = append(data, modelEntry{ID: c, Object: "model", OwnedBy: "freelane"})
	}
	for _, b := range t.Backends() {
		data = append(data, modelEntry{ID: b.Name(), Object: "model", OwnedBy: b.ID.Provider})
	}
	return data
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Header.Get("Anthropic-Version") != "":
		s.anthropicModels(w)
		return
	case fromGemini(r):
		s.geminiModels(w, r)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": s.modelList()})
}

func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	if fromGemini(r) {
		s.geminiModelInfo(w, r)
		return
	}
	id := r.PathValue("model")
	if len(id) > llm.MaxModelName {
		e := llm.ModelTooLong(len(id))
		WriteError(w, http.StatusBadRequest, "invalid_request_error", e.Code, e.Message, e.Param)
		return
	}
	for _, m := range s.modelList() {
		if m.ID == id {
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	WriteError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", fmt.Sprintf("model %q does not exist", id), "model")
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	t := s.o.Router.Table()
	writeJSON(w, http.StatusOK, map[string]any{
		"status":       "ok",
		"version":      s.o.Version,
		"backends":     len(t.Backends()),
		"chains":       t.Chains(),
		"missing_keys": t.MissingKeys(),
		"time":         s.o.Clock.Now().UTC().Format(time.RFC3339),
	})
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
