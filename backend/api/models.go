package api

import (
	"fmt"
	"net/http"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/gemini"
	"freelane/backend/router"
)

// The model lists in each vendor's shape. Agents read them to fill their
// model pickers, and some keep only names in their vendor's style, so
// every chain is listed first under its vendor-style name as well
// (router.VendorChainPrefixes), which routes to the chain.

// anthropicModels lists the chains and backends in the shape of
// Anthropic's model list, which Anthropic's clients ask for with their
// version header. Claude Code's gateway discovery keeps only ids that
// start with "claude", so the chains come first as claude-freelane-NAME.
func (s *Server) anthropicModels(w http.ResponseWriter) {
	type model struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}
	t := s.o.Router.Table()
	var data []model
	// Anthropic's list dates every model; FreeLane's names have no date,
	// so the Unix epoch stands for "unknown".
	const undated = "1970-01-01T00:00:00Z"
	for _, c := range t.Chains() {
		data = append(data, model{Type: "model", ID: router.VendorChainPrefixes[0] + c,
			DisplayName: "FreeLane " + c, CreatedAt: undated})
	}
	for _, m := range s.modelList() {
		data = append(data, model{Type: "model", ID: m.ID, DisplayName: m.ID, CreatedAt: undated})
	}
	out := map[string]any{"data": data, "has_more": false, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		out["first_id"], out["last_id"] = data[0].ID, data[len(data)-1].ID
	} else {
		out["data"] = []model{}
	}
	writeJSON(w, http.StatusOK, out)
}

// geminiModel is one entry of Google's model list.
type geminiModel struct {
	Name                       string   `json:"name"`
	BaseModelID                string   `json:"baseModelId"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	Description                string   `json:"description,omitempty"`
	InputTokenLimit            int      `json:"inputTokenLimit,omitempty"`
	OutputTokenLimit           int      `json:"outputTokenLimit,omitempty"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

var geminiMethods = []string{"generateContent", "streamGenerateContent", "countTokens"}

// geminiModelList is every chain, under its gemini-freelane- name and its
// own, then every backend, as Google's list names them ("models/ID").
func (s *Server) geminiModelList() []geminiModel {
	t := s.o.Router.Table()
	var out []geminiModel
	add := func(id, display, desc string, context, output int) {
		out = append(out, geminiModel{Name: "models/" + id, BaseModelID: id, Version: "freelane", DisplayName: display,
			Description: desc, InputTokenLimit: context, OutputTokenLimit: output, SupportedGenerationMethods: geminiMethods})
	}
	for _, c := range t.Chains() {
		desc := fmt.Sprintf("FreeLane's %s chain: each request goes to the first of its backends that can serve it", c)
		add(router.VendorChainPrefixes[1]+c, "FreeLane "+c, desc, 0, 0)
	}
	for _, c := range t.Chains() {
		add(c, "FreeLane "+c, "", 0, 0)
	}
	for _, b := range t.Backends() {
		add(b.Name(), b.Name(), "", b.Context, 0)
	}
	return out
}

// geminiModels answers GET /v1beta/models (and /v1/models from a Gemini
// client) in Google's shape.
func (s *Server) geminiModels(w http.ResponseWriter, r *http.Request) {
	list := s.geminiModelList()
	if list == nil {
		list = []geminiModel{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": list})
}

// geminiModelInfo answers GET /v1beta/models/MODEL.
func (s *Server) geminiModelInfo(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("model")
	if len(id) > llm.MaxModelName {
		e := llm.ModelTooLong(len(id))
		writeError(w, gemini.Codec, protocol.ErrorInfo{Status: http.StatusBadRequest, Code: e.Code, Message: e.Message, Param: e.Param})
		return
	}
	for _, m := range s.geminiModelList() {
		if m.BaseModelID == id {
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	writeError(w, gemini.Codec, protocol.ErrorInfo{Status: http.StatusNotFound, Code: "model_not_found",
		Message: fmt.Sprintf("model %q does not exist; GET /v1beta/models lists them", id), Param: "model"})
}

// fromGemini reports whether a request to a path both OpenAI and Google
// use (/v1/models) comes from a Gemini client, which sends its key in
// x-goog-api-key or ?key=.
func fromGemini(r *http.Request) bool {
	return r.Header.Get("X-Goog-Api-Key") != "" || r.URL.Query().Has("key")
}
