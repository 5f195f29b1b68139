package control

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"freelane/backend/catalog"
	"freelane/backend/config"
)

// AddressBook keeps the user's answers to the addresses a newer catalog
// gives, across starts.
type AddressBook interface {
	Load() (catalog.Decisions, error)
	Save(catalog.Decisions) error
}

// memoryBook keeps decisions for one run only.
type memoryBook struct{ d catalog.Decisions }

func (m *memoryBook) Load() (catalog.Decisions, error) { return m.d.Clone(), nil }
func (m *memoryBook) Save(d catalog.Decisions) error   { m.d = d.Clone(); return nil }

// CatalogChange is an address a newer catalog gives a provider that the
// user has not confirmed: until then the provider keeps the address in
// use, and a provider new in the catalog is not offered.
type CatalogChange struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// From is the address in use, "" for a provider new in the catalog.
	From string `json:"from"`
	// To is the address the newer catalog gives.
	To string `json:"to"`
	// FromKeyEnv and ToKeyEnv are the variables the key is read from now
	// and with the change; a catalog that changes them moves a key too.
	FromKeyEnv []string `json:"from_key_env"`
	ToKeyEnv   []string `json:"to_key_env"`
	// New is set for a provider the catalog adds.
	New bool `json:"new"`
	// HasKey is set when the provider has a key (stored, or set in the
	// environment): its key was given for From, so the move cannot be
	// confirmed; Refused says why in words.
	HasKey  bool   `json:"has_key"`
	Refused string `json:"refused"`
}

// openAddresses sets the catalog in use from the newer catalog o gives,
// holding every address the user has not confirmed. names are the catalog
// entries the configuration names: one new in the catalog that the
// configuration already uses (added before addresses were confirmed, or
// named in the config file) is taken as confirmed at its address now,
// since the user chose it.
func (c *Control) openAddresses(o Options, names []string) error {
	c.builtIn = o.BuiltIn
	if c.builtIn == nil {
		c.builtIn = catalog.Embedded()
	}
	c.newer = o.Catalog
	if c.newer == nil {
		c.newer = c.builtIn
	}
	c.book = o.Addresses
	if c.book == nil {
		c.book = &memoryBook{}
	}
	d, err := c.book.Load()
	if err != nil {
		c.log.Warn("the confirmed catalog addresses cannot be read; the built-in catalog's addresses are used until you confirm again", "err", err)
		d = catalog.Decisions{}
	}
	c.decisions = d
	c.cat, c.changes = catalog.Hold(c.newer, c.builtIn, c.decisions)
	adopted := false
	for _, ch := range c.changes {
		if ch.New() && slices.Contains(names, ch.ID) {
			c.decisions.Confirm(ch.ID, ch.To)
			adopted = true
			c.log.Info("the configuration uses a provider of the catalog file that the built-in catalog lacks; its address is taken as confirmed", "provider", ch.ID, "base_url", ch.To.BaseURL)
		}
	}
	if adopted {
		if err := c.book.Save(c.decisions); err != nil {
			return fmt.Errorf("control: keeping the confirmed catalog addresses: %w", err)
		}
		c.cat, c.changes = catalog.Hold(c.newer, c.builtIn, c.decisions)
	}
	for _, ch := range c.changes {
		if ch.New() {
			c.log.Warn("the catalog adds a provider whose address you have not confirmed; it is not offered until you confirm it in the dashboard (Providers, Add from catalog)", "provider", ch.ID, "base_url", ch.To.BaseURL)
			continue
		}
		c.log.Warn("the catalog gives a provider an address you have not confirmed; the confirmed one is used until you confirm the new one in the dashboard (Providers, Add from catalog)",
			"provider", ch.ID, "in_use", ch.From.BaseURL, "catalog", ch.To.BaseURL)
	}
	return nil
}

// catalogNames lists the catalog entries the providers of a stored or
// seed document name, read loosely: the document is checked properly
// later, against the catalog in use.
func catalogNames(raw []byte, seed *config.Config) []string {
	var names []string
	var doc struct {
		Providers []struct {
			Catalog string `yaml:"catalog"`
		} `yaml:"providers"`
	}
	if len(raw) > 0 && yaml.Unmarshal(raw, &doc) == nil {
		for _, p := range doc.Providers {
			names = append(names, p.Catalog)
		}
	}
	if seed != nil {
		for _, p := range seed.Providers {
			names = append(names, p.Catalog)
		}
	}
	return slices.DeleteFunc(names, func(s string) bool { return s == "" })
}

// keyOf says where the catalog entry id's key comes from when a provider
// has one (stored, in the config, or its variable set in the
// environment), "" when none has. Called with c.mu held.
func (c *Control) keyOf(id string) string {
	if e, ok := c.newer.Provider(id); ok {
		if v := c.envValue(e.KeyEnv); v != "" {
			return v + " is set in the environment"
		}
	}
	if e, ok := c.cat.Provider(id); ok {
		if v := c.envValue(e.KeyEnv); v != "" {
			return v + " is set in the environment"
		}
	}
	for _, p := range c.doc.Providers {
		if p.Catalog != id || p.BaseURL != "" {
			// A provider with its own base_url does not follow the
			// catalog's address.
			continue
		}
		if _, ok := c.keys[p.Name]; ok {
			return "provider " + p.Name + " holds a key"
		}
		if p.APIKey != "" {
			if !config.HasRef(p.APIKey) {
				return "provider " + p.Name + " holds a key"
			}
			if name := strings.TrimSuffix(strings.TrimPrefix(p.APIKey, "${"), "}"); c.envValue([]string{name}) != "" {
				return name + " is set in the environment"
			}
		}
	}
	return ""
}

// checkMoves refuses a newer catalog that would change the address a
// provider with a key uses now, or that gives such a provider a new
// address: its key was given for the address in use. Providers new in the
// catalog have no address yet and are held instead. Called with c.mu held.
func (c *Control) checkMoves(newer, next *catalog.Catalog, d catalog.Decisions) error {
	for i := range newer.Providers {
		e := &newer.Providers[i]
		now, inUse := c.cat.Provider(e.ID)
		if !inUse {
			continue
		}
		key := c.keyOf(e.ID)
		if key == "" {
			continue
		}
		then, _ := next.Provider(e.ID)
		kept, declined := d.Kept[e.ID]
		movesTo := e.BaseURL != now.BaseURL && !(declined && kept.BaseURL == e.BaseURL)
		if movesTo || then == nil || then.BaseURL != now.BaseURL {
			return userErr(http.StatusConflict, "catalog", "the new catalog moves provider %q away from %s, the address its key was given for (%s), so the catalog is not used; to move it, remove the key (delete the provider, and unset the variable if it is set), load the catalog, confirm the new address, then add the key again",
				e.ID, now.BaseURL, key)
		}
	}
	return nil
}

// CatalogChanges lists the addresses of the catalog in use that wait for
// the user's answer.
func (c *Control) CatalogChanges() []CatalogChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]CatalogChange, 0, len(c.changes))
	for _, ch := range c.changes {
		v := CatalogChange{ID: ch.ID, Name: ch.Name, From: ch.From.BaseURL, To: ch.To.BaseURL, New: ch.New(),
			FromKeyEnv: nonNilStrings(ch.From.KeyEnv), ToKeyEnv: nonNilStrings(ch.To.KeyEnv)}
		if !v.New {
			if key := c.keyOf(ch.ID); key != "" {
				v.HasKey = true
				v.Refused = fmt.Sprintf("%s has a key (%s), given for %s; FreeLane does not send it to another address. To move it, delete the provider and unset the variable, confirm, then add the key again.", ch.Name, key, ch.From.BaseURL)
			}
		}
		out = append(out, v)
	}
	return out
}

// DecideAddress answers a held address: confirm puts it in use (for a new
// provider: offers it), otherwise the address in use is kept and the
// change is not asked about again. to is the address the user was shown,
// so an answer never applies to another catalog than the one seen. A
// move of a provider with a key is refused. The answer is kept for the
// next start.
func (c *Control) DecideAddress(ctx context.Context, id string, confirm bool, to string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.changes, func(ch catalog.Change) bool { return ch.ID == id })
	if i < 0 {
		return userErr(http.StatusNotFound, "id", "no address of the catalog waits for an answer for provider %q", id)
	}
	ch := c.changes[i]
	if ch.To.BaseURL != to {
		return userErr(http.StatusConflict, "to", "the catalog in use gives provider %q another address than the one answered; load the page again and look at the address shown", id)
	}
	if confirm && !ch.New() {
		if key := c.keyOf(id); key != "" {
			return userErr(http.StatusConflict, "id", "%s has a key (%s), given for %s; FreeLane does not send it to another address. To move it, delete the provider and unset the variable, confirm the new address, then add the key again",
				ch.Name, key, ch.From.BaseURL)
		}
	}
	if confirm {
		if other, v := c.othersVariable(id, ch.To); other != nil {
			return userErr(http.StatusConflict, "id", "the catalog has %s read %s, the key variable of %s at another address; FreeLane does not send one provider's key to another's address, so this cannot be confirmed",
				ch.Name, v, other.Name)
		}
	}
	d := c.decisions.Clone()
	if confirm {
		d.Confirm(id, ch.To)
	} else {
		d.Keep(id, ch.To)
	}
	if err := c.book.Save(d); err != nil {
		return fmt.Errorf("the answer could not be kept: %w", err)
	}
	oldCat, oldChanges, oldDecisions := c.cat, c.changes, c.decisions
	c.cat, c.changes = catalog.Hold(c.newer, c.builtIn, d)
	c.decisions = d
	if err := c.updateLocked(ctx, "", func(*config.Config) error { return nil }); err != nil {
		c.cat, c.changes, c.decisions = oldCat, oldChanges, oldDecisions
		if serr := c.book.Save(oldDecisions); serr != nil {
			c.log.Error("the confirmed catalog addresses could not be put back", "err", serr)
		}
		return err
	}
	return nil
}

// CatalogEntry is the entry id of the catalog in use; an entry new in a
// newer catalog whose address is not confirmed is not one yet.
func (c *Control) CatalogEntry(id string) (*catalog.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.cat.Provider(id); ok {
		return e, nil
	}
	if slices.ContainsFunc(c.changes, func(ch catalog.Change) bool { return ch.ID == id }) {
		return nil, userErr(http.StatusConflict, "id", "provider %q is new in the catalog and its address is not confirmed yet; confirm it first (Providers, Add from catalog)", id)
	}
	return nil, userErr(http.StatusNotFound, "id", "the catalog has no provider %q", id)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// othersVariable finds a key variable of to that another provider of the
// catalog in use (or of the built-in one) reads at another address, and
// that provider. Called with c.mu held.
func (c *Control) othersVariable(id string, to catalog.Address) (*catalog.Provider, string) {
	for _, cat := range []*catalog.Catalog{c.cat, c.builtIn} {
		for i := range cat.Providers {
			e := &cat.Providers[i]
			if e.ID == id || e.BaseURL == to.BaseURL {
				continue
			}
			for _, v := range to.KeyEnv {
				if slices.Contains(e.KeyEnv, v) {
					return e, v
				}
			}
		}
	}
	return nil, ""
}
