package gemini

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// inbound is how Google's clients (Gemini CLI, the genai SDKs) call
// FreeLane: /v1beta/models/MODEL:METHOD and the same under /v1 (the path
// the @google/genai SDK uses by default), and Google's model list, which
// they also ask for at /v1/models with their key.
var inbound = &protocol.Inbound{
	Prefixes: []string{"/v1beta/", "/v1/"},
	Routes: []protocol.Route{
		{Pattern: "POST /v1beta/models/{call...}", Resolve: resolve, Listed: "/v1beta/models/MODEL:" + methodGenerate},
		{Pattern: "POST /v1/models/{call...}", Resolve: resolve},
		{Pattern: "GET /v1beta/models", Call: protocol.Call{Kind: protocol.CallListModels}},
		{Pattern: "GET /v1beta/models/{model...}", Call: protocol.Call{Kind: protocol.CallDescribeModel}},
	},
	Claims:     claims,
	KeyHeaders: []protocol.KeyHeader{{Name: keyHeader}},
	KeyQuery:   "key",
	// Google ends a failed stream with the bare error object on a line of
	// its own, not as an event, and that is the only form Google's
	// JavaScript SDK (and so Gemini CLI) takes for an error; its Go and
	// Python SDKs read it too.
	BareStreamError: true,
	ChainPrefix:     chainPrefix,
	ListModels:      listModels,
	DescribeModel:   describeModel,
	CountTokens: func(n int) []byte {
		b, _ := json.Marshal(map[string]int{"totalTokens": n})
		return b
	},
}

// The methods FreeLane serves, as they follow the model in the path.
const (
	methodGenerate = "generateContent"
	methodStream   = "streamGenerateContent"
	methodCount    = "countTokens"
)

// methods are the methods every model supports, as the model list says.
var methods = []string{methodGenerate, methodStream, methodCount}

// keyHeader is the header Google's clients send their key in.
const keyHeader = "x-goog-api-key"

// claims reports whether r comes from a Google client: a path under
// /v1beta or one naming a method of the API, or the model list (one path
// for several vendors) asked for with Google's key header or ?key=.
func claims(r *http.Request) bool {
	p := r.URL.Path
	if strings.HasPrefix(p, "/v1beta/") {
		return true
	}
	for _, m := range methods {
		if strings.Contains(p, ":"+m) {
			return true
		}
	}
	return (p == "/v1/models" || strings.HasPrefix(p, "/v1/models/")) &&
		(r.Header.Get(keyHeader) != "" || r.URL.Query().Has("key"))
}

// resolve reads the model and the method from the path,
// models/{model}:{method}. The model may contain a slash (provider/model),
// so the call is split at its last colon.
func resolve(r *http.Request) (protocol.Call, error) {
	call := r.PathValue("call")
	i := strings.LastIndexByte(call, ':')
	if i <= 0 {
		return protocol.Call{}, protocol.Refuse(http.StatusNotFound, "unknown_endpoint",
			fmt.Sprintf("%s %s is not an endpoint FreeLane serves; Gemini clients call /v1beta/models/MODEL:generateContent, :streamGenerateContent?alt=sse or :countTokens",
				r.Method, llm.Truncate(r.URL.Path, 200)), "")
	}
	model, method := call[:i], call[i+1:]
	parse := func(stream bool) func([]byte) (*llm.Request, error) {
		return func(body []byte) (*llm.Request, error) { return ParseRequestFor(llm.Chat, model, stream, body) }
	}
	// The call's path for the usage records names the method but not the
	// client's model.
	_, pattern, _ := strings.Cut(r.Pattern, " ")
	path := strings.TrimSuffix(pattern, "{call...}") + "{model}:" + method
	switch method {
	case methodGenerate:
		return protocol.Call{Endpoint: llm.Chat, Parse: parse(false), Path: path}, nil
	case methodStream:
		// Without alt=sse Google answers one JSON array at the end, which
		// no agent asks for; FreeLane streams events only.
		if r.URL.Query().Get("alt") != "sse" {
			return protocol.Call{}, protocol.Refuse(http.StatusBadRequest, "invalid_request",
				"FreeLane streams Gemini answers as server-sent events: call :streamGenerateContent?alt=sse", "alt")
		}
		return protocol.Call{Endpoint: llm.Chat, Parse: parse(true), Path: path}, nil
	case methodCount:
		return protocol.Call{Kind: protocol.CallCountTokens, Parse: parse(false)}, nil
	}
	return protocol.Call{}, protocol.Refuse(http.StatusNotFound, "unknown_endpoint",
		fmt.Sprintf("the Gemini method %q is not one FreeLane serves; it serves generateContent, streamGenerateContent and countTokens", llm.Truncate(method, 40)), "")
}

// model is one entry of Google's model list.
type model struct {
	Name                       string   `json:"name"`
	BaseModelID                string   `json:"baseModelId"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	Description                string   `json:"description,omitempty"`
	InputTokenLimit            int      `json:"inputTokenLimit,omitempty"`
	OutputTokenLimit           int      `json:"outputTokenLimit,omitempty"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

// models is every chain, under its gemini-freelane- name and its own, then
// every backend, as Google's list names them ("models/ID").
func models(m protocol.Models) []model {
	out := []model{}
	add := func(id, display, desc string, context int) {
		out = append(out, model{Name: "models/" + id, BaseModelID: id, Version: "freelane", DisplayName: display,
			Description: desc, InputTokenLimit: context, SupportedGenerationMethods: methods})
	}
	for _, c := range m.Chains {
		desc := fmt.Sprintf("FreeLane's %s chain: each request goes to the first of its backends that can serve it", c)
		add(chainPrefix+c, "FreeLane "+c, desc, 0)
	}
	for _, c := range m.Chains {
		add(c, "FreeLane "+c, "", 0)
	}
	for _, b := range m.Backends {
		add(b.Name, b.Name, "", b.Context)
	}
	return out
}

func listModels(m protocol.Models) []byte {
	b, _ := json.Marshal(map[string]any{"models": models(m)})
	return b
}

func describeModel(m protocol.Models, id string) ([]byte, error) {
	for _, e := range models(m) {
		if e.BaseModelID == id {
			b, _ := json.Marshal(e)
			return b, nil
		}
	}
	return nil, protocol.Refuse(http.StatusNotFound, "model_not_found",
		fmt.Sprintf("model %q does not exist; GET /v1beta/models lists them", id), "model")
}

// chainPrefix is Inbound.ChainPrefix.
const chainPrefix = "gemini-freelane-"
