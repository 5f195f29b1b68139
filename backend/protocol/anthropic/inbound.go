package anthropic

import (
	"encoding/json"
	"net/http"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// inbound is how Anthropic's clients (Claude Code, the Anthropic SDKs)
// call FreeLane: the Messages API, its token count, and the model list at
// /v1/models, which they ask for with their version header.
var inbound = &protocol.Inbound{
	Prefixes: []string{"/v1/"},
	Routes: []protocol.Route{
		{Pattern: "POST /v1/messages", Call: protocol.Call{Endpoint: llm.Chat}, Listed: "/v1/messages"},
		{Pattern: "POST /v1/messages/count_tokens", Call: protocol.Call{Kind: protocol.CallCountTokens, Parse: ParseCountTokens}},
	},
	Claims:     claims,
	KeyHeaders: []protocol.KeyHeader{{Name: "x-api-key"}},
	// The API version and the beta features a client asked for change
	// what the upstream accepts, and only the client knows which it
	// wants.
	Forward: []string{versionHeader, "Anthropic-Beta"},
	// Claude Code's gateway discovery keeps only ids that start with
	// "claude".
	ChainPrefix: chainPrefix,
	ListModels:  listModels,
	CountTokens: func(n int) []byte {
		b, _ := json.Marshal(map[string]int{"input_tokens": n})
		return b
	},
}

// versionHeader is the header every Anthropic client sends.
const versionHeader = "Anthropic-Version"

// claims reports whether r comes from an Anthropic client: a path of the
// Messages API, or the model list (one path for several vendors) asked
// for with Anthropic's version header.
func claims(r *http.Request) bool {
	p := r.URL.Path
	if p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/") {
		return true
	}
	return (p == "/v1/models" || strings.HasPrefix(p, "/v1/models/")) && r.Header.Get(versionHeader) != ""
}

// listModels lists the chains and backends in the shape of Anthropic's
// model list: every chain first under its claude-freelane- name, then
// every chain and backend under its own.
func listModels(m protocol.Models) []byte {
	type model struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}
	// Anthropic's list dates every model; FreeLane's names have no date,
	// so the Unix epoch stands for "unknown".
	const undated = "1970-01-01T00:00:00Z"
	var data []model
	for _, c := range m.Chains {
		data = append(data, model{Type: "model", ID: chainPrefix + c, DisplayName: "FreeLane " + c, CreatedAt: undated})
	}
	for _, c := range m.Chains {
		data = append(data, model{Type: "model", ID: c, DisplayName: c, CreatedAt: undated})
	}
	for _, b := range m.Backends {
		data = append(data, model{Type: "model", ID: b.Name, DisplayName: b.Name, CreatedAt: undated})
	}
	out := map[string]any{"data": data, "has_more": false, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		out["first_id"], out["last_id"] = data[0].ID, data[len(data)-1].ID
	} else {
		out["data"] = []model{}
	}
	b, _ := json.Marshal(out)
	return b
}

// chainPrefix is Inbound.ChainPrefix.
const chainPrefix = "claude-freelane-"
