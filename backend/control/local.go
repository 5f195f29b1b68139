package control

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"freelane/backend/config"
	"freelane/backend/llm"
	"freelane/backend/tier"
)

// ProviderSource is where a provider comes from.
type ProviderSource string

// The sources of providers.
const (
	// FromConfig is a provider written in the configuration or added by
	// hand in the dashboard.
	FromConfig ProviderSource = "config"
	// FromCatalog is a provider added from the catalog.
	FromCatalog ProviderSource = "catalog"
	// FromEnvironment is a catalog provider added because its key was
	// found in the environment.
	FromEnvironment ProviderSource = "environment"
	// FromDiscovery is a model server found on this machine.
	FromDiscovery ProviderSource = "discovered"
)

// LocalStatus is what a discovered server does now.
type LocalStatus string

// The states of a discovered server.
const (
	// LocalServing is a server that answers and serves.
	LocalServing LocalStatus = "serving"
	// LocalGone is a server that stopped answering, or that was recorded
	// and has not answered since FreeLane started.
	LocalGone LocalStatus = "gone"
	// LocalHidden is a server the user keeps out of routing.
	LocalHidden LocalStatus = "hidden"
	// LocalForeign is a server another account of this machine runs,
	// which serves only once the user allows it.
	LocalForeign LocalStatus = "foreign"
)

// ProviderLocal is what discovery knows of a discovered provider's server.
type ProviderLocal struct {
	Kind    string      `json:"kind"`
	Port    int         `json:"port"`
	BaseURL string      `json:"base_url"`
	Status  LocalStatus `json:"status"`
	// Found says where and how it was found, e.g. "found on port 11434".
	Found string `json:"found"`
	// Owner names the account that runs it when that is another account
	// of this machine; "" for the user's own.
	Owner string `json:"owner"`
}

// LocalServer is a model server the live pool knows of that no
// configured provider calls.
type LocalServer struct {
	// Provider is the server as a provider: its name, address, timeouts
	// and models (for a server that stopped, the last ones it listed).
	Provider config.Provider
	Local    ProviderLocal
}

// Pool is what the control plane asks the live pool about providers it
// did not configure. The pool must not call the control plane from it:
// the control plane may hold its lock while it asks.
type Pool interface {
	// LocalServers lists the model servers found on this machine, each
	// under the name it serves under now.
	LocalServers() []LocalServer
}

// localServers asks the pool; nil without one.
func (c *Control) localServers() []LocalServer {
	if c.pool == nil {
		return nil
	}
	return c.pool.LocalServers()
}

// sourceOf says where the stored provider p comes from.
func (c *Control) sourceOf(p config.Provider) ProviderSource {
	switch {
	case slices.Contains(c.adopted, p.Name):
		return FromEnvironment
	case p.Catalog != "":
		return FromCatalog
	}
	return FromConfig
}

// allLocal lists the local servers the pool reports and, after them, the
// ones doc records that it does not, which have not answered since
// FreeLane started.
func allLocal(doc *config.Config, found []LocalServer) []LocalServer {
	out := slices.Clone(found)
	for _, r := range doc.Local {
		if slices.ContainsFunc(found, func(s LocalServer) bool { return s.Local.Kind == r.Kind && s.Local.Port == r.Port }) {
			continue
		}
		status := LocalGone
		if r.Hidden {
			status = LocalHidden
		}
		base := fmt.Sprintf("http://127.0.0.1:%d/v1", r.Port)
		out = append(out, LocalServer{
			Provider: config.Provider{Name: r.Name, Kind: config.KindOpenAI, Tier: tier.Local, BaseURL: base, Keyless: true, Limits: r.Limits},
			Local: ProviderLocal{Kind: r.Kind, Port: r.Port, BaseURL: base, Status: status,
				Found: fmt.Sprintf("recorded on port %d; it has not answered since FreeLane started", r.Port)},
		})
	}
	return out
}

// localViews shows the local servers; called with c.mu held.
func (c *Control) localViews(found []LocalServer) []ProviderView {
	var out []ProviderView
	for _, s := range allLocal(c.doc, found) {
		p := s.Provider
		p.Limits = nil
		if r, ok := c.doc.LocalAt(s.Local.Kind, s.Local.Port); ok {
			// The record is what the user gave; the pool may not have
			// applied it yet.
			p.Limits = r.Limits
		}
		v := c.view(p, "")
		v.Source = FromDiscovery
		l := s.Local
		v.Local = &l
		if v.Models == nil {
			v.Models = []ModelSpec{}
		}
		out = append(out, v)
	}
	return out
}

// localServer finds the local server called name among what the pool
// reports and what doc records.
func localServer(doc *config.Config, found []LocalServer, name string) (LocalServer, bool) {
	all := allLocal(doc, found)
	i := slices.IndexFunc(all, func(s LocalServer) bool { return s.Provider.Name == name })
	if i < 0 {
		return LocalServer{}, false
	}
	return all[i], true
}

// recordLocal records in doc every local server a chain or a budget of
// doc names that doc neither configures nor records yet, so that the
// configuration names only what it knows of and still loads while the
// server is stopped.
func recordLocal(doc *config.Config, found []LocalServer) {
	record := func(name string) {
		if _, ok := doc.Provider(name); ok {
			return
		}
		if _, ok := doc.LocalByName(name); ok {
			return
		}
		i := slices.IndexFunc(found, func(s LocalServer) bool { return s.Provider.Name == name })
		if i < 0 {
			return
		}
		doc.Local = append(doc.Local, config.LocalProvider{Name: name, Kind: found[i].Local.Kind, Port: found[i].Local.Port})
	}
	for _, ch := range doc.Chains {
		for _, ref := range ch.Backends {
			if id, err := llm.ParseBackendID(ref); err == nil {
				record(id.Provider)
			}
		}
	}
	for _, b := range doc.Budgets {
		if name, ok := strings.CutPrefix(b.Scope, "provider:"); ok {
			record(name)
		}
	}
}

// ensureRecord returns doc's record of the local server s, adding one
// when there is none.
func ensureRecord(doc *config.Config, s LocalServer) *config.LocalProvider {
	if r, ok := doc.LocalAt(s.Local.Kind, s.Local.Port); ok {
		return r
	}
	doc.Local = append(doc.Local, config.LocalProvider{Name: s.Provider.Name, Kind: s.Local.Kind, Port: s.Local.Port})
	return &doc.Local[len(doc.Local)-1]
}

// renameRefs makes every chain and budget of doc that names the provider
// old name it as name instead.
func renameRefs(doc *config.Config, old, name string) {
	for i := range doc.Chains {
		for j, ref := range doc.Chains[i].Backends {
			if id, err := llm.ParseBackendID(ref); err == nil && id.Provider == old {
				id.Provider = name
				doc.Chains[i].Backends[j] = id.String()
			}
		}
	}
	for i := range doc.Budgets {
		if p, ok := strings.CutPrefix(doc.Budgets[i].Scope, "provider:"); ok && p == old {
			doc.Budgets[i].Scope = "provider:" + name
		}
	}
}

// localErr makes a validation problem of a local record read as a field
// of the form that edits one server: "local[0].name" is what "rename"
// gave.
func localErr(err error) error {
	e, ok := err.(*Error)
	if !ok || !strings.HasPrefix(e.Param, "local[") {
		return err
	}
	if i := strings.Index(e.Param, "]."); i >= 0 {
		e.Param = e.Param[i+2:]
	}
	if e.Param == "name" {
		e.Param = "rename"
	}
	return err
}

// UpdateLocal changes a local server found by discovery: in may rename
// it (chains, limits and budgets naming it follow), hide it from routing
// and auto or show it again, and set the limits its models share. Any
// other field in carries must be what the server's view shows, so that a
// view sent back changes nothing; a field that would change anything else
// is refused, since discovery, not the user, says what the server is.
//
// handled is false when name is not a local server and in asks nothing
// only a local server can do: UpdateProvider answers those.
func (c *Control) UpdateLocal(ctx context.Context, name string, in ProviderInput) (v ProviderView, handled bool, err error) {
	found := c.localServers()
	c.mu.Lock()
	_, configured := c.doc.Provider(name)
	s, local := localServer(c.doc, found, name)
	c.mu.Unlock()
	switch {
	case configured:
		if n := in.Rename; n != nil && strings.TrimSpace(*n) != name {
			return ProviderView{}, true, userErr(http.StatusBadRequest, "rename",
				"only a local server found by discovery can be renamed; %q is a configured provider: add it again under the new name and delete it", name)
		}
		if in.Hidden != nil && *in.Hidden {
			return ProviderView{}, true, userErr(http.StatusBadRequest, "hidden",
				"only a local server found by discovery can be hidden; to keep %q out of routing, disable it", name)
		}
		return ProviderView{}, false, nil
	case !local:
		return ProviderView{}, false, nil
	}
	cur, err := c.Provider(name)
	if err != nil {
		return ProviderView{}, true, err
	}
	if field := in.changesOtherThanLocal(cur); field != "" {
		return ProviderView{}, true, userErr(http.StatusBadRequest, field,
			"%q is a local server found by discovery (%s): it can be renamed, hidden or given limits (send rename, hidden or limits), but its %s is what the server says and cannot be set here",
			name, cur.Local.Found, field)
	}
	final := name
	if in.Rename != nil {
		final = strings.TrimSpace(*in.Rename)
		if final == "" {
			return ProviderView{}, true, userErr(http.StatusBadRequest, "rename", "rename must be the new name, such as \"ollama-desk\"")
		}
		if strings.Contains(final, "${") {
			return ProviderView{}, true, userErr(http.StatusBadRequest, "rename", "a name cannot contain \"${\"")
		}
		doc := c.Config()
		if _, taken := doc.Provider(final); taken {
			return ProviderView{}, true, userErr(http.StatusBadRequest, "rename", "a provider is already called %q; give the local server another name", final)
		}
		if other, ok := localServer(doc, found, final); ok && final != name && (other.Local.Kind != s.Local.Kind || other.Local.Port != s.Local.Port) {
			return ProviderView{}, true, userErr(http.StatusConflict, "rename",
				"the local server on port %d is already called %q; give %q another name", other.Local.Port, final, name)
		}
	}
	hide := in.Hidden != nil && *in.Hidden != (cur.Local.Status == LocalHidden)
	limits := in.Limits != nil && *in.Limits != cur.Limits
	if final == name && !hide && !limits {
		return cur, true, nil
	}
	err = c.update(ctx, "", func(doc *config.Config) error {
		r := ensureRecord(doc, s)
		if final != name {
			r.Name = final
			renameRefs(doc, name, final)
		}
		if in.Hidden != nil {
			r.Hidden = *in.Hidden
		}
		r.Limits = mergeLimits(r.Limits, in.Limits)
		return nil
	})
	if err != nil {
		return ProviderView{}, true, localErr(err)
	}
	v, err = c.Provider(final)
	return v, true, err
}

// changesOtherThanLocal names the first field in carries that differs
// from the view cur of a local server, other than those UpdateLocal sets
// (rename, hidden, limits) and the view's read-only ones; "" when there is
// none.
func (in *ProviderInput) changesOtherThanLocal(cur ProviderView) string {
	if in.APIKey != nil {
		return "api_key"
	}
	if in.sent == nil {
		// An input built in Go carries only what it means to set.
		return ""
	}
	same := map[string]bool{
		"name":         strings.TrimSpace(in.Name) == cur.Name,
		"kind":         in.Kind == cur.Kind,
		"tier":         in.Tier == cur.Tier,
		"default":      in.Default == cur.Default,
		"base_url":     strings.TrimSpace(in.BaseURL) == cur.BaseURL,
		"keyless":      in.Keyless == cur.Keyless,
		"disabled":     in.Disabled == cur.Disabled,
		"probe":        in.Probe == nil || *in.Probe == cur.Probe,
		"stream_usage": in.StreamUsage == nil || *in.StreamUsage == cur.StreamUsage,
		"headers":      len(in.Headers) == 0,
		"models":       len(in.Models) == len(cur.Models) && (len(in.Models) == 0 || reflect.DeepEqual(in.Models, cur.Models)),
	}
	// The keys same leaves out are the ones UpdateLocal sets or ignores.
	for _, key := range providerInputKeys {
		if s, judged := same[key]; judged && !s && in.has(key) {
			return key
		}
	}
	if in.has("timeouts") {
		for _, t := range []struct{ key, in, cur string }{
			{"connect", in.Timeouts.Connect, cur.Timeouts.Connect}, {"header", in.Timeouts.Header, cur.Timeouts.Header},
			{"first_token", in.Timeouts.FirstToken, cur.Timeouts.FirstToken}, {"idle", in.Timeouts.Idle, cur.Timeouts.Idle},
		} {
			if in.hasTimeout(t.key) && strings.TrimSpace(t.in) != t.cur {
				return "timeouts." + t.key
			}
		}
	}
	return ""
}
