package wiretypes

import (
	"encoding/json"
	"reflect"
	"time"

	"freelane/backend/api"
	"freelane/backend/breaker"
	"freelane/backend/config"
	"freelane/backend/connect"
	"freelane/backend/control"
	"freelane/backend/events"
	"freelane/backend/gateway"
	"freelane/backend/llm"
	"freelane/backend/metrics"
	"freelane/backend/notify"
	"freelane/backend/quota"
	"freelane/backend/store"
	"freelane/backend/tier"
)

// File is where the TypeScript goes, relative to the repository.
const File = "frontend/src/lib/wire.gen.ts"

// Describe builds the description of FreeLane's wire types. It reads doc
// comments, and the values of enums that have no constants, from the Go
// source of the repository at root.
func Describe(root string) (*Schema, error) { return build(root, freelane) }

// contract is what crosses the wire and what reflection cannot tell.
type contract struct {
	Endpoints []endpoint
	// Roots are types that cross the wire outside any one endpoint.
	Roots []reflect.Type
	Enums []enum
	// NeverNull are slice and map fields that the code always fills in,
	// so they are never null although Go could write null for them.
	NeverNull []fieldKey
	// Mirrors are the stand-ins for bodies the handlers declare as
	// anonymous or unexported structs, with where each is declared.
	Mirrors []mirror
}

// endpoint is one admin route.
type endpoint struct {
	// Route is the method and pattern, as registered: "GET /api/state".
	Route string
	Doc   string
	// Request is the JSON body decoded, Response the one written; nil for
	// none.
	Request, Response reflect.Type
	// Text is set when the answer is not JSON.
	Text bool
	// NeverNull is set when the answer is a list the handler never leaves
	// nil.
	NeverNull bool
	// Messages are the websocket's messages, for /api/ws.
	Messages []reflect.Type
}

// enum is a set of strings a value takes.
type enum struct {
	// Name is the TypeScript alias; "" writes a single value inline.
	Name string
	Doc  string
	// Type is the named Go string type whose values these are, or nil
	// when Fields, plain string fields, hold them.
	Type   reflect.Type
	Fields []fieldKey
	// Values are the Go constants themselves.
	Values []string
	// Dir is the package that declares the constants; with ConstType (the
	// constants' type, by default Type's name) or Prefix (untyped
	// constants' common name prefix) it lets a test find a constant that
	// Values lacks.
	Dir, ConstType, Prefix string
	// Scan is set for values no constant names: they are the string
	// literals the code in Dir stores in Fields[0].
	Scan bool
}

// mirror names the source of a body that a stand-in type describes:
// a named type (TypeName), or the `var in struct{...}` of a handler method
// (Func) or of the function literal registered for Route.
type mirror struct {
	Type                  reflect.Type
	Dir                   string
	TypeName, Func, Route string
}

var freelane = contract{
	Endpoints: []endpoint{
		{Route: "POST /api/login", Doc: "Exchanges a login link's one-time code for the session token every /api call sends in X-FreeLane-Session.",
			Request: typeOf[api.LoginRequest](), Response: typeOf[api.LoginView]()},
		{Route: "GET /api/session", Doc: "The signed-in session: when it ends (401 without one).", Response: typeOf[api.SessionView]()},
		{Route: "GET /api/state", Response: typeOf[gateway.Snapshot]()},
		{Route: "GET /api/team", Doc: "The team as this instance sees it: enabled is false on a single machine; with state.redis every live instance with its status record (this instance alone while Redis is unreachable). Never a URL or a password.",
			Response: typeOf[gateway.TeamView]()},
		{Route: "GET /api/ws", Doc: "The websocket: its messages, not an answer.", Messages: []reflect.Type{typeOf[snapshotMessage](), typeOf[gateway.Update]()}},

		{Route: "GET /api/providers", Response: typeOf[[]control.ProviderView](), NeverNull: true},
		{Route: "POST /api/providers", Doc: "Tries the key against the provider's model list first: a refused key answers 400 key_refused, a server that cannot be reached 502 provider_unreachable unless unreachable_ok is sent.",
			Request: typeOf[control.ProviderInput](), Response: typeOf[control.ProviderView]()},
		{Route: "POST /api/providers/models", Doc: "The models a provider's server lists, to pick from before it is added or while it is edited; the errors are those of POST /api/providers.",
			Request: typeOf[api.ModelListInput](), Response: typeOf[api.ModelList]()},
		{Route: "PUT /api/providers/{name}", Doc: "An edit of the kind, base URL, headers or key tries the key as POST /api/providers does.",
			Request: typeOf[control.ProviderInput](), Response: typeOf[control.ProviderView]()},
		{Route: "PATCH /api/providers/{name}", Doc: "The same body as PUT; fields left out keep their stored values.",
			Request: typeOf[control.ProviderInput](), Response: typeOf[control.ProviderView]()},
		{Route: "DELETE /api/providers/{name}"},
		{Route: "POST /api/providers/{name}/test", Doc: "The body may be left out: the provider's first model is tested.",
			Request: typeOf[providerTest](), Response: typeOf[api.TestResult]()},
		{Route: "PUT /api/providers/{name}/key", Request: typeOf[keyInput](), Response: typeOf[control.ProviderView]()},
		{Route: "DELETE /api/providers/{name}/key", Response: typeOf[control.ProviderView]()},
		{Route: "POST /api/providers/{name}/keys", Doc: "Adds the key to the provider's pool (its first key when it has none); answers 201.",
			Request: typeOf[keyInput](), Response: typeOf[control.ProviderView]()},
		{Route: "DELETE /api/providers/{name}/keys/{label}", Doc: "Removes the key with this label from the provider's pool.",
			Response: typeOf[control.ProviderView]()},

		{Route: "GET /api/chains", Response: typeOf[[]api.ChainView]()},
		{Route: "POST /api/chains", Request: typeOf[api.ChainCreate](), Response: typeOf[api.ChainView]()},
		{Route: "PUT /api/chains/{name}", Request: typeOf[control.ChainInput](), Response: typeOf[api.ChainView]()},
		{Route: "DELETE /api/chains/{name}"},
		{Route: "PUT /api/chains/{name}/gear", Doc: "Switches the chain's gear, stored like any edit, and announces it with a gear_switched event.",
			Request: typeOf[api.GearInput](), Response: typeOf[api.ChainView]()},
		{Route: "POST /api/route/preview", Doc: "Where a request with this OpenAI chat completions body (plus optional task and gear) would go now, and why; calls no backend.",
			Request: typeOf[previewInput](), Response: typeOf[llm.Decision]()},
		{Route: "PUT /api/default-chain", Request: typeOf[defaultChainInput](), Response: typeOf[[]api.ChainView]()},

		{Route: "GET /api/aliases", Doc: "The model aliases in the order they are tried, the built-in ones marked default.",
			Response: typeOf[[]control.AliasView](), NeverNull: true},
		{Route: "PUT /api/aliases", Doc: "The list replaces the configured aliases; a built-in one stays unless its pattern is given another chain.",
			Request: typeOf[aliasesInput](), Response: typeOf[[]control.AliasView](), NeverNull: true},

		{Route: "GET /api/notifications", Doc: "The recent notifications (the last 50 at most), newest first.",
			Response: typeOf[[]notify.Notification](), NeverNull: true},
		{Route: "GET /api/notifications/settings", Doc: "Which kinds of notification are raised.", Response: typeOf[notify.Switches]()},
		{Route: "PUT /api/notifications/settings", Doc: "Switches kinds of notification on or off, stored like any edit; kinds left out keep their setting.",
			Request: typeOf[notify.Switches](), Response: typeOf[notify.Switches]()},

		{Route: "GET /api/settings", Response: typeOf[control.Settings]()},
		{Route: "PUT /api/settings", Request: typeOf[control.Settings](), Response: typeOf[control.Settings]()},

		{Route: "GET /api/requests", Doc: "One page of the request log. Query: limit (1-1000, default 100); sort (time, latency, ttft, tokens, cost) and order (desc, asc); cursor (from the X-FreeLane-Next-Cursor header of the previous page, absent on the last); q (a request id finds that request, other text is searched in the names, the error, the notes and the kept bodies); from, to, before (RFC 3339); chain, backend, class, dialect, status (2xx-5xx), cache (hit, miss, bypass, refresh, none), stream (true, false), session, id. Any other parameter is refused.",
			Response: typeOf[[]llm.Trace](), NeverNull: true},
		{Route: "GET /api/requests/{id}", Doc: "One request's trace with its routing decision, from the live tail or the request log, with its bodies when body logging kept them; 404 unknown_request when neither has it.",
			Response: typeOf[api.RequestDetail]()},
		{Route: "GET /api/usage", Doc: "Query: from and to (RFC 3339 times or YYYY-MM-DD dates), group_by.",
			Response: typeOf[usageReport]()},
		{Route: "GET /api/caching", Doc: "What prompt caching and the response cache did over the window ending now (query: window, a duration from 1m to 30d such as 24h or 7d; default 24h), with a warning for each chain whose routing keeps breaking warm prompt caches.",
			Response: typeOf[gateway.CachingView]()},
		{Route: "GET /api/series", Doc: "One window of the charts' time series, every bucket from now less the window to now, empty ones included (query: window, one of 1m, 5m, 1h at 10 s buckets, 24h at 1 min, 7d at 1 h; default 1h; backend or chain, neither for every request).",
			Response: typeOf[metrics.SeriesView]()},
		{Route: "GET /api/usage.csv", Doc: "The ledger as CSV, for the same from and to as /api/usage.", Text: true},

		{Route: "GET /api/budgets", Response: typeOf[[]quota.BudgetView](), NeverNull: true},
		{Route: "PUT /api/budgets", Doc: "The list replaces every budget.",
			Request: typeOf[[]control.BudgetJSON](), Response: typeOf[[]quota.BudgetView](), NeverNull: true},
		{Route: "GET /api/limits", Response: typeOf[[]control.LimitsEntry](), NeverNull: true},
		{Route: "PUT /api/limits/{provider}", Request: typeOf[control.ModelLimitsInput](), Response: typeOf[[]control.LimitsEntry](), NeverNull: true},
		{Route: "PUT /api/limits/{provider}/{model...}", Request: typeOf[control.ModelLimitsInput](), Response: typeOf[[]control.LimitsEntry](), NeverNull: true},

		{Route: "GET /api/connect", Doc: "Every tool's settings for pointing it at this FreeLane, as the page asking reaches it. Query: model (default auto).",
			Response: typeOf[connect.Setup]()},

		{Route: "GET /api/catalog", Doc: "The provider catalog in use, with which entries are configured and whose key variables are set.",
			Response: typeOf[api.CatalogView]()},
		{Route: "POST /api/catalog", Doc: "Loads a newer catalog file from a URL; a file that fails its checks is refused with its problems by line, and the catalog in use stays.",
			Request: typeOf[api.CatalogLoad](), Response: typeOf[api.CatalogView]()},
		{Route: "POST /api/catalog/{id}", Doc: "Checks the key with the provider and adds the catalog entry as a provider (201).",
			Request: typeOf[control.CatalogInput](), Response: typeOf[api.CatalogAdded]()},
		{Route: "POST /api/catalog/changes/{id}", Doc: "Answers an address the catalog gives that waits for the user: confirm puts it in use, keep leaves the address in use; a move of a provider with a key is refused (409).",
			Request: typeOf[api.CatalogDecision](), Response: typeOf[api.CatalogView]()},
		{Route: "GET /api/setup", Doc: "What the first-run setup shows.", Response: typeOf[api.SetupView]()},
		{Route: "POST /api/setup/scan", Doc: "Looks for local model servers at once.", Response: typeOf[api.SetupView]()},
		{Route: "POST /api/setup/local/allow", Doc: "Lets a local server run by another user of this machine serve: the one found on port, of kind, run by uid.",
			Request: typeOf[api.LocalAllowInput](), Response: typeOf[api.SetupView]()},
		{Route: "POST /api/setup/local/withdraw", Doc: "Withdraws the permission AllowLocal gave; the server is no longer used.",
			Request: typeOf[api.LocalAllowInput](), Response: typeOf[api.SetupView]()},
		{Route: "POST /api/setup/test", Doc: "Sends one short request through the router (model auto unless given) and reports its route. The body may be left out.",
			Request: typeOf[api.RouteTestInput](), Response: typeOf[api.RouteTest]()},

		{Route: "GET /api/routing", Response: typeOf[routingState]()},
		{Route: "PUT /api/routing", Request: typeOf[routingInput](), Response: typeOf[routingState]()},
	},
	Roots: []reflect.Type{typeOf[errorBody]()},
	Enums: []enum{
		{Name: "BreakerState", Type: typeOf[breaker.State](), Dir: "backend/breaker",
			Values: values(breaker.Closed, breaker.Open, breaker.HalfOpen)},
		{Name: "FailureClass", Type: typeOf[llm.Class](), Dir: "backend/llm",
			Values: values(llm.OK, llm.RateLimited, llm.Transient, llm.Soft, llm.Credential, llm.Gone, llm.TooLong, llm.Caller, llm.Cancelled, llm.Quota)},
		{Name: "SkipWord", Type: typeOf[llm.SkipWord](), Dir: "backend/llm",
			Values: values(llm.SkipOpen, llm.SkipHalfOpen, llm.SkipCooling, llm.SkipKeyDisabled, llm.SkipRetired, llm.SkipQuota, llm.SkipTooLong, llm.SkipUnsupported, llm.SkipBusy, llm.SkipPaced)},
		{Name: "CacheOutcome", Type: typeOf[llm.CacheOutcome](), Dir: "backend/llm",
			Values: values(llm.CacheHit, llm.CacheMiss, llm.CacheBypassed, llm.CacheRefreshed)},
		{Name: "Dialect", Type: typeOf[llm.Dialect](), Dir: "backend/llm",
			Values: values(llm.DialectOpenAI, llm.DialectResponses, llm.DialectAnthropic, llm.DialectGemini)},
		{Name: "EventKind", Type: typeOf[events.Kind](), Dir: "backend/events",
			Values: values(events.StateChange, events.Cooldown, events.Retired, events.Restored, events.KeyDisabled, events.KeyRestored, events.Health, events.Probe,
				events.Offline, events.Online, events.Paused, events.Resumed, events.GearSwitched,
				events.QuotaWarning, events.QuotaExhausted, events.BudgetWarning, events.BudgetExceeded,
				events.ModelsJoined, events.LocalFound, events.LocalGone, events.LocalForeign)},
		{Name: "NotificationKind", Type: typeOf[notify.Kind](), Dir: "backend/notify",
			Values: values(notify.Breaker, notify.Key, notify.Quota, notify.Budget, notify.Local)},
		{Name: "EventLevel", Type: typeOf[events.Level](), Dir: "backend/events",
			Values: values(events.Info, events.Warn, events.Alert)},
		{Name: "RequestEndpoint", Doc: "RequestEndpoint is the OpenAI API a request came in on.",
			Fields: []fieldKey{field[llm.Trace]("Endpoint")}, Dir: "backend/llm", ConstType: "Endpoint",
			Values: values(llm.Chat, llm.Completions, llm.Embeddings)},
		{Name: "Tier", Doc: "Tier is how a provider is paid for: the user's own key, a free tier, or a local server.",
			Type: typeOf[tier.Tier](), Dir: "backend/tier",
			Values: values(tier.Own, tier.Free, tier.Local)},
		{Name: "Offer", Type: typeOf[tier.Offer](), Dir: "backend/tier",
			Values: values(tier.OfferFree, tier.OfferTrial, tier.OfferPaid, tier.OfferLocal)},
		{Name: "ProviderKind", Doc: "ProviderKind is a provider's wire protocol.",
			Fields: []fieldKey{field[control.ProviderView]("Kind"), field[control.ProviderInput]("Kind")},
			Dir:    "backend/config", Prefix: "Kind",
			Values: values(config.KindOpenAI, config.KindAnthropic, config.KindGemini)},
		{Name: "KeySource", Doc: "KeySource is where a provider's key comes from.",
			Fields: []fieldKey{field[control.KeyInfo]("Source")}, Dir: "backend/control", Prefix: "Source",
			Values: values(control.SourceDashboard, control.SourceConfig, control.SourceEnv, control.SourceNone, control.SourceKeyless)},
		{Name: "ProviderSource", Type: typeOf[control.ProviderSource](), Dir: "backend/control",
			Values: values(control.FromConfig, control.FromCatalog, control.FromEnvironment, control.FromDiscovery)},
		{Name: "LocalStatus", Type: typeOf[control.LocalStatus](), Dir: "backend/control",
			Values: values(control.LocalServing, control.LocalGone, control.LocalHidden, control.LocalForeign)},
		{Name: "BudgetPeriod", Doc: "BudgetPeriod is the local calendar period a budget covers.",
			Fields: []fieldKey{field[quota.BudgetView]("Period"), field[control.BudgetJSON]("Period")}, Dir: "backend/quota", Prefix: "Period",
			Values: values(quota.PeriodDay, quota.PeriodMonth)},
		{Name: "BudgetAction", Doc: "BudgetAction is what happens once a budget is spent: paid backends are\nskipped (free-only), or requests nothing free can serve are refused (block).",
			Fields: []fieldKey{field[quota.BudgetView]("Action"), field[control.BudgetJSON]("Action")}, Dir: "backend/quota", Prefix: "Action",
			Values: values(quota.ActionFreeOnly, quota.ActionBlock)},
		{Name: "LimitKind", Doc: "LimitKind names a limit: requests or tokens per minute or day, or\nrequests at once.",
			Fields: []fieldKey{field[quota.LimitUse]("Kind")}, Dir: "backend/quota", Prefix: "Kind",
			Values: values(quota.KindRPM, quota.KindRPD, quota.KindTPM, quota.KindTPD, quota.KindConcurrency)},
		{Name: "UsageGrouping", Doc: "UsageGrouping is what /api/usage adds up by.",
			Fields: []fieldKey{field[usageReport]("GroupBy")}, Dir: "backend/store", Prefix: "By",
			Values: values(store.ByDay, store.ByBackend, store.ByChain, store.ByDayBackend, store.ByPath, store.ByInstance)},
		{Name: "BackendStatus", Doc: "BackendStatus is what a backend is doing now, as the gateway reports it.",
			Fields: []fieldKey{field[gateway.BackendView]("Status")}, Dir: "backend/gateway", Scan: true},
		{Name: "ChainStrategy", Doc: "ChainStrategy is how a chain orders the backends of one priority tier.",
			Fields: []fieldKey{field[api.ChainView]("Strategy"), field[control.ChainRouting]("Strategy")},
			Dir:    "backend/config", Prefix: "Strategy", Values: config.Strategies},
		{Name: "ChainGear", Doc: "ChainGear says whether a chain's strategy orders it (auto) or its listed order does (manual).",
			Fields: []fieldKey{field[api.ChainView]("Gear"), field[control.ChainRouting]("Gear"), field[api.GearInput]("Gear")},
			Dir:    "backend/config", Prefix: "Gear", Values: values(config.GearAuto, config.GearManual)},
		{Fields: []fieldKey{field[gateway.Update]("Type")}, Dir: "backend/gateway", Scan: true},
		// The hub writes this one from an anonymous struct; the gateway's
		// wire test reads it from a real websocket.
		{Fields: []fieldKey{field[snapshotMessage]("Type")}, Values: []string{"snapshot"}},
	},
	NeverNull: []fieldKey{
		// teamView always makes its list, empty outside a team.
		field[gateway.TeamView]("Instances"),
		// The gateway's ProviderModels makes its list.
		field[api.ModelList]("Models"),
		// control.Providers, feed.Recent, quota.Quotas and quota.Budgets
		// make their lists.
		field[gateway.Snapshot]("Providers"),
		field[gateway.Snapshot]("Requests"),
		field[gateway.Snapshot]("Quotas"),
		field[gateway.Snapshot]("Budgets"),
		field[gateway.Snapshot]("Notifications"),
		// update replaces no requests and no events by empty lists.
		field[gateway.Update]("Requests"),
		field[gateway.Update]("Events"),
		field[gateway.Update]("Quotas"),
		field[gateway.Update]("Budgets"),
		field[gateway.Update]("Notifications"),
		// metrics.Windows makes the map of every window.
		field[gateway.BackendView]("Windows"),
		// The provider view fills in no headers as {}, copies the key's
		// variables into a fresh list and has a model for each of the
		// provider's, which validation requires at least one of.
		field[control.ProviderView]("Headers"),
		field[control.ProviderView]("Models"),
		field[control.KeyInfo]("Env"),
		// chains starts every chain's list empty.
		field[api.ChainView]("Backends"),
		// quota.Quotas starts every backend's list empty.
		field[quota.QuotaView]("Limits"),
		// store.Usage makes its rows.
		field[usageReport]("Rows"),
		// store.Caching and cachingWarnings start every list empty.
		field[store.CachingReport]("Backends"),
		field[store.CachingReport]("Sessions"),
		field[store.CachingReport]("Chains"),
		field[store.SessionCaching]("Backends"),
		field[gateway.CachingView]("Warnings"),
		// Series.Window makes a bucket for every slot of the window.
		field[metrics.SeriesView]("Buckets"),
		// connect.For lists every tool and gives each one its lists.
		field[connect.Setup]("Tools"),
		field[connect.ToolSetup]("Env"),
		field[connect.ToolSetup]("Steps"),
		field[connect.ToolSetup]("Notes"),
	},
	Mirrors: []mirror{
		{Type: typeOf[providerTest](), Dir: "backend/api", Func: "testProvider"},
		{Type: typeOf[keyInput](), Dir: "backend/api", Func: "setKey"},
		{Type: typeOf[defaultChainInput](), Dir: "backend/api", Route: "PUT /api/default-chain"},
		{Type: typeOf[routingInput](), Dir: "backend/api", Route: "PUT /api/routing"},
		{Type: typeOf[aliasesInput](), Dir: "backend/api", Route: "PUT /api/aliases"},
		{Type: typeOf[routingState](), Dir: "backend/api", TypeName: "routingState"},
		{Type: typeOf[usageReport](), Dir: "backend/api", TypeName: "usageAnswer"},
		{Type: typeOf[errorBody](), Dir: "backend/api", TypeName: "errorBody"},
		{Type: typeOf[errorDetail](), Dir: "backend/api", TypeName: "errorDetail"},
	},
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// The types below stand in for bodies the handlers declare as anonymous or
// unexported structs, which reflection cannot reach from here. Each must
// match its source field for field: TestMirrorsMatchTheHandlers compares
// them.

// providerTest is the body of POST /api/providers/{name}/test.
type providerTest struct {
	Model string `json:"model"`
}

// keyInput is the body of PUT /api/providers/{name}/key.
type keyInput struct {
	Key string `json:"key"`
}

// previewInput is the body of POST /api/route/preview: the fields of an
// OpenAI chat completions request the preview reads, plus its own task and
// gear. Any other field of a chat completions body is accepted too.
type previewInput struct {
	Model     string            `json:"model"`
	Messages  []json.RawMessage `json:"messages"`
	Tools     []json.RawMessage `json:"tools,omitempty"`
	Stream    bool              `json:"stream,omitempty"`
	MaxTokens int               `json:"max_tokens,omitempty"`
	Task      string            `json:"task,omitempty"`
	Gear      string            `json:"gear,omitempty"`
}

// defaultChainInput is the body of PUT /api/default-chain; "" makes the
// generated auto chain the default.
type defaultChainInput struct {
	Name string `json:"name"`
}

// aliasesInput is the body of PUT /api/aliases; aliases is required.
type aliasesInput struct {
	Aliases *[]config.Alias `json:"aliases"`
}

// routingInput is the body of PUT /api/routing; paused is required.
type routingInput struct {
	Paused *bool `json:"paused"`
}

// routingState is the answer of /api/routing.
type routingState struct {
	Paused bool `json:"paused"`
}

// usageReport is the answer of GET /api/usage: ledger totals from From
// (inclusive) to To (exclusive).
type usageReport struct {
	From    time.Time        `json:"from"`
	To      time.Time        `json:"to"`
	GroupBy string           `json:"group_by"`
	Rows    []store.UsageRow `json:"rows"`
}

// errorBody is what every /api route answers on 4xx and 5xx, in the
// OpenAI shape.
type errorBody struct {
	Error errorDetail `json:"error"`
}

// errorDetail is an error's message, type, code and the request field it
// blames.
type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    string  `json:"code,omitempty"`
	Param   *string `json:"param"`
}

// snapshotMessage is the websocket's first message, and the message after
// every configuration change: the full state the dashboard starts from.
type snapshotMessage struct {
	Type string           `json:"type"`
	Data gateway.Snapshot `json:"data"`
}
