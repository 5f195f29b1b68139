package pool

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"freelane/backend/config"
	"freelane/backend/discovery"
	"freelane/backend/events"
	"freelane/backend/llm"
)

// server is a model server discovery found, with whether it answers now.
type server struct {
	server discovery.Server
	// provider is the name its models are served under; "" when a
	// configured provider already calls its address, or when it is shut.
	provider string
	up       bool
	// foreign is set when another person's account runs it, and allowed
	// when the user allowed it to serve all the same.
	foreign, allowed bool
}

// shut reports whether a server found is kept from serving: it is run by
// another account and the user has not allowed it.
func (ls *server) shut() bool { return ls.foreign && !ls.allowed }

// defaultPort is each kind's usual port; a server elsewhere is named with
// its port.
var defaultPort = map[string]int{
	discovery.KindOllama: 11434, discovery.KindLMStudio: 1234, discovery.KindJan: 1337, discovery.KindLlamaCpp: 8080,
	discovery.KindLocalAI: 8080, discovery.KindVLLM: 8000, discovery.KindKoboldCpp: 5001,
}

// DiscoveryPorts are the ports discovery looks at: the configured ones,
// or the defaults, never own, the address FreeLane listens on.
func DiscoveryPorts(cfg *config.Config, own string) []int {
	ports := cfg.Discovery.Ports
	if ports == nil {
		ports = discovery.DefaultPorts
	}
	_, p, _ := strings.Cut(own, ":")
	ownPort, _ := strconv.Atoi(p)
	return slices.DeleteFunc(slices.Clone(ports), func(n int) bool { return n == ownPort })
}

// Watch makes the pool look for local servers on ports, once RunDiscovery
// runs or ScanNow is called. Without it the pool finds none.
func (p *Pool) Watch(ports []int) {
	w := discovery.NewWatcher(discovery.WatchOptions{
		Options: discovery.Options{Ports: ports, Logger: p.log, Owner: p.o.Owner},
		Clock:   p.o.Clock, OnChange: p.Found,
	})
	p.scanMu.Lock()
	p.watcher = w
	p.scanMu.Unlock()
}

// watching is the watcher Watch made, nil for none.
func (p *Pool) watching() *discovery.Watcher {
	p.scanMu.Lock()
	defer p.scanMu.Unlock()
	return p.watcher
}

// RunDiscovery looks for local servers now and every minute until ctx
// ends; it returns at once when Watch was not called.
func (p *Pool) RunDiscovery(ctx context.Context) {
	if w := p.watching(); w != nil {
		w.Run(ctx)
	}
}

// ScanNow looks for local servers at once, as the background round does
// every minute.
func (p *Pool) ScanNow(ctx context.Context) {
	if w := p.watching(); w != nil {
		w.ScanNow(ctx)
	}
}

// Found takes a discovery scan: servers found join as local providers,
// servers gone have their backends retired, servers back are restored,
// and servers of other accounts are kept out unless allowed. Routing is
// rebuilt whatever changed.
func (p *Pool) Found(found []discovery.Server) {
	p.scanMu.Lock()
	defer p.scanMu.Unlock()
	p.found = found
	p.update(found, true)
}

// reconsider applies the last scan again, after the allowances changed.
func (p *Pool) reconsider() {
	p.scanMu.Lock()
	defer p.scanMu.Unlock()
	p.update(p.found, false)
}

// change is what one scan changed about one server.
type change struct {
	kind           events.Kind
	provider, why  string
	models         []string
	retire, revive bool
}

// update applies found; scanned says it is a new scan rather than the
// last one applied again. Called with p.scanMu held.
func (p *Pool) update(found []discovery.Server, scanned bool) {
	now := p.o.Clock.Now()
	p.mu.Lock()
	if scanned {
		p.lastScan = now
	}
	changes := p.changesLocked(found, scanned)
	p.mu.Unlock()
	if p.o.Rebuild != nil {
		p.o.Rebuild()
	}
	for _, c := range changes {
		if c.kind == events.LocalForeign {
			p.log.Warn("a local server of another user is not used", "reason", c.why)
			p.publish(events.Event{Time: now, Kind: c.kind, Level: events.Warn, Reason: c.why})
			continue
		}
		if c.provider == "" {
			continue
		}
		for _, m := range c.models {
			switch {
			case c.retire && p.o.Breakers != nil:
				p.o.Breakers.Retire(llm.BackendID{Provider: c.provider, Model: m}, c.why)
			case c.revive && p.o.Breakers != nil:
				p.o.Breakers.Unretire(llm.BackendID{Provider: c.provider, Model: m}, c.why)
			}
		}
		level := events.Info
		if c.retire {
			level = events.Warn
		}
		p.publish(events.Event{Time: now, Kind: c.kind, Level: level, Provider: c.provider, Reason: c.why})
	}
	if len(changes) > 0 && p.o.Changed != nil {
		p.o.Changed()
	}
}

func (p *Pool) publish(e events.Event) {
	if p.o.Events != nil {
		p.o.Events.Publish(e)
	}
}

// changesLocked brings the servers up to date with found and says what
// changed; called with p.mu held.
func (p *Pool) changesLocked(found []discovery.Server, scanned bool) []change {
	var changes []change
	seen := map[int]bool{}
	for _, s := range found {
		seen[s.Port] = true
		ls, known := p.local[s.Port]
		if !known {
			ls = &server{}
			p.local[s.Port] = ls
		}
		wasUp := known && ls.up
		wasServing := wasUp && !ls.shut()
		before := ls.server
		ls.server, ls.up = s, true
		if scanned && s.Dropped > 0 && (!wasUp || before.Dropped != s.Dropped) {
			p.log.Warn("a local server listed model names that are not valid; they are left out",
				"server", s.Name, "port", s.Port, "dropped", s.Dropped, "first", s.DroppedSample)
		}
		ls.foreign = !s.Owner.TrustedBy(p.self)
		ls.allowed = ls.foreign && p.allowed.has(s.Port, s.Kind, s.Owner.UID)
		if ls.shut() {
			ls.provider = ""
			if !wasUp || wasServing || before.Owner != s.Owner || before.Kind != s.Kind {
				changes = append(changes, change{kind: events.LocalForeign, why: foreignWhy(s)})
			}
			continue
		}
		ls.provider = p.nameLocked(s)
		if !wasServing {
			why := fmt.Sprintf("%s answers on port %d", s.Name, s.Port)
			c := change{kind: events.LocalFound, provider: ls.provider, why: why, revive: known}
			for _, m := range s.Models {
				c.models = append(c.models, m.ID)
			}
			changes = append(changes, c)
		}
	}
	for port, ls := range p.local {
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
	return changes
}

// nameLocked is the provider name of a local server: the one the
// configuration records for it, else its kind, with the port when it is
// not the kind's usual one; "" when a configured provider already calls
// it. Called with p.mu held.
func (p *Pool) nameLocked(s discovery.Server) string {
	if s.NeedsKey {
		return ""
	}
	if p.base != nil {
		for _, c := range p.base.Providers {
			if sameURL(c.BaseURL, s.BaseURL) {
				return ""
			}
		}
		if r, ok := p.base.LocalAt(s.Kind, s.Port); ok {
			return r.Name
		}
	}
	name := s.Kind
	if name == discovery.KindOpenAI {
		name = "local"
	}
	if defaultPort[s.Kind] != s.Port {
		name += "-" + strconv.Itoa(s.Port)
	}
	if p.base != nil {
		_, configured := p.base.Provider(name)
		_, recorded := p.base.LocalByName(name)
		if configured || recorded {
			name += "-local"
		}
	}
	return name
}

// renameLocked names every server found after the configuration changed:
// a record may have renamed it. Called with p.mu held.
func (p *Pool) renameLocked() {
	for _, ls := range p.local {
		if !ls.shut() {
			ls.provider = p.nameLocked(ls.server)
		}
	}
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
