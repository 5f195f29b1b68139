package control

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"freelane/backend/config"
	"freelane/backend/vault"
)

// ModelSpec is a model as the API shows and accepts it.
type ModelSpec struct {
	ID        string  `json:"id"`
	ParamsB   float64 `json:"params_b"`
	Context   int     `json:"context"`
	MaxOutput int     `json:"max_output"`
	// Limits, Price and CreditExpires are shown always; on input, absent
	// (nil) keeps what the model had.
	Limits        *LimitsJSON `json:"limits,omitempty"`
	Price         *PriceJSON  `json:"price,omitempty"`
	CreditExpires *string     `json:"credit_expires,omitempty"`
}

// Timeouts are durations written like "10s".
type Timeouts struct {
	Connect    string `json:"connect"`
	Header     string `json:"header"`
	FirstToken string `json:"first_token"`
	Idle       string `json:"idle"`
}

// KeyInfo describes a provider's key without revealing it.
type KeyInfo struct {
	Set    bool     `json:"set"`
	Masked string   `json:"masked"`
	Source string   `json:"source"`
	Env    []string `json:"env"`
}

// ProviderView is a provider as the dashboard shows it.
type ProviderView struct {
	Name     string            `json:"name"`
	Kind     string            `json:"kind"`
	Tier     string            `json:"tier"`
	Default  bool              `json:"default"`
	BaseURL  string            `json:"base_url"`
	Keyless  bool              `json:"keyless"`
	Disabled bool              `json:"disabled"`
	Probe    bool              `json:"probe"`
	Headers  map[string]string `json:"headers"`
	Key      KeyInfo           `json:"key"`
	Models   []ModelSpec       `json:"models"`
	Timeouts Timeouts          `json:"timeouts"`
	Limits   LimitsJSON        `json:"limits"`
}

// ProviderInput is what the dashboard sends to add or change a provider.
type ProviderInput struct {
	Name     string            `json:"name"`
	Kind     string            `json:"kind"`
	Tier     string            `json:"tier"`
	Default  bool              `json:"default"`
	BaseURL  string            `json:"base_url"`
	Keyless  bool              `json:"keyless"`
	Disabled bool              `json:"disabled"`
	Probe    *bool             `json:"probe"`
	Headers  map[string]string `json:"headers"`
	Models   []ModelSpec       `json:"models"`
	Timeouts Timeouts          `json:"timeouts"`
	// Limits, when given, replace the provider's limits; nil keeps them.
	Limits *LimitsJSON `json:"limits"`
	// APIKey is write-only; nil leaves the stored key alone.
	APIKey *string `json:"api_key"`
}

// Settings are the global settings the dashboard edits.
type Settings struct {
	Breaker struct {
		Failures          int     `json:"failures"`
		Open              string  `json:"open"`
		RateLimitCooldown string  `json:"rate_limit_cooldown"`
		HealthThreshold   float64 `json:"health_threshold"`
	} `json:"breaker"`
	Probes struct {
		Interval     string `json:"interval"`
		OpenInterval string `json:"open_interval"`
		Daily        string `json:"daily"`
		Disabled     bool   `json:"disabled"`
	} `json:"probes"`
	MaxBodyMB int `json:"max_body_mb"`
}

func dur(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func parseDur(param, s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, userErr(http.StatusBadRequest, param, "%s must be a duration like 10s or 2m, got %q", param, s)
	}
	return d, nil
}

// Providers lists the providers with their key state.
func (c *Control) Providers() []ProviderView {
	c.mu.Lock()
	defer c.mu.Unlock()
	eff, err := c.effective(c.doc)
	if err != nil {
		eff = c.doc
	}
	out := make([]ProviderView, 0, len(eff.Providers))
	for _, p := range eff.Providers {
		out = append(out, c.view(p))
	}
	return out
}

func (c *Control) view(p config.Provider) ProviderView {
	v := ProviderView{
		Name: p.Name, Kind: p.Kind, Tier: p.Tier, Default: p.Default, BaseURL: p.BaseURL, Keyless: p.Keyless,
		Disabled: p.Disabled, Probe: p.Probed(), Headers: p.Headers,
		Timeouts: Timeouts{Connect: dur(p.Timeouts.Connect), Header: dur(p.Timeouts.Header), FirstToken: dur(p.Timeouts.FirstToken), Idle: dur(p.Timeouts.Idle)},
	}
	if v.Headers == nil {
		v.Headers = map[string]string{}
	}
	for _, m := range p.Models {
		lim, credit := limitsJSON(m.Limits), m.CreditExpires
		v.Models = append(v.Models, ModelSpec{ID: m.ID, ParamsB: m.ParamsB, Context: m.Context, MaxOutput: m.MaxOutput,
			Limits: &lim, Price: priceJSON(m.Price), CreditExpires: &credit})
	}
	v.Limits = limitsJSON(p.Limits)
	v.Key = KeyInfo{Env: append([]string{}, p.APIKeyEnv...), Source: SourceNone}
	switch k, stored := c.keys[p.Name]; {
	case p.Keyless:
		v.Key.Source = SourceKeyless
	case stored && k.Source == SourceDashboard:
		v.Key.Source = SourceDashboard
	case p.APIKey != "" && len(p.APIKeyEnv) > 0 && (!stored || c.envSet(p.APIKeyEnv)):
		v.Key.Source = SourceEnv
	case stored:
		v.Key.Source = k.Source
	}
	if p.APIKey != "" {
		v.Key.Set, v.Key.Masked = true, vault.Mask(p.APIKey)
	}
	return v
}

func (c *Control) envSet(names []string) bool {
	for _, n := range names {
		if v, ok := c.lookup(n); ok && v != "" {
			return true
		}
	}
	return false
}

// Provider returns one provider's view.
func (c *Control) Provider(name string) (ProviderView, error) {
	for _, p := range c.Providers() {
		if p.Name == name {
			return p, nil
		}
	}
	return ProviderView{}, userErr(http.StatusNotFound, "name", "there is no provider %q", name)
}

func toProvider(in ProviderInput) (config.Provider, error) {
	p := config.Provider{
		Name: strings.TrimSpace(in.Name), Kind: in.Kind, Tier: in.Tier, Default: in.Default,
		BaseURL: strings.TrimSpace(in.BaseURL), Keyless: in.Keyless, Disabled: in.Disabled, Probe: in.Probe, Headers: in.Headers,
	}
	for _, m := range in.Models {
		cm := config.Model{ID: strings.TrimSpace(m.ID), ParamsB: m.ParamsB, Context: m.Context, MaxOutput: m.MaxOutput,
			Limits: toLimits(m.Limits)}
		if m.Price != nil && (m.Price.Input != 0 || m.Price.Output != 0) {
			cm.Price = &config.Price{Input: m.Price.Input, Output: m.Price.Output}
		}
		if m.CreditExpires != nil {
			cm.CreditExpires = strings.TrimSpace(*m.CreditExpires)
		}
		p.Models = append(p.Models, cm)
	}
	p.Limits = toLimits(in.Limits)
	var err error
	for _, f := range []struct {
		param string
		in    string
		out   *time.Duration
	}{
		{"timeouts.connect", in.Timeouts.Connect, &p.Timeouts.Connect},
		{"timeouts.header", in.Timeouts.Header, &p.Timeouts.Header},
		{"timeouts.first_token", in.Timeouts.FirstToken, &p.Timeouts.FirstToken},
		{"timeouts.idle", in.Timeouts.Idle, &p.Timeouts.Idle},
	} {
		if *f.out, err = parseDur(f.param, f.in); err != nil {
			return p, err
		}
	}
	return p, nil
}

// AddProvider adds a provider, with its key when one is given.
func (c *Control) AddProvider(ctx context.Context, in ProviderInput) (ProviderView, error) {
	p, err := toProvider(in)
	if err != nil {
		return ProviderView{}, err
	}
	if p.Name == "" {
		return ProviderView{}, userErr(http.StatusBadRequest, "name", "name is required")
	}
	err = c.update(ctx, "", func(doc *config.Config) error {
		if providerIndex(doc, p.Name) >= 0 {
			return userErr(http.StatusConflict, "name", "a provider named %q already exists", p.Name)
		}
		doc.Providers = append(doc.Providers, p)
		return c.setKeyLocked(p.Name, in.APIKey)
	})
	if err != nil {
		return ProviderView{}, scoped(err, "providers[")
	}
	return c.Provider(p.Name)
}

// scoped strips "providers[N]." from a validation param for a one-provider
// form.
func scoped(err error, prefix string) error {
	if e, ok := err.(*Error); ok && strings.HasPrefix(e.Param, prefix) {
		if i := strings.Index(e.Param, "]."); i >= 0 {
			e.Param = e.Param[i+2:]
		}
	}
	return err
}

// UpdateProvider replaces a provider's settings (its name stays).
func (c *Control) UpdateProvider(ctx context.Context, name string, in ProviderInput) (ProviderView, error) {
	p, err := toProvider(in)
	if err != nil {
		return ProviderView{}, err
	}
	if p.Name != "" && p.Name != name {
		return ProviderView{}, userErr(http.StatusBadRequest, "name", "a provider cannot be renamed; add a new one and delete %q", name)
	}
	p.Name = name
	err = c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, name)
		if i < 0 {
			return userErr(http.StatusNotFound, "name", "there is no provider %q", name)
		}
		p.APIKey = doc.Providers[i].APIKey // keep an environment reference
		keepQuota(&p, doc.Providers[i], in)
		doc.Providers[i] = p
		return c.setKeyLocked(name, in.APIKey)
	})
	if err != nil {
		return ProviderView{}, scoped(err, "providers[")
	}
	return c.Provider(name)
}

// SetDisabled enables or disables a provider.
func (c *Control) SetDisabled(ctx context.Context, name string, disabled bool) (ProviderView, error) {
	err := c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, name)
		if i < 0 {
			return userErr(http.StatusNotFound, "name", "there is no provider %q", name)
		}
		doc.Providers[i].Disabled = disabled
		return nil
	})
	if err != nil {
		return ProviderView{}, err
	}
	return c.Provider(name)
}

// DeleteProvider removes a provider, its key, and its backends from every
// chain (a chain left empty goes too).
func (c *Control) DeleteProvider(ctx context.Context, name string) error {
	return c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, name)
		if i < 0 {
			return userErr(http.StatusNotFound, "name", "there is no provider %q", name)
		}
		doc.Providers = slices.Delete(doc.Providers, i, i+1)
		delete(c.keys, name)
		chains := doc.Chains[:0]
		for _, ch := range doc.Chains {
			ch.Backends = slices.DeleteFunc(ch.Backends, func(ref string) bool { return strings.HasPrefix(ref, name+"/") })
			if len(ch.Backends) > 0 {
				chains = append(chains, ch)
			}
		}
		doc.Chains = chains
		return nil
	})
}

// SetKey stores (or with nil/empty, removes) the dashboard key of a provider.
func (c *Control) SetKey(ctx context.Context, name string, key *string) (ProviderView, error) {
	err := c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, name)
		if i < 0 {
			return userErr(http.StatusNotFound, "name", "there is no provider %q", name)
		}
		if key != nil && strings.TrimSpace(*key) != "" && doc.Providers[i].Keyless {
			// A key for a keyless server means it wants one after all.
			doc.Providers[i].Keyless = false
		}
		if key == nil {
			empty := ""
			key = &empty
		}
		return c.setKeyLocked(name, key)
	})
	if err != nil {
		return ProviderView{}, err
	}
	return c.Provider(name)
}

// setKeyLocked seals key for provider; "" removes it, nil leaves it.
func (c *Control) setKeyLocked(provider string, key *string) error {
	if key == nil {
		return nil
	}
	k := strings.TrimSpace(*key)
	if k == "" {
		delete(c.keys, provider)
		return nil
	}
	if strings.ContainsAny(k, " \t\r\n") {
		return userErr(http.StatusBadRequest, "api_key", "the key contains spaces or line breaks; paste the key alone")
	}
	c.keys[provider] = sealedKey{Sealed: c.vault.Seal(k, provider), Source: SourceDashboard}
	return nil
}

// ChainInput edits a chain; nil fields stay as they are.
type ChainInput struct {
	Name     *string   `json:"name"`
	Backends *[]string `json:"backends"`
	Strategy *string   `json:"strategy"`
}

func checkStrategy(s *string) error {
	if s != nil && *s != "" && *s != "ordered" {
		return userErr(http.StatusBadRequest, "strategy", "strategy must be \"ordered\" (the only one so far), got %q", *s)
	}
	return nil
}

// CreateChain adds a chain.
func (c *Control) CreateChain(ctx context.Context, name string, backends []string, strategy *string) error {
	if err := checkStrategy(strategy); err != nil {
		return err
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return userErr(http.StatusBadRequest, "name", "name is required")
	}
	return scoped(c.update(ctx, "", func(doc *config.Config) error {
		if chainIndex(doc, name) >= 0 {
			return userErr(http.StatusConflict, "name", "a chain named %q already exists", name)
		}
		doc.Chains = append(doc.Chains, config.Chain{Name: name, Backends: backends})
		return nil
	}), "chains[")
}

// UpdateChain renames a chain or sets its backends. The generated auto
// chain becomes a user chain the first time it is edited; autoOrder is its
// current order, used when only a rename is asked.
func (c *Control) UpdateChain(ctx context.Context, name string, in ChainInput, autoOrder []string) error {
	if err := checkStrategy(in.Strategy); err != nil {
		return err
	}
	return scoped(c.update(ctx, "", func(doc *config.Config) error {
		i := chainIndex(doc, name)
		if i < 0 {
			if name != "auto" {
				return userErr(http.StatusNotFound, "name", "there is no chain %q", name)
			}
			doc.Chains = append(doc.Chains, config.Chain{Name: "auto", Backends: autoOrder})
			i = len(doc.Chains) - 1
		}
		if in.Backends != nil {
			if len(*in.Backends) == 0 {
				return userErr(http.StatusBadRequest, "backends", "a chain needs at least one backend; delete the chain instead")
			}
			doc.Chains[i].Backends = *in.Backends
		}
		if in.Name != nil && *in.Name != name {
			if chainIndex(doc, *in.Name) >= 0 {
				return userErr(http.StatusConflict, "name", "a chain named %q already exists", *in.Name)
			}
			doc.Chains[i].Name = strings.TrimSpace(*in.Name)
		}
		return nil
	}), "chains[")
}

// DeleteChain removes a chain. Deleting "auto" hands it back to FreeLane.
func (c *Control) DeleteChain(ctx context.Context, name string) error {
	return c.update(ctx, "", func(doc *config.Config) error {
		i := chainIndex(doc, name)
		if i < 0 {
			return userErr(http.StatusNotFound, "name", "there is no chain %q", name)
		}
		doc.Chains = slices.Delete(doc.Chains, i, i+1)
		if doc.DefaultChain == name {
			// auto goes back to FreeLane's own chain rather than
			// pointing at nothing.
			doc.DefaultChain = ""
		}
		return nil
	})
}

// SetDefaultChain makes the model name "auto" route to the named chain;
// "auto" or "" gives auto back to FreeLane's own chain of every backend.
func (c *Control) SetDefaultChain(ctx context.Context, name string) error {
	if name == "auto" {
		name = ""
	}
	return c.update(ctx, "", func(doc *config.Config) error {
		if name != "" && chainIndex(doc, name) < 0 {
			return userErr(http.StatusNotFound, "name", "there is no chain %q", name)
		}
		doc.DefaultChain = name
		return nil
	})
}

// DefaultChain names the chain "auto" routes to, "" for FreeLane's own.
func (c *Control) DefaultChain() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.doc.DefaultChain
}

// UserChain reports whether the document defines the chain (false for the
// generated auto chain).
func (c *Control) UserChain(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return chainIndex(c.doc, name) >= 0
}

// Settings returns the global settings.
func (c *Control) Settings() Settings {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s Settings
	b, p := c.doc.Breaker, c.doc.Probes
	s.Breaker.Failures, s.Breaker.Open, s.Breaker.RateLimitCooldown, s.Breaker.HealthThreshold = b.Failures, dur(b.Open), dur(b.RateLimitCooldown), b.HealthThreshold
	s.Probes.Interval, s.Probes.OpenInterval, s.Probes.Daily, s.Probes.Disabled = dur(p.Interval), dur(p.OpenInterval), dur(p.Daily), p.Disabled
	s.MaxBodyMB = c.doc.MaxBodyMB
	return s
}

// SetSettings replaces the global settings.
func (c *Control) SetSettings(ctx context.Context, s Settings) error {
	var b config.Breaker
	var p config.Probes
	var err error
	b.Failures, b.HealthThreshold = s.Breaker.Failures, s.Breaker.HealthThreshold
	for _, f := range []struct {
		param, in string
		out       *time.Duration
	}{
		{"breaker.open", s.Breaker.Open, &b.Open},
		{"breaker.rate_limit_cooldown", s.Breaker.RateLimitCooldown, &b.RateLimitCooldown},
		{"probes.interval", s.Probes.Interval, &p.Interval},
		{"probes.open_interval", s.Probes.OpenInterval, &p.OpenInterval},
		{"probes.daily", s.Probes.Daily, &p.Daily},
	} {
		if *f.out, err = parseDur(f.param, f.in); err != nil {
			return err
		}
	}
	p.Disabled = s.Probes.Disabled
	if b.Failures < 1 {
		return userErr(http.StatusBadRequest, "breaker.failures", "breaker.failures must be at least 1, got %d", b.Failures)
	}
	if s.MaxBodyMB < 1 || s.MaxBodyMB > config.MaxMaxBodyMB {
		return userErr(http.StatusBadRequest, "max_body_mb", "max_body_mb must be between 1 and %d, got %d", config.MaxMaxBodyMB, s.MaxBodyMB)
	}
	return c.update(ctx, "", func(doc *config.Config) error {
		doc.Breaker, doc.Probes, doc.MaxBodyMB = b, p, s.MaxBodyMB
		return nil
	})
}

// String describes the control plane for logs.
func (c *Control) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d providers, %d chains, %d stored keys", len(c.doc.Providers), len(c.doc.Chains), len(c.keys))
}

// keepQuota carries limits, prices and credits over from the stored
// provider where the edit did not send them: a form that knows nothing of
// budgets must not wipe them.
func keepQuota(p *config.Provider, old config.Provider, in ProviderInput) {
	if in.Limits == nil {
		p.Limits = old.Limits
	}
	for j := range p.Models {
		m := &p.Models[j]
		var spec ModelSpec
		if j < len(in.Models) {
			spec = in.Models[j]
		}
		for _, om := range old.Models {
			if om.ID != m.ID {
				continue
			}
			if spec.Limits == nil {
				m.Limits = om.Limits
			}
			if spec.Price == nil {
				m.Price = om.Price
			}
			if spec.CreditExpires == nil {
				m.CreditExpires = om.CreditExpires
			}
		}
	}
}
