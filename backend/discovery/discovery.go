// Package discovery finds the model servers running on this machine
// (Ollama, LM Studio, Jan, llama.cpp's llama-server, vLLM, LocalAI,
// KoboldCpp and any other server with an OpenAI-compatible model list) and
// reads the models each one offers, with the context window a request may
// actually use.
//
// It only ever talks to 127.0.0.1: every URL is built from a port number,
// and the default client refuses to dial any other address, follows no
// redirect and uses no proxy. A server is recognised by what it answers,
// never by its port, because several servers share default ports (LocalAI
// and llama.cpp both use 8080) and LocalAI even imitates Ollama's routes.
package discovery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"sync"
	"time"
)

// DefaultPorts are the ports the servers listen on out of the box: Ollama
// 11434, LM Studio 1234, Jan 1337, llama.cpp and LocalAI 8080, vLLM 8000 and
// KoboldCpp 5001.
var DefaultPorts = []int{11434, 1234, 1337, 8080, 8000, 5001}

// The kinds of server Scan recognises, as found in Server.Kind.
const (
	KindOllama    = "ollama"
	KindLMStudio  = "lmstudio"
	KindJan       = "jan"
	KindLlamaCpp  = "llamacpp"
	KindVLLM      = "vllm"
	KindLocalAI   = "localai"
	KindKoboldCpp = "koboldcpp"
	// KindOpenAI is a server Scan could not name that answers an
	// OpenAI-style model list (or refuses it for want of a key).
	KindOpenAI = "openai"
)

// names are the display names of the kinds.
var names = map[string]string{
	KindOllama:    "Ollama",
	KindLMStudio:  "LM Studio",
	KindJan:       "Jan",
	KindLlamaCpp:  "llama.cpp",
	KindVLLM:      "vLLM",
	KindLocalAI:   "LocalAI",
	KindKoboldCpp: "KoboldCpp",
	KindOpenAI:    "OpenAI-compatible server",
}

// Limits on what a local server can make the scanner hold. A server on
// loopback is still untrusted input: any program can listen there.
const (
	// MaxPorts is the most ports one scan probes; the rest are ignored.
	MaxPorts = 64
	// MaxModels is the most models kept per server.
	MaxModels = 512
	// MaxBody is the largest response body read; a larger one is ignored.
	MaxBody = 4 << 20
	// MaxID is the longest model id kept, in bytes.
	MaxID = 200
	// showParallel bounds the concurrent Ollama /api/show calls per server,
	// since each makes Ollama read a model file's header.
	showParallel = 4
	// MaxPortTime is the default bound on all the questions asked of one
	// port in a scan (Options.PortTimeout): a
	// server that lists hundreds of models and answers each question
	// slowly would otherwise hold every scan, and the dashboard's "Look
	// again", for minutes.
	MaxPortTime = 15 * time.Second
)

// Server is one local model server found by Scan.
type Server struct {
	// Kind is one of the Kind constants.
	Kind string
	// Name is the display name, such as "Ollama" or "LM Studio".
	Name string
	// Port is the loopback port it answered on.
	Port int
	// BaseURL is the OpenAI-compatible base a client calls,
	// http://127.0.0.1:PORT/v1.
	BaseURL string
	// Version is the server's version, when it says.
	Version string
	// NeedsKey is set when the server answered but refused its model list
	// without an API key; Models is then empty.
	NeedsKey bool
	// Owner is the account whose process listens on the port, as the
	// operating system tells it through Options.Owner.
	Owner Owner
	// Models are the models it offers: chat models first, then
	// embedding-only ones, each group ordered by ID.
	Models []Model
	// Dropped counts the model names the server listed that were not
	// kept: invalid ones (see ValidID) and those past MaxModels.
	Dropped int
	// DroppedSample is the first invalid name, cut to a few dozen
	// characters and escaped (Sample), for a log line; "" when none.
	DroppedSample string
}

// Model is one model a local server offers.
type Model struct {
	// ID is the name a request gives as its model.
	ID string
	// Context is the window, in tokens, a request may actually use: the one
	// the server allocated where it reports it, 0 when unknown. It is never
	// the trained maximum when an allocated window is known, because
	// servers such as Ollama silently truncate a prompt beyond the
	// allocated window.
	Context int
	// TrainedContext is the longest window the model was trained for, where
	// the server reports it.
	TrainedContext int
	// ParamsB is the number of parameters in billions, where reported.
	ParamsB float64
	// Capabilities is the subset of "tools", "vision", "reasoning" and
	// "json" the server reports; nil when it reports none.
	Capabilities []string
	// Embedding marks an embedding-only model, which cannot chat.
	Embedding bool
	// Loaded is set when the server says the model is in memory now.
	Loaded bool
}

// Options configure Scan.
type Options struct {
	// Ports are the loopback ports to probe; nil means DefaultPorts.
	Ports []int
	// Client makes the requests. Nil means a client that dials only
	// 127.0.0.1, never follows a redirect and never uses a proxy.
	Client *http.Client
	// Timeout bounds each HTTP call; 0 means 2 seconds.
	Timeout time.Duration
	// PortTimeout bounds all the calls to one port together; 0 means
	// MaxPortTime.
	PortTimeout time.Duration
	// Logger receives debug notes about answers that were ignored; nil
	// discards them.
	Logger *slog.Logger
	// Owner tells which account holds the server's end of a connection the
	// scan made, as the user id the operating system reports (on Linux,
	// the uid of the socket in /proc/net/tcp). It is called for every
	// connection a probe uses, and a server whose connections belong to
	// different accounts, or whose owner could not be read, is left out.
	// An error matching errors.ErrUnsupported means the platform cannot
	// tell; such a server's Owner is not Known and it is trusted as before,
	// since there is no way to tell it apart. Nil means every owner is
	// unknown.
	Owner func(c net.Conn) (uid uint32, err error)
}

// Owner is the account that runs a local server.
type Owner struct {
	// UID is the user id of the account; meaningful only when Known.
	UID uint32
	// Known is false where the platform does not say who owns a socket.
	Known bool
}

// FirstUserUID is the lowest user id of a person's account on Linux
// (login.defs' UID_MIN); ids below it are root and the system accounts
// that packaged services run as, such as the ollama service user.
const FirstUserUID = 1000

// TrustedBy reports whether a server run by o may serve the account self:
// one run by self, by root or by a system account, or one whose owner
// the platform does not tell. A server of another person's account is
// not: it would see every prompt sent to it.
func (o Owner) TrustedBy(self uint32) bool {
	return !o.Known || o.UID == self || o.UID < FirstUserUID
}

// loopback is the only address the scanner talks to.
const loopback = "127.0.0.1"

// errNotLoopback is what the default client's dialer returns for any other
// address.
var errNotLoopback = errors.New("discovery: refusing to dial an address other than 127.0.0.1")

// defaultClient is shared by scans, so that its idle connections are
// reused from one scan to the next instead of piling up.
var defaultClient = sync.OnceValue(func() *http.Client { return NewClient() })

// NewClient returns the client Scan uses by default: it dials only
// 127.0.0.1, follows no redirect (a redirect could point anywhere) and uses
// no proxy (a proxy from the environment would see loopback traffic).
func NewClient() *http.Client {
	d := &net.Dialer{Timeout: time.Second}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         loopbackDialer(d.DialContext),
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     10 * time.Second,
			DisableCompression:  true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// loopbackDialer wraps dial so that it refuses every address but
// 127.0.0.1, whatever URL a request was built with.
func loopbackDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || host != loopback || (network != "tcp" && network != "tcp4") {
			return nil, fmt.Errorf("%w: %s %s", errNotLoopback, network, addr)
		}
		return dial(ctx, "tcp4", addr)
	}
}

// Scan probes every port on 127.0.0.1 concurrently, identifies each server
// by its answers and returns those found, ordered by port. A port where
// nothing listens, or where something answers that is no model server, is
// left out.
func Scan(ctx context.Context, o Options) []Server {
	ports := cleanPorts(o.Ports)
	c := o.Client
	if c == nil {
		c = defaultClient()
	}
	timeout := cmp.Or(o.Timeout, 2*time.Second)
	portTimeout := cmp.Or(o.PortTimeout, MaxPortTime)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	found := make([]*Server, len(ports))
	var wg sync.WaitGroup
	for i, port := range ports {
		wg.Go(func() {
			p := &prober{client: c, timeout: timeout, log: log.With("port", port), port: port, owners: newOwners(o.Owner)}
			pctx, cancel := context.WithTimeout(ctx, portTimeout)
			defer cancel()
			s := p.identify(pctx)
			if s != nil {
				owner, err := p.owners.result()
				if err != nil {
					log.Warn("discovery: a server is left out: who runs it cannot be told", "port", port, "err", err)
					s = nil
				} else {
					s.Owner = owner
				}
			}
			found[i] = s
		})
	}
	wg.Wait()
	var out []Server
	for _, s := range found {
		if s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// cleanPorts drops invalid and repeated ports, keeps at most MaxPorts and
// sorts them.
func cleanPorts(ports []int) []int {
	if ports == nil {
		ports = DefaultPorts
	}
	var out []int
	for _, p := range ports {
		if p < 1 || p > 65535 || slices.Contains(out, p) {
			continue
		}
		if len(out) == MaxPorts {
			break
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// baseURL is the OpenAI-compatible base of a server on port.
func baseURL(port int) string {
	return "http://" + net.JoinHostPort(loopback, strconv.Itoa(port)) + "/v1"
}

// prober talks to one port.
type prober struct {
	client  *http.Client
	timeout time.Duration
	log     *slog.Logger
	port    int
	owners  *owners
}

// reply is a whole HTTP answer.
type reply struct {
	status int
	body   []byte
}

// url builds the address of path on the prober's port; it is the only
// place URLs are made, and it knows no host but loopback.
func (p *prober) url(path string) string {
	return "http://" + net.JoinHostPort(loopback, strconv.Itoa(p.port)) + path
}

// do makes one request and reads the answer whole. Its error means no HTTP
// answer came (nothing listens, the connection broke, the time ran out, the
// body was too large).
func (p *prober) do(ctx context.Context, method, path string, body []byte) (reply, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	// Every connection the request is sent on, new or reused, is checked
	// for its owner: a pooled connection from an earlier scan is as much
	// this server's as a new one.
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { p.owners.note(info.Conn) }})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.url(path), rd)
	if err != nil {
		return reply{}, fmt.Errorf("discovery: build %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("discovery: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return reply{}, fmt.Errorf("discovery: read %s %s: %w", method, path, err)
	}
	if len(b) > MaxBody {
		return reply{}, fmt.Errorf("discovery: %s %s: body larger than %d bytes", method, path, MaxBody)
	}
	return reply{status: resp.StatusCode, body: b}, nil
}

// getJSON fetches path and decodes a 200 answer into v. It reports whether
// that worked; anything else is logged at debug level and ignored.
func (p *prober) getJSON(ctx context.Context, path string, v any) bool {
	return p.callJSON(ctx, http.MethodGet, path, nil, v)
}

func (p *prober) callJSON(ctx context.Context, method, path string, body []byte, v any) bool {
	r, err := p.do(ctx, method, path, body)
	if err != nil {
		p.log.Debug("discovery: no answer", "path", path, "err", err)
		return false
	}
	if r.status != http.StatusOK {
		p.log.Debug("discovery: not OK", "path", path, "status", r.status)
		return false
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		p.log.Debug("discovery: malformed JSON", "path", path, "err", err)
		return false
	}
	return true
}

// modelSet collects a server's models in the order first seen, dropping
// invalid and repeated ids and stopping at MaxModels; it counts what it
// dropped.
type modelSet struct {
	list    []Model
	at      map[string]int
	dropped int
	sample  string
}

// add returns the model with id, adding it if there is room, or nil.
func (s *modelSet) add(id string) *Model {
	if !ValidID(id) {
		s.drop(id)
		return nil
	}
	if i, ok := s.at[id]; ok {
		return &s.list[i]
	}
	if len(s.list) >= MaxModels {
		s.dropped++
		return nil
	}
	if s.at == nil {
		s.at = map[string]int{}
	}
	s.at[id] = len(s.list)
	s.list = append(s.list, Model{ID: id})
	return &s.list[len(s.list)-1]
}

// drop counts an invalid id and keeps the first one, made safe to log.
func (s *modelSet) drop(id string) {
	s.dropped++
	if s.sample == "" {
		s.sample = Sample(id)
	}
}

// finish puts the models and what was dropped into srv.
func (s *modelSet) finish(srv *Server) {
	srv.Models = s.models()
	srv.Dropped += s.dropped
	if srv.DroppedSample == "" {
		srv.DroppedSample = s.sample
	}
}

// get returns the model with id, or nil.
func (s *modelSet) get(id string) *Model {
	if i, ok := s.at[id]; ok {
		return &s.list[i]
	}
	return nil
}

// models returns the list sorted: chat models before embedding-only ones,
// each by ID, so that two scans of an unchanged server compare equal.
func (s *modelSet) models() []Model {
	out := slices.Clone(s.list)
	slices.SortStableFunc(out, func(a, b Model) int {
		if a.Embedding != b.Embedding {
			if a.Embedding {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// newServer makes the Server of kind on port.
func newServer(kind string, port int) *Server {
	return &Server{Kind: kind, Name: names[kind], Port: port, BaseURL: baseURL(port)}
}
