package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"freelane/backend/api"
	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/llm"
	"freelane/backend/modellist"
	"freelane/backend/pool"
	"freelane/backend/protocol"
	"freelane/backend/router"
	"freelane/backend/tier"
	"freelane/backend/upstream"
)

// RefreshModels reads the model lists of the providers from the catalog
// that have one, as the daily round does (see pool.RefreshModels); tests
// call it directly.
func (g *Gateway) RefreshModels(ctx context.Context) { g.pool.RefreshModels(ctx, g.control) }

// ScanLocal looks for local servers at once, as the background round
// does every minute.
func (g *Gateway) ScanLocal(ctx context.Context) { g.pool.ScanNow(ctx) }

// Catalog is the catalog in use, as the "Add provider" list shows it.
func (a adminView) Catalog() api.CatalogView {
	g := a.g
	cat := g.control.Catalog()
	doc := g.control.Config()
	v := api.CatalogView{Date: cat.Date, Source: g.pool.CatalogSource(), Providers: make([]api.CatalogEntry, 0, len(cat.Providers)), Changes: g.control.CatalogChanges()}
	for _, e := range cat.Providers {
		ce := api.CatalogEntry{ID: e.ID, Name: e.Name, Tier: e.Tier, Dialect: e.Dialect, BaseURL: e.BaseURL,
			Placeholders: nonNil(e.Placeholders), KeyEnv: nonNil(e.KeyEnv), SignupURL: e.SignupURL, Credit: e.Credit, SharedQuota: e.SharedQuota, KeyTerms: e.KeyTerms,
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
	if in.Key == "" && e.Tier != tier.OfferLocal {
		return api.CatalogAdded{}, &control.Error{Status: http.StatusBadRequest, Param: "key", Message: "paste the key from " + cmp.Or(e.SignupURL, e.Name)}
	}
	baseURL, err := control.CatalogBaseURL(e, in.Values)
	if err != nil {
		return api.CatalogAdded{}, err
	}
	probe := config.Provider{Name: e.Name, Kind: e.Dialect, BaseURL: baseURL, APIKey: in.Key}
	listed, lerr := g.readList(ctx, probe)
	added := api.CatalogAdded{Checked: true}
	var extra []config.Model
	switch {
	case lerr == nil:
		added.Models = len(listed)
		added.Message = fmt.Sprintf("%s accepted the key; its model list names %d models.", e.Name, len(listed))
		if !e.ListModels && len(e.Models) > 0 {
			// The list only checked the key: the catalog marks it as not
			// naming what the key may use.
			break
		}
		extra = pool.NewModels(e, pool.Joinable(e.Tier, listed), nil)
		// A vendor listing hundreds of models joins with the first of
		// them only.
		extra = extra[:min(len(extra), pool.MaxJoin)]
	case errors.Is(lerr, modellist.ErrKeyRejected):
		return api.CatalogAdded{}, &control.Error{Status: http.StatusBadRequest, Param: "key", Code: api.CodeKeyRefused,
			Message: fmt.Sprintf("%s refused the key (%s). Check that the whole key was pasted and that it is a %s key, then add it again.", e.Name, g.judge(probe, lerr).why, e.Name)}
	case errors.Is(lerr, modellist.ErrNoList) && len(e.Models) > 0:
		checked, err := g.tryKey(ctx, e, probe, in.UnreachableOK)
		if err != nil {
			return api.CatalogAdded{}, err
		}
		added.Checked = checked
		added.Message = fmt.Sprintf("%s answered a test request with the key.", e.Name)
	default:
		f := g.judge(probe, lerr)
		if f == nil {
			// A busy list read the key.
			added.Message = fmt.Sprintf("%s is busy, but it read the key.", e.Name)
			break
		}
		if !in.UnreachableOK {
			return api.CatalogAdded{}, catalogUnreachable(e.Name, f)
		}
		added.Checked = false
	}
	if !added.Checked {
		added.Message = fmt.Sprintf("The key is not checked yet: FreeLane could not check it with %s. The first request %s answers checks it.", e.Name, e.Name)
		g.log.Info("a provider from the catalog is stored without its key being checked: it could not be reached, and the user chose to go on",
			"provider", e.ID)
	}
	view, err := g.control.AddFromCatalog(ctx, id, in, extra)
	if err != nil {
		return api.CatalogAdded{}, err
	}
	g.markChecked(&view, added.Checked)
	added.Provider = view
	if lerr == nil && (e.ListModels || len(e.Models) == 0) {
		var ids []string
		for _, m := range view.Models {
			ids = append(ids, m.ID)
		}
		g.pool.RetireUnlisted(view.Name, ids, listed, e.Tier)
	}
	return added, nil
}

// tryKey sends one tiny request with a key to a provider that has no model
// list. It says whether the key was checked: false when the provider could
// not be reached and unreachableOK lets it be added unchecked.
func (g *Gateway) tryKey(ctx context.Context, e *catalog.Provider, p config.Provider, unreachableOK bool) (bool, error) {
	d, ok := g.dialectOf(e.Dialect)
	if !ok {
		return false, &control.Error{Status: http.StatusBadRequest, Param: "key",
			Message: fmt.Sprintf("%s speaks the provider kind %q, which this FreeLane does not know; load a newer catalog or update FreeLane.", e.Name, e.Dialect)}
	}
	// Zero timeouts are the defaults a provider added from the catalog
	// gets.
	c := upstream.New(upstream.Options{Name: e.ID, BaseURL: p.BaseURL, APIKey: p.APIKey, Dialect: d, Codecs: g.dialects,
		Logger: g.log, Clock: g.clock, Redactor: g.redact})
	defer c.CloseIdle()
	ctx, cancel := context.WithTimeout(ctx, listWait)
	defer cancel()
	_, err := c.Complete(ctx, testRequest, e.Models[0].ID)
	if err == nil {
		return true, nil
	}
	f := g.judge(p, err)
	switch {
	case f == nil:
		// Busy, or refused for something else than the key: the key was read.
		return true, nil
	case f.refused:
		return false, &control.Error{Status: http.StatusBadRequest, Param: "key", Code: api.CodeKeyRefused,
			Message: fmt.Sprintf("%s refused the key (%s). Check that the whole key was pasted and that it is a %s key, then add it again.", e.Name, f.why, e.Name)}
	case unreachableOK:
		return false, nil
	}
	return false, catalogUnreachable(e.Name, f)
}

// catalogUnreachable is the answer to a catalog add whose key could not
// be checked because the vendor could not be reached or gave no usable
// answer; unreachable_ok adds it all the same.
func catalogUnreachable(name string, f *checkFailure) *control.Error {
	msg := fmt.Sprintf("FreeLane could not reach %s to check the key: add it anyway, or try again. %s", name, sentence(f.why))
	if f.answered {
		msg = fmt.Sprintf("%s gave no usable answer when FreeLane checked the key: add it anyway, or try again. %s", name, sentence(f.why))
	}
	return &control.Error{Status: http.StatusBadGateway, Param: "key", Code: api.CodeProviderUnreachable, Message: msg}
}

// Setup is what the first-run setup shows.
func (a adminView) Setup() api.SetupView {
	g := a.g
	g.mu.Lock()
	cfg := g.cfg
	ports := pool.DiscoveryPorts(cfg, g.Addr())
	g.mu.Unlock()
	servers, last := g.pool.Servers()
	v := api.SetupView{EnvKeys: g.control.EnvKeys(), EnvNames: []string{}, Local: localViews(servers),
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
	for _, offer := range []tier.Offer{tier.OfferFree, tier.OfferTrial, tier.OfferPaid} {
		for _, e := range cat.Providers {
			if e.Tier == offer && len(e.KeyEnv) > 0 && !seen[e.KeyEnv[0]] {
				seen[e.KeyEnv[0]] = true
				v.EnvNames = append(v.EnvNames, e.KeyEnv[0])
			}
		}
	}
	return v
}

// localViews shows the local servers found as the setup screen lists them.
func localViews(servers []pool.Server) []api.LocalServer {
	out := []api.LocalServer{}
	for _, s := range servers {
		v := api.LocalServer{Kind: s.Kind, Name: s.Name, Port: s.Port, BaseURL: s.BaseURL,
			Provider: s.Provider, Up: s.Up, NeedsKey: s.NeedsKey, Models: []api.LocalModel{},
			Foreign: s.Foreign, Allowed: s.Allowed, OwnerUID: -1, OwnerName: s.OwnerName, Dropped: s.Dropped}
		if s.Owner.Known {
			v.OwnerUID = int64(s.Owner.UID)
		}
		for _, m := range s.Models {
			v.Models = append(v.Models, api.LocalModel{ID: m.ID, Context: cmp.Or(m.Context, m.TrainedContext), ParamsB: m.ParamsB, Embedding: m.Embedding})
		}
		out = append(out, v)
	}
	return out
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
	c := protocol.AskOK()
	c.Temperature = nil
	req, err := g.dialects.Request(testRequest.Dialect, c, model)
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
		res.Error, res.Attempts = answerWords(f.Message)+".", append(res.Attempts, f.Attempts...)
		wordAttempts(res.Attempts)
		return res
	}
	res.OK, res.Backend, res.Answer = true, out.Backend.Name(), g.answerText(out.Response.Body)
	res.Attempts = append(res.Attempts, out.Attempts...)
	wordAttempts(res.Attempts)
	return res
}

// wordAttempts words the reasons of a route test's attempts for the
// setup screen, as answerWords does.
func wordAttempts(as []llm.Attempt) {
	for i := range as {
		as[i].Reason = answerWords(as[i].Reason)
	}
}

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
	if fe, ok := errors.AsType[*catalog.FetchError](err); ok {
		return api.CatalogView{}, &control.Error{Status: http.StatusBadGateway, Param: "url", Message: fe.Error()}
	}
	if err != nil {
		return api.CatalogView{}, &control.Error{Status: http.StatusBadGateway, Param: "url",
			Message: "FreeLane could not read the catalog from that address: " + unreachableWords(err) + ". Check the address and try again."}
	}
	cat, err := catalog.Parse(u.String(), data)
	if err != nil {
		return api.CatalogView{}, &control.Error{Status: http.StatusBadRequest, Param: "url", Message: "the catalog was not used, the one in use stays: " + err.Error()}
	}
	if cur := g.control.Catalog(); cat.Date < cur.Date {
		return api.CatalogView{}, &control.Error{Status: http.StatusConflict, Param: "url",
			Message: fmt.Sprintf("the catalog is older than the one in use (dated %s); it was not used", cur.Date)}
	}
	// The configuration is applied with the new catalog: the gateway's
	// copy changes first, since applying it runs under the control lock.
	g.mu.Lock()
	was := g.catalog
	g.catalog = cat
	g.mu.Unlock()
	if err := g.control.SetCatalog(ctx, cat); err != nil {
		g.mu.Lock()
		g.catalog = was
		g.mu.Unlock()
		return api.CatalogView{}, err
	}
	g.pool.KeepCatalog(data)
	g.pool.SetCatalog(g.control.Catalog(), u.String())
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
	g.pool.SetCatalog(g.control.Catalog(), "")
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
