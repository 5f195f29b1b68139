package control

import (
	"maps"
	"net/http"
	"strings"

	"freelane/backend/config"
)

// Planned is a provider as an add or an edit would leave it, worked out
// without storing anything, so that its key can be tried before the change
// is made. Both providers are effective: references expanded and the key
// filled in. Planned holds secrets; it is never sent or logged.
type Planned struct {
	// After is the provider as the change leaves it.
	After config.Provider
	// Before is the provider as it is now; nil for an add.
	Before *config.Provider
}

// Reaches reports whether the change sends the provider's requests, with
// its credentials, somewhere they did not go before: a new provider, or an
// edit of its kind, base URL, headers, key or whether it needs one. The
// key of such a provider is worth trying before the change is stored.
func (p Planned) Reaches() bool {
	if p.Before == nil {
		return true
	}
	b, a := p.Before, &p.After
	return b.Kind != a.Kind || strings.TrimRight(b.BaseURL, "/") != strings.TrimRight(a.BaseURL, "/") ||
		b.APIKey != a.APIKey || b.Keyless != a.Keyless || !maps.Equal(b.Headers, a.Headers)
}

// PlanAdd works out the provider AddProvider would add for in, with the
// same checks and errors, and stores nothing.
func (c *Control) PlanAdd(in ProviderInput) (Planned, error) {
	name, add, err := c.adding(in)
	if err != nil {
		return Planned{}, err
	}
	eff, err := c.dryRun(add)
	if err != nil {
		return Planned{}, scoped(err, "providers[")
	}
	p, _ := eff.Provider(name)
	if p == nil {
		return Planned{}, userErr(http.StatusBadRequest, "name", "there is no provider %q after the change", name)
	}
	return Planned{After: *p}, nil
}

// PlanUpdate works out the provider UpdateProvider would leave for in,
// with the same checks and errors, and stores nothing.
func (c *Control) PlanUpdate(name string, in ProviderInput) (Planned, error) {
	if err := renaming(name, in); err != nil {
		return Planned{}, err
	}
	c.mu.Lock()
	now, err := c.effective(c.doc)
	c.mu.Unlock()
	if err != nil {
		return Planned{}, err
	}
	eff, err := c.dryRun(c.changing(name, in))
	if err != nil {
		return Planned{}, scoped(err, "providers[")
	}
	before, _ := now.Provider(name)
	after, _ := eff.Provider(name)
	if before == nil || after == nil {
		return Planned{}, userErr(http.StatusNotFound, "name", "there is no provider %q", name)
	}
	return Planned{After: *after, Before: before}, nil
}

// renaming refuses an edit that would rename the provider name.
func renaming(name string, in ProviderInput) error {
	if n := strings.TrimSpace(in.Name); in.has("name") && n != "" && n != name {
		return userErr(http.StatusBadRequest, "name", "a provider cannot be renamed; add a new one and delete %q", name)
	}
	return nil
}

// dryRun validates the change fn makes as update would, and returns the
// effective configuration it would install; nothing is stored or
// installed, and the keys stay as they are.
func (c *Control) dryRun(fn func(doc *config.Config) error) (*config.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := maps.Clone(c.keys)
	defer func() { c.keys = keys }()
	_, eff, err := c.prepareLocked("", fn)
	return eff, err
}
