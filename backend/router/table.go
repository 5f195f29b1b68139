package router

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"freelane/backend/llm"
	"freelane/backend/tier"
)

// Upstream is what the router needs from a provider client.
type Upstream interface {
	Complete(ctx context.Context, req *llm.Request, model string) (*llm.Response, error)
	Stream(ctx context.Context, req *llm.Request, model string) (llm.EventStream, error)
}

// ModelSpec is one model a provider serves.
type ModelSpec struct {
	ID      string
	ParamsB float64
	Context int
	// Caps are what the model can do, when CapsKnown; a model of unknown
	// capabilities is sent every request.
	Caps      llm.Caps
	CapsKnown bool
	// Endpoints, when set, narrow the provider's endpoints for this model
	// (an embeddings-only model, say).
	Endpoints []llm.Endpoint
	// CreditUntil is when a prepaid credit for this model runs out; until
	// then the default chain puts it ahead of the free pool, so the credit
	// is used before it expires. Zero for none.
	CreditUntil time.Time
	// Price is what the model costs, for the cost and auto strategies.
	Price Price
}

// Price is money per million tokens. Known is false for a paid model
// whose price nobody configured: the cost strategy puts such a backend
// last and says so rather than take it for free.
type Price struct {
	Input, Output float64
	// CacheRead is the price of prompt tokens read from the provider's
	// prompt cache; 0 means Input.
	CacheRead float64
	Known     bool
}

// Free reports whether calls cost nothing.
func (p Price) Free() bool { return p.Known && p.Input <= 0 && p.Output <= 0 }

// KeySpec is one key of a provider that holds a pool of keys.
type KeySpec struct {
	// Label is the key's stable label, never the key or a part of it; it
	// becomes the Key of the backends called with it.
	Label string
	// Up is the client that sends this key.
	Up Upstream
	// Weight is the key's share when the pool picks by weight; 0 is 1.
	Weight int
}

// ProviderSpec is a provider as the router needs to know it.
type ProviderSpec struct {
	Name     string
	Tier     tier.Tier
	Default  bool
	Disabled bool
	// HasKey is false when the provider needs a key and none is set; such a
	// provider is in no chain and KeyHint tells the user what to do.
	HasKey  bool
	KeyHint string
	Models  []ModelSpec
	Up      Upstream
	// Keys, when the provider holds more than one key, are its pool: each
	// model becomes one backend per key, and Up is unused. A chain's
	// "provider/model" stands for all of them, tried one after another
	// before the next provider.
	Keys []KeySpec
	// Dialect is the wire format the provider speaks, and Endpoints the
	// kinds of request its API serves (nil: all).
	Dialect   llm.Dialect
	Endpoints []llm.Endpoint
	// Discovered marks a local server FreeLane found rather than one the
	// user configured. Its model ids with a '/' are reached only through
	// its own name ("ollama-11500/library/llama3.2:3b"), never as bare
	// ids: any program can make such a server list "paid/gpt-x".
	Discovered bool
	// CacheTTL is how long the provider keeps a prompt-cache entry after
	// its last use: a session stays on the backend that served it for
	// that long. 0 is DefaultCacheTTL.
	CacheTTL time.Duration
}

// ChainSpec is a user-arranged chain of backends.
type ChainSpec struct {
	Name     string
	Backends []llm.BackendID
	// Strategy orders each tier (the config's names; "" is priority),
	// and Gear says whether it does ("manual" keeps the listed order).
	Strategy string
	Gear     string
	// Weights are the weighted strategy's shares (absent is 1, 0 drains
	// a backend); Priority the tier of each backend (absent is 0, lower
	// first).
	Weights  map[llm.BackendID]int
	Priority map[llm.BackendID]int
	// MaxWait bounds the wait for a rate limit to reset when every
	// backend is rate limited; nil is DefaultMaxWait, 0 no waiting.
	MaxWait *time.Duration
}

// DefaultMaxWait is how long a request waits at most for a rate limit to
// reset when every backend of its chain is rate limited.
const DefaultMaxWait = 3 * time.Second

// Spec is everything the routing table is built from.
type Spec struct {
	Providers []ProviderSpec
	Chains    []ChainSpec
	// Now decides which credits are still running.
	Now time.Time
	// DefaultChain, when it names a user chain, is what "auto" routes to.
	DefaultChain string
	// Aliases route names no exact lookup knows, tried in order.
	Aliases []AliasSpec
	// EmptyHint tells a client what to do while no backend at all can
	// serve, such as where the dashboard is and which key variables are
	// read; it stands in for "no backends" in the answer to auto.
	EmptyHint string
	// Scoring tunes the auto strategy; the zero value is DefaultScoring.
	Scoring *Scoring
	// AutoGear is the gear of the generated auto chain, which has no
	// ChainSpec of its own ("" is auto).
	AutoGear string
}

// AliasSpec routes model names matching Pattern (a glob: '*' any run of
// characters, '?' one) to the chain named Chain.
type AliasSpec struct {
	Pattern string
	Chain   string
}

// Backend is one model of one provider (with that provider's key).
type Backend struct {
	ID llm.BackendID
	// name is ID's text form, made once when the table is built so that
	// traces and logs do not build it per request.
	name    string
	Tier    tier.Tier
	ParamsB float64
	Context int
	Up      Upstream
	// Dialect is the wire format the backend is spoken to in.
	Dialect llm.Dialect
	// Endpoints are the kinds of request the backend serves (nil: all);
	// Caps what it can do, when CapsKnown.
	Endpoints []llm.Endpoint
	Caps      llm.Caps
	CapsKnown bool
	// Price is what calls cost, KeyWeight the key's share in its pool.
	Price     Price
	KeyWeight int
	// CacheTTL is the provider's prompt-cache lifetime (0: the default).
	CacheTTL time.Duration
	// alone is the route of a request pinned to this backend, made once
	// so that resolving a pin allocates nothing, and alonePlan its plan.
	alone     []*Backend
	alonePlan *plan
	// stats are the backend's recent latencies, kept across tables.
	stats *stats
	// limited is set when Endpoints or Caps restrict what the backend
	// serves, so a backend that serves everything is checked at once.
	limited bool
}

// Name is the backend's text form, ID.String().
func (b *Backend) Name() string { return b.name }

// Unsupported tells why b cannot serve req, or returns nil when it can:
// an endpoint it does not serve, a capability the request needs that the
// backend declares it lacks, or a request that cannot be put into the
// backend's dialect. The router passes such a backend by without calling
// it, so it neither fails the request nor counts against its health.
func (b *Backend) Unsupported(req *llm.Request) *llm.Skip {
	if !b.limited && (b.Dialect == req.Dialect || b.Dialect == "") {
		return nil
	}
	return b.unsupported(req)
}

func (b *Backend) unsupported(req *llm.Request) *llm.Skip {
	if b.Endpoints != nil && !slices.Contains(b.Endpoints, req.Endpoint) {
		return &llm.Skip{Word: llm.SkipUnsupported, Class: llm.Caller,
			Reason: fmt.Sprintf("does not serve %s requests", req.Endpoint)}
	}
	if b.CapsKnown && !b.Caps.Has(req.Needs) {
		return &llm.Skip{Word: llm.SkipUnsupported, Class: llm.Caller,
			Reason: "has no " + strings.Join(b.Caps.Missing(req.Needs), " or ") + " support"}
	}
	if b.Dialect != "" && b.Dialect != req.Dialect {
		if _, err := req.Conversation(); err != nil {
			return &llm.Skip{Word: llm.SkipUnsupported, Class: llm.Caller,
				Reason: fmt.Sprintf("the request cannot be translated to the %s dialect: %v", b.Dialect, err)}
		}
	}
	return nil
}

// DefaultChain is the chain used for the model name "auto".
const DefaultChain = "auto"

// Table is an immutable routing table. The router swaps whole tables when the
// configuration changes, so requests never see a half-applied change.
type Table struct {
	chains     map[string][]*Backend
	chainNames []string
	backends   map[llm.BackendID]*Backend
	// keyGroups maps a keyless ID to the backends of that model, one per
	// key of its provider, in the pool's order: what "provider/model"
	// stands for in a chain and a pin.
	keyGroups map[llm.BackendID][]*Backend
	order     []*Backend // every routable backend, default-chain order first
	byModel   map[string][]*Backend
	// providers holds every provider's name, disabled and keyless ones
	// too, with whether it is disabled: a name starting with one of them
	// and a '/' is a pin of that provider and reaches nothing else.
	providers map[string]bool
	// pinOnly are the backends of discovered servers whose model id has a
	// '/', by that id: left out of byModel, named in the answer to a
	// request that gave the id alone.
	pinOnly map[string][]*Backend
	// keyless maps a backend or provider left out for lack of a key to the
	// hint telling the user how to add it.
	keyless map[string]string
	// keylessModels maps a bare upstream model id served only by providers
	// without a key to their hints.
	keylessModels map[string]string
	hints         []string // one per keyless provider, in config order
	emptyHint     string
	// creditEnds is the earliest end of a credit that moved a backend up
	// the default chain: the table should be rebuilt then.
	creditEnds time.Time
	// defaultOf is the user chain "auto" stands for, "" when auto is
	// generated or user-defined.
	defaultOf string
	aliases   []AliasSpec
	// plans are how each chain, each bare model id and each pooled
	// model's pin choose among their backends, made once per table.
	plans      map[string]*plan
	modelPlans map[string]*plan
	groupPlans map[llm.BackendID]*plan
	scoring    Scoring
}

// DefaultOf names the user chain the model "auto" routes to, or "" when
// auto is FreeLane's own chain of every backend.
func (t *Table) DefaultOf() string { return t.defaultOf }

// Build makes a routing table. References in chains to unknown backends are
// dropped (config validation reports them to the user first).
func Build(spec Spec) *Table {
	t := &Table{
		chains:    map[string][]*Backend{},
		backends:  map[llm.BackendID]*Backend{},
		byModel:   map[string][]*Backend{},
		keyless:   map[string]string{},
		providers: map[string]bool{},
		pinOnly:   map[string][]*Backend{},
		keyGroups: map[llm.BackendID][]*Backend{},

		plans:      map[string]*plan{},
		modelPlans: map[string]*plan{},
		groupPlans: map[llm.BackendID]*plan{},
		scoring:    DefaultScoring,

		keylessModels: map[string]string{},
		aliases:       slices.Clone(spec.Aliases),
		emptyHint:     spec.EmptyHint,
	}
	if spec.Scoring != nil {
		t.scoring = *spec.Scoring
	}
	var own, free, local, credit []*Backend
	var ownDefault []*Backend
	creditUntil := map[*Backend]time.Time{}
	discovered := map[string]bool{}
	for _, p := range spec.Providers {
		t.providers[p.Name] = p.Disabled
		discovered[p.Name] = p.Discovered
		if p.Disabled {
			continue
		}
		if !p.HasKey {
			t.keyless[p.Name] = p.KeyHint
			t.hints = append(t.hints, p.KeyHint)
			for _, m := range p.Models {
				t.keyless[llm.BackendID{Provider: p.Name, Model: m.ID}.String()] = p.KeyHint
				t.keylessModels[m.ID] = joinHint(t.keylessModels[m.ID], p.KeyHint)
			}
			continue
		}
		keys := p.Keys
		if len(keys) == 0 {
			keys = []KeySpec{{Up: p.Up}}
		}
		for _, m := range p.Models {
			group := llm.BackendID{Provider: p.Name, Model: m.ID}
			for _, k := range keys {
				id := group
				id.Key = k.Label
				b := &Backend{ID: id, name: id.String(), Tier: p.Tier, ParamsB: m.ParamsB,
					Context: m.Context, Up: k.Up, Dialect: p.Dialect, Endpoints: p.Endpoints, Caps: m.Caps, CapsKnown: m.CapsKnown,
					Price: m.Price, KeyWeight: k.Weight, CacheTTL: p.CacheTTL}
				if m.Endpoints != nil {
					b.Endpoints = m.Endpoints
				}
				b.limited = b.Endpoints != nil || b.CapsKnown
				b.alone = []*Backend{b}
				b.alonePlan = newPlan("", b.alone, ChainSpec{})
				b.stats = &stats{}
				t.backends[id] = b
				t.keyGroups[group] = append(t.keyGroups[group], b)
			}
		}
		for _, m := range p.Models {
			grp := t.keyGroups[llm.BackendID{Provider: p.Name, Model: m.ID}]
			switch {
			case p.Tier == tier.Own && p.Default:
				ownDefault = append(ownDefault, grp...)
			case spec.Now.Before(m.CreditUntil):
				credit = append(credit, grp...)
				for _, b := range grp {
					creditUntil[b] = m.CreditUntil
				}
				if t.creditEnds.IsZero() || m.CreditUntil.Before(t.creditEnds) {
					t.creditEnds = m.CreditUntil
				}
			case p.Tier == tier.Own:
				own = append(own, grp...)
			case p.Tier == tier.Free:
				free = append(free, grp...)
			default:
				local = append(local, grp...)
			}
		}
	}
	// Free models go biggest first: the most capable free model is the best
	// stand-in for a paid one. Stable, so ties keep config order.
	sort.SliceStable(free, func(i, j int) bool { return free[i].ParamsB > free[j].ParamsB })
	// Credits that run out soonest go first: they are lost when unused.
	sort.SliceStable(credit, func(i, j int) bool { return creditUntil[credit[i]].Before(creditUntil[credit[j]]) })
	t.order = slices.Concat(ownDefault, own, credit, free, local)
	for _, b := range t.order {
		if discovered[b.ID.Provider] && strings.Contains(b.ID.Model, "/") {
			t.pinOnly[b.ID.Model] = append(t.pinOnly[b.ID.Model], b)
			continue
		}
		t.byModel[b.ID.Model] = append(t.byModel[b.ID.Model], b)
	}

	for _, c := range spec.Chains {
		var bs []*Backend
		for _, ref := range c.Backends {
			if grp := t.keyGroups[ref]; ref.Key == "" && len(grp) > 0 {
				bs = append(bs, grp...)
			} else if b := t.backends[ref]; b != nil {
				bs = append(bs, b)
			}
		}
		t.addChain(c.Name, bs)
		t.plans[c.Name] = newPlan(c.Name, bs, c)
	}
	if _, ok := t.chains[DefaultChain]; !ok {
		if bs, ok := t.chains[spec.DefaultChain]; ok {
			t.addChain(DefaultChain, bs)
			t.defaultOf = spec.DefaultChain
			t.plans[DefaultChain] = t.plans[spec.DefaultChain]
		} else {
			t.addChain(DefaultChain, t.order)
			t.plans[DefaultChain] = newPlan(DefaultChain, t.order, ChainSpec{Gear: spec.AutoGear})
		}
	}
	for model, bs := range t.byModel {
		t.modelPlans[model] = newPlan("", bs, ChainSpec{})
	}
	for id, bs := range t.keyGroups {
		if len(bs) > 1 {
			t.groupPlans[id] = newPlan("", bs, ChainSpec{})
		}
	}
	// The default chain leads every listing: it is what most tools ask for.
	if i := slices.Index(t.chainNames, DefaultChain); i > 0 {
		t.chainNames = slices.Insert(slices.Delete(t.chainNames, i, i+1), 0, DefaultChain)
	}
	// A chain's declared but key-less backends still matter for its error
	// message, so remember which chains lost members to missing keys.
	for _, c := range spec.Chains {
		for _, ref := range c.Backends {
			if hint, ok := t.keyless[ref.String()]; ok {
				t.keyless["chain:"+c.Name] = joinHint(t.keyless["chain:"+c.Name], hint)
			}
		}
	}
	return t
}

func joinHint(a, b string) string {
	if a == "" || strings.Contains(a, b) {
		return cmp.Or(a, b)
	}
	return a + "; " + b
}

func (t *Table) addChain(name string, bs []*Backend) {
	if _, dup := t.chains[name]; !dup {
		t.chainNames = append(t.chainNames, name)
	}
	t.chains[name] = bs
}

// Route is the ordered list of backends one request may use.
type Route struct {
	Chain string // chain name, empty when pinned or by model id
	// Alias is the pattern that sent the name to Chain, when one did.
	Alias    string
	Backends []*Backend
	// Pinned is set for an explicit provider/model: no failover, except
	// from one key of a pooled provider to the next.
	Pinned bool
	// Shortcut is the model-name suffix that narrowed or reordered the
	// route.
	Shortcut shortcut
	plan     *plan
}

// IsPin reports whether model names one backend ("provider/model"), which
// no task rule may send elsewhere.
func (t *Table) IsPin(model string) bool {
	id, ok := llm.CutBackendID(model)
	if !ok {
		return false
	}
	if _, chain := t.chains[model]; chain {
		return false
	}
	_, known := t.providers[id.Provider]
	return known
}

// ResolveError is a model name that cannot be routed.
type ResolveError struct {
	Status  int
	Code    string
	Message string
}

func (e *ResolveError) Error() string { return e.Message }

// Resolve maps a requested model name to a route, in this order:
// a chain name, then provider/model, then an upstream model id, then the
// first alias whose pattern matches, else 404.
//
// A name whose part before the first '/' is a provider's name is a pin
// of that provider: it reaches that backend or fails, and never a model
// of another provider whose id happens to be the whole name (OpenRouter's
// "openai/gpt-4o" is not a pin of the provider "openai"). A model id with
// a '/' of a server discovery found is reached only through that server's
// name; a configured provider's such id also answers alone, as the user
// chose that provider.
//
// A name no rule knows that ends in a shortcut (":free", ":local", ":fast"
// or ":cheap") is resolved without it, and the shortcut narrows or
// reorders the route: only free and local backends, only local ones, the
// least latency first, the cheapest first. Exact names win, so a model id
// that itself ends in ":free" (as OpenRouter's do) is never cut.
func (t *Table) Resolve(model string) (Route, error) {
	route, err := t.resolve(model)
	if err == nil {
		return route, nil
	}
	var re *ResolveError
	if !errors.As(err, &re) || re.Code != "model_not_found" {
		return route, err
	}
	for sc := shortFree; sc <= shortCheap; sc++ {
		base, ok := strings.CutSuffix(model, ":"+sc.String())
		if !ok || base == "" {
			continue
		}
		r2, err2 := t.resolve(base)
		if err2 != nil {
			return r2, err2
		}
		r2.Shortcut = sc
		return r2, nil
	}
	return route, err
}

func (t *Table) resolve(model string) (Route, error) {
	if bs, ok := t.chains[model]; ok {
		if len(bs) == 0 {
			return Route{}, t.emptyChain(model)
		}
		return Route{Chain: model, Backends: bs, plan: t.plans[model]}, nil
	}
	if id, ok := llm.CutBackendID(model); ok {
		if grp := t.keyGroups[id]; id.Key == "" && len(grp) > 1 {
			// A pin of a pooled provider's model may use any of its keys.
			return Route{Backends: grp, Pinned: true, plan: t.groupPlans[id]}, nil
		}
		if b, ok := t.backends[id]; ok {
			return Route{Backends: b.alone, Pinned: true, plan: b.alonePlan}, nil
		}
	}
	if hint, ok := t.keyless[model]; ok && strings.Contains(model, "/") {
		return Route{}, &ResolveError{Status: http.StatusServiceUnavailable, Code: "missing_api_key",
			Message: fmt.Sprintf("%s has no API key: %s", model, hint)}
	}
	if provider, id, ok := strings.Cut(model, "/"); ok {
		if disabled, known := t.providers[provider]; known {
			return Route{}, t.noSuchPin(model, provider, id, disabled)
		}
	}
	if bs, ok := t.byModel[model]; ok {
		return Route{Backends: bs, plan: t.modelPlans[model]}, nil
	}
	if hint, ok := t.keylessModels[model]; ok {
		return Route{}, &ResolveError{Status: http.StatusServiceUnavailable, Code: "missing_api_key",
			Message: fmt.Sprintf("model %q is only served by providers without an API key: %s", model, hint)}
	}
	for i, prefix := range VendorChainPrefixes {
		if chain, ok := strings.CutPrefix(model, prefix); ok {
			if bs, ok := t.chains[chain]; ok {
				if len(bs) == 0 {
					return Route{}, t.emptyChain(chain)
				}
				return Route{Chain: chain, Alias: vendorChainPatterns[i], Backends: bs, plan: t.plans[chain]}, nil
			}
		}
	}
	for _, a := range t.aliases {
		if !Glob(a.Pattern, model) {
			continue
		}
		bs, ok := t.chains[a.Chain]
		if !ok {
			// A chain removed since the alias was written: the next alias
			// or the 404 below says more than an empty route would.
			continue
		}
		if len(bs) == 0 {
			return Route{}, t.emptyChain(a.Chain)
		}
		return Route{Chain: a.Chain, Alias: a.Pattern, Backends: bs, plan: t.plans[a.Chain]}, nil
	}
	if bs := t.pinOnly[model]; len(bs) > 0 {
		return Route{}, &ResolveError{Status: http.StatusNotFound, Code: "model_not_found",
			Message: fmt.Sprintf("model %q does not exist: no provider is called %q; a local server FreeLane found lists a model of that name, "+
				"which a name with a \"/\" reaches only through the server's own name: %s", model, strings.SplitN(model, "/", 2)[0], backendNames(bs))}
	}
	return Route{}, &ResolveError{Status: http.StatusNotFound, Code: "model_not_found",
		Message: fmt.Sprintf("model %q does not exist; use one of: %s", model, t.namesForError())}
}

// noSuchPin is the answer to a pin of a provider that does not serve
// the model: it names the backends that serve the whole name as an id,
// since a client sending OpenRouter's "openai/gpt-4o" meant one of them.
func (t *Table) noSuchPin(model, provider, id string, disabled bool) error {
	why := fmt.Sprintf("provider %q has no model %q", provider, id)
	if disabled {
		why = fmt.Sprintf("provider %q is disabled", provider)
	}
	if bs := slices.Concat(t.byModel[model], t.pinOnly[model]); len(bs) > 0 {
		return &ResolveError{Status: http.StatusNotFound, Code: "model_not_found",
			Message: fmt.Sprintf("model %q does not exist: %s, and a provider/model name reaches only that provider; the model id %q is served as %s",
				model, why, model, backendNames(bs))}
	}
	return &ResolveError{Status: http.StatusNotFound, Code: "model_not_found",
		Message: fmt.Sprintf("model %q does not exist: %s; use one of: %s", model, why, t.namesForError())}
}

// backendNames lists a few backends' names for a message.
func backendNames(bs []*Backend) string {
	const most = 3
	var names []string
	for _, b := range bs[:min(len(bs), most)] {
		names = append(names, b.name)
	}
	if len(bs) > most {
		names = append(names, fmt.Sprintf("and %d more", len(bs)-most))
	}
	return strings.Join(names, ", ")
}

func (t *Table) emptyChain(name string) error {
	if name == DefaultChain && len(t.backends) == 0 && t.emptyHint != "" {
		msg := "FreeLane has no model backend to route to: " + t.emptyHint
		if len(t.hints) > 0 {
			msg += ". Providers waiting for a key: " + strings.Join(t.hints, "; ")
		}
		return &ResolveError{Status: http.StatusServiceUnavailable, Code: "no_backend_configured", Message: msg}
	}
	hint := t.keyless["chain:"+name]
	if name == DefaultChain && hint == "" {
		hint = strings.Join(t.hints, "; ")
	}
	if hint == "" {
		return &ResolveError{Status: http.StatusServiceUnavailable, Code: "no_backend_available",
			Message: fmt.Sprintf("chain %q has no backends: add a provider with a key in the dashboard or in the config file", name)}
	}
	return &ResolveError{Status: http.StatusServiceUnavailable, Code: "missing_api_key",
		Message: fmt.Sprintf("chain %q has no usable backend because no API key is set: %s", name, hint)}
}

// namesForError lists what a client may ask for, capped so the message stays
// readable with a large catalog.
func (t *Table) namesForError() string {
	names := t.Names()
	const maxNames = 25
	if len(names) > maxNames {
		return strings.Join(names[:maxNames], ", ") + fmt.Sprintf(" and %d more (GET /v1/models)", len(names)-maxNames)
	}
	return strings.Join(names, ", ")
}

// Names returns the chain names followed by every backend name.
func (t *Table) Names() []string {
	names := slices.Clone(t.chainNames)
	for _, b := range t.order {
		if b.ID.Key != "" {
			// A pooled model is asked for by its name without a key,
			// once, whatever the size of the pool.
			group := llm.BackendID{Provider: b.ID.Provider, Model: b.ID.Model}
			if t.keyGroups[group][0] == b {
				names = append(names, group.String())
			}
			continue
		}
		names = append(names, b.name)
	}
	return names
}

// VendorChainPrefixes name every chain in the vendor style some clients
// require: Claude Code's model discovery keeps only ids that start with
// "claude", so the chain "coding" is listed to it, and routed, as
// "claude-freelane-coding"; Gemini's clients get "gemini-freelane-coding".
var VendorChainPrefixes = []string{"claude-freelane-", "gemini-freelane-"}

// vendorChainPatterns are the prefixes as the alias patterns a trace
// names, made once rather than per request.
var vendorChainPatterns = func() []string {
	out := make([]string, len(VendorChainPrefixes))
	for i, p := range VendorChainPrefixes {
		out[i] = p + "*"
	}
	return out
}()

// Aliases returns the aliases in the order they are tried.
func (t *Table) Aliases() []AliasSpec { return slices.Clone(t.aliases) }

// Glob reports whether name matches pattern as a whole, where '*' matches
// any run of bytes (including none and '/') and '?' exactly one byte. It
// runs in time linear in the lengths of both for the usual patterns:
// after a mismatch it backtracks only to the last '*'.
func Glob(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// RebuildAt is when a credit that moved a backend up the default chain ends,
// so the table must be built again; zero when no credit is running.
func (t *Table) RebuildAt() time.Time { return t.creditEnds }

// Chains returns the chain names in order.
func (t *Table) Chains() []string { return slices.Clone(t.chainNames) }

// Backends returns every routable backend in default-chain order.
func (t *Table) Backends() []*Backend { return slices.Clone(t.order) }

// Chain returns the backends of one chain.
func (t *Table) Chain(name string) []*Backend { return slices.Clone(t.chains[name]) }

// MissingKeys returns one hint per provider left out for lack of a key.
func (t *Table) MissingKeys() []string { return slices.Clone(t.hints) }
