package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"freelane/backend/clock"
	"freelane/backend/config"
	"freelane/backend/connect"
	"freelane/backend/control"
	"freelane/backend/notify"
	"freelane/backend/quota"
	"freelane/backend/store"
)

// ChainView is a chain as the dashboard shows it.
type ChainView struct {
	Name     string   `json:"name"`
	Backends []string `json:"backends"`
	// Strategy orders each tier of the chain (priority when unset), Gear
	// says whether it does (manual keeps the listed order).
	Strategy string `json:"strategy"`
	Gear     string `json:"gear"`
	// Weights are the weighted strategy's shares and Priority the tier of
	// each backend, by reference; a backend left out weighs 1, in tier 0.
	Weights  map[string]int `json:"weights,omitempty"`
	Priority map[string]int `json:"priority,omitempty"`
	// MaxWait bounds the wait for a rate limit to reset ("3s"); empty is
	// the default of 3 s.
	MaxWait string `json:"max_wait"`
	// Generated is true for the auto chain FreeLane builds itself.
	Generated bool `json:"generated"`
	// Default is true for the chain the model name "auto" routes to.
	Default bool `json:"default"`
	// Warning says when the chain is less redundant than it looks: all
	// its backends share one provider or one platform, and so one
	// account's limits and outages.
	Warning string `json:"warning"`
	// Gone are the backends the chain names that the pool knows but that
	// cannot serve now (server stopped, hidden, model no longer listed).
	// They stay in the chain and serve again when their server does;
	// left out when there are none.
	Gone []string `json:"gone,omitempty"`
}

// ChainCreate is the body of POST /api/chains: the chain's name, its
// backends in order and its routing settings.
type ChainCreate struct {
	Name     string   `json:"name"`
	Backends []string `json:"backends"`
	control.ChainRouting
}

// TestResult is the answer of "test this provider now".
type TestResult struct {
	OK        bool    `json:"ok"`
	Backend   string  `json:"backend"`
	LatencyMS float64 `json:"latency_ms"`
	Answer    string  `json:"answer"`
	Error     string  `json:"error"`
}

// Admin is what the admin API needs from the rest of FreeLane; the gateway
// provides it.
type Admin interface {
	// State is the full snapshot the dashboard starts from.
	State() any
	// Team is the team as this instance sees it, for GET /api/team: never
	// the URL or password of a shared part.
	Team() any
	Chains() []ChainView
	Control() *control.Control
	// Providers are the providers as the dashboard lists them.
	Providers() []control.ProviderView
	TestProvider(ctx context.Context, provider, model string) TestResult
	// QueryRequests reads one page of the request log.
	QueryRequests(ctx context.Context, q store.RequestQuery) (store.RequestPage, error)
	// WebSocket serves /api/ws.
	WebSocket() http.Handler
	// Metrics writes Prometheus text.
	Metrics(w io.Writer)
	// SetRoutingPaused pauses or resumes routing (the tray's Pause).
	SetRoutingPaused(paused bool)
	// Usage, EachLedgerRow and Budgets serve the usage ledger and the
	// budgets; Now is the clock their default ranges start from.
	Usage(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error)
	EachLedgerRow(ctx context.Context, from, to time.Time, fn func(store.LedgerRow) error) error
	Budgets() []quota.BudgetView
	// Notifications are the recent notifications, newest first.
	Notifications() []notify.Notification
	Now() time.Time
	// TokenRequired reports whether /v1 requires the inbound token, so the
	// Connect settings name it.
	TokenRequired() bool
	// Setup serves the catalog and the first-run setup.
	Setup
	// Providers adds and edits providers, trying their keys.
	Providers
	// Routing switches gears, previews routes and finds one request.
	Routing
	// Caching reports what caching did.
	Caching
	// Series serves the charts' history.
	Series
}

// maxAdminBody bounds admin request bodies; they are small forms.
const maxAdminBody = 1 << 20

// MountAdmin adds /api, /api/ws and /metrics to the server.
func (s *Server) MountAdmin(a Admin) {
	h := &adminHandlers{a: a, s: s}
	// Every admin route checks the Origin first (a foreign page is refused
	// whatever it holds), then the dashboard session in its header.
	route := func(pattern string, f http.HandlerFunc) { s.mux.Handle(pattern, sameOrigin(s.requireSession(f))) }
	// Signing in needs no session, only the one-time code and this origin.
	s.mux.Handle("POST /api/login", sameOrigin(h.login))
	route("GET /api/session", s.sessionInfo)
	route("GET /api/team", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, a.Team()) })
	route("GET /api/state", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, a.State()) })
	route("GET /api/providers", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, a.Providers())
	})
	route("POST /api/providers", h.addProvider)
	route("POST /api/providers/models", h.providerModels)
	route("PUT /api/providers/{name}", h.updateProvider)
	route("PATCH /api/providers/{name}", h.patchProvider)
	route("DELETE /api/providers/{name}", h.deleteProvider)
	route("POST /api/providers/{name}/test", h.testProvider)
	route("PUT /api/providers/{name}/key", h.setKey)
	route("DELETE /api/providers/{name}/key", h.deleteKey)
	route("POST /api/providers/{name}/keys", h.addKey)
	route("DELETE /api/providers/{name}/keys/{label}", h.removeKey)
	route("GET /api/chains", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, a.Chains()) })
	route("POST /api/chains", h.createChain)
	route("PUT /api/chains/{name}", h.updateChain)
	route("DELETE /api/chains/{name}", h.deleteChain)
	route("PUT /api/default-chain", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Name string `json:"name"`
		}
		if !h.decode(w, r, &in) {
			return
		}
		if err := a.Control().SetDefaultChain(r.Context(), in.Name); err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, a.Chains())
	})
	route("GET /api/aliases", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, a.Control().Aliases())
	})
	route("PUT /api/aliases", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Aliases *[]config.Alias `json:"aliases"`
		}
		if !h.decode(w, r, &in) {
			return
		}
		if in.Aliases == nil {
			WriteError(w, http.StatusBadRequest, "invalid_request_error", "missing_field", "aliases is required: a list of {pattern, chain}", "aliases")
			return
		}
		if len(*in.Aliases) > config.MaxAliases {
			WriteError(w, http.StatusBadRequest, "invalid_request_error", "too_many_aliases",
				fmt.Sprintf("aliases has %d entries; at most %d are allowed", len(*in.Aliases), config.MaxAliases), "aliases")
			return
		}
		if err := a.Control().SetAliases(r.Context(), *in.Aliases); err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, a.Control().Aliases())
	})
	route("GET /api/settings", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, a.Control().Settings())
	})
	route("PUT /api/settings", h.setSettings)
	route("GET /api/notifications", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, a.Notifications()) })
	route("GET /api/notifications/settings", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, a.Control().Notifications())
	})
	route("PUT /api/notifications/settings", h.setNotifications)
	route("GET /api/requests", h.requests)
	h.mountRouting(route)
	h.mountCaching(route)
	route("GET /api/series", h.series)
	route("GET /api/usage", h.usage)
	route("GET /api/usage.csv", h.usageCSV)
	route("GET /api/budgets", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, a.Budgets()) })
	route("PUT /api/budgets", h.setBudgets)
	route("GET /api/limits", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, a.Control().Limits()) })
	route("PUT /api/limits/{provider}", h.setProviderLimits)
	route("PUT /api/limits/{provider}/{model...}", h.setModelLimits)
	route("GET /api/routing", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, routingState{Paused: s.Paused()})
	})
	route("PUT /api/routing", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Paused *bool `json:"paused"`
		}
		if !h.decode(w, r, &in) {
			return
		}
		if in.Paused == nil {
			WriteError(w, http.StatusBadRequest, "invalid_request_error", "missing_field", "paused is required (true or false)", "paused")
			return
		}
		a.SetRoutingPaused(*in.Paused)
		writeJSON(w, http.StatusOK, routingState{Paused: s.Paused()})
	})
	route("GET /api/connect", h.connect)
	h.mountSetup(route, a)
	route("GET /api/ws", a.WebSocket().ServeHTTP)
	route("/api/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, "invalid_request_error", "unknown_endpoint", r.Method+" "+r.URL.Path+" is not an admin endpoint", "")
	})
	s.mux.HandleFunc("GET /metrics", s.metricsAccess(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		a.Metrics(w)
	}))
}

// sameOrigin refuses cross-origin requests to the admin API: only the
// dashboard's own page (served from this origin, in a browser or the
// desktop window) may change settings or read keys' state. Requests without
// an Origin come from tools such as curl, which a web page cannot forge.
func sameOrigin(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host != r.Host {
				WriteError(w, http.StatusForbidden, "invalid_request_error", "origin_not_allowed",
					"the admin API only answers the FreeLane dashboard itself (Origin "+quoteHost(o)+" is another site)", "")
				return
			}
		}
		next(w, r)
	})
}

type adminHandlers struct {
	a Admin
	s *Server
}

// routingState is the body of /api/routing.
type routingState struct {
	Paused bool `json:"paused"`
}

// decode reads a JSON body into v within the body read deadline, refusing
// unknown fields so a typo in a form field is reported instead of silently
// ignored.
func (h *adminHandlers) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	return h.decodeBody(w, r, v, true)
}

// decodeLoose reads a JSON body like decode, but keeps unknown fields: the
// route preview's body is a client's request, which may carry any of them.
func (h *adminHandlers) decodeLoose(w http.ResponseWriter, r *http.Request, v any) bool {
	return h.decodeBody(w, r, v, false)
}

func (h *adminHandlers) decodeBody(w http.ResponseWriter, r *http.Request, v any, strict bool) bool {
	// The body must arrive within the same read deadline as /v1 bodies,
	// so a client that trickles a form holds no handler; the deadline is
	// lifted once the body is in, before the handler does its work.
	timeout := time.Duration(h.s.readTimeout.Load())
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(clock.Deadline(timeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAdminBody))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			h.s.bodyReadError(w, r, err, maxAdminBody, timeout)
			return false
		}
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "the request body is not what this endpoint expects: "+err.Error(), "")
		return false
	}
	return true
}

// fail writes an error from the control plane: the user's mistakes with
// their field, anything else as a server error.
func fail(w http.ResponseWriter, err error) {
	var ce *control.Error
	if errors.As(err, &ce) {
		WriteError(w, ce.Status, errorTypeFor(ce.Status), cmp.Or(ce.Code, "invalid_value"), ce.Message, ce.Param)
		return
	}
	WriteError(w, http.StatusInternalServerError, "server_error", "internal", "the change could not be saved: "+err.Error(), "")
}

func errorTypeFor(status int) string {
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

// patchProvider serves PATCH, which does what PUT does: both change only
// the fields the body carries (see control.ProviderInput).
func (h *adminHandlers) patchProvider(w http.ResponseWriter, r *http.Request) {
	h.updateProvider(w, r)
}

func (h *adminHandlers) deleteProvider(w http.ResponseWriter, r *http.Request) {
	if err := h.a.Control().DeleteProvider(r.Context(), r.PathValue("name")); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *adminHandlers) testProvider(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Model string `json:"model"`
	}
	if r.ContentLength != 0 && !h.decode(w, r, &in) {
		return
	}
	name := r.PathValue("name")
	if _, err := h.a.Control().Provider(name); err != nil {
		fail(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
	defer cancel()
	writeJSON(w, http.StatusOK, h.a.TestProvider(ctx, name, in.Model))
}

func (h *adminHandlers) setKey(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Key string `json:"key"`
	}
	if !h.decode(w, r, &in) {
		return
	}
	if in.Key == "" {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "paste the key; to remove it, use DELETE", "key")
		return
	}
	v, err := h.a.Control().SetKey(r.Context(), r.PathValue("name"), &in.Key)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *adminHandlers) deleteKey(w http.ResponseWriter, r *http.Request) {
	v, err := h.a.Control().SetKey(r.Context(), r.PathValue("name"), nil)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// addKey adds a pasted key to a provider's pool.
func (h *adminHandlers) addKey(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Key string `json:"key"`
	}
	if !h.decode(w, r, &in) {
		return
	}
	v, err := h.a.Control().AddKey(r.Context(), r.PathValue("name"), in.Key)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

// removeKey takes one key, named by its label, out of a provider's pool.
func (h *adminHandlers) removeKey(w http.ResponseWriter, r *http.Request) {
	v, err := h.a.Control().RemoveKey(r.Context(), r.PathValue("name"), r.PathValue("label"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *adminHandlers) chain(name string) (ChainView, bool) {
	for _, c := range h.a.Chains() {
		if c.Name == name {
			return c, true
		}
	}
	return ChainView{}, false
}

func (h *adminHandlers) createChain(w http.ResponseWriter, r *http.Request) {
	var in ChainCreate
	if !h.decode(w, r, &in) {
		return
	}
	if err := h.a.Control().CreateChain(r.Context(), in.Name, in.Backends, in.ChainRouting); err != nil {
		fail(w, err)
		return
	}
	c, _ := h.chain(in.Name)
	writeJSON(w, http.StatusCreated, c)
}

func (h *adminHandlers) updateChain(w http.ResponseWriter, r *http.Request) {
	var in control.ChainInput
	if !h.decode(w, r, &in) {
		return
	}
	name := r.PathValue("name")
	current, ok := h.chain(name)
	if !ok {
		fail(w, &control.Error{Status: http.StatusNotFound, Param: "name", Message: fmt.Sprintf("there is no chain %q", name)})
		return
	}
	if err := h.a.Control().UpdateChain(r.Context(), name, in, current.Backends); err != nil {
		fail(w, err)
		return
	}
	if in.Name != nil {
		name = *in.Name
	}
	c, _ := h.chain(name)
	writeJSON(w, http.StatusOK, c)
}

func (h *adminHandlers) deleteChain(w http.ResponseWriter, r *http.Request) {
	if err := h.a.Control().DeleteChain(r.Context(), r.PathValue("name")); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *adminHandlers) setSettings(w http.ResponseWriter, r *http.Request) {
	// The body is decoded onto the current settings, so the keys it
	// leaves out keep their values instead of falling back to defaults.
	in := h.a.Control().Settings()
	if !h.decode(w, r, &in) {
		return
	}
	if err := h.a.Control().SetSettings(r.Context(), in); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h.a.Control().Settings())
}

// setNotifications switches kinds of notification on or off; the kinds
// the body leaves out keep their setting.
func (h *adminHandlers) setNotifications(w http.ResponseWriter, r *http.Request) {
	in := h.a.Control().Notifications()
	if !h.decode(w, r, &in) {
		return
	}
	if err := h.a.Control().SetNotifications(r.Context(), in); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h.a.Control().Notifications())
}

// connect answers every tool's settings for this FreeLane, as the page
// asking reaches it: the dashboard and /v1 share an origin, and the Host
// header was checked against the allowed hosts before this runs.
func (h *adminHandlers) connect(w http.ResponseWriter, r *http.Request) {
	model := r.URL.Query().Get("model")
	if model != "" {
		if err := connect.CheckModel(model); err != nil {
			WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", err.Error(), "model")
			return
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	s, err := connect.For(connect.Options{Base: scheme + "://" + r.Host, TokenRequired: h.a.TokenRequired(), Model: model})
	if err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", err.Error(), "")
		return
	}
	writeJSON(w, http.StatusOK, s)
}
