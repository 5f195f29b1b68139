// Package gateway is FreeLane's composition root: it builds the store, the
// breakers, the provider clients, the router and the HTTP server from a
// configuration, starts them and shuts them down in order.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"freelane/backend/api"
	"freelane/backend/auth"
	"freelane/backend/breaker"
	"freelane/backend/catalog"
	"freelane/backend/clock"
	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/dialects"
	"freelane/backend/events"
	"freelane/backend/hub"
	"freelane/backend/llm"
	"freelane/backend/loops"
	"freelane/backend/metrics"
	"freelane/backend/notify"
	"freelane/backend/pool"
	"freelane/backend/probe"
	"freelane/backend/protocol"
	"freelane/backend/pseudonym"
	"freelane/backend/quota"
	"freelane/backend/redact"
	"freelane/backend/redisstate"
	"freelane/backend/respcache"
	"freelane/backend/router"
	"freelane/backend/shape"
	"freelane/backend/store"
	"freelane/backend/task"
	"freelane/backend/tier"
	"freelane/backend/upstream"
)

// Options configure a Gateway.
type Options struct {
	// Config, when set, is the --config file: it seeds the stored
	// configuration at start. Without it the stored configuration (what the
	// dashboard last saved) is used.
	Config     *config.Config
	ConfigPath string
	// Listen overrides the configured listen address.
	Listen  string
	DataDir string
	Logger  *slog.Logger
	Version string
	Assets  fs.FS // the dashboard; nil for none
	// Clock is the one clock of the whole gateway; nil for the wall clock.
	Clock clock.Clock
	// Keychain lets the key vault keep its master key in the OS keychain.
	Keychain bool
	// ManualProbes leaves the background rounds to the caller instead of
	// loops: probes (tests call Prober().Tick after moving the clock),
	// looking for local servers (ScanLocal) and reading model lists
	// (RefreshModels).
	ManualProbes bool
	// LookupEnv reads the environment for ${VAR} references and the keys
	// the catalog names; nil means the process environment.
	LookupEnv func(string) (string, bool)
	// NoLedger switches off the usage ledger and with it quotas and
	// budgets, for measuring what they cost (loadbench).
	NoLedger bool
	// Token is the inbound token from the environment (FREELANE_TOKEN); it
	// wins over server.token in Config. Either is required to listen off
	// loopback.
	Token string
	// SocketOwner tells which account runs the far end of a loopback
	// connection, so that local servers of other accounts are not used;
	// nil means the platform's own lookup.
	SocketOwner func(c net.Conn) (uid uint32, err error)
	// Dialects are the wire formats the gateway speaks to clients and
	// upstreams; nil means every dialect FreeLane has. Tests add a
	// dialect of their own here.
	Dialects *protocol.Registry
}

// breakerSet is what the gateway needs of the backends' breakers, beyond
// the router's Gate: what it hands the prober and the pool, and what its
// own admin views, key checks, configuration and saved state use. On one
// machine it is a *breaker.Set.
type breakerSet interface {
	router.Gate
	// Health is the score the router's auto strategy weighs.
	Health(id llm.BackendID) float64
	probe.Keys
	pool.Breakers
	probeResults
	breakerSnapshots
	keyOutcomes
	backendStatus
	Configure(s breaker.Settings)
	// ShareWith, Apply and TripByTeam share what the breakers learn with
	// a team's other instances.
	ShareWith(t breaker.Team)
	redisstate.Breakers
}

// quotaManager is what the gateway needs of the quotas and budgets: the
// router's admission, the admin views, the rebuild from the ledger at
// start and the settings of each configuration. On one machine it is a
// *quota.Manager.
type quotaManager interface {
	admitter
	quotaReport
	Restore(rows []quota.Usage)
	Configure(s quota.Settings)
	ReadAnswersWith(a quota.Answers)
	// ShareWith counts limits and budgets with a team's other instances,
	// and ApplyLearned takes the limits they learned from providers.
	ShareWith(s quota.Shared, failClosed bool)
	redisstate.LearnedLimits
}

var (
	_ breakerSet   = (*breaker.Set)(nil)
	_ quotaManager = (*quota.Manager)(nil)
)

// storedWait is the longest an answer waits for its rows to be written
// when request_log.durable holds answers back: a batch is retried for
// about a third of a second before it is given up, so past this the disk
// has stalled and the answer goes out without waiting further.
const storedWait = 5 * time.Second

// Gateway is a running FreeLane.
type Gateway struct {
	o      Options
	log    *slog.Logger
	db     *store.DB
	reqLog *store.RequestLog
	// responses keeps the Responses API answers clients ask to store.
	responses *store.ResponseStore
	// rcache is the exact response cache.
	rcache  *respcache.Cache
	router  *router.Router
	gate    breakerSet
	bus     *events.Bus
	api     *api.Server
	control *control.Control
	srv     *http.Server
	ln      net.Listener
	prober  *probe.Prober
	clock   clock.Clock
	metrics *metrics.Registry
	series  *metrics.Series
	feed    *feed
	hub     *hub.Hub
	quota   quotaManager
	// shared is the state shared on Redis with a team's other instances;
	// nil outside a team.
	shared *redisstate.State
	shape  *shape.Shaper
	// redact knows every configured secret; all provider clients share it,
	// so an upstream cannot echo another provider's key either.
	redact *redact.Redactor
	token  auth.Token
	// dialects are the wire formats spoken, read-only.
	dialects *protocol.Registry
	// dashEvents feeds events to the dashboard's updates; lastUpdate is
	// only touched by the hub's update callback.
	dashEvents *events.Subscription
	lastUpdate time.Time
	// notes raises the notifications, reading noteEvents on its own
	// loop; lastNote is the newest one an update carried, only touched by
	// the hub's update callback.
	notes      *notify.Notifier
	noteEvents *events.Subscription
	lastNote   uint64

	// team is this instance's part in a team sharing PostgreSQL; nil on
	// a single machine.
	team *team
	// instance is this instance's name in a team, "" outside one; started
	// is when the gateway was built. lastTeam is the team view the
	// dashboard was last sent (TeamView.changeKey), only touched by the
	// hub's update callback.
	instance string
	started  time.Time
	lastTeam string

	// catalog is the catalog in use, as the control plane holds it; it is
	// kept here too because apply runs while the control plane is locked.
	catalog *catalog.Catalog

	// pool is the live pool of providers routing is built from.
	pool *pool.Pool

	// mu guards what apply replaces on every configuration change: the
	// pool as routing uses it, and the clients and probe targets built
	// from it.
	mu  sync.Mutex
	cfg *config.Config
	// clients holds each provider's client for its first key, keyClients
	// one client per key of every provider (a provider with one key has
	// it under an empty label).
	clients    map[string]*upstream.Client
	keyClients map[llm.KeyID]*upstream.Client
	targets    []probe.Target
	// preparers hold the explicit-cache state of the providers that turn
	// it on, by provider name. They outlive the clients, which every
	// change rebuilds, so that the caches a provider made are still used
	// after a reload; the state is kept per key inside.
	preparers map[string]protocol.Preparer

	// The goroutines the gateway starts, by when they stop: serving (the
	// HTTP server) once requests are drained, loops (the background
	// rounds) next, writers (the request log and the response store)
	// last, once nothing writes to them any more.
	serving, loops, writers *loops.Group

	shutdownOnce sync.Once
	shutdownErr  error

	// tasks classifies every request; apply gives it the task rules.
	tasks *task.Classifier
}

// New opens the database in the data directory and builds every part.
// Nothing listens until Start.
func New(ctx context.Context, o Options) (g *Gateway, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Clock = clock.OrReal(o.Clock)
	// Every part logs through the redactor: log lines carry upstream text.
	red := redact.New()
	o.Logger = slog.New(redact.Handler(o.Logger.Handler(), red))
	if o.Dialects == nil {
		o.Dialects = dialects.Registry()
	}
	g = &Gateway{o: o, log: o.Logger, clock: o.Clock, started: o.Clock.Now(), redact: red, dialects: o.Dialects, serving: loops.New(), loops: loops.New(), writers: loops.New()}
	var shared config.Store
	var instance string
	if o.Config != nil {
		shared, instance = o.Config.Store, instanceName(o.Config, o.Listen)
	}
	// In team mode the shared master key is checked before anything is
	// opened: without it no instance could read the keys the others seal.
	v, err := openVault(ctx, o, shared.Postgres != "")
	if err != nil {
		return nil, fmt.Errorf("opening the key vault: %w", err)
	}
	db, err := store.Open(ctx, filepath.Join(o.DataDir, "freelane.db"), store.WithClock(o.Clock), store.WithRedactor(red))
	if err != nil {
		return nil, fmt.Errorf("opening the database: %w", err)
	}
	g.db = db
	// A failed New returns a nil Gateway: what the deferred close needs is
	// held apart from it.
	var tm *team
	var rs *redisstate.State
	defer func() {
		if err != nil {
			if tm != nil {
				tm.close()
			}
			db.Close()
			if rs != nil {
				_ = rs.Close()
			}
		}
	}()
	// The single-machine app keeps its documents in the SQLite file only;
	// a team's are on PostgreSQL, with the file keeping the last copy.
	var docs control.Store = db
	if shared.Postgres != "" {
		tm = &team{url: shared.Postgres, instance: instance, local: db, log: o.Logger, clock: o.Clock}
		g.team = tm
		if err := g.team.connect(ctx); err != nil {
			g.log.Warn("cannot reach PostgreSQL (store.postgres) at start; serving the configuration last read from it, and connecting in the background",
				"instance", instance, "err", err)
		}
		docs = g.team
	}
	logOpts := store.LogOptions{Logger: o.Logger, NoLedger: o.NoLedger, Clock: o.Clock}
	if tm != nil {
		// Rows reach the team's dashboards a moment after they are stored,
		// not at the shipper's next tick.
		logOpts.Written = tm.nudge
	}
	g.reqLog = store.NewRequestLog(db, logOpts)
	g.responses = store.NewResponseStore(db, store.ResponseOptions{Logger: o.Logger, Clock: o.Clock})
	g.bus = events.NewBus(o.Logger)
	g.gate = breaker.New(breaker.Settings{}, o.Clock, g.bus)
	g.notes = notify.New(notify.Options{Clock: o.Clock, Redact: red.String, Logger: o.Logger})
	g.noteEvents = g.bus.Subscribe(1024)
	g.metrics = metrics.New(o.Clock)
	g.metrics.RedactLabels(red)
	g.series = metrics.NewSeries(db, o.Clock, o.Logger)
	g.feed = newFeed(recorders{g.reqLog, g.series}, g.metrics, o.Clock, red)
	g.router = router.New(router.Build(router.Spec{}), g.gate, g.feed, o.Clock, o.Logger)
	if g.rcache, err = respcache.Open(ctx, db, respcache.Options{Codecs: g.dialects, Clock: o.Clock, Logger: o.Logger}); err != nil {
		return nil, fmt.Errorf("opening the response cache: %w", err)
	}
	g.router.SetCache(g.rcache)
	g.tasks = task.New(func(req *llm.Request) int { return req.EstimatedPrompt(task.QuickPrompt) })
	g.router.SetClassifier(g.tasks)
	g.quota = quota.New(o.Clock, g.bus, nil)
	g.quota.ReadAnswersWith(g.dialects)
	if rs, err = g.openSharedState(o.Config); err != nil {
		return nil, err
	}
	if g.shared != nil || g.team != nil {
		g.instance = instance
		g.feed.instance = instance
	}
	g.shape = shape.New(o.Clock)
	g.router.SetShaper(g.shape)
	if !o.NoLedger {
		g.router.SetAdmission(admission{m: g.quota, shape: g.shape})
		g.router.SetEstimator(promptEstimator{})
	}
	g.prober = probe.New(probe.Settings{}, g.probeTargets, standings{g.gate}, o.Clock, g.bus, o.Logger)
	g.prober.CheckKeys(g.gate, g.checkKey)
	g.pool = pool.New(pool.Options{DataDir: o.DataDir, Logger: o.Logger, Clock: o.Clock, Owner: o.SocketOwner,
		Breakers: g.gate, Events: g.bus, Rebuild: g.rebuild, Changed: g.invalidate})

	sessions, err := auth.Open(ctx, o.DataDir, v, o.Clock, o.Logger)
	if err != nil {
		return nil, err
	}
	token := o.Token
	var allLocalUsers bool
	if o.Config != nil {
		token = cmp.Or(token, o.Config.Server.Token)
		allLocalUsers = o.Config.Server.LocalUsers == config.LocalUsersAny
		// The token is a credential of this run only, and the instance's
		// name and the URLs of the shared parts (with their passwords)
		// belong to this instance: the stored configuration, which a team
		// shares, never holds them.
		seed := *o.Config
		seed.Server = config.Server{}
		seed.Instance, seed.State, seed.Store = "", config.State{}, config.Store{}
		o.Config = &seed
		if shared.Postgres != "" && defaultConfig(&seed) {
			// A team's instances are started with a file that says where
			// the shared parts are and little else; such a file does not
			// replace the configuration the team shares.
			o.Config = nil
		}
	}
	if token != "" && len(strings.TrimSpace(token)) < config.MinTokenLength {
		return nil, fmt.Errorf("the inbound token is too short: use at least %d characters (for example FREELANE_TOKEN=$(openssl rand -hex 24))", config.MinTokenLength)
	}
	g.token = auth.NewToken(token)
	var teamView api.Team
	if rs != nil {
		teamView = sharedStatus{rs}
	}
	g.api = api.New(api.Options{Team: teamView, Router: g.router, Assets: o.Assets, Logger: o.Logger, Version: o.Version, Clock: o.Clock,
		Sessions: sessions, Token: g.token, AllLocalUsers: allLocalUsers, Answers: g.responses, Redactor: g.redact,
		Dialects: g.dialects, Tasks: g.tasks, Pseudonyms: pseudonym.New(v.Derive("pseudonyms")), Bodies: g.reqLog})
	if rs != nil {
		g.shareWithTeam(ctx, rs)
	}
	// Control applies the configuration once while opening, which builds
	// the routing table, the clients and the probe targets.
	cat, src := pool.LoadCatalog(o.DataDir, o.Logger)
	g.catalog = cat
	g.pool.SetCatalog(pool.HeldCatalog(o.DataDir, cat), src)
	g.control, err = control.Open(ctx, control.Options{
		DB: docs, Vault: v, Seed: o.Config, SeedPath: o.ConfigPath, Apply: g.apply, Logger: o.Logger,
		Catalog: cat, LookupEnv: o.LookupEnv, Addresses: pool.CatalogAddresses(o.DataDir), Pool: g.pool,
	})
	if err != nil {
		return nil, err
	}
	if g.team != nil {
		g.team.mu.Lock()
		g.team.opened = true
		g.team.mu.Unlock()
	}
	g.restoreState(ctx)
	g.restoreQuotas(ctx)
	g.restoreCounters(ctx)
	if err := g.series.Load(ctx); err != nil {
		g.log.Warn("the charts start without the minute and hour they were filling", "err", err)
	}

	g.dashEvents = g.bus.Subscribe(1024)
	g.hub = hub.New(hub.Options{
		Snapshot: func() any { return g.snapshot() },
		Update:   g.update,
		Logger:   o.Logger,
		Clock:    o.Clock,
		Redact:   red.Bytes,
		// The admin routes check Origin before the hub sees the request.
		CheckOrigin: func(*http.Request) bool { return true },
	})
	g.control.OnChange(g.hub.Invalidate)
	g.api.MountAdmin(adminView{g})

	g.srv = &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
		// Who is at the other end is looked up once per connection.
		ConnContext: api.ConnContext,
	}
	return g, nil
}

// apply installs a configuration: new clients, routing table, probe
// targets and settings, all taking effect with the next request. Requests
// in flight finish on what they started with.
func (g *Gateway) apply(cfg *config.Config) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.applyLocked(g.pool.SetBase(cfg))
}

// rebuild builds routing anew from the pool as it is now, after the
// servers found changed; nothing is built before the control plane gave
// the pool a configuration.
func (g *Gateway) rebuild() {
	g.mu.Lock()
	defer g.mu.Unlock()
	v := g.pool.View()
	if v.Config == nil {
		return
	}
	if err := g.applyLocked(v); err != nil {
		g.log.Error("adding the local servers to routing", "err", err)
	}
}

// invalidate has the dashboard draw its views again.
func (g *Gateway) invalidate() {
	if g.hub != nil {
		g.hub.Invalidate()
	}
}

// applyLocked installs the pool as v shows it.
func (g *Gateway) applyLocked(v pool.View) error {
	cfg := v.Config
	// Quotas first: the new table may route to backends whose limits and
	// prices must already be known.
	qs := quotaSettings(cfg, g.dialects)
	qs.SharedKeys = g.sharedKeys(cfg)
	g.quota.Configure(qs)
	// Pacing too; requests waiting in a backend's queue keep their place.
	g.shape.Configure(shapeSettings(cfg))
	g.notes.Configure(control.NotifySwitches(cfg.Notifications))
	g.router.SetStoredWait(0)
	if cfg.RequestLog.DurableAnswers(g.team != nil) {
		g.router.SetStoredWait(storedWait)
	}
	// The secrets first too: answers to requests still in flight are
	// redacted with the new set, which holds the keys they were sent with
	// unless those were removed.
	g.redact.Set(secrets(cfg))
	now := g.clock.Now()
	clients := map[string]*upstream.Client{}
	keyClients := map[llm.KeyID]*upstream.Client{}
	var targets []probe.Target
	preparers := map[string]protocol.Preparer{}
	spec := router.Spec{Now: now}
	for _, p := range cfg.Providers {
		ps := router.ProviderSpec{
			Name: p.Name, Tier: p.Tier, Default: p.Default, Disabled: p.Disabled,
			HasKey: p.Keyless || len(p.Pool()) > 0, KeyHint: keyHint(p), Discovered: v.Discovered(p.Name),
			CacheTTL: g.cacheTTL(p),
		}
		d, ok := g.dialectOf(p.Kind)
		if !ok {
			return fmt.Errorf("provider %s: no dialect speaks the provider kind %q", p.Name, p.Kind)
		}
		ps.Dialect, ps.Endpoints = d.Name(), d.Outbound.Wire.Endpoints()
		var prep protocol.Preparer
		if p.ExplicitCache && d.Outbound.NewPreparer != nil {
			if prep = g.preparers[p.Name]; prep == nil {
				prep = d.Outbound.NewPreparer()
			}
			preparers[p.Name] = prep
		}
		models := map[string]upstream.Model{}
		for _, m := range p.Models {
			caps, known := capsOf(m.Capabilities)
			ps.Models = append(ps.Models, router.ModelSpec{ID: m.ID, ParamsB: m.ParamsB, Context: m.Context,
				CreditUntil: quota.CreditEnd(m.CreditDate()), Caps: caps, CapsKnown: known, Endpoints: endpointsOf(m.Endpoints),
				Price: priceOf(p, m)})
			models[m.ID] = upstream.Model{MaxOutput: m.MaxOutput, Caps: caps, Known: known, Drop: m.DropParams}
		}
		if ps.HasKey && !p.Disabled {
			// A provider with one key (or none) names its backends without
			// a key label, as it always has.
			keys := p.Pool()
			switch len(keys) {
			case 0:
				keys = []config.PoolKey{{}}
			case 1:
				keys[0].Label = ""
			}
			for _, k := range keys {
				c := upstream.New(upstream.Options{
					Name: p.Name, BaseURL: p.BaseURL, APIKey: k.Key, Headers: p.Headers,
					Dialect: d, Codecs: g.dialects, Drop: p.DropParams, Models: models,
					ConnectTimeout: p.Timeouts.Connect, HeaderTimeout: p.Timeouts.Header,
					FirstTokenTimeout: p.Timeouts.FirstToken, IdleTimeout: p.Timeouts.Idle,
					StreamUsage: p.WantsStreamUsage(), Logger: g.log, Clock: g.clock, Redactor: g.redact,
					Transport: v.Transport(p), Preparer: prep, CacheTTL: ps.CacheTTL,
				})
				if _, ok := clients[p.Name]; !ok {
					clients[p.Name] = c
					ps.Up = c
				}
				keyClients[llm.KeyID{Provider: p.Name, Key: k.Label}] = c
				if len(keys) > 1 {
					ps.Keys = append(ps.Keys, router.KeySpec{Label: k.Label, Up: c})
				}
				if p.Probed() && !cfg.Probes.Disabled {
					for _, m := range p.Models {
						targets = append(targets, probe.Target{ID: llm.BackendID{Provider: p.Name, Key: k.Label, Model: m.ID},
							Remote: !loopbackURL(p.BaseURL), Up: c})
					}
				}
			}
		}
		spec.Providers = append(spec.Providers, ps)
	}
	for _, c := range cfg.Chains {
		spec.Chains = append(spec.Chains, router.ChainSpec{Name: c.Name, Backends: chainIDs(c.Backends),
			Strategy: c.Strategy, Gear: c.Gear, Weights: refMap(c.Weights), Priority: refMap(c.Priority), MaxWait: c.MaxWait})
	}
	spec.DefaultChain = cfg.DefaultChain
	spec.Scoring = scoring(cfg.Routing)
	spec.AutoGear = cfg.Routing.AutoGear
	addr := cfg.Listen
	if g.ln != nil {
		addr = g.ln.Addr().String()
	}
	spec.EmptyHint = v.EmptyHint(addr)
	for _, a := range cfg.EffectiveAliases() {
		spec.Aliases = append(spec.Aliases, router.AliasSpec{Pattern: a.Pattern, Chain: a.Chain})
	}
	g.gate.Configure(breaker.Settings{
		Failures:          cfg.Breaker.Failures,
		HealthThreshold:   cfg.Breaker.HealthThreshold,
		OpenTimes:         cfg.Breaker.OpenTimes(),
		RateLimitCooldown: cfg.Breaker.RateLimitCooldown,
	})
	g.prober.Configure(probe.Settings{Interval: cfg.Probes.Interval, OpenInterval: cfg.Probes.OpenInterval, Daily: cfg.Probes.Daily})
	g.api.SetMaxBody(int64(cfg.MaxBodyMB) << 20)
	g.api.SetAllowedOrigins(cfg.AllowedOrigins)
	g.api.SetProfiling(cfg.Debug.Pprof)
	g.api.SetBodyLogging(bodyLogBytes(cfg.RequestLog))
	g.api.SetBodyLimits(cfg.Requests.BodyReadTimeout, int64(cfg.Requests.MaxInflightBodyMB)<<20)
	g.responses.SetRetention(time.Duration(cfg.Requests.ResponseRetentionDays) * 24 * time.Hour)
	g.responses.SetMaxTotal(int64(cfg.Requests.ResponseStoreMB) << 20)
	g.rcache.Configure(cacheSettings(cfg))
	g.router.Swap(router.Build(spec))
	// After the table, so a task's new chain is there when it is named.
	g.tasks.Configure(taskRules(cfg.Tasks))
	g.rearmReplacedKeys(g.cfg, cfg)
	oldKeys := g.keyClients
	g.cfg, g.clients, g.keyClients, g.targets, g.preparers = cfg, clients, keyClients, targets, preparers
	for _, c := range oldKeys {
		c.CloseIdle()
	}
	return nil
}

// sharedKeys names the providers whose catalog entry says their keys
// share one quota.
func (g *Gateway) sharedKeys(cfg *config.Config) map[string]bool {
	cat := g.catalog
	out := map[string]bool{}
	if cat == nil {
		return out
	}
	for _, p := range cfg.Providers {
		if e, ok := cat.Provider(p.Catalog); ok && p.Catalog != "" && e.SharedQuota != "" {
			out[p.Name] = true
		}
	}
	return out
}

// cacheTTL is how long the provider keeps a prompt-cache entry, which is
// how long a session stays on its backend: the configured cache_ttl, else
// its catalog entry's, else 0 for the router's default.
func (g *Gateway) cacheTTL(p config.Provider) time.Duration {
	if p.CacheTTL > 0 {
		return p.CacheTTL
	}
	if g.catalog == nil || p.Catalog == "" {
		return 0
	}
	if e, ok := g.catalog.Provider(p.Catalog); ok && e.CacheTTL != "" {
		// The catalog's checks made sure it parses.
		d, _ := time.ParseDuration(e.CacheTTL)
		return d
	}
	return 0
}

// dialectOf is the dialect upstreams of a provider kind speak, from the
// gateway's registry: adding a dialect is a package under protocol and
// its line in package dialects.
func (g *Gateway) dialectOf(kind string) (protocol.Dialect, bool) { return g.dialects.ByKind(kind) }

// capsOf reads a model's declared capabilities; known is false when it
// declares none.
func capsOf(names []string) (caps llm.Caps, known bool) {
	if names == nil {
		return 0, false
	}
	for _, n := range names {
		for c, name := range llm.CapNames {
			if name == n {
				caps |= c
			}
		}
	}
	return caps, true
}

// endpointsOf reads a model's declared endpoints; nil when it declares
// none.
func endpointsOf(names []string) []llm.Endpoint {
	if names == nil {
		return nil
	}
	by := map[string]llm.Endpoint{"chat": llm.Chat, "completions": llm.Completions, "embeddings": llm.Embeddings}
	out := make([]llm.Endpoint, 0, len(names))
	for _, n := range names {
		out = append(out, by[n])
	}
	return out
}

// secrets lists every key and header value of the configuration, disabled
// providers' included: they may have been enabled a moment ago.
func secrets(cfg *config.Config) []redact.Secret {
	var out []redact.Secret
	for _, p := range cfg.Providers {
		out = append(out, redact.Key(p.APIKey))
		for _, k := range p.APIKeys {
			out = append(out, redact.Key(k))
		}
		for _, v := range p.Headers {
			out = append(out, redact.Header(v))
		}
	}
	return out
}

func (g *Gateway) probeTargets() []probe.Target {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.targets
}

// Control returns the control plane (the dashboard's configuration).
func (g *Gateway) Control() *control.Control { return g.control }

// loopbackURL reports whether a base URL points at this machine.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// keyHint tells the user how to give a provider its key.
func keyHint(p config.Provider) string {
	switch {
	case p.KeyFile != "" && len(p.APIKeyEnv) > 0:
		// The file wins over the dashboard, which cannot set this key.
		return fmt.Sprintf("set %s and restart FreeLane (%s reads the key of %s from it)", strings.Join(p.APIKeyEnv, " or "), control.FileLabel(p.KeyFile), p.Name)
	case p.KeyFile != "":
		return fmt.Sprintf("give %s an api_key in %s and restart FreeLane", p.Name, control.FileLabel(p.KeyFile))
	}
	if len(p.APIKeyEnv) > 0 {
		return fmt.Sprintf("set %s or add a key for %s in the dashboard", strings.Join(p.APIKeyEnv, " or "), p.Name)
	}
	return fmt.Sprintf("add a key for %s in the dashboard or api_key in the config", p.Name)
}

// Clock returns the gateway's clock, so the desktop shell dates and paces
// what it shows on the same clock as the router.
func (g *Gateway) Clock() clock.Clock { return g.clock }

// Prober returns the prober.
func (g *Gateway) Prober() *probe.Prober { return g.prober }

// BreakerStatus returns a backend's breaker state.
func (g *Gateway) BreakerStatus(id llm.BackendID) breaker.Status { return g.gate.Status(id) }

// ResponseCache returns the exact response cache, whose Stats the
// dashboard shows.
func (g *Gateway) ResponseCache() *respcache.Cache { return g.rcache }

// cacheSettings reads the response cache's switches from cfg: the
// top-level one, and each chain's own where it says.
func cacheSettings(cfg *config.Config) respcache.Settings {
	s := respcache.Settings{Enabled: cfg.Cache.Enabled, TTL: cfg.Cache.TTL, MaxBytes: int64(cfg.Cache.MaxMB) << 20}
	for _, c := range cfg.Chains {
		if c.Cache != nil {
			if s.Chains == nil {
				s.Chains = map[string]bool{}
			}
			s.Chains[c.Name] = c.Cache.Enabled
		}
	}
	return s
}

// Events returns the event bus.
func (g *Gateway) Events() *events.Bus { return g.bus }

// Notifications raises the notifications the dashboard and the desktop
// app show.
func (g *Gateway) Notifications() *notify.Notifier { return g.notes }

// Start listens on the configured address and serves in the background.
func (g *Gateway) Start() error {
	g.mu.Lock()
	cfg := g.cfg
	g.mu.Unlock()
	listen := cmp.Or(g.o.Listen, cfg.Listen)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	if !loopbackAddr(ln.Addr()) {
		if !g.token.Set() {
			_ = ln.Close()
			return fmt.Errorf("%w: listening on %s would let anyone on the network spend your keys; "+
				"set an inbound token first, with the FREELANE_TOKEN environment variable (for example FREELANE_TOKEN=$(openssl rand -hex 24)) "+
				"or server.token in the config, and give tools that token as their API key; or listen on 127.0.0.1", ErrNoToken, listen)
		}
		g.log.Warn("FreeLane is listening OFF LOOPBACK: other machines can reach it; /v1 requires the inbound token and the dashboard a login link, but traffic is plain HTTP (put a TLS proxy in front on untrusted networks)",
			"listen", ln.Addr().String())
	}
	g.ln = ln
	// The Host guard needs the real port, which differs from the configured
	// one when that is 0.
	hosts := api.NewHostGuard(ln.Addr().String(), append(slices.Clone(cfg.AllowedHosts), hostOf(listen)))
	g.srv.Handler = api.Nosniff(hosts.Wrap(g.api.Handler()))
	g.writers.Go("request log writer", func(ctx context.Context) {
		if err := g.reqLog.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			g.log.Error("request log writer stopped", "err", err)
		}
	})
	g.writers.Go("response store writer", func(ctx context.Context) {
		if err := g.responses.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			g.log.Error("response store writer stopped", "err", err)
		}
	})
	g.writers.Go("response cache writer", func(ctx context.Context) {
		if err := g.rcache.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			g.log.Error("response cache writer stopped", "err", err)
		}
	})
	g.writers.Go("time series writer", g.series.Run)
	if !cfg.Discovery.Disabled {
		g.pool.Watch(pool.DiscoveryPorts(cfg, ln.Addr().String()))
	}
	// The answer to a client while nothing can serve names the real
	// address, known only now.
	g.rebuild()
	g.loops.Go("housekeeping", g.housekeep)
	if g.shared != nil {
		g.loops.Go("shared state", g.shared.Run)
	}
	g.loops.Go("dashboard hub", g.hub.Run)
	g.loops.Go("notifications", func(ctx context.Context) { g.notes.Run(ctx, g.noteEvents.C()) })
	g.loops.Go("state saver", g.saveLoop)
	if g.team != nil {
		g.loops.Go("team store", func(ctx context.Context) { g.team.run(ctx, g.control.Reload) })
	}
	if !g.o.ManualProbes {
		g.loops.Go("probes", g.prober.Run)
		if !cfg.Discovery.Disabled {
			g.loops.Go("discovery", g.pool.RunDiscovery)
		}
		if !cfg.Probes.Disabled {
			g.loops.Go("model lists", func(ctx context.Context) { g.pool.RunModelLists(ctx, g.control, cfg.Probes.Daily) })
		}
	}
	g.serving.Go("http server", func(context.Context) {
		// Shutdown stops it, by draining the server first.
		if err := g.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("server stopped", "err", err)
		}
	})
	t := g.router.Table()
	g.log.Info("FreeLane is serving", "endpoint", "http://"+ln.Addr().String()+"/v1",
		"backends", len(t.Backends()), "chains", strings.Join(t.Chains(), ","))
	for _, h := range t.MissingKeys() {
		g.log.Warn("provider left out: no API key", "hint", h)
	}
	return nil
}

// ErrNoToken is returned by Start when it would listen off loopback
// without an inbound token.
var ErrNoToken = errors.New("no inbound token")

// OffLoopback reports whether the server listens where other machines can
// reach it, so the shell can warn the person who started it.
func (g *Gateway) OffLoopback() bool { return g.ln != nil && !loopbackAddr(g.ln.Addr()) }

// loopbackAddr reports whether a listener only takes connections from this
// machine.
func loopbackAddr(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

// LoginURL mints a one-time link that signs a browser in to the
// dashboard: it works once, within auth.LoginTTL, and only for this run.
// The code is in the fragment (/#login=CODE), which browsers never send to
// a server; the dashboard's page exchanges it for a session.
func (g *Gateway) LoginURL() string {
	host, port, err := net.SplitHostPort(g.Addr())
	if err != nil {
		host = g.Addr()
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/", Fragment: api.LoginFragment + "=" + g.api.NewLoginCode()}
	return u.String()
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// Addr is the address the server listens on (useful with port 0).
func (g *Gateway) Addr() string {
	if g.ln == nil {
		return g.o.Listen
	}
	return g.ln.Addr().String()
}

// Shutdown stops accepting requests, lets those in flight finish until ctx
// ends (then cuts them), writes every pending request log row and closes
// the database. Calling it again returns the first call's result.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.shutdownOnce.Do(func() { g.shutdownErr = g.shutdown(ctx) })
	return g.shutdownErr
}

func (g *Gateway) shutdown(ctx context.Context) error {
	var errs []error
	if g.ln != nil {
		if err := g.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("draining requests: %w", err))
			_ = g.srv.Close()
		}
	}
	g.serving.Stop()
	g.loops.Stop()
	if err := g.saveState(context.Background()); err != nil {
		errs = append(errs, err)
	}
	if g.ln != nil {
		g.writers.Stop()
	} else {
		// Never started: nothing can be queued, but close cleanly anyway.
		if err := g.reqLog.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := g.responses.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := g.rcache.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := g.series.Flush(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range g.keyClients {
		c.CloseIdle()
	}
	if g.team != nil {
		g.team.close()
	}
	if g.shared != nil {
		_ = g.shared.Close()
	}
	if err := g.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the database: %w", err))
	}
	return errors.Join(errs...)
}

// recorders hands each finished request to every recorder in turn.
type recorders []interface{ Record(llm.Trace) }

func (rs recorders) Record(t llm.Trace) {
	for _, r := range rs {
		r.Record(t)
	}
}

// Series implements api.Series.
func (a adminView) Series(ctx context.Context, q metrics.SeriesQuery) (metrics.SeriesView, error) {
	return a.g.series.Window(ctx, q)
}

// refMap reads a chain's per-backend numbers (weights, priorities).
func refMap(m map[string]int) map[llm.BackendID]int {
	if len(m) == 0 {
		return nil
	}
	out := make(map[llm.BackendID]int, len(m))
	for ref, n := range m {
		if id, err := llm.ParseBackendID(ref); err == nil {
			out[id] = n
		}
	}
	return out
}

// priceOf is what the router's cost strategy knows of a model's price: a
// configured price, free for free and local tiers, and unknown for a paid
// model nobody priced.
func priceOf(p config.Provider, m config.Model) router.Price {
	if m.Price != nil {
		return router.Price{Input: m.Price.Input, Output: m.Price.Output, CacheRead: m.Price.CacheRead, Known: true}
	}
	return router.Price{Known: p.Tier != tier.Own}
}

// scoring is the auto strategy's settings, defaults filled in.
func scoring(r config.Routing) *router.Scoring {
	s := router.DefaultScoring
	for _, w := range []struct {
		dst *float64
		src *float64
	}{{&s.Health, r.Score.Health}, {&s.Headroom, r.Score.Headroom}, {&s.Latency, r.Score.Latency}, {&s.Cost, r.Score.Cost}, {&s.Task, r.Score.Task}} {
		if w.src != nil {
			*w.dst = *w.src
		}
	}
	if r.MinSamples > 0 {
		s.MinSamples = r.MinSamples
	}
	if r.MinScore > 0 {
		s.MinScore = r.MinScore
	}
	return &s
}

// taskRules are the configuration's task rules as the classifier takes
// them.
func taskRules(ts []config.Task) []task.Rule {
	out := make([]task.Rule, 0, len(ts))
	for _, t := range ts {
		r := task.Rule{Task: t.Name, Chain: t.Chain, Prefer: chainIDs(t.Prefer)}
		if w := t.When; w != nil {
			r.Model, r.Tools, r.Thinking, r.PromptOver = w.Model, w.Tools, w.Thinking, w.PromptTokensOver
		}
		out = append(out, r)
	}
	return out
}

// chainIDs reads a chain's backends; validation has already refused any
// that do not parse.
func chainIDs(refs []string) []llm.BackendID {
	ids := make([]llm.BackendID, 0, len(refs))
	for _, ref := range refs {
		if id, ok := llm.CutBackendID(ref); ok {
			ids = append(ids, id)
		}
	}
	return ids
}
