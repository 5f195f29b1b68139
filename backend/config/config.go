// Package config defines FreeLane's configuration file: its structure, its
// defaults, loading it from YAML with ${ENV} expansion, and validating it so
// that every problem is reported with the line it comes from.
//
// The file is meant for headless and scripted use (freelane serve --config
// my.yaml); the GUI keeps its own state elsewhere. Example holds a commented
// example that is also shipped as example.yaml next to this file.
package config

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"freelane/backend/defaults"
	"freelane/backend/tier"
)

// Supported values and bounds. The defaults of keys left out are in
// package defaults, which the components read too.
const (
	// KindOpenAI is the OpenAI-compatible chat completions protocol, which
	// most servers speak, and the kind of a provider that names none. The
	// kinds a configuration may name are those of the registry of
	// dialects (package dialects); these names are for code that builds a
	// provider by hand.
	KindOpenAI = "openai"
	// KindAnthropic is Anthropic's Messages API.
	KindAnthropic = "anthropic"
	// KindGemini is Google's Generative Language API.
	KindGemini = "gemini"

	// MaxMaxBodyMB is the largest accepted max_body_mb.
	MaxMaxBodyMB = 512
	// MaxBodyReadTimeout is the largest accepted body_read_timeout.
	MaxBodyReadTimeout = time.Hour
	// MaxMaxInflightBodyMB is the largest accepted max_inflight_body_mb.
	MaxMaxInflightBodyMB = 16384
	// MaxResponseRetentionDays bounds response_retention_days: stored
	// answers hold whole conversations, which should not pile up.
	MaxResponseRetentionDays = 90
	// MaxResponseStoreMB is the largest accepted response_store_mb.
	MaxResponseStoreMB = 65536
	// MaxCacheMB is the largest accepted cache.max_mb: the response
	// cache is held in memory as well as on disk.
	MaxCacheMB = 16384
	// MaxResponseCacheTTL is the longest accepted cache.ttl.
	MaxResponseCacheTTL = 30 * 24 * time.Hour

	// MinTokenLength is the shortest inbound token (server.token,
	// FREELANE_TOKEN) accepted: anything shorter could be guessed by a peer
	// on the network.
	MinTokenLength = 16
)

// Config is the whole file after defaults are applied.
type Config struct {
	// Listen is the host:port the router listens on.
	Listen string `yaml:"listen"`
	// AllowedHosts are extra Host header names accepted besides the loopback
	// ones; the Host check guards against DNS rebinding.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins are the web origins (scheme://host[:port]) whose pages
	// may call /v1 from a browser, for a web UI run against FreeLane; every
	// other site's pages are refused.
	AllowedOrigins []string `yaml:"allowed_origins,omitempty"`
	// Server holds settings of the listening server that are read from
	// the file at start and never stored.
	Server Server `yaml:"server,omitempty"`
	// MaxBodyMB is the request body limit in MiB, 1..512.
	MaxBodyMB int `yaml:"max_body_mb"`
	// Requests bounds the time and memory clients' request bodies take.
	Requests Requests `yaml:"requests"`
	// Providers are the upstream servers, in file order.
	Providers []Provider `yaml:"providers"`
	// Chains are the named, ordered backend lists defined by the user.
	Chains []Chain `yaml:"chains"`
	// Breaker configures the per-backend circuit breaker.
	Breaker Breaker `yaml:"breaker"`
	// Probes configures active health probes.
	Probes Probes `yaml:"probes"`
	// Budgets cap spending in money per day or month.
	Budgets []Budget `yaml:"budgets,omitempty"`
	// Ledger configures the usage ledger.
	Ledger Ledger `yaml:"ledger"`
	// DefaultChain, when set, is the chain the model name "auto" routes
	// to; otherwise "auto" is the chain FreeLane builds from every backend
	// (or a user chain named auto).
	DefaultChain string `yaml:"default_chain"`
	// Catalog says how the provider catalog is used.
	Catalog CatalogSettings `yaml:"catalog,omitempty"`
	// Discovery looks for model servers on this machine's loopback ports
	// and adds their models as the last backends of auto.
	Discovery Discovery `yaml:"discovery,omitempty"`
	// Local records what the user decided about servers discovery finds
	// (their names, whether they are hidden, their limits), so that
	// chains, limits and budgets may name them while they are stopped.
	Local []LocalProvider `yaml:"local,omitempty"`
	// Aliases route model names that match a pattern to a chain, so a
	// client that only knows its vendor's names (claude-*, gemini-*) works
	// without model settings. They are tried after every exact name (a
	// chain, a provider/model backend, a served model id). DefaultAliases
	// apply unless an alias here has the same pattern.
	Aliases []Alias `yaml:"aliases,omitempty"`
	// Routing tunes how chains choose among their backends.
	Routing Routing `yaml:"routing,omitempty"`
	// Tasks are the task rules, tried in order for every request that
	// does not name its task in X-FreeLane-Task; the first whose
	// conditions the request meets gives it its task. Without any rule
	// that has conditions the built-in rules apply (package task).
	Tasks []Task `yaml:"tasks,omitempty"`
	// Cache is the exact response cache, off unless it says enabled.
	Cache ResponseCache `yaml:"cache,omitempty"`
	// Debug holds what helps a user report a problem; all of it is off
	// by default.
	Debug Debug `yaml:"debug,omitempty"`
	// RequestLog says what the request log keeps besides each request's
	// route and figures.
	RequestLog RequestLog `yaml:"request_log,omitempty"`
	// Notifications say which kinds of notification the dashboard and
	// the desktop app get; each kind is on unless set to false.
	Notifications Notifications `yaml:"notifications,omitempty"`
	// Instance names this FreeLane among the instances of a team that
	// share one Redis and one PostgreSQL; empty means the host name and
	// the listen port. Like State and Store it is read from the file at
	// start and never stored, since each instance has its own.
	Instance string `yaml:"instance,omitempty"`
	// State is where instances of a team share quotas, budgets and health.
	State State `yaml:"state,omitempty"`
	// Store is where instances of a team share configuration, keys and
	// the usage ledger.
	Store Store `yaml:"store,omitempty"`
}

// State says where the counters, marks and breakers several instances
// share are kept; empty keeps them in this process only.
type State struct {
	// Redis is a redis:// or rediss:// URL, usually with its password
	// written as ${VAR}; the URL is never stored or shown.
	Redis string `yaml:"redis,omitempty"`
	// FailClosed makes the budgets refuse paid backends while Redis is
	// unreachable, rather than letting each instance spend its share of
	// what is left; for teams to whom an overspend costs more than an
	// outage of their paid models.
	FailClosed bool `yaml:"fail_closed,omitempty"`
}

// Store says where several instances keep one configuration, one set of
// sealed keys and one usage ledger; empty keeps them in the data
// directory's SQLite file only.
type Store struct {
	// Postgres is a postgres:// URL (or a libpq key=value string), with
	// its password written as ${VAR}; the URL is never stored or shown.
	Postgres string `yaml:"postgres,omitempty"`
}

// MaxInstanceName bounds instance: it is shown on the dashboard and sent
// with every shared update.
const MaxInstanceName = 64

// Notifications switch each kind of notification on or off; nil means on.
type Notifications struct {
	// Breaker: a backend's breaker opened (it keeps failing) or closed.
	Breaker *bool `yaml:"breaker,omitempty"`
	// Key: a provider refused its API key, or accepts it again.
	Key *bool `yaml:"key,omitempty"`
	// Quota: a backend's quota is used up until a reset more than a few
	// minutes away.
	Quota *bool `yaml:"quota,omitempty"`
	// Budget: a budget is 80 % spent, or all of it.
	Budget *bool `yaml:"budget,omitempty"`
	// Local: a model server on this machine stopped answering, or answers
	// again.
	Local *bool `yaml:"local,omitempty"`
}

// RequestLog configures what the request log keeps.
type RequestLog struct {
	// Bodies keeps the body of each answered request and of its answer
	// (a stream as the client received it), with every configured secret
	// redacted and each cut to MaxBodyKB. Off by default: prompts are the
	// user's own text.
	Bodies bool `yaml:"bodies,omitempty"`
	// MaxBodyKB bounds each kept body, in KiB, from 1 to
	// MaxRequestLogBodyKB; 0 means defaults.RequestLogBodyKB.
	MaxBodyKB int `yaml:"max_body_kb,omitempty"`
	// KeepDays is how long requests (with their bodies) are kept, from 1
	// to MaxRequestLogKeepDays; 0 means defaults.RequestLogKeepDays. The
	// usage ledger keeps its own totals beyond it.
	KeepDays int `yaml:"keep_days,omitempty"`
	// Durable holds back the end of every answer (the body of a plain
	// answer, the last events of a stream) until the answer's request row
	// and ledger row are written, so that no answer a client received is
	// missing from the log, and from what it cost, if the process is
	// killed right after. It adds a database commit to each answer, shared
	// by the answers that finish together. Nil means on when the ledger is
	// a team's (store.postgres is set), off otherwise.
	Durable *bool `yaml:"durable,omitempty"`
}

// DurableAnswers reports whether answers wait for their rows to be
// written, given whether the ledger is a team's.
func (r RequestLog) DurableAnswers(team bool) bool {
	if r.Durable != nil {
		return *r.Durable
	}
	return team
}

// MaxRequestLogKeepDays bounds request_log.keep_days.
const MaxRequestLogKeepDays = 3650

// MaxRequestLogBodyKB bounds request_log.max_body_kb: every request
// could store twice this.
const MaxRequestLogBodyKB = 1024

// Debug are the settings for reporting a problem.
type Debug struct {
	// Pprof serves Go's profiles (CPU, heap, goroutines) at /debug/pprof/
	// on the listen address, to the account running FreeLane and to a
	// dashboard session only, so that a profile can go with a bug report.
	Pprof bool `yaml:"pprof,omitempty"`
}

// Task is one task rule: the task a request gets when it meets every
// condition of When, and where that task goes.
type Task struct {
	// Name is the task: default, background, think, long_context, or a
	// name of the user's own.
	Name string `yaml:"name" json:"name"`
	// When are the conditions; without them the rule only gives the
	// task its chain and preferences, for requests that name the task in
	// their header (and, for the default task, those no rule matched).
	When *TaskWhen `yaml:"when,omitempty" json:"when,omitempty"`
	// Chain is the chain the task's requests go to, whatever name they
	// asked for (a pinned provider/model excepted); empty keeps it.
	Chain string `yaml:"chain,omitempty" json:"chain,omitempty"`
	// Prefer are "provider/model" backends the auto strategy scores as
	// the best match for the task.
	Prefer []string `yaml:"prefer,omitempty" json:"prefer,omitempty"`
}

// TaskWhen are a task rule's conditions; a request must meet all that
// are set.
type TaskWhen struct {
	// Model is a glob over the model name the client asked for, such as
	// "claude-*haiku*".
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// Tools requires tools in the request (true) or none (false).
	Tools *bool `yaml:"tools,omitempty" json:"tools,omitempty"`
	// Thinking requires the client to ask for thinking or a reasoning
	// effort (true), or not to (false).
	Thinking *bool `yaml:"thinking,omitempty" json:"thinking,omitempty"`
	// PromptTokensOver requires a prompt of more tokens than this,
	// estimated offline.
	PromptTokensOver int `yaml:"prompt_tokens_over,omitempty" json:"prompt_tokens_over,omitempty"`
}

// MaxTasks bounds the task rules; every request may try each one.
const MaxTasks = 64

// Alias routes the model names matching Pattern to Chain.
type Alias struct {
	// Pattern is a glob over the whole model name: '*' matches any run of
	// characters (including none) and '?' exactly one, e.g. "claude-*".
	Pattern string `yaml:"pattern" json:"pattern"`
	// Chain is a chain name, or "auto" for the default chain.
	Chain string `yaml:"chain" json:"chain"`
}

// MaxAliases bounds the alias list; each request may try every pattern.
const MaxAliases = 64

// DefaultAliases send the vendor model names that coding agents ask for by
// default to the default chain: Claude Code asks for claude-* models
// (and a smaller one for side tasks), Gemini CLI for gemini-*.
var DefaultAliases = []Alias{
	{Pattern: "claude-*", Chain: "auto"},
	{Pattern: "gemini-*", Chain: "auto"},
}

// EffectiveAliases returns the aliases in the order they are tried: the
// configured ones, then each default whose pattern none of them uses.
func (c *Config) EffectiveAliases() []Alias {
	out := slices.Clone(c.Aliases)
	for _, d := range DefaultAliases {
		if !slices.ContainsFunc(c.Aliases, func(a Alias) bool { return a.Pattern == d.Pattern }) {
			out = append(out, d)
		}
	}
	return out
}

// Server holds the listening server's credentials.
type Server struct {
	// Token is the inbound token every /v1 caller must present (as its API
	// key) when set; it is required to listen off loopback. Usually
	// written as ${FREELANE_TOKEN}. FreeLane keeps only its hash and never
	// stores it.
	Token string `yaml:"token,omitempty"`
	// LocalUsers says which accounts of this machine are trusted like the
	// one running FreeLane: LocalUsersSelf (the default, also when empty)
	// trusts only that account, so programs of other accounts need the
	// inbound token; LocalUsersAny trusts every account.
	LocalUsers string `yaml:"local_users,omitempty"`
}

// The values of server.local_users.
const (
	// LocalUsersSelf trusts only the account running FreeLane (and root).
	LocalUsersSelf = "self"
	// LocalUsersAny trusts every account of this machine.
	LocalUsersAny = "any"
)

// Requests bounds what clients' requests may cost FreeLane while their
// bodies are received and held.
type Requests struct {
	// BodyReadTimeout bounds receiving one request body, from the end of
	// its headers to its last byte; a client that sends slower is cut off.
	// Streamed answers are not bounded by it.
	BodyReadTimeout time.Duration `yaml:"body_read_timeout"`
	// MaxInflightBodyMB caps, in MiB, the request bodies held in memory at
	// once by requests being read or served; past it new requests get 503.
	// A single body up to max_body_mb is always accepted when no other is
	// held.
	MaxInflightBodyMB int `yaml:"max_inflight_body_mb"`
	// ResponseRetentionDays is how long answers of the Responses API that
	// clients asked to store are kept for previous_response_id, in days.
	ResponseRetentionDays int `yaml:"response_retention_days"`
	// ResponseStoreMB bounds, in MiB, the bytes of all stored Responses API
	// answers (their objects and conversations); past it the oldest are
	// deleted first.
	ResponseStoreMB int `yaml:"response_store_mb"`
}

// Provider is one upstream server and the models it serves.
type Provider struct {
	// Name is unique and lower-case: ^[a-z0-9][a-z0-9_-]*$. It defaults
	// to Catalog.
	Name string `yaml:"name"`
	// Catalog names the catalog entry this provider is ("groq"): what the
	// provider leaves out (kind, tier, base_url, models, limits, prices,
	// the key's environment variables) comes from the catalog, and what
	// it gives wins; models it lists are laid over the catalog's or
	// added to them.
	Catalog string `yaml:"catalog,omitempty"`
	// Kind is the wire protocol: openai (the default), anthropic or gemini.
	Kind string `yaml:"kind"`
	// Tier is one of own, free or local.
	Tier tier.Tier `yaml:"tier"`
	// Default puts this provider at the head of the auto chain. At most one
	// provider sets it.
	Default bool `yaml:"default"`
	// BaseURL is an absolute http or https URL without a trailing slash.
	BaseURL string `yaml:"base_url"`
	// APIKey is the key after ${ENV} expansion; empty means no key.
	APIKey string `yaml:"api_key"`
	// APIKeyEnv names the environment variables referenced in api_key, so the
	// router can tell the user which variable to set when the key is empty.
	APIKeyEnv []string `yaml:"-"`
	// KeyFile names the --config file that gives the key, so that the
	// user is told to fix it there rather than in the dashboard; set in
	// the effective configuration only.
	KeyFile string `yaml:"-"`
	// APIKeys are more keys of the same provider, each ${ENV}-expanded
	// like api_key. The provider's pool is api_key followed by api_keys
	// (use Pool); an entry that expands to nothing is left out.
	APIKeys []string `yaml:"api_keys,omitempty"`
	// Keyless says the server needs no key (local servers such as Ollama);
	// api_key and api_keys must then be empty.
	Keyless bool `yaml:"keyless"`
	// Headers are extra request headers sent upstream, such as OpenRouter's
	// HTTP-Referer. Values are ${ENV}-expanded too.
	Headers map[string]string `yaml:"headers"`
	// StreamUsage says whether to ask the upstream for
	// stream_options.include_usage; nil means true. Use WantsStreamUsage.
	StreamUsage *bool `yaml:"stream_usage"`
	// DropParams names request parameters the provider rejects, such as
	// stream_options or parallel_tool_calls; they are left out of every
	// request to it.
	DropParams []string `yaml:"drop_params,omitempty"`
	// Models are the models this provider serves; there is at least one.
	Models []Model `yaml:"models"`
	// Timeouts are the per-phase time limits for requests to this provider.
	Timeouts Timeouts `yaml:"timeouts"`
	// Disabled keeps the provider in the file but never routes to it.
	Disabled bool `yaml:"disabled"`
	// Probe switches active health probes for this provider on or off. Nil
	// means the tier's default: on for free and local providers, off for
	// own (paid) keys, since every probe spends quota. Use Probed.
	Probe *bool `yaml:"probe"`
	// Limits apply to all the provider's models together (one key, one
	// allowance).
	Limits *Limits `yaml:"limits,omitempty"`
	// CacheTTL is how long the provider keeps a prompt-cache entry after
	// its last use, which is how long a session stays on one of its
	// backends to keep that cache warm; 0 takes the catalog's figure,
	// else 5 minutes.
	CacheTTL time.Duration `yaml:"cache_ttl,omitempty"`
	// ExplicitCache has FreeLane put the prefix of a request with cache
	// breakpoints into the vendor's explicit prompt cache (Gemini's
	// cachedContents) and refer to it, for clients of another dialect.
	// Only providers of a kind whose API has one (gemini) may set it.
	ExplicitCache bool `yaml:"explicit_cache,omitempty"`
}

// Limits are a provider's or a model's allowance. Zero means no limit.
type Limits struct {
	RPM         int `yaml:"rpm,omitempty"`
	RPD         int `yaml:"rpd,omitempty"`
	TPM         int `yaml:"tpm,omitempty"`
	TPD         int `yaml:"tpd,omitempty"`
	Concurrency int `yaml:"concurrency,omitempty"`
	// QueueWait is how long a request waits for one of the concurrency
	// slots, or for its turn under rpm, before the backend is passed by:
	// 0 passes it by at once, nil means a model's provider's setting or
	// the default (2s).
	QueueWait *time.Duration `yaml:"queue_wait,omitempty"`
	// Reset is when rpd and tpd start over: "daily HH:MM TZ" (the
	// default, "daily 00:00 UTC"), "rolling 24h", "weekly mon HH:MM TZ" or
	// "monthly D HH:MM TZ". rpm and tpm always cover the last 60 seconds.
	Reset string `yaml:"reset,omitempty"`
}

// Price is money per million tokens; zero is free.
type Price struct {
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
	// CacheRead is the price of prompt tokens read from the provider's
	// prompt cache; 0 means the input price.
	CacheRead float64 `yaml:"cache_read,omitempty"`
	// CacheWrite is the price of prompt tokens written to the provider's
	// prompt cache; 0 means the input price.
	CacheWrite float64 `yaml:"cache_write,omitempty"`
}

// Budget caps spending in one scope per local day or month.
type Budget struct {
	// Scope is "global", "chain:NAME" or "provider:NAME".
	Scope string `yaml:"scope"`
	// Period is "day" or "month".
	Period string `yaml:"period"`
	// Limit is the money that may be spent in a period; more than 0.
	Limit float64 `yaml:"limit"`
	// Action is what happens at the limit: "free-only" (paid backends are
	// skipped) or "block" (requests nothing free can serve get HTTP 402).
	Action string `yaml:"action"`
}

// Ledger configures the usage ledger.
type Ledger struct {
	// RetentionDays is how long single rows are kept before they are
	// rolled up into daily totals [30].
	RetentionDays int `yaml:"retention_days,omitempty"`
}

// Probed reports whether p's backends get active probes.
func (p Provider) Probed() bool {
	if p.Probe != nil {
		return *p.Probe
	}
	return p.Tier != tier.Own
}

// WantsStreamUsage reports whether streamed requests to p should ask for
// usage in the final chunk. Servers that reject stream_options opt out with
// stream_usage: false.
func (p Provider) WantsStreamUsage() bool {
	return p.StreamUsage == nil || *p.StreamUsage
}

// Model is one model served by a provider.
type Model struct {
	// ID is the upstream model id, unique within its provider. It may
	// contain '/', as in "meta-llama/llama-3.3-70b-instruct".
	ID string `yaml:"id"`
	// ParamsB is the size in billions of parameters; 0 means unknown.
	ParamsB float64 `yaml:"params_b"`
	// Context is the context window in tokens; 0 means unknown.
	Context int `yaml:"context"`
	// MaxOutput is the largest completion in tokens; 0 means unknown. A
	// larger max_tokens is lowered to it, and dialects that require a
	// limit (Anthropic) send it when the client set none.
	MaxOutput int `yaml:"max_output"`
	// Capabilities are what the model can do: tools, vision, json,
	// reasoning. Nil means unknown, and the model is sent every request;
	// a list makes FreeLane pass the model by for requests that need what
	// it lacks, and leave reasoning parameters out unless it reasons.
	Capabilities []string `yaml:"capabilities,omitempty"`
	// Endpoints narrows what the model serves (chat, completions,
	// embeddings); nil means everything the provider's kind serves.
	Endpoints []string `yaml:"endpoints,omitempty"`
	// DropParams names further request parameters this model rejects.
	DropParams []string `yaml:"drop_params,omitempty"`
	// Limits apply to this model alone, besides the provider's.
	Limits *Limits `yaml:"limits,omitempty"`
	// Price is what the model costs per million tokens; nil is free.
	Price *Price `yaml:"price,omitempty"`
	// CreditExpires is the last day (YYYY-MM-DD) of a prepaid credit for
	// this model; until then the auto chain uses it ahead of the free pool.
	CreditExpires string `yaml:"credit_expires,omitempty"`
}

// CreditDate parses CreditExpires; zero when unset or invalid (validation
// reports invalid dates).
func (m Model) CreditDate() time.Time {
	t, err := time.Parse(time.DateOnly, m.CreditExpires)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Timeouts are the time limits of one upstream request, phase by phase.
// There is deliberately no whole-request limit, which would cut long streams.
type Timeouts struct {
	// Connect bounds establishing the connection (TCP and TLS).
	Connect time.Duration `yaml:"connect"`
	// Header bounds waiting for the response headers.
	Header time.Duration `yaml:"header"`
	// FirstToken bounds waiting for the first content or tool-call delta.
	FirstToken time.Duration `yaml:"first_token"`
	// Idle bounds the silence between two streamed chunks.
	Idle time.Duration `yaml:"idle"`
}

// Chain is a named, ordered list of backends tried one after another.
type Chain struct {
	// Name is unique, uses the provider-name characters plus '.', and never
	// contains '/', so it cannot be mistaken for a "provider/model" reference.
	Name string `yaml:"name"`
	// Backends are "provider/model" references in the order they are tried.
	// The provider is the part before the first '/', the model id the rest.
	Backends []string `yaml:"backends"`
	// Strategy orders the backends of one priority tier: priority (the
	// order of Backends, the default), round_robin, weighted,
	// least_latency, cost or auto.
	Strategy string `yaml:"strategy,omitempty"`
	// Weights are the weighted strategy's shares by backend reference; a
	// backend left out weighs 1, and weight 0 drains it.
	Weights map[string]int `yaml:"weights,omitempty"`
	// Priority puts backends in tiers by reference: a lower number is
	// tried first, and a tier is left only when all of its backends
	// failed or were passed by. A backend left out is in tier 0.
	Priority map[string]int `yaml:"priority,omitempty"`
	// Gear is auto (the strategy decides, the default) or manual (the
	// backends in exactly their listed order).
	Gear string `yaml:"gear,omitempty"`
	// MaxWait bounds how long a request waits for a rate limit to reset
	// when every backend is rate limited, before it is answered with 429;
	// nil means 3 s, 0 turns waiting off.
	MaxWait *time.Duration `yaml:"max_wait,omitempty"`
	// Cache turns the response cache on or off for this chain; nil
	// follows the top-level cache setting.
	Cache *ChainCache `yaml:"cache,omitempty"`
}

// ChainCache is a chain's own response-cache switch.
type ChainCache struct {
	Enabled bool `yaml:"enabled"`
}

// ResponseCache is the exact response cache: identical deterministic
// requests are answered from it without calling a backend. It is off by
// default.
type ResponseCache struct {
	// Enabled turns it on for every chain that does not say otherwise.
	Enabled bool `yaml:"enabled"`
	// TTL is how long an answer is kept; 0 means 10 minutes.
	TTL time.Duration `yaml:"ttl,omitempty"`
	// MaxMB bounds the stored answers; the least recently used go first.
	// 0 means 256.
	MaxMB int `yaml:"max_mb,omitempty"`
}

// Chain strategies, as the configuration names them.
const (
	StrategyPriority     = "priority"
	StrategyRoundRobin   = "round_robin"
	StrategyWeighted     = "weighted"
	StrategyLeastLatency = "least_latency"
	StrategyCost         = "cost"
	StrategyAuto         = "auto"
)

// Strategies lists every chain strategy.
var Strategies = []string{StrategyPriority, StrategyRoundRobin, StrategyWeighted, StrategyLeastLatency, StrategyCost, StrategyAuto}

// Gears, as the configuration names them.
const (
	GearAuto   = "auto"
	GearManual = "manual"
)

// Routing tunes the auto strategy's score.
type Routing struct {
	// Score weighs the parts of the auto strategy's score; unset parts
	// take the defaults (health 0.4, headroom 0.2, latency 0.2, cost 0.1,
	// task 0.1).
	Score ScoreWeights `yaml:"score,omitempty"`
	// MinSamples is how many calls a tier's backends must have made
	// together before the scores are trusted; fewer fall back to the
	// listed order [5].
	MinSamples int `yaml:"min_samples,omitempty"`
	// MinScore is the best score below which the listed order is used
	// instead [0.3].
	MinScore float64 `yaml:"min_score,omitempty"`
	// AutoGear is the gear of FreeLane's generated auto chain, which has
	// no entry under chains to hold one: auto (the default) or manual.
	AutoGear string `yaml:"auto_gear,omitempty"`
}

// ScoreWeights are the weights of the auto score's parts. Health never
// weighs less than 0.3, so a failing backend cannot win on price alone.
type ScoreWeights struct {
	Health   *float64 `yaml:"health,omitempty"`
	Headroom *float64 `yaml:"headroom,omitempty"`
	Latency  *float64 `yaml:"latency,omitempty"`
	Cost     *float64 `yaml:"cost,omitempty"`
	Task     *float64 `yaml:"task,omitempty"`
}

// Breaker configures the circuit breaker kept for every backend.
type Breaker struct {
	// Failures is the number of consecutive failures that trip a backend.
	Failures int `yaml:"failures"`
	// Open is how long a tripped backend is skipped.
	Open time.Duration `yaml:"open"`
	// RateLimitCooldown is how long a backend rests after a 429 that carried
	// no Retry-After.
	RateLimitCooldown time.Duration `yaml:"rate_limit_cooldown"`
	// HealthThreshold trips a backend whose health score (an EWMA of its
	// outcomes, 1 = perfect) falls below it; between 0 and 1.
	HealthThreshold float64 `yaml:"health_threshold"`
}

// OpenTimes are the open periods a flapping backend climbs through: open,
// then 10x and 60x open (30 s, 5 min, 30 min by default).
func (b Breaker) OpenTimes() []time.Duration { return defaults.OpenTimes(b.Open) }

// Probes configures the active health probes.
type Probes struct {
	// Interval is how often a healthy probed backend is checked.
	Interval time.Duration `yaml:"interval"`
	// OpenInterval is how often a tripped or down backend is checked.
	OpenInterval time.Duration `yaml:"open_interval"`
	// Daily is how often every catalog model is probed to retire withdrawn
	// models and restore returned ones.
	Daily time.Duration `yaml:"daily"`
	// Disabled switches every probe off.
	Disabled bool `yaml:"disabled"`
}

// Default returns a config with every default filled in and no providers:
// each value from package defaults, which the components read as well.
func Default() *Config {
	return &Config{
		Listen:    defaults.Listen,
		MaxBodyMB: defaults.MaxBodyMB,
		// Both body limits are set so a Config built from Default, as
		// tests and the GUI do, has them as the loader would.
		Requests: Requests{BodyReadTimeout: defaults.BodyReadTimeout, MaxInflightBodyMB: defaults.MaxInflightBodyMB,
			ResponseRetentionDays: defaults.ResponseRetentionDays, ResponseStoreMB: defaults.ResponseStoreMB},
		Breaker: Breaker{
			Failures:          defaults.BreakerFailures,
			Open:              defaults.BreakerOpen,
			RateLimitCooldown: defaults.RateLimitCooldown,
			HealthThreshold:   defaults.HealthThreshold,
		},
		Probes: Probes{Interval: defaults.ProbeInterval, OpenInterval: defaults.ProbeOpenInterval, Daily: defaults.ProbeDaily},
		Ledger: Ledger{RetentionDays: defaults.LedgerRetentionDays},
	}
}

// DefaultTimeouts are the time limits of a provider that sets none.
func DefaultTimeouts() Timeouts {
	return Timeouts{Connect: defaults.ConnectTimeout, Header: defaults.HeaderTimeout,
		FirstToken: defaults.FirstTokenTimeout, Idle: defaults.IdleTimeout}
}

// Provider returns the provider called name. The pointer refers into
// c.Providers, so changes through it are visible in c.
func (c *Config) Provider(name string) (*Provider, bool) {
	for i := range c.Providers {
		if c.Providers[i].Name == name {
			return &c.Providers[i], true
		}
	}
	return nil, false
}

// SplitRef splits a "provider/model" reference at the first '/'. The model
// part may itself contain '/'. ok is false when there is no '/' or either
// part is empty.
func SplitRef(ref string) (provider, model string, ok bool) {
	provider, model, found := strings.Cut(ref, "/")
	if !found || provider == "" || model == "" {
		return "", "", false
	}
	return provider, model, true
}

// applyDefaults fills in every value left unset from Default and
// DefaultTimeouts. It runs after validation, so that validation can tell
// an explicit bad value from an absent one.
func applyDefaults(c *Config) {
	d := Default()
	c.Listen = cmp.Or(c.Listen, d.Listen)
	c.MaxBodyMB = cmp.Or(c.MaxBodyMB, d.MaxBodyMB)
	rq := &c.Requests
	rq.BodyReadTimeout = cmp.Or(rq.BodyReadTimeout, d.Requests.BodyReadTimeout)
	rq.MaxInflightBodyMB = cmp.Or(rq.MaxInflightBodyMB, d.Requests.MaxInflightBodyMB)
	rq.ResponseRetentionDays = cmp.Or(rq.ResponseRetentionDays, d.Requests.ResponseRetentionDays)
	rq.ResponseStoreMB = cmp.Or(rq.ResponseStoreMB, d.Requests.ResponseStoreMB)
	br := &c.Breaker
	br.Failures = cmp.Or(br.Failures, d.Breaker.Failures)
	br.Open = cmp.Or(br.Open, d.Breaker.Open)
	br.RateLimitCooldown = cmp.Or(br.RateLimitCooldown, d.Breaker.RateLimitCooldown)
	br.HealthThreshold = cmp.Or(br.HealthThreshold, d.Breaker.HealthThreshold)
	pr := &c.Probes
	pr.Interval = cmp.Or(pr.Interval, d.Probes.Interval)
	pr.OpenInterval = cmp.Or(pr.OpenInterval, d.Probes.OpenInterval)
	pr.Daily = cmp.Or(pr.Daily, d.Probes.Daily)
	c.Ledger.RetentionDays = cmp.Or(c.Ledger.RetentionDays, d.Ledger.RetentionDays)
	dt := DefaultTimeouts()
	for i := range c.Providers {
		p := &c.Providers[i]
		if p.Kind == "" && p.Catalog == "" {
			// A provider from the catalog takes the catalog's kind
			// whenever it is completed.
			p.Kind = KindOpenAI
		}
		// The router appends each API's paths to it; a trailing
		// slash would double it.
		p.BaseURL = strings.TrimRight(p.BaseURL, "/")
		t := &p.Timeouts
		t.Connect = cmp.Or(t.Connect, dt.Connect)
		t.Header = cmp.Or(t.Header, dt.Header)
		t.FirstToken = cmp.Or(t.FirstToken, dt.FirstToken)
		t.Idle = cmp.Or(t.Idle, dt.Idle)
	}
}
