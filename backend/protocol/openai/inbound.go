package openai

import (
	"encoding/json"
	"fmt"
	"net/http"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// inbound is how OpenAI's clients call FreeLane: chat completions,
// completions and embeddings under /v1, and the model list at /v1/models,
// which clients of other dialects ask for too (they claim theirs by their
// headers).
var inbound = &protocol.Inbound{
	Prefixes: []string{"/v1/"},
	Routes: []protocol.Route{
		{Pattern: "POST /v1/chat/completions", Call: protocol.Call{Endpoint: llm.Chat}, Listed: "/v1/chat/completions"},
		{Pattern: "POST /v1/completions", Call: protocol.Call{Endpoint: llm.Completions}, Listed: "/v1/completions"},
		{Pattern: "POST /v1/embeddings", Call: protocol.Call{Endpoint: llm.Embeddings}, Listed: "/v1/embeddings"},
		{Pattern: "GET /v1/models", Call: protocol.Call{Kind: protocol.CallListModels}, Listed: "/v1/models"},
		{Pattern: "GET /v1/models/{model...}", Call: protocol.Call{Kind: protocol.CallDescribeModel}},
	},
	KeyHeaders: []protocol.KeyHeader{{Name: "Authorization", Scheme: "Bearer"}},
	// The official SDKs send these when the client names an
	// organization or a project.
	CORSHeaders:   []string{"OpenAI-Organization", "OpenAI-Project"},
	ErrorTypes:    true,
	ListModels:    listModels,
	DescribeModel: describeModel,
}

// model is one entry of OpenAI's model list.
type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// models is every chain, owned by FreeLane, then every backend, owned by
// its provider.
func models(m protocol.Models) []model {
	var out []model
	for _, c := range m.Chains {
		out = append(out, model{ID: c, Object: "model", OwnedBy: "freelane"})
	}
	for _, b := range m.Backends {
		out = append(out, model{ID: b.Name, Object: "model", OwnedBy: b.Provider})
	}
	return out
}

func listModels(m protocol.Models) []byte {
	b, _ := json.Marshal(map[string]any{"object": "list", "data": models(m)})
	return b
}

func describeModel(m protocol.Models, id string) ([]byte, error) {
	for _, e := range models(m) {
		if e.ID == id {
			b, _ := json.Marshal(e)
			return b, nil
		}
	}
	return nil, &protocol.Refusal{Info: protocol.ErrorInfo{Status: http.StatusNotFound, Type: "invalid_request_error",
		Code: "model_not_found", Message: fmt.Sprintf("model %q does not exist", id), Param: "model"}}
}
