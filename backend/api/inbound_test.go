package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/auth"
	"freelane/backend/dialects"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/router"
	"freelane/backend/tier"
)

// kazoo is a dialect that exists only in this file: one route, a key
// header of its own and an error envelope of its own. A request is
// {"model":"m","hum":"text"}; an error is
// {"kazoo_error":{"status":N,"code":"...","why":"..."}}.
type kazooCodec struct{}

const kazooName llm.Dialect = "kazoo"

type kazooSource struct {
	body []byte
	hum  string
}

func (s *kazooSource) Raw() []byte                      { return s.body }
func (s *kazooSource) Rewrite(string, llm.Edits) []byte { return s.body }
func (s *kazooSource) Conversation() (*llm.Conversation, error) {
	return &llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Text: s.hum}}}}}, nil
}

func (kazooCodec) Dialect() llm.Dialect { return kazooName }

func (kazooCodec) ParseRequest(ep llm.Endpoint, body []byte) (*llm.Request, error) {
	var in struct {
		Model string `json:"model"`
		Hum   string `json:"hum"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.Model == "" {
		return nil, llm.BadRequest("model", "a kazoo request hums to a model")
	}
	r := llm.NewRequest(&kazooSource{body: body, hum: in.Hum})
	r.Endpoint, r.Dialect, r.Model = ep, kazooName, in.Model
	return r, nil
}

func (kazooCodec) EncodeRequest(*llm.Conversation, string, llm.Edits) ([]byte, error) {
	return nil, fmt.Errorf("kazoo: no upstream speaks it")
}
func (kazooCodec) DecodeResponse([]byte) (*llm.Answer, error) {
	return nil, fmt.Errorf("kazoo: no upstream speaks it")
}
func (kazooCodec) EncodeResponse(*llm.Answer, protocol.ResponseOptions) ([]byte, error) {
	return nil, fmt.Errorf("kazoo: answers are relayed only")
}
func (kazooCodec) NewStreamDecoder() protocol.StreamDecoder { return nil }
func (kazooCodec) NewStreamEncoder(protocol.ResponseOptions) protocol.StreamEncoder {
	return nil
}
func (kazooCodec) EventName([]byte) string { return "" }
func (kazooCodec) StreamEnd() []byte       { return nil }
func (kazooCodec) DecodeError([]byte) (protocol.ErrorInfo, bool) {
	return protocol.ErrorInfo{}, false
}

func (kazooCodec) EncodeError(e protocol.ErrorInfo) []byte {
	type oops struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
		Why    string `json:"why"`
	}
	b, _ := json.Marshal(map[string]oops{"kazoo_error": {e.Status, e.Code, e.Message}})
	return b
}

func (kazooCodec) EncodeStreamError(e protocol.ErrorInfo) llm.Event {
	return llm.Event{Kind: llm.Held, Data: kazooCodec{}.EncodeError(e)}
}

// kazoo is the dialect's registry entry.
var kazoo = protocol.Dialect{Codec: kazooCodec{}, Inbound: &protocol.Inbound{
	Prefixes:    []string{"/kazoo/"},
	Routes:      []protocol.Route{{Pattern: "POST /kazoo/hum", Call: protocol.Call{Endpoint: llm.Chat}, Listed: "/kazoo/hum"}},
	Claims:      func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/kazoo/") },
	KeyHeaders:  []protocol.KeyHeader{{Name: "Kazoo-Key"}},
	CORSHeaders: []string{"Kazoo-Tune"},
	Forward:     []string{"Kazoo-Tune"},
}}

// fakeUp is an upstream that answers every request with body and keeps
// the last request.
type fakeUp struct {
	body []byte
	mu   sync.Mutex
	last *llm.Request
}

func (u *fakeUp) Complete(_ context.Context, req *llm.Request, _ string) (*llm.Response, error) {
	u.mu.Lock()
	u.last = req
	u.mu.Unlock()
	return &llm.Response{Status: http.StatusOK, Body: u.body}, nil
}

func (u *fakeUp) Stream(context.Context, *llm.Request, string) (llm.EventStream, error) {
	return nil, &llm.Error{Class: llm.Transient, Status: http.StatusBadGateway, Message: "the fake upstream does not stream"}
}

type openGate struct{}

func (openGate) Available(llm.BackendID) *llm.Skip { return nil }
func (openGate) Allow(llm.BackendID) (func(*llm.Error, time.Duration), *llm.Skip) {
	return func(*llm.Error, time.Duration) {}, nil
}
func (openGate) Unchecked(llm.BackendID) func(*llm.Error, time.Duration) {
	return func(*llm.Error, time.Duration) {}
}

type dropRecorder struct{}

func (dropRecorder) Record(llm.Trace) {}

// fakeRouter routes the model fake/m, of dialect d, to up.
func fakeRouter(up router.Upstream, d llm.Dialect) *router.Router {
	spec := router.Spec{Providers: []router.ProviderSpec{
		{Name: "fake", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{{ID: "m"}}, Up: up, Dialect: d},
	}}
	return router.New(router.Build(spec), openGate{}, dropRecorder{}, nil, slog.New(slog.DiscardHandler))
}

type reply struct {
	status int
	header http.Header
	body   string
}

func do(s *Server, method, path, body string, header ...string) reply {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return reply{w.Code, w.Header(), w.Body.String()}
}

// A dialect that only a registry knows (kazoo, added after the four real
// ones) is served with no word of it in this package: its route is routed,
// its key header is read and offered to web pages, and FreeLane's own
// refusals, the request's and the router's, come in its envelope.
func TestInboundDialectFromRegistry(t *testing.T) {
	const token = "inbound-token-0123456789abcdef"
	up := &fakeUp{body: []byte(`{"kazoo":"hummed"}`)}
	reg := protocol.NewRegistry(append(dialects.Registry().Dialects(), kazoo)...)
	s := New(Options{Router: fakeRouter(up, kazooName), Dialects: reg, Token: auth.NewToken(token),
		Logger: slog.New(slog.DiscardHandler)})
	s.SetAllowedOrigins([]string{"https://ui.example"})
	kazooError := func(t *testing.T, r reply, status int, code string) string {
		t.Helper()
		var env struct {
			Oops struct {
				Status int    `json:"status"`
				Code   string `json:"code"`
				Why    string `json:"why"`
			} `json:"kazoo_error"`
		}
		if r.status != status || json.Unmarshal([]byte(r.body), &env) != nil || env.Oops.Code != code || env.Oops.Status != status {
			t.Fatalf("want %d %s in kazoo's envelope, got %d %s", status, code, r.status, r.body)
		}
		return env.Oops.Why
	}
	hum := `{"model":"fake/m","hum":"la"}`

	t.Run("no key", func(t *testing.T) {
		why := kazooError(t, do(s, "POST", "/kazoo/hum", hum), http.StatusUnauthorized, "invalid_api_key")
		if !strings.Contains(why, "Kazoo-Key") {
			t.Errorf("the refusal does not name kazoo's key header: %s", why)
		}
	})
	t.Run("served", func(t *testing.T) {
		r := do(s, "POST", "/kazoo/hum", hum, "Kazoo-Key", token, "Kazoo-Tune", "minor", "Content-Type", "application/json")
		if r.status != http.StatusOK || r.body != `{"kazoo":"hummed"}` || r.header.Get("X-FreeLane-Backend") != "fake/m" {
			t.Fatalf("%d %v %s", r.status, r.header, r.body)
		}
		up.mu.Lock()
		last := up.last
		up.mu.Unlock()
		if last == nil || last.Dialect != kazooName || last.Path != "/kazoo/hum" || last.Forward.Get("Kazoo-Tune") != "minor" {
			t.Fatalf("the upstream got %+v", last)
		}
	})
	t.Run("another dialect's key header", func(t *testing.T) {
		if r := do(s, "POST", "/kazoo/hum", hum, "Authorization", "Bearer "+token); r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("bad body", func(t *testing.T) {
		kazooError(t, do(s, "POST", "/kazoo/hum", `{"hum":"la"}`, "Kazoo-Key", token), http.StatusBadRequest, "invalid_request")
	})
	t.Run("router failure", func(t *testing.T) {
		kazooError(t, do(s, "POST", "/kazoo/hum", `{"model":"nothing","hum":"la"}`, "Kazoo-Key", token), http.StatusNotFound, "model_not_found")
	})
	t.Run("unknown path", func(t *testing.T) {
		why := kazooError(t, do(s, "GET", "/kazoo/elsewhere", "", "Kazoo-Key", token), http.StatusNotFound, "unknown_endpoint")
		if !strings.Contains(why, "/kazoo/hum") {
			t.Errorf("the list of routes leaves kazoo's out: %s", why)
		}
	})
	t.Run("paused", func(t *testing.T) {
		s.SetPaused(true)
		defer s.SetPaused(false)
		kazooError(t, do(s, "POST", "/kazoo/hum", hum, "Kazoo-Key", token), http.StatusServiceUnavailable, "freelane_paused")
	})
	t.Run("preflight", func(t *testing.T) {
		r := do(s, "OPTIONS", "/kazoo/hum", "", "Origin", "https://ui.example", "Access-Control-Request-Method", "POST")
		allow := strings.Split(r.header.Get("Access-Control-Allow-Headers"), ", ")
		for _, h := range []string{"Kazoo-Key", "Kazoo-Tune", "Content-Type", "Authorization"} {
			if !contains(allow, h) {
				t.Errorf("preflight does not allow %s: %q", h, allow)
			}
		}
	})
	t.Run("other dialects unchanged", func(t *testing.T) {
		// OpenAI's clients still get OpenAI's envelope on their paths.
		r := do(s, "POST", "/v1/chat/completions", `{}`)
		if r.status != http.StatusUnauthorized || !strings.Contains(r.body, `"type":"invalid_request_error"`) {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}

// A dialect that claims nothing by itself still owns the requests that
// match its routes: FreeLane's refusals of them come in its envelope, and
// a path none of its routes match belongs to the first dialect.
func TestInboundRouteOwnsItsRefusals(t *testing.T) {
	quiet := kazoo
	in := *kazoo.Inbound
	in.Claims = nil
	quiet.Inbound = &in
	openai, _ := dialects.Registry().Lookup(llm.DialectOpenAI)
	s := New(Options{Router: fakeRouter(&fakeUp{}, kazooName), Dialects: protocol.NewRegistry(openai, quiet),
		Token: auth.NewToken("inbound-token-0123456789abcdef"), Logger: slog.New(slog.DiscardHandler)})
	if r := do(s, "POST", "/kazoo/hum", `{}`); r.status != http.StatusUnauthorized || !strings.Contains(r.body, `"kazoo_error"`) {
		t.Errorf("refused on kazoo's route: %d %s", r.status, r.body)
	}
	if r := do(s, "GET", "/kazoo/elsewhere", ""); r.status != http.StatusUnauthorized || !strings.Contains(r.body, `"type":"invalid_request_error"`) {
		t.Errorf("refused off kazoo's routes: %d %s", r.status, r.body)
	}
}

// A route outside every dialect's prefix would skip the guard, so a
// registry that has one cannot make a server.
func TestInboundRouteOutsidePrefixesPanics(t *testing.T) {
	bad := kazoo
	in := *kazoo.Inbound
	in.Routes = []protocol.Route{{Pattern: "POST /elsewhere/hum", Call: protocol.Call{Endpoint: llm.Chat}}}
	bad.Inbound = &in
	defer func() {
		if recover() == nil {
			t.Error("a route outside the guard was accepted")
		}
	}()
	New(Options{Dialects: protocol.NewRegistry(bad), Logger: slog.New(slog.DiscardHandler)})
}

// With the registry of every dialect, a request's dialect is found in the
// order the surface always used: a path of a dialect first, then the
// model list by its headers, then OpenAI's.
func TestClientDialectOrder(t *testing.T) {
	s := New(Options{Dialects: dialects.Registry(), Logger: slog.New(slog.DiscardHandler)})
	cases := []struct {
		method, path string
		header       []string
		want         llm.Dialect
	}{
		{"POST", "/v1/chat/completions", nil, llm.DialectOpenAI},
		{"POST", "/v1/embeddings", []string{"Anthropic-Version", "2023-06-01"}, llm.DialectOpenAI},
		{"POST", "/v1/messages", nil, llm.DialectAnthropic},
		{"POST", "/v1/messages/count_tokens", nil, llm.DialectAnthropic},
		{"POST", "/v1/messages/x:generateContent", nil, llm.DialectAnthropic},
		{"POST", "/v1/responses", nil, llm.DialectResponses},
		{"GET", "/v1/responses/resp_1", nil, llm.DialectResponses},
		{"POST", "/v1/responses/x:countTokens", nil, llm.DialectResponses},
		{"POST", "/v1beta/models/m:generateContent", nil, llm.DialectGemini},
		{"GET", "/v1beta/anything", nil, llm.DialectGemini},
		{"POST", "/v1/models/m:streamGenerateContent", nil, llm.DialectGemini},
		{"GET", "/v1/models", nil, llm.DialectOpenAI},
		{"GET", "/v1/models", []string{"Anthropic-Version", "2023-06-01"}, llm.DialectAnthropic},
		{"GET", "/v1/models/m", []string{"X-Goog-Api-Key", "k"}, llm.DialectGemini},
		{"GET", "/v1/models?key=k", nil, llm.DialectGemini},
		{"GET", "/v1/models", []string{"Anthropic-Version", "2023-06-01", "X-Goog-Api-Key", "k"}, llm.DialectAnthropic},
		{"GET", "/v1/unknown", nil, llm.DialectOpenAI},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.path, nil)
		for i := 0; i+1 < len(c.header); i += 2 {
			r.Header.Set(c.header[i], c.header[i+1])
		}
		d, ok := s.clientDialect(r)
		if !ok || d.Name() != c.want {
			t.Errorf("%s %s %v: %q, want %q", c.method, c.path, c.header, d.Name(), c.want)
		}
	}
}

// The key is read as the SDKs of every dialect send it, and ?key= only on
// the paths of the dialect that sends it there.
func TestPresentedToken(t *testing.T) {
	s := New(Options{Dialects: dialects.Registry(), Logger: slog.New(slog.DiscardHandler)})
	cases := []struct {
		path   string
		header []string
		want   string
	}{
		{"/v1/chat/completions", []string{"Authorization", "Bearer  k1 "}, "k1"},
		{"/v1/chat/completions", []string{"Authorization", "bearer k1"}, "k1"},
		{"/v1/chat/completions", []string{"Authorization", "Basic x", "X-Api-Key", "k2"}, "k2"},
		{"/v1/messages", []string{"X-Api-Key", "k2", "X-Goog-Api-Key", "k3"}, "k2"},
		{"/v1/chat/completions", []string{"X-Goog-Api-Key", "k3"}, "k3"},
		// A Bearer header that carries nothing is the key sent, empty.
		{"/v1/chat/completions", []string{"Authorization", "Bearer  ", "X-Api-Key", "k2"}, ""},
		{"/v1beta/models/m:generateContent?key=k4", nil, "k4"},
		{"/v1/models?key=k4", nil, "k4"},
		{"/v1/chat/completions?key=k4", nil, ""},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", c.path, nil)
		for i := 0; i+1 < len(c.header); i += 2 {
			r.Header.Set(c.header[i], c.header[i+1])
		}
		if got := s.presentedToken(r); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.path, c.header, got, c.want)
		}
	}
}

// The words and headers made from the registry say what the fixed ones
// said.
func TestSurfaceFromRegistry(t *testing.T) {
	sf := newSurface(dialects.Registry())
	const token = "this FreeLane requires its inbound token: set it as your tool's API key (it is sent as Authorization: Bearer, x-api-key or x-goog-api-key); the token is server.token in FreeLane's config or its FREELANE_TOKEN environment variable"
	if sf.tokenRequired != token {
		t.Errorf("token message:\n%s\nwant\n%s", sf.tokenRequired, token)
	}
	allow := strings.Split(sf.corsAllow, ", ")
	want := []string{"Authorization", "Content-Type", "X-Api-Key", "X-Goog-Api-Key", "OpenAI-Organization", "OpenAI-Project", "X-FreeLane-Task", "X-FreeLane-Gear", "X-FreeLane-Session", "X-FreeLane-Cache", "Cache-Control"}
	if len(allow) != len(want) {
		t.Errorf("CORS headers %q, want %q", allow, want)
	}
	for _, h := range want {
		if !contains(allow, h) {
			t.Errorf("CORS headers %q lack %s", allow, h)
		}
	}
	for _, p := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/models", "/v1/messages", "/v1beta/models/MODEL:generateContent"} {
		if !strings.Contains(sf.listed, p) {
			t.Errorf("the routes listed (%s) leave out %s", sf.listed, p)
		}
	}
	for _, p := range []string{"/v1", "/v1/x", "/v1beta/models"} {
		if !sf.guarded(p) {
			t.Errorf("%s is not guarded", p)
		}
	}
	for _, p := range []string{"/", "/api/state", "/healthz", "/v1x"} {
		if sf.guarded(p) {
			t.Errorf("%s is guarded as inference", p)
		}
	}
}

// A dialect's model list names every chain under its vendor-style prefix
// too; the router must route those names, or the list would offer models
// that do not exist.
func TestChainPrefixesAreRouted(t *testing.T) {
	for _, d := range dialects.Registry().Dialects() {
		if d.Inbound == nil || d.Inbound.ChainPrefix == "" {
			continue
		}
		if !contains(router.VendorChainPrefixes, d.Inbound.ChainPrefix) {
			t.Errorf("%s lists chains as %s*, which the router does not route", d.Name(), d.Inbound.ChainPrefix)
		}
	}
}
