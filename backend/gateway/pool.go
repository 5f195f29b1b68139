package gateway

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"freelane/backend/api"
	"freelane/backend/atomicfile"
	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/discovery"
	"freelane/backend/events"
	"freelane/backend/llm"
	"freelane/backend/modellist"
	"freelane/backend/protocol/openai"
	"freelane/backend/router"
	"freelane/backend/upstream"
)

// catalogFile is the newer catalog kept in the data directory: dropped
// there by the user or saved by "load from a URL".
const catalogFile = "catalog.yaml"

// catalogBuiltIn is the source of the catalog compiled into the binary.
const catalogBuiltIn = "built in"

// catalogAddressesFile keeps the user's answers to the addresses a newer
// catalog gives, in the data directory.
const catalogAddressesFile = "catalog-addresses.json"

func catalogAddresses(dataDir string) catalog.DecisionFile {
	return catalog.DecisionFile{Path: filepath.Join(dataDir, catalogAddressesFile)}
}

// heldCatalog is cat as it will be used, every address the user has not
// confirmed held: what a client is told about before the control plane
// has opened. The control plane logs a damaged answers file.
func heldCatalog(dataDir string, cat *catalog.Catalog) *catalog.Catalog {
	d, _ := catalogAddresses(dataDir).Load()
	held, _ := catalog.Hold(cat, catalog.Embedded(), d)
	return held
}

// loadCatalog returns the catalog to use: the data directory's file when
// it is valid and not older than the built-in one, the built-in one
// otherwise (with the reason logged), and where it came from.
func loadCatalog(dataDir string, log *slog.Logger) (*catalog.Catalog, string) {
	builtIn := catalog.Embedded()
	path := filepath.Join(dataDir, catalogFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return builtIn, catalogBuiltIn
	}
	if err != nil {
		log.Warn("the catalog file cannot be read; the built-in catalog is used", "file", path, "err", err)
		return builtIn, catalogBuiltIn
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, catalog.MaxFile+1))
	if err != nil {
		log.Warn("the catalog file cannot be read; the built-in catalog is used", "file", path, "err", err)
		return builtIn, catalogBuiltIn
	}
	cat, err := catalog.Parse(path, data)
	if err != nil {
		log.Error("the catalog file is not valid; the built-in catalog is used", "file", path, "problems", err.Error())
		return builtIn, catalogBuiltIn
	}
	if cat.Date < builtIn.Date {
		log.Warn("the catalog file is older than the built-in catalog, which is used instead", "file", path, "date", cat.Date, "built_in", builtIn.Date)
		return builtIn, catalogBuiltIn
	}
	return cat, path
}

// localServer is a model server discovery found, with whether it answers
// now.
type localServer struct {
	server discovery.Server
	// provider is the name its models are served under; "" when a
	// configured provider already calls its address, or when it is shut.
	provider string
	up       bool
	// foreign is set when another person's account runs it, and allowed
	// when the user allowed it to serve all the same.
	foreign, allowed bool
}

// compose adds the local servers discovery found to the configuration
// the control plane gives: each becomes a keyless local provider, unless
// a configured provider already calls its address. A server that stopped
// answering is left out (its backends are retired meanwhile), so that
// nobody's request is tried on a server known to be gone.
func (g *Gateway) compose(base *config.Config) *config.Config {
	if len(g.local) == 0 {
		return base
	}
	cfg := *base
	cfg.Providers = slices.Clone(base.Providers)
	for _, port := range slices.Sorted(maps.Keys(g.local)) {
		ls := g.local[port]
		if ls.provider == "" || !ls.up || ls.shut() {
			continue
		}
		p := config.Provider{Name: ls.provider, Kind: config.KindOpenAI, Tier: config.TierLocal, BaseURL: ls.server.BaseURL, Keyless: true,
			Timeouts: config.Timeouts{Connect: config.DefaultConnectTimeout, Header: config.DefaultHeaderTimeout,
				// Loading a model from disk can take a while.
				FirstToken: 2 * time.Minute, Idle: config.DefaultIdleTimeout}}
		for _, m := range ls.server.Models {
			cm := config.Model{ID: m.ID, ParamsB: m.ParamsB, Context: m.Context, Capabilities: m.Capabilities}
			if m.Embedding {
				cm.Endpoints = []string{"embeddings"}
			}
			p.Models = append(p.Models, cm)
		}
		if len(p.Models) > 0 {
			cfg.Providers = append(cfg.Providers, p)
		}
	}
	return &cfg
}

// sameURL reports whether two base URLs name one server: localhost and
// 127.0.0.1 are the same machine.
func sameURL(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimRight(s, "/")
		return strings.Replace(s, "://localhost:", "://127.0.0.1:", 1)
	}
	return norm(a) == norm(b)
}

// defaultPort is each kind's usual port; a server elsewhere is named with
// its port.
var defaultPort = map[string]int{
	discovery.KindOllama: 11434, discovery.KindLMStudio: 1234, discovery.KindJan: 1337, discovery.KindLlamaCpp: 8080,
	discovery.KindLocalAI: 8080, discovery.KindVLLM: 8000, discovery.KindKoboldCpp: 5001,
}

// localChanged takes a discovery scan: servers found join as local
// providers, servers gone have their backends retired, servers back are
// restored, and servers of other accounts are kept out unless allowed.
// It rebuilds routing when anything changed.
func (g *Gateway) localChanged(found []discovery.Server) {
	g.localMu.Lock()
	defer g.localMu.Unlock()
	g.found = found
	g.updateLocal(found, true)
}

// updateLocal applies found; scanned says it is a new scan rather than
// the last one applied again. Called with g.localMu held.
func (g *Gateway) updateLocal(found []discovery.Server, scanned bool) {
	g.mu.Lock()
	now := g.clock.Now()
	if scanned {
		g.lastScan = now
	}
	type change struct {
		kind           events.Kind
		provider, why  string
		models         []string
		retire, revive bool
	}
	var changes []change
	seen := map[int]bool{}
	for _, s := range found {
		seen[s.Port] = true
		ls, known := g.local[s.Port]
		if !known {
			ls = &localServer{}
			g.local[s.Port] = ls
		}
		wasUp := known && ls.up
		wasServing := wasUp && !ls.shut()
		before := ls.server
		ls.server, ls.up = s, true
		if scanned && s.Dropped > 0 && (!wasUp || before.Dropped != s.Dropped) {
			g.log.Warn("a local server listed model names that are not valid; they are left out",
				"server", s.Name, "port", s.Port, "dropped", s.Dropped, "first", s.DroppedSample)
		}
		ls.foreign = !s.Owner.TrustedBy(g.self)
		ls.allowed = ls.foreign && g.allowed.has(s.Port, s.Kind, s.Owner.UID)
		if ls.shut() {
			ls.provider = ""
			if !wasUp || wasServing || before.Owner != s.Owner || before.Kind != s.Kind {
				changes = append(changes, change{kind: events.LocalForeign, why: foreignWhy(s)})
			}
			continue
		}
		ls.provider = g.localName(s)
		if !wasServing {
			why := fmt.Sprintf("%s answers on port %d", s.Name, s.Port)
			c := change{kind: events.LocalFound, provider: ls.provider, why: why, revive: known}
			for _, m := range s.Models {
				c.models = append(c.models, m.ID)
			}
			changes = append(changes, c)
		}
	}
	for port, ls := range g.local {
		if seen[port] || !ls.up {
			continue
		}
		ls.up = false
		c := change{kind: events.LocalGone, provider: ls.provider, retire: true,
			why: fmt.Sprintf("%s stopped answering on port %d", ls.server.Name, port)}
		for _, m := range ls.server.Models {
			c.models = append(c.models, m.ID)
		}
		changes = append(changes, c)
	}
	base := g.base
	var err error
	if base != nil {
		err = g.applyLocked(base)
	}
	g.mu.Unlock()
	if err != nil {
		g.log.Error("adding the local servers to routing", "err", err)
	}
	for _, c := range changes {
		if c.kind == events.LocalForeign {
			g.log.Warn("a local server of another user is not used", "reason", c.why)
			g.bus.Publish(events.Event{Time: now, Kind: c.kind, Level: events.Warn, Reason: c.why})
			continue
		}
		if c.provider == "" {
			continue
		}
		for _, m := range c.models {
			switch {
			case c.retire:
				g.gate.Retire(llm.BackendID{Provider: c.provider, Model: m}, c.why)
			case c.revive:
				g.gate.Unretire(llm.BackendID{Provider: c.provider, Model: m}, c.why)
			}
		}
		level := events.Info
		if c.retire {
			level = events.Warn
		}
		g.bus.Publish(events.Event{Time: now, Kind: c.kind, Level: level, Provider: c.provider, Reason: c.why})
	}
	if len(changes) > 0 {
		g.hub.Invalidate()
	}
}

// localName is the provider name of a local server: its kind, with the
// port when it is not the kind's usual one; "" when a configured provider
// already calls it.
func (g *Gateway) localName(s discovery.Server) string {
	if s.NeedsKey {
		return ""
	}
	if g.base != nil {
		for _, p := range g.base.Providers {
			if sameURL(p.BaseURL, s.BaseURL) {
				return ""
			}
		}
	}
	name := s.Kind
	if name == discovery.KindOpenAI {
		name = "local"
	}
	if defaultPort[s.Kind] != s.Port {
		name += "-" + strconv.Itoa(s.Port)
	}
	if g.base != nil {
		if _, taken := g.base.Provider(name); taken {
			name += "-local"
		}
	}
	return name
}

// localServers lists the local servers for the setup view, by port.
func (g *Gateway) localServers() []api.LocalServer {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := []api.LocalServer{}
	for _, port := range slices.Sorted(maps.Keys(g.local)) {
		ls := g.local[port]
		v := api.LocalServer{Kind: ls.server.Kind, Name: ls.server.Name, Port: port, BaseURL: ls.server.BaseURL,
			Provider: ls.provider, Up: ls.up, NeedsKey: ls.server.NeedsKey, Models: []api.LocalModel{},
			Foreign: ls.foreign, Allowed: ls.allowed, OwnerUID: -1, Dropped: ls.server.Dropped}
		if o := ls.server.Owner; o.Known {
			v.OwnerUID = int64(o.UID)
			if ls.foreign {
				v.OwnerName = accountName(o.UID)
			}
		}
		if ls.provider == "" && !ls.shut() && !ls.server.NeedsKey && g.base != nil {
			for _, p := range g.base.Providers {
				if sameURL(p.BaseURL, ls.server.BaseURL) {
					v.Provider = p.Name
				}
			}
		}
		for _, m := range ls.server.Models {
			v.Models = append(v.Models, api.LocalModel{ID: m.ID, Context: cmp.Or(m.Context, m.TrainedContext), ParamsB: m.ParamsB, Embedding: m.Embedding})
		}
		out = append(out, v)
	}
	return out
}

// discoveryPorts are the ports discovery looks at: the configured ones,
// or the defaults, never FreeLane's own.
func discoveryPorts(cfg *config.Config, own string) []int {
	ports := cfg.Discovery.Ports
	if ports == nil {
		ports = discovery.DefaultPorts
	}
	_, p, _ := strings.Cut(own, ":")
	ownPort, _ := strconv.Atoi(p)
	return slices.DeleteFunc(slices.Clone(ports), func(n int) bool { return n == ownPort })
}

// envNames are the key variables of the catalog's first free tiers.
func envNames(cat *catalog.Catalog) []string {
	var names []string
	for _, e := range cat.Providers {
		if e.Tier == catalog.TierFree && len(e.KeyEnv) > 0 && len(names) < 6 {
			names = append(names, e.KeyEnv[0])
		}
	}
	return names
}

// emptyHint is what a client is told while nothing can serve.
func (g *Gateway) emptyHint(cfg *config.Config) string {
	addr := cfg.Listen
	if g.ln != nil {
		addr = g.ln.Addr().String()
	}
	hint := fmt.Sprintf("open the dashboard at http://%s/ and paste a free key, or set one of %s (a free key from the provider's site) and restart FreeLane, or start a local model server such as Ollama",
		addr, strings.Join(g.envNames, ", "))
	var gone []string
	for _, port := range slices.Sorted(maps.Keys(g.local)) {
		switch ls := g.local[port]; {
		case !ls.up && ls.provider != "":
			gone = append(gone, fmt.Sprintf("%s stopped answering on port %d", ls.server.Name, port))
		case ls.up && ls.shut():
			gone = append(gone, fmt.Sprintf("%s on port %d is run by another user and is not used unless you allow it on the Setup screen", ls.server.Name, port))
		}
	}
	if len(gone) > 0 {
		hint += " (" + strings.Join(gone, "; ") + ")"
	}
	return hint
}

// refreshLoop reads the model lists a minute after start, then every
// period.
func (g *Gateway) refreshLoop(ctx context.Context, period time.Duration) {
	t, tick := g.clock.NewTimer(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			g.RefreshModels(ctx)
			t.Reset(period)
		}
	}
}

// ScanLocal looks for local servers at once, as the background round
// does every minute.
func (g *Gateway) ScanLocal(ctx context.Context) {
	if g.watcher != nil {
		g.watcher.ScanNow(ctx)
	}
}

// Catalog is the catalog in use, as the "Add provider" list shows it.
func (a adminView) Catalog() api.CatalogView {
	g := a.g
	cat := g.control.Catalog()
	doc := g.control.Config()
	g.mu.Lock()
	src := g.catSource
	g.mu.Unlock()
	v := api.CatalogView{Date: cat.Date, Source: src, Providers: make([]api.CatalogEntry, 0, len(cat.Providers)), Changes: g.control.CatalogChanges()}
	for _, e := range cat.Providers {
		ce := api.CatalogEntry{ID: e.ID, Name: e.Name, Tier: e.Tier, Dialect: e.Dialect, BaseURL: e.BaseURL,
			Placeholders: nonNil(e.Placeholders), KeyEnv: nonNil(e.KeyEnv), SignupURL: e.SignupURL, Credit: e.Credit,
			Notes: nonNil(e.Notes), Limits: limitWords(e.Limits), ListModels: e.ListModels, Configured: []string{},
			EnvFound: g.control.EnvSet(e.KeyEnv), Models: make([]api.CatalogModel, 0, len(e.Models))}
		for _, m := range e.Models {
			cm := api.CatalogModel{ID: m.ID, ParamsB: m.ParamsB, Context: m.Context, MaxOutput: m.MaxOutput,
				Capabilities: nonNil(m.Capabilities), Limits: limitWords(m.Limits)}
			if m.Price != nil {
				cm.Price = &api.CatalogPrice{Input: m.Price.Input, Output: m.Price.Output}
			}
			ce.Models = append(ce.Models, cm)
		}
		for _, p := range doc.Providers {
			if p.Catalog == e.ID {
				ce.Configured = append(ce.Configured, p.Name)
			}
		}
		v.Providers = append(v.Providers, ce)
	}
	return v
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func limitWords(ls []catalog.Limit) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.Words())
	}
	return out
}

// maxKey bounds a pasted key; real ones are a few hundred bytes at most.
const maxKey = 4096

// maxJoin bounds how many models one model list adds at once, so a
// vendor listing hundreds does not flood the chains.
const maxJoin = 64

// AddFromCatalog checks the key with the provider's model list (or, where
// it has none, one tiny request) and adds the provider; models its list
// names besides the catalog's join it, and catalog models the list no
// longer names are retired.
func (a adminView) AddFromCatalog(ctx context.Context, id string, in control.CatalogInput) (api.CatalogAdded, error) {
	g := a.g
	e, err := g.control.CatalogEntry(id)
	if err != nil {
		return api.CatalogAdded{}, err
	}
	in.Key = strings.TrimSpace(in.Key)
	if len(in.Key) > maxKey {
		return api.CatalogAdded{}, &control.Error{Status: http.StatusBadRequest, Param: "key", Message: fmt.Sprintf("the key is longer than %d characters; paste the key alone", maxKey)}
	}
	if in.Key == "" && e.Tier != catalog.TierLocal {
		return api.CatalogAdded{}, &control.Error{Status: http.StatusBadRequest, Param: "key", Message: "paste the key from " + cmp.Or(e.SignupURL, e.Name)}
	}
	baseURL, err := control.CatalogBaseURL(e, in.Values)
	if err != nil {
		return api.CatalogAdded{}, err
	}
	listed, lerr := modellist.Fetch(ctx, g.listClient, e.Dialect, baseURL, in.Key, nil)
	added := api.CatalogAdded{}
	var extra []config.Model
	switch {
	case lerr == nil:
		added.Models = len(listed)
		added.Message = fmt.Sprintf("%s accepted the key; its model list names %d models", e.Name, len(listed))
		if !e.ListModels && len(e.Models) > 0 {
			// The list only checked the key: the catalog marks it as not
			// naming what the key may use.
			break
		}
		extra = newModels(e, joinable(e.Tier, listed), nil)
		// A vendor listing hundreds of models joins with the first of
		// them only.
		extra = extra[:min(len(extra), maxJoin)]
	case errors.Is(lerr, modellist.ErrKeyRejected):
		return api.CatalogAdded{}, &control.Error{Status: http.StatusBadRequest, Param: "key", Message: fmt.Sprintf("%s refused the key: %v", e.Name, lerr)}
	case errors.Is(lerr, modellist.ErrNoList) && len(e.Models) > 0:
		if err := g.tryKey(ctx, e, baseURL, in.Key); err != nil {
			return api.CatalogAdded{}, err
		}
		added.Message = fmt.Sprintf("%s answered a test request with the key", e.Name)
	default:
		return api.CatalogAdded{}, &control.Error{Status: http.StatusBadGateway, Param: "key",
			Message: fmt.Sprintf("the key could not be checked, so it was not added: %s did not answer its model list (%v); try again", e.Name, lerr)}
	}
	view, err := g.control.AddFromCatalog(ctx, id, in, extra)
	if err != nil {
		return api.CatalogAdded{}, err
	}
	added.Provider = view
	if lerr == nil && (e.ListModels || len(e.Models) == 0) {
		var ids []string
		for _, m := range view.Models {
			ids = append(ids, m.ID)
		}
		g.retireUnlisted(view.Name, ids, listed, e.Tier)
	}
	return added, nil
}

// joinable are the listed models that may serve from a provider of the
// tier: chat models, and of a list with prices only the free ones for a
// free tier.
func joinable(tier string, listed []modellist.Listed) []modellist.Listed {
	var out []modellist.Listed
	for _, l := range listed {
		if !l.Chat {
			continue
		}
		if tier == catalog.TierFree && l.Priced && !l.Free {
			continue
		}
		out = append(out, l)
	}
	return out
}

// newModels are the listed models neither the catalog entry nor have
// name, as models to add.
func newModels(e *catalog.Provider, listed []modellist.Listed, have []string) []config.Model {
	var out []config.Model
	for _, l := range listed {
		if slices.ContainsFunc(e.Models, func(m catalog.Model) bool { return m.ID == l.ID }) || slices.Contains(have, l.ID) {
			continue
		}
		m := config.Model{ID: config.Escape(l.ID), Context: l.Context, MaxOutput: l.MaxOutput, Capabilities: l.Capabilities}
		if l.Priced && !l.Free && (l.Price.Input > 0 || l.Price.Output > 0) {
			m.Price = &config.Price{Input: l.Price.Input, Output: l.Price.Output}
		}
		out = append(out, m)
	}
	return out
}

// retireUnlisted retires the provider's models its list no longer names
// (withdrawn, or no longer free), and restores those it names again.
func (g *Gateway) retireUnlisted(provider string, models []string, listed []modellist.Listed, tier string) {
	ids := modellist.IDs(joinable(tier, listed))
	for _, model := range models {
		id := llm.BackendID{Provider: provider, Model: model}
		g.listMu.Lock()
		was := g.listRetired[id]
		listed := slices.Contains(ids, model)
		if listed {
			delete(g.listRetired, id)
		} else {
			g.listRetired[id] = true
		}
		g.listMu.Unlock()
		switch {
		case listed && was:
			g.gate.Unretire(id, "the provider's model list names it again")
		case !listed && !was:
			g.gate.Retire(id, "the provider's model list no longer names it")
		}
	}
}

// tryKey sends one tiny request with a key to a provider that has no model
// list, and says whether the key was taken.
func (g *Gateway) tryKey(ctx context.Context, e *catalog.Provider, baseURL, key string) error {
	wire := wires[e.Dialect]
	c := upstream.New(upstream.Options{Name: e.ID, BaseURL: baseURL, APIKey: key, Wire: wire, Codecs: codecs,
		ConnectTimeout: config.DefaultConnectTimeout, HeaderTimeout: config.DefaultHeaderTimeout,
		FirstTokenTimeout: config.DefaultFirstTokenTimeout, IdleTimeout: config.DefaultIdleTimeout,
		Logger: g.log, Clock: g.clock, Redactor: g.redact})
	defer c.CloseIdle()
	_, err := c.Complete(ctx, testRequest, e.Models[0].ID)
	if err == nil {
		return nil
	}
	var le *llm.Error
	if errors.As(err, &le) && le.Class == llm.Credential {
		return &control.Error{Status: http.StatusBadRequest, Param: "key", Message: fmt.Sprintf("%s refused the key: %s", e.Name, le.Message)}
	}
	if errors.As(err, &le) && le.Class == llm.RateLimited {
		// Busy is an answer: the key was read.
		return nil
	}
	return &control.Error{Status: http.StatusBadGateway, Param: "key", Message: fmt.Sprintf("the key could not be checked, so it was not added: %s did not answer (%v); try again", e.Name, err)}
}

// RefreshModels reads the model list of every provider from the catalog
// that has one: models it names for the first time join the provider
// (free ones only, on a free tier), models it no longer names are
// retired and those it names again restored. It is the daily round's
// second half; tests call it directly.
func (g *Gateway) RefreshModels(ctx context.Context) {
	g.mu.Lock()
	cfg := g.cfg
	g.mu.Unlock()
	cat := g.control.Catalog()
	for _, p := range cfg.Providers {
		e, ok := cat.Provider(p.Catalog)
		if !ok || !e.ListModels || p.Disabled || (!p.Keyless && p.APIKey == "") {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		listed, err := modellist.Fetch(lctx, g.listClient, p.Kind, p.BaseURL, p.APIKey, p.Headers)
		cancel()
		if err != nil {
			if !errors.Is(err, modellist.ErrNoList) {
				g.log.Warn("reading a provider's model list", "provider", p.Name, "err", err)
			}
			continue
		}
		var have []string
		for _, m := range p.Models {
			have = append(have, m.ID)
		}
		// Paid vendors list everything they sell; new ones are not added
		// to a paid key behind the user's back.
		if e.Tier != catalog.TierPaid {
			if add := newModels(e, joinable(e.Tier, listed), have); len(add) > 0 {
				add = add[:min(len(add), maxJoin)]
				if err := g.control.AddModels(ctx, p.Name, add); err != nil {
					g.log.Warn("adding the models a provider's list names", "provider", p.Name, "err", err)
				} else {
					var ids []string
					for _, m := range add {
						ids = append(ids, config.Unescape(m.ID))
					}
					g.bus.Publish(events.Event{Time: g.clock.Now(), Kind: events.ModelsJoined, Level: events.Info, Provider: p.Name,
						Reason: fmt.Sprintf("%s's model list names new models, which now serve: %s", p.Name, strings.Join(ids, ", "))})
				}
			}
		}
		g.retireUnlisted(p.Name, have, listed, e.Tier)
	}
}

// Setup is what the first-run setup shows.
func (a adminView) Setup() api.SetupView {
	g := a.g
	g.mu.Lock()
	cfg := g.cfg
	last := g.lastScan
	ports := discoveryPorts(cfg, g.Addr())
	g.mu.Unlock()
	v := api.SetupView{EnvKeys: g.control.EnvKeys(), EnvNames: []string{}, Local: g.localServers(),
		Discovery: api.DiscoveryState{Enabled: !cfg.Discovery.Disabled, Ports: ports, LastScan: last}}
	if v.EnvKeys == nil {
		v.EnvKeys = []control.EnvKey{}
	}
	for _, b := range g.router.Table().Backends() {
		if !g.gate.Status(b.ID).Retired {
			v.Serving++
		}
	}
	v.Needed = v.Serving == 0
	seen := map[string]bool{}
	cat := g.control.Catalog()
	for _, tier := range []string{catalog.TierFree, catalog.TierTrial, catalog.TierPaid} {
		for _, e := range cat.Providers {
			if e.Tier == tier && len(e.KeyEnv) > 0 && !seen[e.KeyEnv[0]] {
				seen[e.KeyEnv[0]] = true
				v.EnvNames = append(v.EnvNames, e.KeyEnv[0])
			}
		}
	}
	return v
}

// ScanLocal looks for local servers at once.
func (a adminView) ScanLocal(ctx context.Context) api.SetupView {
	a.g.ScanLocal(ctx)
	return a.Setup()
}

// TestRoute sends one short request through the router, as a client
// would, and reports the route it took.
func (a adminView) TestRoute(ctx context.Context, model string) api.RouteTest {
	g := a.g
	if model == "" {
		model = router.DefaultChain
	}
	res := api.RouteTest{Model: model, Attempts: []llm.Attempt{}}
	if len(model) > 256 {
		res.Error = "the model name is too long"
		return res
	}
	req, err := openai.ParseRequest(llm.Chat, bytes.Replace(testBody, []byte(`"test"`), []byte(strconv.Quote(model)), 1))
	if err != nil {
		res.Error = "the model name cannot be sent: " + err.Error()
		return res
	}
	if route, err := g.router.Table().Resolve(model); err == nil {
		res.Chain = route.Chain
	}
	t0 := g.clock.Now()
	out, f := g.router.Complete(ctx, req)
	res.LatencyMS = float64(g.clock.Since(t0).Microseconds()) / 1000
	if f != nil {
		res.Error, res.Attempts = f.Message, append(res.Attempts, f.Attempts...)
		return res
	}
	res.OK, res.Backend, res.Answer = true, out.Backend.Name(), answerText(out.Response.Body)
	res.Attempts = append(res.Attempts, out.Attempts...)
	return res
}

var testBody = []byte(`{"model":"test","messages":[{"role":"user","content":"Reply with the word OK."}],"max_tokens":5}`)

// LoadCatalog reads a newer catalog from a URL, checks it, puts it in use
// and keeps it in the data directory. A file that fails its checks is
// refused with its problems, line by line, and the catalog in use stays.
// Addresses it gives that the user has not confirmed are held (see
// DecideCatalogChange).
func (a adminView) LoadCatalog(ctx context.Context, raw string) (api.CatalogView, error) {
	g := a.g
	g.mu.Lock()
	allow := g.cfg != nil && g.cfg.Catalog.AllowHTTPLoopback
	g.mu.Unlock()
	data, u, err := catalog.Fetch(ctx, raw, catalog.FetchOptions{AllowLoopback: allow})
	if ue, ok := errors.AsType[*catalog.URLError](err); ok {
		return api.CatalogView{}, &control.Error{Status: http.StatusBadRequest, Param: "url", Message: ue.Error()}
	}
	if err != nil {
		return api.CatalogView{}, &control.Error{Status: http.StatusBadGateway, Param: "url", Message: err.Error()}
	}
	cat, err := catalog.Parse(u.String(), data)
	if err != nil {
		return api.CatalogView{}, &control.Error{Status: http.StatusBadRequest, Param: "url", Message: "the catalog was not used, the one in use stays: " + err.Error()}
	}
	if cur := g.control.Catalog(); cat.Date < cur.Date {
		return api.CatalogView{}, &control.Error{Status: http.StatusConflict, Param: "url",
			Message: fmt.Sprintf("the catalog is older than the one in use (dated %s); it was not used", cur.Date)}
	}
	if err := g.control.SetCatalog(ctx, cat); err != nil {
		return api.CatalogView{}, err
	}
	path := filepath.Join(g.o.DataDir, catalogFile)
	if err := atomicfile.Write(path, data); err != nil {
		g.log.Warn("the new catalog is in use but could not be kept for the next start", "file", path, "err", err)
	}
	g.mu.Lock()
	g.catSource, g.envNames = u.String(), envNames(g.control.Catalog())
	g.mu.Unlock()
	g.hub.Invalidate()
	return a.Catalog(), nil
}

// DecideCatalogChange answers an address the catalog gives that waits for
// the user: confirm puts it in use, keep leaves the one in use.
func (a adminView) DecideCatalogChange(ctx context.Context, id string, in api.CatalogDecision) (api.CatalogView, error) {
	g := a.g
	if err := g.control.DecideAddress(ctx, id, in.Decision == "confirm", in.To); err != nil {
		return api.CatalogView{}, err
	}
	g.mu.Lock()
	g.envNames = envNames(g.control.Catalog())
	g.mu.Unlock()
	g.hub.Invalidate()
	return a.Catalog(), nil
}

// chainWarning says when a chain's backends all share one provider or one
// platform (one address), since they then share one account's limits and
// outages and failing over between them rarely helps.
func chainWarning(cfg *config.Config, backends []string) string {
	if len(backends) < 2 {
		return ""
	}
	providers := map[string]bool{}
	hosts := map[string]bool{}
	for _, ref := range backends {
		name, _, ok := config.SplitRef(ref)
		if !ok {
			continue
		}
		providers[name] = true
		if p, ok := cfg.Provider(name); ok {
			h := p.BaseURL
			if u, err := url.Parse(p.BaseURL); err == nil && u.Host != "" {
				h = u.Host
			}
			hosts[h] = true
		}
	}
	switch {
	case len(providers) == 1:
		for name := range providers {
			return fmt.Sprintf("every backend of this chain is a model of %s: they share one account's limits and outages, so when %s fails they are likely to fail together; add a backend of another provider", name, name)
		}
	case len(hosts) == 1:
		for h := range hosts {
			return fmt.Sprintf("every backend of this chain calls %s: keys of one platform share its limits and outages, so they are likely to fail together; add a backend of another platform", h)
		}
	}
	return ""
}
