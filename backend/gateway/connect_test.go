package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"freelane/backend/config"
	"freelane/backend/connect"
)

// TestConnectAnswersEveryToolsSettings reads /api/connect as the dashboard
// does and checks it against the wire types, then checks that it points at
// the address the dashboard was reached on.
func TestConnectAnswersEveryToolsSettings(t *testing.T) {
	e := newEnv(t, nil)
	w := newWire(e)
	r := w.get("GET /api/connect")
	var s connect.Setup
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatal(err)
	}
	if s.Base != e.base || s.OpenAIBase != e.base+"/v1" || s.TokenRequired || s.Key != "freelane" || s.Model != "auto" || len(s.Tools) != len(connect.IDs) {
		t.Errorf("settings %+v", s)
	}
	for _, tl := range s.Tools {
		if !strings.HasPrefix(tl.Endpoint, e.base+"/") {
			t.Errorf("%s calls %s, not this FreeLane at %s", tl.ID, tl.Endpoint, e.base)
		}
	}

	r = w.call("GET /api/connect", "/api/connect?model=coding", "", http.StatusOK)
	if !strings.Contains(string(r.body), `model = \"coding\"`) {
		t.Errorf("the model is not in the Codex file: %.600s", r.body)
	}
	w.fails("GET", "/api/connect?model=a%20b", "", http.StatusBadRequest)
}

func TestConnectNeedsASessionAndNamesTheTokenWithoutHoldingIt(t *testing.T) {
	const token = "connect-inbound-token-0123456789"
	e := newEnv(t, func(c *config.Config) { c.Server.Token = token })
	resp, err := http.Get(e.base + "/api/connect")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a session: %d %s", resp.StatusCode, b)
	}

	r := e.do(http.MethodGet, "/api/connect", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), token) {
		t.Fatalf("the answer holds the token: %s", r.body)
	}
	var s connect.Setup
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatal(err)
	}
	if !s.TokenRequired || s.Key != "$FREELANE_TOKEN" || !strings.Contains(string(r.body), `env_key = \"FREELANE_TOKEN\"`) {
		t.Errorf("settings with a token: %+v", s)
	}
}
