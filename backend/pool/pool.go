// Package pool is FreeLane's live pool of providers: the configured ones
// the control plane gives (written by hand, from the catalog, or picked
// up from the environment) and the model servers discovery finds on this
// machine, with the state that changes while FreeLane runs: which local
// servers answer, which of other accounts the user allowed, the catalog
// in use, and which models a provider's model list stopped naming.
//
// The pool composes these into the configuration routing is built from
// (see View); whoever builds routing asks for a View whenever the pool
// says it changed. It has its own lock and never calls out while holding
// it, so the control plane may ask it about local servers while holding
// its own.
package pool

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"freelane/backend/catalog"
	"freelane/backend/clock"
	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/defaults"
	"freelane/backend/discovery"
	"freelane/backend/events"
	"freelane/backend/llm"
	"freelane/backend/tier"
)

// Breakers is what the pool tells the breakers: backends that cannot
// serve (a local server stopped, a model list dropped a model) are
// retired, and restored when they can again.
type Breakers interface {
	Retire(id llm.BackendID, why string)
	Unretire(id llm.BackendID, why string)
}

// Events receives what the pool has to tell the user.
type Events interface {
	Publish(e events.Event)
}

// Options configure a Pool.
type Options struct {
	// DataDir holds the allowed servers of other accounts and the
	// catalog files.
	DataDir string
	Logger  *slog.Logger
	Clock   clock.Clock
	// Owner tells which account runs the far end of a loopback
	// connection; nil means the platform's own lookup.
	Owner    func(c net.Conn) (uid uint32, err error)
	Breakers Breakers
	Events   Events
	// Rebuild is called, without the pool's lock, after the servers
	// found changed what the pool serves: the caller builds routing anew
	// from View.
	Rebuild func()
	// Changed is called after the pool told the breakers and the events
	// about such a change, so that views of it are drawn again; nil for
	// none.
	Changed func()
}

// Pool is the live pool. It is safe for concurrent use.
type Pool struct {
	o    Options
	log  *slog.Logger
	self uint32
	// lists reads providers' model lists.
	lists *http.Client

	// mu guards what follows.
	mu sync.Mutex
	// base is the configuration the control plane gave, before the
	// servers found were added to it.
	base *config.Config
	// local are the model servers found on this machine, by port, and
	// lastScan when the ports were last looked at.
	local    map[int]*server
	lastScan time.Time
	// catSource is where the catalog in use was read from, and envNames
	// the key variables a client is told it may set while nothing can
	// serve.
	catSource string
	envNames  []string

	// scanMu orders the scans applied; found is the last one, applied
	// again when the allowances change. allowed are the servers of other
	// accounts the user allowed.
	scanMu  sync.Mutex
	found   []discovery.Server
	allowed *allowances
	watcher *discovery.Watcher

	// retired are the backends retired because their provider's model
	// list stopped naming them; retiredMu guards it.
	retiredMu sync.Mutex
	retired   map[llm.BackendID]bool
}

// New makes an empty pool; SetBase gives it the configuration.
func New(o Options) *Pool {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Clock = clock.OrReal(o.Clock)
	if o.Owner == nil {
		o.Owner = socketOwner
	}
	return &Pool{o: o, log: o.Logger, self: selfUID(), lists: &http.Client{Timeout: 30 * time.Second},
		local: map[int]*server{}, catSource: catalogBuiltIn, allowed: loadAllowances(o.DataDir, o.Logger),
		retired: map[llm.BackendID]bool{}}
}

// View is the pool as routing uses it at one moment: the configuration
// with the servers found added, and what building clients for them needs.
// It does not change: a later change of the pool makes a new View.
type View struct {
	// Config is nil until the pool was given a configuration.
	Config *config.Config
	// owners are the accounts that run the discovered providers' servers.
	owners   map[string]discovery.Owner
	lookup   func(net.Conn) (uint32, error)
	envNames []string
	// notes say why servers found do not serve, for EmptyHint.
	notes []string
}

// SetBase takes the configuration the control plane gives and returns
// the pool as routing is to use it from now on.
func (p *Pool) SetBase(cfg *config.Config) View {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.base = cfg
	p.renameLocked()
	return p.viewLocked()
}

// View is the pool as routing is to use it now.
func (p *Pool) View() View {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.viewLocked()
}

func (p *Pool) viewLocked() View {
	v := View{owners: map[string]discovery.Owner{}, lookup: p.o.Owner, envNames: slices.Clone(p.envNames)}
	if p.base == nil {
		return v
	}
	v.Config = p.composeLocked(p.base)
	for _, port := range slices.Sorted(maps.Keys(p.local)) {
		switch ls := p.local[port]; {
		case ls.provider != "" && ls.up && !ls.shut():
			v.owners[ls.provider] = ls.server.Owner
		case !ls.up && ls.provider != "":
			v.notes = append(v.notes, fmt.Sprintf("%s stopped answering on port %d", ls.server.Name, port))
		case ls.up && ls.shut():
			v.notes = append(v.notes, fmt.Sprintf("%s on port %d is run by another user and is not used unless you allow it on the Setup screen", ls.server.Name, port))
		}
	}
	return v
}

// composeLocked adds the local servers discovery found to base: each
// becomes a keyless local provider, unless a configured provider already
// calls its address. A server that stopped answering is left out (its
// backends are retired meanwhile), so that nobody's request is tried on a
// server known to be gone; so is one the user hid.
func (p *Pool) composeLocked(base *config.Config) *config.Config {
	if len(p.local) == 0 {
		return base
	}
	cfg := *base
	cfg.Providers = slices.Clone(base.Providers)
	for _, port := range slices.Sorted(maps.Keys(p.local)) {
		ls := p.local[port]
		if ls.provider == "" || !ls.up || ls.shut() {
			continue
		}
		if r, ok := base.LocalAt(ls.server.Kind, port); ok && r.Hidden {
			continue
		}
		if lp := localProvider(ls.provider, ls.server, base); len(lp.Models) > 0 {
			cfg.Providers = append(cfg.Providers, lp)
		}
	}
	return &cfg
}

// localProvider is the server s as the keyless local provider called
// name, with the limits base records for it.
func localProvider(name string, s discovery.Server, base *config.Config) config.Provider {
	p := config.Provider{Name: name, Kind: config.KindOpenAI, Tier: tier.Local, BaseURL: s.BaseURL, Keyless: true,
		Timeouts: config.Timeouts{Connect: defaults.ConnectTimeout, Header: defaults.HeaderTimeout,
			FirstToken: defaults.LocalFirstTokenTimeout, Idle: defaults.IdleTimeout}}
	if base != nil {
		if r, ok := base.LocalAt(s.Kind, s.Port); ok {
			p.Limits = r.Limits
		}
	}
	for _, m := range s.Models {
		cm := config.Model{ID: m.ID, ParamsB: m.ParamsB, Context: m.Context, Capabilities: m.Capabilities}
		if m.Embedding {
			cm.Endpoints = []string{"embeddings"}
		}
		p.Models = append(p.Models, cm)
	}
	return p
}

// Discovered reports whether name is the provider of a server discovery
// found.
func (v View) Discovered(name string) bool {
	_, ok := v.owners[name]
	return ok
}

// EmptyHint is what a client is told while nothing can serve, with addr
// the address FreeLane listens on.
func (v View) EmptyHint(addr string) string {
	hint := fmt.Sprintf("open the dashboard at http://%s/ and paste a free key, or set one of %s (a free key from the provider's site) and restart FreeLane, or start a local model server such as Ollama",
		addr, strings.Join(v.envNames, ", "))
	if len(v.notes) > 0 {
		hint += " (" + strings.Join(v.notes, "; ") + ")"
	}
	return hint
}

// LocalServers lists the servers found that no configured provider calls
// and that need no key, by port, with what they do now. It implements
// control.Pool.
func (p *Pool) LocalServers() []control.LocalServer {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []control.LocalServer
	for _, port := range slices.Sorted(maps.Keys(p.local)) {
		ls := p.local[port]
		name := ls.provider
		if ls.shut() {
			// It serves under this name once the user allows it.
			name = p.nameLocked(ls.server)
		}
		if name == "" {
			continue
		}
		v := control.LocalServer{Provider: localProvider(name, ls.server, p.base),
			Local: control.ProviderLocal{Kind: ls.server.Kind, Port: port, BaseURL: ls.server.BaseURL,
				Status: control.LocalServing, Found: fmt.Sprintf("found on port %d", port)}}
		hidden := false
		if p.base != nil {
			r, ok := p.base.LocalAt(ls.server.Kind, port)
			hidden = ok && r.Hidden
		}
		switch {
		case ls.up && ls.shut():
			v.Local.Status, v.Local.Owner = control.LocalForeign, ownerWords(ls.server.Owner)
			v.Local.Found = fmt.Sprintf("found on port %d, run by another user of this machine (%s); it serves only once you allow it on the Setup screen",
				port, ownerWords(ls.server.Owner))
		case hidden:
			v.Local.Status = control.LocalHidden
		case !ls.up:
			v.Local.Status = control.LocalGone
			v.Local.Found = fmt.Sprintf("found on port %d; it stopped answering", port)
		}
		out = append(out, v)
	}
	return out
}

// Server is a local server as the setup screen shows it.
type Server struct {
	discovery.Server
	// Provider is the provider its models are served under: its own, or
	// the configured provider that calls its address; "" when it does
	// not serve.
	Provider string
	Up       bool
	// Foreign is set when another account runs it, Allowed when the user
	// allowed it all the same; OwnerName names that account when known.
	Foreign, Allowed bool
	OwnerName        string
}

// Servers lists every server found, by port, and when the ports were
// last looked at.
func (p *Pool) Servers() (out []Server, lastScan time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, port := range slices.Sorted(maps.Keys(p.local)) {
		ls := p.local[port]
		v := Server{Server: ls.server, Provider: ls.provider, Up: ls.up, Foreign: ls.foreign, Allowed: ls.allowed}
		if ls.foreign && ls.server.Owner.Known {
			v.OwnerName = accountName(ls.server.Owner.UID)
		}
		if ls.provider == "" && !ls.shut() && !ls.server.NeedsKey && p.base != nil {
			for _, c := range p.base.Providers {
				if sameURL(c.BaseURL, ls.server.BaseURL) {
					v.Provider = c.Name
				}
			}
		}
		out = append(out, v)
	}
	return out, p.lastScan
}

// SetCatalog records the catalog in use, whose free tiers' key variables
// a client is told about while nothing can serve, and where it was read
// from ("" keeps the source as it is).
func (p *Pool) SetCatalog(cat *catalog.Catalog, source string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.catSource, p.envNames = cmp.Or(source, p.catSource), envNames(cat)
}

// CatalogSource is where the catalog in use was read from.
func (p *Pool) CatalogSource() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.catSource
}

// The pool is what the control plane asks about local servers.
var _ control.Pool = (*Pool)(nil)
