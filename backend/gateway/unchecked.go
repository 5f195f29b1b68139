package gateway

import (
	"strings"
	"sync"
	"sync/atomic"

	"freelane/backend/control"
	"freelane/backend/llm"
)

// uncheckedKeys names the providers whose key was stored without being
// tried, because their server could not be reached when the user added
// them and chose to add them anyway. A provider leaves the set at the first
// call its server answers with a verdict on the key: a served request
// shows the key taken, a refusal is then the breaker's to show.
//
// Record checks the set on the request path, so an empty set costs one
// atomic load there. The set lives in memory only: after a restart the
// key is as checked as any other, and the first refusal shows as one.
type uncheckedKeys struct {
	n  atomic.Int32
	mu sync.Mutex
	// names are the providers waiting for a first answer.
	names map[string]bool
}

// add marks a provider's key as not yet checked.
func (u *uncheckedKeys) add(provider string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.names == nil {
		u.names = map[string]bool{}
	}
	if !u.names[provider] {
		u.names[provider] = true
		u.n.Add(1)
	}
}

// forget drops a provider, when its key was tried after all or the
// provider is gone or has another key.
func (u *uncheckedKeys) forget(provider string) {
	if u.n.Load() == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.names[provider] {
		delete(u.names, provider)
		u.n.Add(-1)
	}
}

// has reports whether a provider's key is still not checked.
func (u *uncheckedKeys) has(provider string) bool {
	if u.n.Load() == 0 {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.names[provider]
}

// answered learns from the calls of one finished request: every provider
// whose server served it or refused its key has had its key checked.
func (u *uncheckedKeys) answered(attempts []llm.Attempt) {
	if u.n.Load() == 0 {
		return
	}
	for _, a := range attempts {
		if a.Skipped || (a.Class != llm.OK && a.Class != llm.Credential) {
			continue
		}
		u.forget(providerOf(a.Backend))
	}
}

// providerOf is the provider of a backend's name, "provider/model" or
// "provider@key/model".
func providerOf(backend string) string {
	name, _, _ := strings.Cut(backend, "/")
	name, _, _ = strings.Cut(name, "@")
	return name
}

// providerViews are the control plane's providers, with the keys stored
// without being tried marked so.
func (g *Gateway) providerViews() []control.ProviderView {
	views := g.control.Providers()
	for i := range views {
		views[i].Key.Unchecked = views[i].Key.Set && g.feed.unchecked.has(views[i].Name)
	}
	return views
}
