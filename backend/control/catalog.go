package control

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/tier"
)

// docAdopted names the state document listing the providers added because
// their key was found in the environment.
const docAdopted = "env_adopted"

// EnvKey is a key variable of the catalog found set in the environment.
type EnvKey struct {
	// Env is the variable, such as GROQ_API_KEY.
	Env string `json:"env"`
	// Provider is the provider that reads it.
	Provider string `json:"provider"`
	// Adopted is true when FreeLane added the provider because the
	// variable was set.
	Adopted bool `json:"adopted"`
}

// Catalog returns the catalog in use. It is shared: callers must not
// change it.
func (c *Control) Catalog() *catalog.Catalog {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cat
}

// envValue is the first of names set to a non-empty value.
func (c *Control) envValue(names []string) string {
	for _, n := range names {
		if v, ok := c.lookup(n); ok && v != "" {
			return n
		}
	}
	return ""
}

// standsFor reports whether a provider of doc already stands for the
// catalog entry e: it names the entry, has its id as its name, reads a
// key from one of its variables, or calls its address. Two entries at one
// address (a vendor's free and paid tiers) are one account, and one key
// is not picked up twice.
func standsFor(doc *config.Config, e *catalog.Provider, cat *catalog.Catalog) bool {
	filled := config.Fill(doc, cat)
	for _, p := range filled.Providers {
		if p.Catalog == e.ID || p.Name == e.ID || p.BaseURL == e.BaseURL {
			return true
		}
		for _, v := range p.APIKeyEnv {
			if slices.Contains(e.KeyEnv, v) {
				return true
			}
		}
	}
	return false
}

// adoptEnvKeys adds a provider for every catalog entry whose key variable
// (and every variable its address needs) is set and that no provider
// stands for yet, so a key in the environment is enough to start with.
// Providers it added at an earlier start whose variables are all gone now
// are removed again, unless the user has given them more since.
func (c *Control) adoptEnvKeys(ctx context.Context) error {
	if raw, ok, err := c.db.GetState(ctx, docAdopted); err != nil {
		return err
	} else if ok {
		if err := json.Unmarshal(raw, &c.adopted); err != nil {
			c.log.Warn("the list of providers picked up from the environment is damaged; starting it afresh", "err", err)
			c.adopted = nil
		}
	}
	var keep []string
	for _, name := range c.adopted {
		i := providerIndex(c.doc, name)
		if i < 0 {
			continue
		}
		p := c.doc.Providers[i]
		e, ok := c.cat.Provider(p.Catalog)
		_, pasted := c.keys[name]
		untouched := ok && p.BaseURL == "" && len(p.Models) == 0 && !pasted
		if untouched && c.envValue(e.KeyEnv) == "" && !referenced(c.doc, name) {
			c.doc.Providers = slices.Delete(c.doc.Providers, i, i+1)
			c.log.Info("provider removed: its key is no longer in the environment", "provider", name, "env", strings.Join(e.KeyEnv, " or "))
			continue
		}
		keep = append(keep, name)
	}
	c.adopted = keep
	if c.doc.PicksUpEnvKeys() {
		for i := range c.cat.Providers {
			e := &c.cat.Providers[i]
			if e.Tier == tier.OfferLocal || c.envValue(e.KeyEnv) == "" || standsFor(c.doc, e, c.cat) {
				continue
			}
			missing := false
			for _, ph := range e.Placeholders {
				missing = missing || c.envValue([]string{ph}) == ""
			}
			if missing {
				c.log.Warn("a key is set but the provider also needs "+strings.Join(e.Placeholders, ", "), "provider", e.ID)
				continue
			}
			c.doc.Providers = append(c.doc.Providers, config.Provider{Name: e.ID, Catalog: e.ID})
			c.adopted = append(c.adopted, e.ID)
			c.log.Info("provider added: its key is in the environment", "provider", e.ID, "env", c.envValue(e.KeyEnv))
		}
	}
	stored, err := c.clone(c.doc)
	if err != nil {
		return fmt.Errorf("control: adding the providers whose keys are in the environment: %w", err)
	}
	c.doc = stored
	raw, err := json.Marshal(c.adopted)
	if err != nil {
		return fmt.Errorf("control: encoding the adopted providers: %w", err)
	}
	return c.db.PutState(ctx, docAdopted, raw)
}

// referenced reports whether a chain or budget names the provider.
func referenced(doc *config.Config, name string) bool {
	for _, ch := range doc.Chains {
		for _, b := range ch.Backends {
			if p, _, ok := config.SplitRef(b); ok && p == name {
				return true
			}
		}
	}
	return slices.ContainsFunc(doc.Budgets, func(b config.Budget) bool { return b.Scope == "provider:"+name })
}

// EnvKeys lists the catalog's key variables set in the environment, each
// with the provider that reads it.
func (c *Control) EnvKeys() []EnvKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	filled := config.Fill(c.doc, c.cat)
	out := []EnvKey{}
	for _, p := range filled.Providers {
		if k, ok := c.keys[p.Name]; ok && k.Source == SourceDashboard {
			continue
		}
		if v := c.envValue(p.APIKeyEnv); v != "" {
			out = append(out, EnvKey{Env: v, Provider: p.Name, Adopted: slices.Contains(c.adopted, p.Name)})
		}
	}
	return out
}

// CatalogInput adds a provider from the catalog.
type CatalogInput struct {
	// Key is the API key; required unless the entry is a local server.
	Key string `json:"key"`
	// Values fill the entry's base URL placeholders, such as
	// CLOUDFLARE_ACCOUNT_ID.
	Values map[string]string `json:"values,omitempty"`
	// UnreachableOK is not stored: it answers the question an add asks
	// when the key cannot be checked because the provider cannot be
	// reached. True adds the provider all the same, its key not yet
	// checked; a key the provider refuses is refused whatever it says.
	UnreachableOK bool `json:"unreachable_ok,omitempty"`
}

// maxPlaceholderValue bounds a placeholder value: account ids are short.
const maxPlaceholderValue = 128

// CatalogBaseURL is the entry's base URL with its placeholders filled from
// values; every placeholder needs a value of URL-path characters.
func CatalogBaseURL(e *catalog.Provider, values map[string]string) (string, error) {
	u := e.BaseURL
	for _, name := range e.Placeholders {
		v := strings.TrimSpace(values[name])
		switch {
		case v == "":
			return "", userErr(http.StatusBadRequest, "values."+name, "%s needs %s (it is part of the address)", e.Name, name)
		case len(v) > maxPlaceholderValue || url.PathEscape(v) != v:
			return "", userErr(http.StatusBadRequest, "values."+name, "%s must be letters, digits, '-' or '_' (at most %d), got %q", name, maxPlaceholderValue, v)
		}
		u = strings.ReplaceAll(u, "${"+name+"}", v)
	}
	for name := range values {
		if !slices.Contains(e.Placeholders, name) {
			return "", userErr(http.StatusBadRequest, "values."+name, "%s takes no value %s; it takes %s", e.Name, name, strings.Join(append(e.Placeholders, "nothing else"), ", "))
		}
	}
	return u, nil
}

// AddFromCatalog adds the catalog entry id as a provider with the key in,
// named after the entry (with a number when that name is taken). Models
// are extra models to serve besides the catalog's, such as those the
// provider's own model list names when the catalog lists none. The key
// is not checked here; the caller verifies it first.
func (c *Control) AddFromCatalog(ctx context.Context, id string, in CatalogInput, models []config.Model) (ProviderView, error) {
	e, err := c.CatalogEntry(id)
	if err != nil {
		return ProviderView{}, err
	}
	p := config.Provider{Catalog: e.ID, Models: models}
	if len(e.Placeholders) > 0 {
		u, err := CatalogBaseURL(e, in.Values)
		if err != nil {
			return ProviderView{}, err
		}
		p.BaseURL = config.Escape(u)
	} else if len(in.Values) > 0 {
		if _, err := CatalogBaseURL(e, in.Values); err != nil {
			return ProviderView{}, err
		}
	}
	key := strings.TrimSpace(in.Key)
	if key == "" && e.Tier != tier.OfferLocal {
		return ProviderView{}, userErr(http.StatusBadRequest, "key", "paste the key from %s", cmp.Or(e.SignupURL, e.Name))
	}
	if len(models) == 0 && len(e.Models) == 0 {
		return ProviderView{}, userErr(http.StatusBadRequest, "key", "%s lists no models for this key, so there is nothing to serve", e.Name)
	}
	var name string
	err = c.update(ctx, "", func(doc *config.Config) error {
		name = e.ID
		for n := 2; providerIndex(doc, name) >= 0; n++ {
			name = fmt.Sprintf("%s-%d", e.ID, n)
		}
		p.Name = name
		// Among the providers from the catalog, the new one takes its
		// place in the catalog's order, which is the order the free pool
		// tries providers whose models are the same size.
		at := len(doc.Providers)
		rank := c.catalogRank(e.ID)
		for i, q := range doc.Providers {
			if q.Catalog != "" && c.catalogRank(q.Catalog) > rank {
				at = i
				break
			}
		}
		doc.Providers = slices.Insert(doc.Providers, at, p)
		return c.setKeyLocked(name, &key)
	})
	if err != nil {
		return ProviderView{}, scoped(err, "providers[")
	}
	return c.Provider(name)
}

// catalogRank is the entry's place in the catalog; entries it lacks come
// last.
func (c *Control) catalogRank(id string) int {
	i := slices.IndexFunc(c.cat.Providers, func(p catalog.Provider) bool { return p.ID == id })
	if i < 0 {
		return len(c.cat.Providers)
	}
	return i
}

// EnvSet returns the first of names set to a non-empty value in the
// environment FreeLane reads keys from, "" when none is.
func (c *Control) EnvSet(names []string) string { return c.envValue(names) }

// AddModels adds models to a provider (those its model list names that it
// did not serve yet); models it has already are left as they are.
func (c *Control) AddModels(ctx context.Context, provider string, models []config.Model) error {
	return c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, provider)
		if i < 0 {
			return userErr(http.StatusNotFound, "name", "there is no provider %q", provider)
		}
		filled := config.Fill(doc, c.cat)
		for _, m := range models {
			if !slices.ContainsFunc(filled.Providers[i].Models, func(o config.Model) bool { return o.ID == m.ID }) {
				doc.Providers[i].Models = append(doc.Providers[i].Models, m)
			}
		}
		return nil
	})
}

// SetCatalog puts a newer catalog in use, with every address it gives
// that the user has not confirmed held (see CatalogChanges). It is
// refused, and the old one stays, when the configuration does not hold
// with it (a provider names an entry it lacks) or when it would move a
// provider with a key (stored, or set in the environment) to another
// address than the one the key was given for.
func (c *Control) SetCatalog(ctx context.Context, cat *catalog.Catalog) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	next, changes := catalog.Hold(cat, c.builtIn, c.decisions)
	if err := c.checkMoves(cat, next, c.decisions); err != nil {
		return err
	}
	oldCat, oldNewer, oldChanges := c.cat, c.newer, c.changes
	c.cat, c.newer, c.changes = next, cat, changes
	if err := c.updateLocked(ctx, "", func(*config.Config) error { return nil }); err != nil {
		c.cat, c.newer, c.changes = oldCat, oldNewer, oldChanges
		// The validator's own message may quote the new catalog (its
		// entries, its models); this one names only the configuration.
		for _, p := range c.doc.Providers {
			if _, ok := next.Provider(p.Catalog); p.Catalog != "" && !ok {
				return userErr(http.StatusConflict, "catalog", "the configuration does not hold with the new catalog: it lacks the entry %q that provider %q is made from, so the catalog is not used", p.Catalog, p.Name)
			}
		}
		if ue, ok := errors.AsType[*Error](err); ok {
			return userErr(http.StatusConflict, "catalog", "the configuration does not hold with the new catalog (at %s), so the catalog is not used", ue.Param)
		}
		return fmt.Errorf("the configuration does not hold with the new catalog: %w", err)
	}
	return nil
}
