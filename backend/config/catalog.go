package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"freelane/backend/catalog"
	"freelane/backend/tier"
)

// CatalogSettings say how the provider catalog is used.
type CatalogSettings struct {
	// EnvKeys picks up, at start, every catalog provider whose key
	// variable (GROQ_API_KEY, OPENROUTER_API_KEY, ...) is set and that no
	// provider here stands for; nil means true. Use PicksUpEnvKeys.
	EnvKeys *bool `yaml:"env_keys,omitempty"`
	// AllowHTTPLoopback lets a newer catalog be loaded from a URL on this
	// machine (127.0.0.0/8, ::1, localhost), over plain http or https, for
	// tests and local mirrors. Off by default: a catalog otherwise comes
	// only from a public https server, so that a program listening on a
	// loopback port cannot hand FreeLane one.
	AllowHTTPLoopback bool `yaml:"allow_http_loopback,omitempty"`
}

// PicksUpEnvKeys reports whether keys in the environment add their
// catalog providers.
func (c *Config) PicksUpEnvKeys() bool { return c.Catalog.EnvKeys == nil || *c.Catalog.EnvKeys }

// Discovery configures looking for model servers on this machine.
type Discovery struct {
	// Disabled switches discovery off.
	Disabled bool `yaml:"disabled,omitempty"`
	// Ports are the loopback ports looked at; nil means the default ports
	// of Ollama, LM Studio, Jan, llama.cpp and LocalAI, vLLM and KoboldCpp.
	Ports []int `yaml:"ports,omitempty"`
}

// MaxDiscoveryPorts bounds discovery.ports: every port is asked every
// minute.
const MaxDiscoveryPorts = 32

// limitsOf folds a catalog entry's published limits into one allowance:
// each figure from the first limit that gives it, and the first reset
// rule given.
func limitsOf(ls []catalog.Limit) *Limits {
	if len(ls) == 0 {
		return nil
	}
	var out Limits
	for _, l := range ls {
		out.RPM = cmp.Or(out.RPM, l.RPM)
		out.RPD = cmp.Or(out.RPD, l.RPD)
		out.TPM = cmp.Or(out.TPM, l.TPM)
		out.TPD = cmp.Or(out.TPD, l.TPD)
		out.Concurrency = cmp.Or(out.Concurrency, l.Concurrency)
		if out.Reset == "" {
			out.Reset = l.Reset
		}
	}
	return &out
}

// catalogModel is a catalog model as a provider's model.
func catalogModel(m catalog.Model) Model {
	out := Model{ID: m.ID, ParamsB: m.ParamsB, Context: m.Context, MaxOutput: m.MaxOutput,
		Capabilities: slices.Clone(m.Capabilities), Limits: limitsOf(m.Limits)}
	if len(m.Capabilities) == 0 {
		// The catalog leaves capabilities out when they are not known;
		// an empty list here would mean "none".
		out.Capabilities = nil
	}
	if m.Price != nil {
		out.Price = &Price{Input: m.Price.Input, Output: m.Price.Output,
			CacheRead: m.Price.CacheRead, CacheWrite: m.Price.CacheWrite}
	}
	return out
}

// mergeModel lays what the configuration says about a model over what the
// catalog says: every field given here wins.
func mergeModel(base, over Model) Model {
	out := base
	if over.ParamsB != 0 {
		out.ParamsB = over.ParamsB
	}
	if over.Context != 0 {
		out.Context = over.Context
	}
	if over.MaxOutput != 0 {
		out.MaxOutput = over.MaxOutput
	}
	if over.Capabilities != nil {
		out.Capabilities = over.Capabilities
	}
	if over.Endpoints != nil {
		out.Endpoints = over.Endpoints
	}
	if over.DropParams != nil {
		out.DropParams = over.DropParams
	}
	if over.Limits != nil {
		out.Limits = over.Limits
	}
	if over.Price != nil {
		out.Price = over.Price
	}
	if over.CreditExpires != "" {
		out.CreditExpires = over.CreditExpires
	}
	return out
}

// fillCatalog returns c with every provider that names a catalog entry
// completed from the entry: what the provider leaves out (kind, tier,
// base_url, models, limits, the key's variables) comes from the catalog,
// and what it gives wins. c itself is not changed, so a stored
// configuration keeps only what the user gave and follows a newer catalog.
//
// Outside verbatim mode a key left out is read from the entry's key
// variables and the base URL's placeholders are expanded from the
// environment.
func (d *decoder) fillCatalog(c *Config, cat *catalog.Catalog) *Config {
	if cat == nil || !slices.ContainsFunc(c.Providers, func(p Provider) bool { return p.Catalog != "" }) {
		return c
	}
	out := *c
	out.Providers = slices.Clone(c.Providers)
	for i := range out.Providers {
		p := &out.Providers[i]
		if p.Catalog == "" {
			continue
		}
		f := fmt.Sprintf("providers[%d]", i)
		e, ok := cat.Provider(p.Catalog)
		if !ok {
			d.fail(f+".catalog", d.lines[f+".catalog"], "names no provider of the catalog (%s): %q; known ones: %s",
				cat.Date, p.Catalog, strings.Join(catalogIDs(cat), ", "))
			continue
		}
		d.fillProvider(p, e, f)
		if e.KeyTerms != "" && len(p.Pool()) > 1 {
			d.problems = append(d.problems, Problem{Warning: true, Line: d.lines[f+".api_keys"], Field: f + ".api_keys", Message: fmt.Sprintf("holds %d keys of %s, whose terms do not allow spreading requests over several keys: %s", len(p.Pool()), e.Name, e.KeyTerms)})
		}
	}
	return &out
}

func (d *decoder) fillProvider(p *Provider, e *catalog.Provider, f string) {
	if p.Name == "" {
		p.Name = e.ID
	}
	if p.Kind == "" {
		p.Kind = e.Dialect
	}
	if p.Tier == "" {
		p.Tier = e.Tier.Tier()
	}
	if e.Tier == tier.OfferLocal && p.APIKey == "" {
		p.Keyless = true
	}
	var missing []string
	if p.BaseURL == "" {
		p.BaseURL, missing = d.catalogURL(e)
	}
	if p.Limits == nil {
		p.Limits = limitsOf(e.Limits)
	}
	// The catalog's models come first, in its order, with what the
	// configuration says about each laid over them; models only the
	// configuration names follow.
	models := make([]Model, 0, len(e.Models)+len(p.Models))
	for _, m := range e.Models {
		cm := catalogModel(m)
		if j := slices.IndexFunc(p.Models, func(o Model) bool { return o.ID == m.ID }); j >= 0 {
			cm = mergeModel(cm, p.Models[j])
		}
		models = append(models, cm)
	}
	for _, m := range p.Models {
		if !slices.ContainsFunc(e.Models, func(c catalog.Model) bool { return c.ID == m.ID }) {
			models = append(models, m)
		}
	}
	p.Models = models
	defer func() {
		// A base URL missing its account id cannot be called: the
		// provider waits for the variable as it would for its key.
		if len(missing) > 0 && !d.verbatim {
			p.APIKey = ""
			d.envUnset[f+".api_key"] = append(d.envUnset[f+".api_key"], missing...)
		}
	}()
	// A stored document writes api_key: "" for a key it does not hold,
	// so an empty value counts as none given.
	if p.Keyless || p.APIKey != "" || len(e.KeyEnv) == 0 {
		return
	}
	// No key given: the catalog's variables are where it is read from.
	p.APIKeyEnv = slices.Clone(e.KeyEnv)
	if d.verbatim {
		return
	}
	for _, name := range e.KeyEnv {
		if v, ok := d.lookupEnv(name); ok && v != "" {
			p.APIKey, p.APIKeyEnv = v, []string{name}
			return
		}
	}
	d.envUnset[f+".api_key"] = slices.Clone(e.KeyEnv)
}

// catalogURL is the entry's base URL, its placeholders expanded from the
// environment outside verbatim mode, and the placeholders' variables that
// are not set.
func (d *decoder) catalogURL(e *catalog.Provider) (string, []string) {
	if d.verbatim || len(e.Placeholders) == 0 {
		return e.BaseURL, nil
	}
	u := e.BaseURL
	var missing []string
	for _, name := range e.Placeholders {
		v, _ := d.lookupEnv(name)
		u = strings.ReplaceAll(u, "${"+name+"}", v)
		if v == "" {
			missing = append(missing, name)
		}
	}
	return u, missing
}

func catalogIDs(cat *catalog.Catalog) []string {
	ids := make([]string, 0, len(cat.Providers))
	for _, p := range cat.Providers {
		ids = append(ids, p.ID)
	}
	return ids
}

// Fill returns c with every provider that names a catalog entry completed
// from cat, keeping ${NAME} references as written: what the dashboard
// shows of a stored configuration. c is not changed.
func Fill(c *Config, cat *catalog.Catalog) *Config {
	d := newDecoder(nil)
	d.verbatim = true
	return d.fillCatalog(c, cat)
}
