// Package fakelocal is a fake local model server for tests: it answers the
// discovery routes of one kind of server (Ollama, LM Studio, llama.cpp,
// vLLM, KoboldCpp, LocalAI, Jan, or a plain OpenAI-compatible one) with the
// models it is given, on a real loopback port, and serves OpenAI's POST
// /v1/chat/completions, /v1/completions and /v1/embeddings (plain and
// streamed) by passing them to a fakeupstream server, whose default answer
// is "Hello from MODEL" and whose faults can be scripted through Upstream.
//
// A server can be stopped and started again on the same port, to stand
// for a local server that is quit and relaunched:
//
//	s, err := fakelocal.New(fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "qwen2.5:7b", Context: 8192, Loaded: true}}})
//	defer s.Close()
//	s.Stop()
//	err = s.Start()
package fakelocal

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"freelane/backend/internal/fakeupstream"
)

// The kinds of server the fake can be.
const (
	Ollama    = "ollama"
	LMStudio  = "lmstudio"
	Jan       = "jan"
	LlamaCpp  = "llamacpp"
	VLLM      = "vllm"
	LocalAI   = "localai"
	KoboldCpp = "koboldcpp"
	// OpenAI is an unnamed server with only an OpenAI-style model list.
	OpenAI = "openai"
)

// Kinds lists every kind New accepts.
var Kinds = []string{Ollama, LMStudio, Jan, LlamaCpp, VLLM, LocalAI, KoboldCpp, OpenAI}

// Model is one model the fake offers. Each kind reports the fields its real
// counterpart reports and ignores the others.
type Model struct {
	ID string
	// Context is the allocated window: Ollama /api/ps context_length (when
	// Loaded), LM Studio's loaded instance, llama.cpp's /props n_ctx (the
	// first model's), vLLM's max_model_len, KoboldCpp's true max context
	// (the first model's).
	Context int
	// TrainedContext is the trained maximum: Ollama model_info, LM Studio
	// max_context_length, llama.cpp meta.n_ctx_train.
	TrainedContext int
	// NumCtx is Ollama's num_ctx parameter in /api/show.
	NumCtx int
	// ParameterSize is Ollama's details.parameter_size or LM Studio's
	// params_string, such as "7.6B".
	ParameterSize string
	// NParams is llama.cpp's meta.n_params.
	NParams int64
	// Capabilities are Ollama's /api/show capabilities ("completion",
	// "tools", "vision", "thinking", "embedding"); LM Studio reports
	// "tools" and "vision" from them.
	Capabilities []string
	// Embedding makes it an embedding model (LM Studio type "embeddings",
	// Ollama capabilities ["embedding"] when Capabilities is empty).
	Embedding bool
	// Loaded puts it in Ollama's /api/ps and LM Studio's loaded state.
	Loaded bool
	// Remote makes Jan list it as a hosted model (owned_by "remote").
	Remote bool
}

// Config describes a fake server.
type Config struct {
	// Kind is one of the kind constants.
	Kind string
	// Models are the models it offers.
	Models []Model
	// Port is the loopback port to listen on; 0 picks a free one.
	Port int
	// Key, when set, makes the model list and chat routes refuse requests
	// without "Authorization: Bearer Key", the way Jan (always) and LM
	// Studio (optionally) do.
	Key string
	// Version is the version the server reports; each kind has a default.
	Version string
}

// Server is a running fake local server.
type Server struct {
	kind    string
	key     string
	version string
	port    int
	up      *fakeupstream.Server
	proxy   *httputil.ReverseProxy

	mu     sync.Mutex
	models []Model
	srv    *httptest.Server
}

// New starts a fake server of c.Kind on a loopback port.
func New(c Config) (*Server, error) {
	if !slices.Contains(Kinds, c.Kind) {
		return nil, fmt.Errorf("fakelocal: unknown kind %q", c.Kind)
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)))
	if err != nil {
		return nil, fmt.Errorf("fakelocal: listen: %w", err)
	}
	up := fakeupstream.Start()
	target, err := url.Parse(up.URL)
	if err != nil {
		up.Close()
		ln.Close()
		return nil, fmt.Errorf("fakelocal: upstream URL: %w", err)
	}
	s := &Server{
		kind:    c.Kind,
		key:     c.Key,
		version: c.Version,
		port:    ln.Addr().(*net.TCPAddr).Port,
		up:      up,
		models:  slices.Clone(c.Models),
		proxy: &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.Out.URL.Scheme = target.Scheme
				r.Out.URL.Host = target.Host
				r.Out.Host = target.Host
				// The fake upstream checks its own key, not this one.
				r.Out.Header.Del("Authorization")
			},
			// Streams must reach the client chunk by chunk.
			FlushInterval: -1,
			ErrorLog:      log.New(io.Discard, "", 0),
		},
	}
	if s.version == "" {
		s.version = defaultVersions[c.Kind]
	}
	s.serve(ln)
	return s, nil
}

var defaultVersions = map[string]string{
	Ollama:    "0.12.3",
	LMStudio:  "0.4.1",
	Jan:       "0.7.0",
	LlamaCpp:  "b6500-fake",
	VLLM:      "0.10.2",
	LocalAI:   "v3.5.0",
	KoboldCpp: "1.99",
}

func (s *Server) serve(ln net.Listener) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(s.handle))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	s.srv = srv
}

// Port is the loopback port the server listens on, kept across Stop and
// Start.
func (s *Server) Port() int { return s.port }

// URL is the server's root, http://127.0.0.1:PORT.
func (s *Server) URL() string { return "http://127.0.0.1:" + strconv.Itoa(s.port) }

// BaseURL is its OpenAI-compatible base, URL()+"/v1".
func (s *Server) BaseURL() string { return s.URL() + "/v1" }

// Upstream is the fake upstream that answers the chat routes, for
// scripting behaviours per model.
func (s *Server) Upstream() *fakeupstream.Server { return s.up }

// SetModels replaces the models the server offers.
func (s *Server) SetModels(models []Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = slices.Clone(models)
}

// Stop closes the listener and every connection, as a server that quits
// does; the port is kept for Start. Stopping a stopped server does
// nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// ErrRunning is returned by Start on a server that was not stopped.
var ErrRunning = errors.New("fakelocal: server already running")

// Start listens again on the same port after Stop.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return ErrRunning
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)))
	if err != nil {
		return fmt.Errorf("fakelocal: listen again on %d: %w", s.port, err)
	}
	s.serve(ln)
	return nil
}

// Close stops the server for good, with its upstream.
func (s *Server) Close() {
	s.Stop()
	s.up.Close()
}

func (s *Server) snapshot() []Model {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.models)
}
