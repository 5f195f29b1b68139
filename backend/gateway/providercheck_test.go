package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"freelane/backend/api"
	"freelane/backend/control"
	"freelane/backend/gateway"
	"freelane/backend/internal/fakeupstream"
)

func (r reply) errorCode() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Code
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// listCalls counts the model list reads a fake vendor got.
func listCalls(up *fakeupstream.Server) int {
	n := 0
	for _, r := range up.Requests() {
		if r.Path == "/v1/models" {
			n++
		}
	}
	return n
}

func (e *env) providerView(name string) (control.ProviderView, bool) {
	e.t.Helper()
	r := e.do(http.MethodGet, "/api/providers", "", nil)
	var list []control.ProviderView
	if err := json.Unmarshal(r.body, &list); err != nil {
		e.t.Fatalf("GET /api/providers: %d %s", r.status, r.body)
	}
	for _, p := range list {
		if p.Name == name {
			return p, true
		}
	}
	return control.ProviderView{}, false
}

// A key the vendor refuses is refused in words, with the key field named,
// and nothing is added; the right key is tried the same way and serves.
func TestHandAddedProviderKeyIsTried(t *testing.T) {
	e := newEnv(t, nil)
	const right, wrong = "sk-right-key-0123456789abcd", "sk-wrong-key-9876543210wxyz"
	e.up.RequireKey(right)
	body := func(key string) string {
		return `{"name":"d","tier":"free","base_url":"` + e.up.URL + `","models":[{"id":"md"}],"api_key":"` + key + `"}`
	}
	r := e.do("POST", "/api/providers", body(wrong), nil)
	if r.status != http.StatusBadRequest || r.errorCode() != api.CodeKeyRefused || r.param() != "api_key" ||
		!strings.Contains(r.errorMessage(), "d refused the key (HTTP 401") {
		t.Fatalf("wrong key: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), wrong) || strings.Contains(string(r.body), "9876543210") {
		t.Errorf("the answer repeats the key: %s", r.body)
	}
	if _, ok := e.providerView("d"); ok {
		t.Fatal("a provider whose key was refused was added")
	}
	// The flag that accepts an unreachable server does not let a refused
	// key in.
	r = e.do("POST", "/api/providers", strings.Replace(body(wrong), `{`, `{"unreachable_ok":true,`, 1), nil)
	if r.status != http.StatusBadRequest || r.errorCode() != api.CodeKeyRefused {
		t.Fatalf("wrong key with unreachable_ok: %d %s", r.status, r.body)
	}
	if got := e.up.Requests()[len(e.up.Requests())-1]; got.Path != "/v1/models" || got.Header.Get("Authorization") != "Bearer "+wrong {
		t.Fatalf("the key was tried at %s with %q", got.Path, got.Header.Get("Authorization"))
	}

	lists := listCalls(e.up)
	if r := e.do("POST", "/api/providers", body(right), nil); r.status != http.StatusCreated {
		t.Fatalf("right key: %d %s", r.status, r.body)
	}
	if listCalls(e.up) != lists+1 {
		t.Errorf("the right key was not tried against the list")
	}
	if r := e.post("/v1/chat/completions", chat("d/md", false)); r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "d/md" {
		t.Fatalf("the new provider does not serve: %d %s", r.status, r.body)
	}
}

// A server nothing answers at is a distinct error, in words, that asks
// whether to add the provider anyway; sending the flag adds it.
func TestHandAddedProviderOfflineAddsAnyway(t *testing.T) {
	e := newEnv(t, nil)
	addr := closedAddr(t)
	body := `{"name":"off","tier":"free","base_url":"http://` + addr + `/v1","models":[{"id":"mo"}],"api_key":"sk-offline-key-0123456789"}`
	r := e.do("POST", "/api/providers", body, nil)
	if r.status != http.StatusBadGateway || r.errorCode() != api.CodeProviderUnreachable || r.param() != "base_url" {
		t.Fatalf("offline: %d %s", r.status, r.body)
	}
	msg := r.errorMessage()
	for _, want := range []string{"could not reach " + addr, "nothing is listening there", "add it anyway"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	for _, raw := range []string{"dial tcp", "connect:", "modellist:"} {
		if strings.Contains(msg, raw) {
			t.Errorf("message %q holds Go's own error text %q", msg, raw)
		}
	}
	if _, ok := e.providerView("off"); ok {
		t.Fatal("an unreachable provider was added without the flag")
	}

	r = e.do("POST", "/api/providers", strings.Replace(body, `{`, `{"unreachable_ok":true,`, 1), nil)
	if r.status != http.StatusCreated {
		t.Fatalf("add anyway: %d %s", r.status, r.body)
	}
	if p, ok := e.providerView("off"); !ok || !p.Key.Set || p.BaseURL != "http://"+addr+"/v1" {
		t.Fatalf("added anyway: %+v", p)
	}

	// An edit that moves a provider to where nothing answers asks too,
	// and keeps the provider as it was until the flag is sent.
	if r := e.do("POST", "/api/providers", `{"name":"d","tier":"free","base_url":"`+e.up.URL+`","models":[{"id":"md"}],"api_key":"sk-online-key-0123456789"}`, nil); r.status != http.StatusCreated {
		t.Fatalf("add d: %d %s", r.status, r.body)
	}
	r = e.do("PUT", "/api/providers/d", `{"base_url":"http://`+addr+`/v1","api_key":"sk-moved-key-0123456789"}`, nil)
	if r.status != http.StatusBadGateway || r.errorCode() != api.CodeProviderUnreachable || !strings.Contains(r.errorMessage(), "save it anyway") {
		t.Fatalf("edit to offline: %d %s", r.status, r.body)
	}
	if p, _ := e.providerView("d"); p.BaseURL != e.up.URL {
		t.Fatalf("a refused edit changed the provider: %+v", p)
	}
	if r := e.do("PUT", "/api/providers/d", `{"base_url":"http://`+addr+`/v1","api_key":"sk-moved-key-0123456789","unreachable_ok":true}`, nil); r.status != http.StatusOK {
		t.Fatalf("edit anyway: %d %s", r.status, r.body)
	}
	if p, _ := e.providerView("d"); p.BaseURL != "http://"+addr+"/v1" {
		t.Fatalf("the edit sent with the flag was not saved: %+v", p)
	}
}

// anthropicVendor is a fake Anthropic model list that wants key and
// records the keys it was sent.
type anthropicVendor struct {
	*httptest.Server
	mu   sync.Mutex
	keys []string
}

func newAnthropicVendor(t *testing.T, key string) *anthropicVendor {
	v := &anthropicVendor{}
	v.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.mu.Lock()
		v.keys = append(v.keys, r.Header.Get("x-api-key")+r.Header.Get("Authorization"))
		v.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path != "/v1/models":
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"Not found"}}`)
		case r.Header.Get("x-api-key") != key || r.Header.Get("anthropic-version") == "":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		default:
			_, _ = io.WriteString(w, `{"data":[{"type":"model","id":"claude-big","display_name":"Claude Big","max_input_tokens":200000,"max_tokens":64000},`+
				`{"type":"model","id":"claude-small","display_name":"Claude Small","max_input_tokens":100000}],"has_more":false,"last_id":"claude-small"}`)
		}
	}))
	t.Cleanup(v.Close)
	return v
}

func (v *anthropicVendor) sent() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.keys...)
}

func decodeList(t *testing.T, r reply) api.ModelList {
	t.Helper()
	var l api.ModelList
	if r.status != http.StatusOK || json.Unmarshal(r.body, &l) != nil {
		t.Fatalf("POST /api/providers/models: %d %s", r.status, r.body)
	}
	return l
}

// The form's models come from the server's own list, in each dialect,
// with what the list says of them; a server without a list says so, and
// the stored key of a provider being edited is only sent to its own
// address.
func TestProviderModelsAreListed(t *testing.T) {
	e := newEnv(t, nil)
	e.up.SetModelList([]byte(`{"data":[{"id":"llama-big","context_length":131072},{"id":"text-embed-1"},{"id":"tiny:free","context_length":8192,"pricing":{"prompt":"0","completion":"0"}}]}`))
	l := decodeList(t, e.do("POST", "/api/providers/models", `{"kind":"openai","base_url":"`+e.up.URL+`","api_key":"sk-list-key-0123456789"}`, nil))
	if !l.Listed || len(l.Models) != 3 || l.Models[0].ID != "llama-big" || l.Models[0].Context != 131072 || !l.Models[0].Chat ||
		l.Models[1].Chat || !l.Models[2].Free || !strings.Contains(l.Message, "lists 3 models") {
		t.Fatalf("openai list: %+v", l)
	}

	const antKey = "sk-ant-list-key-0123456789"
	ant := newAnthropicVendor(t, antKey)
	l = decodeList(t, e.do("POST", "/api/providers/models", `{"kind":"anthropic","base_url":"`+ant.URL+`/v1","api_key":"`+antKey+`"}`, nil))
	if !l.Listed || len(l.Models) != 2 || l.Models[0] != (api.ListedModel{ID: "claude-big", Name: "Claude Big", Context: 200000, MaxOutput: 64000, Chat: true}) {
		t.Fatalf("anthropic list: %+v", l)
	}
	r := e.do("POST", "/api/providers/models", `{"kind":"anthropic","base_url":"`+ant.URL+`/v1","api_key":"sk-ant-other-0123456789"}`, nil)
	if r.status != http.StatusBadRequest || r.errorCode() != api.CodeKeyRefused || !strings.Contains(r.errorMessage(), "invalid x-api-key") {
		t.Fatalf("anthropic wrong key: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/api/providers/models", `{"kind":"anthropic","base_url":"`+ant.URL+`/v1"}`, nil)
	if r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(), "only with a key") {
		t.Fatalf("anthropic without a key: %d %s", r.status, r.body)
	}

	// A server without a list: the models are typed.
	l = decodeList(t, e.do("POST", "/api/providers/models", `{"kind":"openai","base_url":"`+ant.URL+`/nolist"}`, nil))
	if l.Listed || len(l.Models) != 0 || !strings.Contains(l.Message, "has no model list") || !strings.Contains(l.Message, "HTTP 404") {
		t.Fatalf("no list: %+v", l)
	}
	r = e.do("POST", "/api/providers/models", `{"kind":"openai","base_url":"http://`+closedAddr(t)+`/v1"}`, nil)
	if r.status != http.StatusBadGateway || r.errorCode() != api.CodeProviderUnreachable || !strings.Contains(r.errorMessage(), "nothing is listening") {
		t.Fatalf("offline list: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/providers/models", `{"kind":"cobol","base_url":"`+e.up.URL+`"}`, nil); r.status != http.StatusBadRequest || r.param() != "kind" {
		t.Fatalf("bad kind: %d %s", r.status, r.body)
	}

	// Editing a stored provider: its key lists at its own address ...
	r = e.do("POST", "/api/providers", `{"name":"claude","kind":"anthropic","tier":"own","base_url":"`+ant.URL+`/v1","models":[{"id":"claude-big"}],"api_key":"`+antKey+`"}`, nil)
	if r.status != http.StatusCreated {
		t.Fatalf("add anthropic: %d %s", r.status, r.body)
	}
	l = decodeList(t, e.do("POST", "/api/providers/models", `{"provider":"claude","kind":"anthropic","base_url":"`+ant.URL+`/v1"}`, nil))
	if !l.Listed || len(l.Models) != 2 {
		t.Fatalf("stored key: %+v", l)
	}
	// ... and nowhere else.
	other := newAnthropicVendor(t, antKey)
	r = e.do("POST", "/api/providers/models", `{"provider":"claude","kind":"anthropic","base_url":"`+other.URL+`/v1"}`, nil)
	if r.status != http.StatusBadRequest {
		t.Fatalf("stored key at another address: %d %s", r.status, r.body)
	}
	for _, k := range other.sent() {
		if strings.Contains(k, antKey) {
			t.Fatalf("the stored key went to another address than its own")
		}
	}
}

// A provider added by hand can have its base URL, models and tier changed
// afterwards: the edit is kept across a restart and routes the next
// request; a move to another server tries the key there first, and an
// edit of only models and tier tries nothing.
func TestHandAddedProviderEdit(t *testing.T) {
	e := newEnv(t, nil)
	const key = "sk-edit-key-0123456789abcd"
	if r := e.do("POST", "/api/providers", `{"name":"d","tier":"free","base_url":"`+e.up.URL+`","models":[{"id":"md"}],"api_key":"`+key+`"}`, nil); r.status != http.StatusCreated {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	up2 := fakeupstream.Start()
	t.Cleanup(up2.Close)
	up2.RequireKey(key)

	// Models and tier only: nothing is tried.
	lists := listCalls(e.up)
	r := e.do("PATCH", "/api/providers/d", `{"tier":"own","models":[{"id":"md"},{"id":"md2","context":65536}]}`, nil)
	if r.status != http.StatusOK {
		t.Fatalf("models and tier: %d %s", r.status, r.body)
	}
	if listCalls(e.up) != lists {
		t.Errorf("an edit of models and tier read the model list")
	}
	if r := e.post("/v1/chat/completions", chat("d/md2", false)); r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "d/md2" {
		t.Fatalf("the new model does not serve: %d %s", r.status, r.body)
	}

	// A wrong key for the new address is refused there, and nothing
	// changes.
	r = e.do("PUT", "/api/providers/d", `{"base_url":"`+up2.URL+`","api_key":"sk-not-for-up2-0123456789"}`, nil)
	if r.status != http.StatusBadRequest || r.errorCode() != api.CodeKeyRefused {
		t.Fatalf("wrong key at the new address: %d %s", r.status, r.body)
	}
	if p, _ := e.providerView("d"); p.BaseURL != e.up.URL {
		t.Fatalf("a refused edit moved the provider: %+v", p)
	}
	r = e.do("PUT", "/api/providers/d", `{"base_url":"`+up2.URL+`","api_key":"`+key+`","models":[{"id":"m2"}],"tier":"free"}`, nil)
	if r.status != http.StatusOK {
		t.Fatalf("move: %d %s", r.status, r.body)
	}
	if listCalls(up2) != 2 {
		t.Errorf("the key was not tried at the new address (%d list reads)", listCalls(up2))
	}
	check := func(when string) {
		t.Helper()
		p, ok := e.providerView("d")
		if !ok || p.BaseURL != up2.URL || p.Tier != "free" || len(p.Models) != 1 || p.Models[0].ID != "m2" || !p.Key.Set {
			t.Fatalf("%s: %+v", when, p)
		}
		before := len(up2.Requests())
		r := e.post("/v1/chat/completions", chat("d/m2", false))
		if r.status != http.StatusOK || r.header.Get("X-FreeLane-Backend") != "d/m2" || len(up2.Requests()) != before+1 {
			t.Fatalf("%s: d/m2 does not serve from the new address: %d %s", when, r.status, r.body)
		}
	}
	check("after the edit")

	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(context.Background(), gateway.Options{DataDir: e.dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Clock: e.clock, ManualProbes: true, LookupEnv: withoutCatalogKeys})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	e.g, e.base, e.session = g, "http://"+g.Addr(), ""
	check("after a restart")
}

// A server without a model list has its key tried with one tiny request
// to the first model instead.
func TestHandAddedProviderWithoutAListIsTriedWithOneRequest(t *testing.T) {
	const key = "sk-nolist-key-0123456789ab"
	var mu sync.Mutex
	var chats []string
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/chat/completions" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"message":"no such path"}}`)
			return
		}
		mu.Lock()
		chats = append(chats, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","model":"solo","choices":[{"index":0,"message":{"role":"assistant","content":"OK"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
	}))
	t.Cleanup(vendor.Close)
	e := newEnv(t, nil)
	body := func(k string) string {
		return `{"name":"solo","tier":"own","base_url":"` + vendor.URL + `/v1","models":[{"id":"solo"}],"api_key":"` + k + `"}`
	}
	r := e.do("POST", "/api/providers", body("sk-nolist-wrong-0123456789"), nil)
	if r.status != http.StatusBadRequest || r.errorCode() != api.CodeKeyRefused || !strings.Contains(r.errorMessage(), "bad key") {
		t.Fatalf("wrong key: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/providers", body(key), nil); r.status != http.StatusCreated {
		t.Fatalf("right key: %d %s", r.status, r.body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(chats) != 2 || chats[1] != "Bearer "+key {
		t.Fatalf("the tiny requests: %q", chats)
	}
}
