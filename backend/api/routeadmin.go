package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"freelane/backend/config"
	"freelane/backend/llm"
	"freelane/backend/store"
)

// Routing is what the routing endpoints of the admin API need: switching
// a chain's gear, previewing a route and reading one request's decision.
type Routing interface {
	// SwitchGear sets a chain's gear and tells the dashboard and the tray
	// with an event.
	SwitchGear(ctx context.Context, chain, gear string) error
	// PreviewRoute answers where req would go now and why, calling no
	// backend.
	PreviewRoute(req *llm.Request) *llm.Decision
	// Request finds one request's trace in the live tail or the request
	// log; found is false when neither knows the id.
	Request(ctx context.Context, id string) (t llm.Trace, found bool, err error)
	// RequestBodies reads the bodies body logging kept of one request;
	// found is false when it kept none.
	RequestBodies(ctx context.Context, id string) (b store.StoredBodies, found bool, err error)
}

// mountRouting adds the gear switch, the route preview and one request's
// trace to the admin API.
func (h *adminHandlers) mountRouting(route func(string, http.HandlerFunc)) {
	route("PUT /api/chains/{name}/gear", h.switchGear)
	route("POST /api/route/preview", h.previewRoute)
	route("GET /api/requests/{id}", h.request)
}

// GearInput is the body of PUT /api/chains/{name}/gear.
type GearInput struct {
	Gear string `json:"gear"`
}

func (h *adminHandlers) switchGear(w http.ResponseWriter, r *http.Request) {
	var in GearInput
	if !h.decode(w, r, &in) {
		return
	}
	name := r.PathValue("name")
	if err := h.a.SwitchGear(r.Context(), name, in.Gear); err != nil {
		fail(w, err)
		return
	}
	c, _ := h.chain(name)
	writeJSON(w, http.StatusOK, c)
}

// Bounds of a preview's task name, which is a class or a task the
// configuration names.
const maxTaskName = 64

// previewFields are the preview's own fields, taken out of the body before
// the rest is read as an OpenAI chat completions request.
type previewFields struct {
	Task string `json:"task"`
	Gear string `json:"gear"`
}

func (h *adminHandlers) previewRoute(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if !h.decodeLoose(w, r, &body) {
		return
	}
	if body == nil {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "the request body must be a JSON object", "")
		return
	}
	var pf previewFields
	for k, dst := range map[string]*string{"task": &pf.Task, "gear": &pf.Gear} {
		raw, ok := body[k]
		if !ok {
			continue
		}
		delete(body, k)
		if err := json.Unmarshal(raw, dst); err != nil {
			WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", k+" must be a string", k)
			return
		}
	}
	if pf.Gear != "" && pf.Gear != config.GearAuto && pf.Gear != config.GearManual {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value",
			fmt.Sprintf("gear must be %q or %q, got %q", config.GearAuto, config.GearManual, pf.Gear), "gear")
		return
	}
	if len(pf.Task) > maxTaskName || strings.IndexFunc(pf.Task, notNameRune) >= 0 {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value",
			fmt.Sprintf("task must be a task name of at most %d letters, digits, '_', '-' or '.'", maxTaskName), "task")
		return
	}
	rest, err := json.Marshal(body)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "the request body is not a JSON object", "")
		return
	}
	codec, ok := h.s.o.Dialects.Codec(llm.DialectOpenAI)
	if !ok {
		WriteError(w, http.StatusInternalServerError, "server_error", "internal", "the OpenAI dialect is not registered", "")
		return
	}
	req, err := codec.ParseRequest(llm.Chat, rest)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request",
			"the preview takes an OpenAI chat completions body (model, messages, tools, stream, max_tokens): "+err.Error(), "")
		return
	}
	req.Task, req.Gear = pf.Task, pf.Gear
	writeJSON(w, http.StatusOK, h.a.PreviewRoute(req))
}

// maxRequestID bounds a request id in a path: the router's are 32
// characters, the request log's own 32 hex digits.
const maxRequestID = 64

func notIDRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
}

func notNameRune(r rune) bool { return notIDRune(r) && r != '.' }
