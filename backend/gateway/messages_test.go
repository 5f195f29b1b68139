package gateway_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"freelane/backend/config"
)

// TestUserFacingMessagesAreWords drives the admin API into the failures a
// person meets while setting FreeLane up (servers out of reach, names no
// DNS knows, vendors answering 401 with no body, 503, closing the
// connection) and reads every error message and every backend status
// reason the dashboard would show: none may carry Go's or the wire's own
// error text.
func TestUserFacingMessagesAreWords(t *testing.T) {
	dead := deadAddr(t)
	// A vendor that refuses every key with an empty 401, one that is
	// overloaded, and one that hangs up without answering.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	t.Cleanup(refusing.Close)
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"The engine is overloaded."}}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(busy.Close)
	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}))
	t.Cleanup(hangup.Close)
	const unknownHost = "https://vendor.freelane-test.invalid/v1"
	servers := map[string]string{"dead": "http://" + dead + "/v1", "nodns": unknownHost, "refusing": refusing.URL + "/v1", "busy": busy.URL + "/v1", "hangup": hangup.URL + "/v1"}

	e := newEnv(t, func(c *config.Config) {
		for name, u := range servers {
			c.Providers = append(c.Providers, config.Provider{Name: "p" + name, Kind: "openai", Tier: "free", BaseURL: u, APIKey: "sk-test-p" + name + "-000001",
				Models: []config.Model{{ID: "m"}}, Timeouts: fastTimeouts})
		}
	})

	var seen []string
	look := func(what, msg string) {
		t.Helper()
		seen = append(seen, what+": "+msg)
		if msg == "" {
			return
		}
		if bad := rawErrorText(msg); bad != "" {
			t.Errorf("%s carries %s: %q", what, bad, msg)
		}
	}
	answer := func(what string, r reply) {
		t.Helper()
		if r.status < 400 {
			return
		}
		msg := r.errorMessage()
		if msg == "" {
			t.Errorf("%s: %d with no message: %s", what, r.status, r.body)
		}
		look(what, msg)
	}

	for name, u := range servers {
		body := fmt.Sprintf(`{"name":"new%s","kind":"openai","tier":"free","base_url":%q,"api_key":"sk-new-key-0000001","models":[{"id":"m"}]}`, name, u)
		answer("POST /api/providers to "+name, e.do(http.MethodPost, "/api/providers", body, nil))
		answer("POST /api/providers/models of "+name, e.do(http.MethodPost, "/api/providers/models", fmt.Sprintf(`{"kind":"openai","base_url":%q,"api_key":"sk-new-key-0000001"}`, u), nil))
		answer("POST /api/providers/models of "+name+" without a key", e.do(http.MethodPost, "/api/providers/models", fmt.Sprintf(`{"kind":"openai","base_url":%q}`, u), nil))
		answer("PATCH the base URL of a to "+name, e.do(http.MethodPatch, "/api/providers/a", fmt.Sprintf(`{"base_url":%q,"api_key":"sk-new-key-0000001"}`, u), nil))
	}
	answer("a chain of an unknown provider", e.do(http.MethodPut, "/api/chains/main", `{"backends":["nobody/m"]}`, nil))
	answer("a chain of an unknown model", e.do(http.MethodPut, "/api/chains/main", `{"backends":["a/nothing"]}`, nil))
	answer("a catalog from a host out of reach", e.do(http.MethodPost, "/api/catalog", `{"url":"https://catalog.freelane-test.invalid/catalog.yaml"}`, nil))
	answer("an unknown catalog entry", e.do(http.MethodPost, "/api/catalog/nothing-here", `{"key":"k"}`, nil))

	// Requests to each, twice so that the failing ones trip, and the
	// route test: the status reasons and the test's words.
	for name := range servers {
		for range 3 {
			e.post("/v1/chat/completions", chat("p"+name+"/m", false))
		}
	}
	r := e.do(http.MethodGet, "/api/state", "", nil)
	var st struct {
		Backends []struct {
			Name, Status, Reason string
		} `json:"backends"`
	}
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatal(err)
	}
	tripped := 0
	for _, b := range st.Backends {
		look("the status reason of "+b.Name+" ("+b.Status+")", b.Reason)
		if strings.HasPrefix(b.Name, "p") && b.Status != "serving" {
			tripped++
		}
		if b.Reason != "" && regexp.MustCompile(`^[a-z]+ `).MatchString(b.Reason) {
			t.Errorf("the status reason of %s does not start a sentence: %q", b.Name, b.Reason)
		}
	}
	if tripped < len(servers) {
		t.Errorf("only %d of the %d failing backends show a failure, so their reasons were not read:\n%s", tripped, len(servers), r.body)
	}
	for name := range servers {
		var rt struct {
			Error    string `json:"error"`
			Attempts []struct {
				Reason string `json:"reason"`
			} `json:"attempts"`
		}
		r := e.do(http.MethodPost, "/api/setup/test", fmt.Sprintf(`{"model":"p%s/m"}`, name), nil)
		if err := json.Unmarshal(r.body, &rt); err != nil {
			t.Fatal(err)
		}
		look("the route test of "+name, rt.Error)
		for _, a := range rt.Attempts {
			look("an attempt of the route test of "+name, a.Reason)
		}
	}
	if testing.Verbose() {
		for _, s := range seen {
			t.Log(s)
		}
	}
}

// TestMessagesFormatNoRawErrors reads the code that words the admin API's
// errors: a Message built with an error's own text (err.Error(), or err
// formatted with %v) shows Go's words to a person. Errors of the types
// that are already in words are passed by name, not as err.
func TestMessagesFormatNoRawErrors(t *testing.T) {
	errName := regexp.MustCompile(`^(err|lerr|cerr|werr|e)$`)
	// Errors whose text is a list of problems in words, by line.
	allowed := map[string]string{
		"setup.go: catalog.Parse": "the catalog's problems, by line",
	}
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range []string{".", "../api", "../control"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(af, func(n ast.Node) bool {
				kv, ok := n.(*ast.KeyValueExpr)
				if !ok {
					return true
				}
				if k, isIdent := kv.Key.(*ast.Ident); !isIdent || k.Name != "Message" {
					return true
				}
				checked++
				ast.Inspect(kv.Value, func(m ast.Node) bool {
					call, ok := m.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					var raw string
					switch {
					case sel.Sel.Name == "Error" && len(call.Args) == 0:
						if id, ok := sel.X.(*ast.Ident); ok && errName.MatchString(id.Name) {
							raw = id.Name + ".Error()"
						}
					case sel.Sel.Name == "Sprintf":
						for _, a := range call.Args[1:] {
							if id, ok := a.(*ast.Ident); ok && errName.MatchString(id.Name) {
								raw = id.Name + " formatted"
							}
						}
					}
					if raw == "" {
						return true
					}
					pos := fset.Position(call.Pos())
					if _, ok := allowed[filepath.Base(pos.Filename)+": "+nearbyCall(af, call)]; ok {
						return true
					}
					t.Errorf("%s: a Message carries an error's own text (%s)", pos, raw)
					return true
				})
				return true
			})
		}
	}
	if checked < 30 {
		t.Fatalf("only %d Message fields read: the scan is not reading the code", checked)
	}
}

// nearbyCall names the call that made the error a Message repeats, as
// "catalog.Parse", from the assignment before it in the same function.
func nearbyCall(f *ast.File, at ast.Node) string {
	name := ""
	ast.Inspect(f, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || as.Pos() > at.Pos() || len(as.Rhs) != 1 {
			return true
		}
		if c, ok := as.Rhs[0].(*ast.CallExpr); ok {
			if s, ok := c.Fun.(*ast.SelectorExpr); ok {
				if x, ok := s.X.(*ast.Ident); ok {
					name = x.Name + "." + s.Sel.Name
				}
			}
		}
		return true
	})
	return name
}
