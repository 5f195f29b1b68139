package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"freelane/backend/control"
	"freelane/backend/llm"
	"freelane/backend/tier"
)

// CatalogView is the provider catalog in use, as the "Add provider" list
// shows it.
type CatalogView struct {
	// Date is the day the catalog's figures were gathered.
	Date string `json:"date"`
	// Source is where the catalog was read from: "built in", a file in the
	// data directory or the URL it was loaded from.
	Source    string         `json:"source"`
	Providers []CatalogEntry `json:"providers"`
	// Changes are the addresses the catalog gives that wait for the
	// user's answer; until then the providers keep the address in use
	// (Providers shows it) and a provider new in it is not listed.
	Changes []control.CatalogChange `json:"changes"`
}

// CatalogEntry is one provider of the catalog.
type CatalogEntry struct {
	ID      string     `json:"id"`
	Name    string     `json:"name"`
	Tier    tier.Offer `json:"tier"`
	Dialect string     `json:"dialect"`
	BaseURL string     `json:"base_url"`
	// Placeholders are the values the base URL needs besides the key,
	// such as CLOUDFLARE_ACCOUNT_ID.
	Placeholders []string `json:"placeholders"`
	KeyEnv       []string `json:"key_env"`
	SignupURL    string   `json:"signup_url"`
	// Credit is a trial or one-time allowance, in words.
	Credit string   `json:"credit"`
	Notes  []string `json:"notes"`
	// SharedQuota says what the provider's keys share their limits by,
	// "" when each key has its own; KeyTerms quotes the provider's terms
	// where they forbid spreading requests over several keys.
	SharedQuota string `json:"shared_quota"`
	KeyTerms    string `json:"key_terms"`
	// Limits are the provider-wide limits, each in words.
	Limits []string       `json:"limits"`
	Models []CatalogModel `json:"models"`
	// ListModels says the provider's own model list is read too.
	ListModels bool `json:"list_models"`
	// Configured names the providers made from this entry.
	Configured []string `json:"configured"`
	// EnvFound is the key variable of this entry set in FreeLane's
	// environment, "" when none is.
	EnvFound string `json:"env_found"`
}

// CatalogModel is one model of a catalog entry.
type CatalogModel struct {
	ID           string   `json:"id"`
	ParamsB      float64  `json:"params_b"`
	Context      int      `json:"context"`
	MaxOutput    int      `json:"max_output"`
	Capabilities []string `json:"capabilities"`
	// Limits are the model's own limits, each in words.
	Limits []string `json:"limits"`
	// Price is the published price of a paid model; null when free or
	// not published.
	Price *CatalogPrice `json:"price"`
}

// CatalogPrice is money per million tokens.
type CatalogPrice struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// CatalogAdded is the answer to adding a provider from the catalog: the
// provider, and what checking its key found.
type CatalogAdded struct {
	Provider control.ProviderView `json:"provider"`
	// Models is how many models the provider's list named for the key; 0
	// when the provider has no list to read.
	Models int `json:"models"`
	// Message says how the key was checked.
	Message string `json:"message"`
	// Checked is false when the provider was added without its key being
	// checked (unreachable_ok, with the vendor out of reach).
	Checked bool `json:"checked"`
}

// CatalogLoad asks for a newer catalog file from a URL.
type CatalogLoad struct {
	URL string `json:"url"`
}

// SetupView is what the first-run setup shows.
type SetupView struct {
	// Needed is true while no backend can serve; the dashboard then
	// opens on the setup.
	Needed bool `json:"needed"`
	// Serving is how many backends can serve.
	Serving int `json:"serving"`
	// EnvKeys are the catalog's key variables found in the environment.
	EnvKeys []control.EnvKey `json:"env_keys"`
	// EnvNames are the key variables FreeLane looks for at start, for the
	// free and trial tiers first.
	EnvNames []string `json:"env_names"`
	// Local are the model servers found on this machine.
	Local     []LocalServer  `json:"local"`
	Discovery DiscoveryState `json:"discovery"`
}

// DiscoveryState says whether and where FreeLane looks for local servers.
type DiscoveryState struct {
	Enabled bool  `json:"enabled"`
	Ports   []int `json:"ports"`
	// LastScan is when the ports were last looked at; zero before the
	// first look.
	LastScan time.Time `json:"last_scan,omitzero"`
}

// LocalServer is a model server found on a loopback port.
type LocalServer struct {
	// Kind is ollama, lmstudio, jan, llamacpp, vllm, localai, koboldcpp or
	// openai (another OpenAI-compatible server).
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Port    int    `json:"port"`
	BaseURL string `json:"base_url"`
	// Provider is the provider its models are served as; "" when a
	// configured provider already calls that address.
	Provider string `json:"provider"`
	// Up is false for a server that stopped answering; its backends are
	// retired until it answers again.
	Up bool `json:"up"`
	// NeedsKey is set for a server that refuses its model list without a
	// key.
	NeedsKey bool `json:"needs_key"`
	// Foreign is set for a server run by another user of this machine (not
	// this account, root or a system account): it gets no request unless
	// Allowed, since it would see every prompt.
	Foreign bool `json:"foreign"`
	// Allowed is set when the user allowed this foreign server (this port,
	// kind and owner) to serve.
	Allowed bool `json:"allowed"`
	// OwnerUID is the user id of the account that runs the server; -1 when
	// the platform does not tell.
	OwnerUID int64 `json:"owner_uid"`
	// OwnerName is that account's name, for a foreign server, when it is
	// known; "" otherwise.
	OwnerName string `json:"owner_name"`
	// Dropped counts the model names the server listed that are not valid
	// and were left out.
	Dropped int          `json:"dropped"`
	Models  []LocalModel `json:"models"`
}

// LocalAllowInput names a local server of another user, as the setup
// lists it, to allow or withdraw.
type LocalAllowInput struct {
	Port int    `json:"port"`
	Kind string `json:"kind"`
	// UID is the owner's user id; required, so that a permission given
	// for one account never covers another on the same port.
	UID *uint32 `json:"uid"`
}

// LocalModel is one model of a local server.
type LocalModel struct {
	ID string `json:"id"`
	// Context is the window the server has allocated, or the longest it
	// supports where it says no more; 0 when unknown.
	Context   int     `json:"context"`
	ParamsB   float64 `json:"params_b"`
	Embedding bool    `json:"embedding"`
}

// RouteTestInput asks for one test request.
type RouteTestInput struct {
	// Model is what to ask for; "" means auto.
	Model string `json:"model"`
}

// RouteTest is the answer to the setup's "Test": one short request
// through the router, with the route it took.
type RouteTest struct {
	OK      bool   `json:"ok"`
	Model   string `json:"model"`
	Chain   string `json:"chain"`
	Backend string `json:"backend"`
	// Attempts are the backends tried or passed by, in order.
	Attempts  []llm.Attempt `json:"attempts"`
	Answer    string        `json:"answer"`
	LatencyMS float64       `json:"latency_ms"`
	Error     string        `json:"error"`
}

// Setup is what the first-run setup and the catalog need from the rest of
// FreeLane; the gateway provides it.
type Setup interface {
	Catalog() CatalogView
	AddFromCatalog(ctx context.Context, id string, in control.CatalogInput) (CatalogAdded, error)
	LoadCatalog(ctx context.Context, url string) (CatalogView, error)
	DecideCatalogChange(ctx context.Context, id string, in CatalogDecision) (CatalogView, error)
	Setup() SetupView
	ScanLocal(ctx context.Context) SetupView
	// AllowLocal lets a local server of another user serve (allow) or
	// withdraws that (not allow).
	AllowLocal(ctx context.Context, in LocalAllowInput, allow bool) (SetupView, error)
	TestRoute(ctx context.Context, model string) RouteTest
}

// maxCatalogIDLen bounds the id in the path; catalog ids are short.
const maxCatalogIDLen = 64

func (h *adminHandlers) mountSetup(route func(string, http.HandlerFunc), st Setup) {
	route("GET /api/catalog", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, st.Catalog()) })
	route("POST /api/catalog/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if len(id) > maxCatalogIDLen {
			WriteError(w, http.StatusNotFound, "invalid_request_error", "invalid_value", "the catalog has no such provider", "id")
			return
		}
		var in control.CatalogInput
		if !h.decode(w, r, &in) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		added, err := st.AddFromCatalog(ctx, id, in)
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, added)
	})
	route("POST /api/catalog", func(w http.ResponseWriter, r *http.Request) {
		var in CatalogLoad
		if !h.decode(w, r, &in) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		v, err := st.LoadCatalog(ctx, in.URL)
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
	h.mountCatalogChanges(route, st)
	route("GET /api/setup", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, st.Setup()) })
	route("POST /api/setup/scan", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		defer cancel()
		writeJSON(w, http.StatusOK, st.ScanLocal(ctx))
	})
	allowLocal := func(allow bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var in LocalAllowInput
			if !h.decode(w, r, &in) {
				return
			}
			v, err := st.AllowLocal(r.Context(), in, allow)
			if err != nil {
				fail(w, err)
				return
			}
			writeJSON(w, http.StatusOK, v)
		}
	}
	route("POST /api/setup/local/allow", allowLocal(true))
	route("POST /api/setup/local/withdraw", allowLocal(false))
	route("POST /api/setup/test", func(w http.ResponseWriter, r *http.Request) {
		var in RouteTestInput
		if r.ContentLength != 0 && !h.decode(w, r, &in) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
		defer cancel()
		writeJSON(w, http.StatusOK, st.TestRoute(ctx, in.Model))
	})
}

// CatalogDecision answers an address the catalog gives that waits for the
// user (a CatalogChange).
type CatalogDecision struct {
	// Decision is "confirm" (use the new address; for a new provider,
	// offer it) or "keep" (keep the address in use and ask no more).
	Decision string `json:"decision"`
	// To is the address the user was shown, so that the answer applies
	// to that address only.
	To string `json:"to"`
}

// maxDecisionURL bounds the address in an answer; catalog addresses are
// short.
const maxDecisionURL = 2048

// mountCatalogChanges adds the route that answers the catalog's held
// address changes.
func (h *adminHandlers) mountCatalogChanges(route func(string, http.HandlerFunc), st Setup) {
	route("POST /api/catalog/changes/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if len(id) > maxCatalogIDLen {
			WriteError(w, http.StatusNotFound, "invalid_request_error", "invalid_value", "the catalog has no such provider", "id")
			return
		}
		var in CatalogDecision
		if !h.decode(w, r, &in) {
			return
		}
		if in.Decision != "confirm" && in.Decision != "keep" {
			WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", `decision must be "confirm" or "keep"`, "decision")
			return
		}
		if in.To == "" || len(in.To) > maxDecisionURL {
			WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value",
				fmt.Sprintf("to must be the address the change names, at most %d characters", maxDecisionURL), "to")
			return
		}
		v, err := st.DecideCatalogChange(r.Context(), id, in)
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}
