package gateway_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/catalog"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakeupstream"
)

// deadAddr is a loopback address nothing listens on, for a moment.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// offlineCatalogEnv is a new user's FreeLane whose catalog has two
// vendors it cannot reach: DownCo on a port nothing listens on, and
// NoName under a name no DNS knows.
func offlineCatalogEnv(t *testing.T, down string) *catalogEnv {
	t.Helper()
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + down + u.Path
	const noName = "https://vendor.freelane-test.invalid/v1"
	dir := t.TempDir()
	cat := fmt.Sprintf(`date: 2099-01-01
providers:
  - id: downco
    name: DownCo
    tier: free
    dialect: openai
    base_url: %q
    key_env: [DOWNCO_API_KEY]
    list_models: true
    models:
      - {id: d-model, params_b: 70}
  - id: noname
    name: NoName
    tier: free
    dialect: openai
    base_url: %q
    key_env: [NONAME_API_KEY]
    models:
      - {id: n-model, params_b: 8}
`, downURL, noName)
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	writeConfirmed(t, dir, map[string]catalog.Address{
		"downco": {BaseURL: downURL, KeyEnv: []string{"DOWNCO_API_KEY"}},
		"noname": {BaseURL: noName, KeyEnv: []string{"NONAME_API_KEY"}},
	})
	ce := &catalogEnv{env: &env{t: t, up: up, clock: clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), dir: dir}}
	ce.startWith(nil)
	return ce
}

type catalogAddedJSON struct {
	Checked  bool   `json:"checked"`
	Message  string `json:"message"`
	Provider struct {
		Name string `json:"name"`
		Key  struct {
			Set       bool `json:"set"`
			Unchecked bool `json:"unchecked"`
		} `json:"key"`
	} `json:"provider"`
}

// keyUnchecked reads whether the dashboard lists a provider's key as not
// yet checked.
func (e *env) keyUnchecked(name string) bool {
	e.t.Helper()
	r := e.do(http.MethodGet, "/api/providers", "", nil)
	var list []struct {
		Name string `json:"name"`
		Key  struct {
			Unchecked bool `json:"unchecked"`
		} `json:"key"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil {
		e.t.Fatalf("GET /api/providers: %d %s", r.status, r.body)
	}
	for _, p := range list {
		if p.Name == name {
			return p.Key.Unchecked
		}
	}
	e.t.Fatalf("GET /api/providers lists no %s: %s", name, r.body)
	return false
}

// A vendor FreeLane cannot reach while its key is pasted: the answer says
// so in a sentence and offers to add it anyway; adding it anyway adds it
// with the key marked not yet checked, until the vendor answers a call.
func TestCatalogKeyOfflineAddAnyway(t *testing.T) {
	down := deadAddr(t)
	e := offlineCatalogEnv(t, down)

	for id, name := range map[string]string{"downco": "DownCo", "noname": "NoName"} {
		r := e.do(http.MethodPost, "/api/catalog/"+id, `{"key":"sk-offline-key-0001"}`, nil)
		msg := r.errorMessage()
		if r.status != http.StatusBadGateway || errorCode(r) != "provider_unreachable" ||
			!strings.HasPrefix(msg, "FreeLane could not reach "+name+" to check the key") || !strings.Contains(msg, "add it anyway, or try again") {
			t.Fatalf("%s out of reach: %d %s", id, r.status, r.body)
		}
		t.Logf("%s: %s", id, msg)
		if bad := rawErrorText(msg); bad != "" {
			t.Errorf("%s: the message carries %s: %q", id, bad, msg)
		}
		if strings.Contains(string(r.body), "sk-offline") {
			t.Errorf("%s: the answer repeats the key: %s", id, r.body)
		}
	}
	if s := e.setup(); !s.Needed {
		t.Fatal("a key that could not be checked was added without being asked to")
	}

	r := e.do(http.MethodPost, "/api/catalog/downco", `{"key":"sk-offline-key-0001","unreachable_ok":true}`, nil)
	var added catalogAddedJSON
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &added) != nil {
		t.Fatalf("add anyway: %d %s", r.status, r.body)
	}
	if added.Checked || !added.Provider.Key.Unchecked || added.Provider.Name != "downco" || !strings.Contains(added.Message, "not checked yet") {
		t.Fatalf("add anyway: %+v", added)
	}
	t.Logf("added anyway: %s", added.Message)
	if !e.keyUnchecked("downco") {
		t.Fatal("the providers list does not mark the key as not yet checked")
	}
	r = e.do(http.MethodPost, "/api/catalog/noname", `{"key":"sk-offline-key-0002","unreachable_ok":true}`, nil)
	if r.status != http.StatusCreated {
		t.Fatalf("add anyway, a name no DNS knows: %d %s", r.status, r.body)
	}

	// The vendor comes up: the first answered call checks the key.
	ln, err := net.Listen("tcp", down)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	target, _ := url.Parse(e.up.URL)
	proxy := &http.Server{Handler: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = proxy.Serve(ln) }()
	t.Cleanup(func() { _ = proxy.Close() })
	if r := e.post("/v1/chat/completions", chat("downco/d-model", false)); r.status != http.StatusOK {
		t.Fatalf("a request once the vendor answers: %d %s", r.status, r.body)
	}
	if e.keyUnchecked("downco") {
		t.Fatal("the key is still marked not yet checked after the vendor served a request with it")
	}
	if !e.keyUnchecked("noname") {
		t.Fatal("a vendor that never answered lost its mark")
	}

	// A provider added by hand is marked the same way, and an edit that
	// tries its key against a server that answers clears the mark.
	dead2 := deadAddr(t)
	r = e.do(http.MethodPost, "/api/providers", fmt.Sprintf(`{"name":"handy","kind":"openai","tier":"free","base_url":"http://%s/v1","api_key":"sk-handy-key-000001","models":[{"id":"h"}],"unreachable_ok":true}`, dead2), nil)
	if r.status != http.StatusCreated && r.status != http.StatusOK {
		t.Fatalf("adding a provider by hand anyway: %d %s", r.status, r.body)
	}
	if !e.keyUnchecked("handy") {
		t.Fatal("a provider added by hand anyway is not marked as not yet checked")
	}
	r = e.do(http.MethodPatch, "/api/providers/handy", fmt.Sprintf(`{"base_url":%q,"api_key":"sk-handy-key-000002"}`, e.up.URL), nil)
	if r.status != http.StatusOK {
		t.Fatalf("moving it to a server that answers: %d %s", r.status, r.body)
	}
	if e.keyUnchecked("handy") {
		t.Fatal("a key tried and taken is still marked as not yet checked")
	}
	// Deleted and added again under the same name with a key that is
	// tried, a provider is not marked.
	if r := e.do(http.MethodDelete, "/api/providers/noname", "", nil); r.status >= 300 {
		t.Fatalf("deleting noname: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodPost, "/api/providers", fmt.Sprintf(`{"name":"noname","kind":"openai","tier":"free","base_url":%q,"api_key":"sk-noname-key-00003","models":[{"id":"n"}]}`, e.up.URL), nil)
	if r.status >= 300 {
		t.Fatalf("adding noname again: %d %s", r.status, r.body)
	}
	if e.keyUnchecked("noname") {
		t.Fatal("a deleted provider's mark came back with a new provider of its name")
	}
}

func errorCode(r reply) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Code
}
