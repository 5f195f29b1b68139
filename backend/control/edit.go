package control

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"freelane/backend/config"
	"freelane/backend/tier"
	"freelane/backend/vault"
)

// ModelSpec is a model as the API shows and accepts it. On an edit, an entry
// whose id the provider already serves starts from the stored model, so the
// keys it leaves out keep their stored values (see ProviderInput).
type ModelSpec struct {
	ID        string  `json:"id"`
	ParamsB   float64 `json:"params_b"`
	Context   int     `json:"context"`
	MaxOutput int     `json:"max_output"`
	// Limits and CreditExpires are always shown, Price when the model has
	// one. On input, absent or null (nil) keeps what the model had; all
	// zero limits, a zero price or an empty date removes them.
	Limits        *LimitsJSON `json:"limits,omitempty"`
	Price         *PriceJSON  `json:"price,omitempty"`
	CreditExpires *string     `json:"credit_expires,omitempty"`
	// Unpriced, only shown, marks a model of a provider reached with the
	// user's own paid key that has no price: a money budget refuses it.
	Unpriced bool `json:"unpriced,omitempty"`
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
	// File names the config file that gives the key (written in it, read
	// from the variables it names, or none for a keyless provider). The
	// file wins at every start, so the dashboard cannot set, replace or
	// delete such a key; "" when it can.
	File string `json:"file"`
	// Unchecked is set while the key was stored without being tried: the
	// provider's server could not be reached when it was added and the
	// user added it anyway. The first call its server answers checks it.
	Unchecked bool `json:"unchecked,omitempty"`
}

// PoolKeyView is one key of a provider's pool. It names the key by its
// label and never holds the key or a part of it; the key's state is on
// the backends whose key is Label.
type PoolKeyView struct {
	Label string `json:"label"`
	// From says where the key is given: "api_key" (the provider's first
	// key, from the dashboard, the environment or the file) or "api_keys".
	From string `json:"from"`
}

// ProviderView is a provider as the dashboard shows it. It shows the
// configuration as stored, ${ENV} references included, so that what a
// client reads can be sent back unchanged (see ProviderInput) without
// turning references into their values, or revealing those values.
type ProviderView struct {
	Name string `json:"name"`
	// Catalog is the catalog entry the provider comes from; "" for one
	// set up by hand.
	Catalog  string    `json:"catalog"`
	Kind     string    `json:"kind"`
	Tier     tier.Tier `json:"tier"`
	Default  bool      `json:"default"`
	BaseURL  string    `json:"base_url"`
	Keyless  bool      `json:"keyless"`
	Disabled bool      `json:"disabled"`
	// Probe and StreamUsage show what the settings mean, with the
	// defaults applied, rather than whether they are set explicitly.
	Probe       bool              `json:"probe"`
	StreamUsage bool              `json:"stream_usage"`
	Headers     map[string]string `json:"headers"`
	Key         KeyInfo           `json:"key"`
	// Keys lists the keys of the provider's pool by label, in the order
	// they are tried; empty while the provider has one key or none.
	Keys     []PoolKeyView `json:"keys"`
	Models   []ModelSpec   `json:"models"`
	Timeouts Timeouts      `json:"timeouts"`
	Limits   LimitsJSON    `json:"limits"`
	// Source says where the provider comes from.
	Source ProviderSource `json:"source"`
	// Local describes the server of a discovered provider; nil for others.
	Local *ProviderLocal `json:"local,omitempty"`
	// Notice, only in the answer to an edit, says what the edit removed
	// besides what it was asked to: a key and header values stay bound
	// to the base_url and headers they were given with.
	Notice string `json:"notice,omitempty"`
}

// ProviderInput is what the dashboard sends to add a provider (POST
// /api/providers) or to change one (PUT or PATCH /api/providers/{name},
// which do the same).
//
// A change is a patch of the provider as stored: it starts from the stored
// configuration and changes only the fields whose keys the body carries.
// Everything else stays exactly as stored, including the settings the API
// has no field for and ${ENV} references. A key that is present sets its
// field to the value sent, null to the zero value (no headers, false), with
// these exceptions:
//   - name, if given, must be the provider's own name: providers cannot be
//     renamed.
//   - probe and stream_usage: null goes back to the default. A value that
//     means what the stored setting already means (probe true for a free
//     provider that has no probe setting) leaves the setting as stored, so
//     a view sent back changes nothing. The meaning is taken with the tier
//     the edit leaves, so a tier change sent with a probe value keeps that
//     value.
//   - models replaces the list of models, in the order given. An entry
//     whose id the provider already serves starts from that model and
//     changes only the keys it carries; an entry with a new id starts empty.
//   - timeouts: each duration key counts on its own; "" is the default.
//   - limits and the models' limits, price and credit_expires: null keeps
//     what is stored, and so does a value equal to what the view shows for
//     it; otherwise all zero limits, a zero price or "" removes them.
//   - api_key is write-only: null keeps the key, "" removes the key pasted
//     in the dashboard, and a key never replaces an ${ENV} reference in the
//     configuration (the dashboard key wins over it). For a provider whose
//     key the --config file gives (KeyInfo.File), any api_key is refused:
//     the file wins.
//   - key is the view's read-only description of the key. It is accepted
//     so that a view can be sent back as it is, and ignored; so is notice.
//   - headers: a value sent as the view shows it (masked, or the
//     reference it is) keeps the stored value.
//   - A change of base_url or headers removes the stored key, and an
//     api_key that refers to the environment, unless api_key is sent too:
//     a key is only sent to the destination it was given for. A change of
//     base_url also removes the header values the body does not send in
//     full. The answer's notice says what went.
//   - Every string is taken literally: "${NAME}" is not expanded (only
//     the config file refers to the environment).
//
// An add starts from an empty provider, so keys left out take the defaults,
// and probe and stream_usage are stored as sent. An input built in Go
// rather than decoded from JSON carries every field, its nil pointers
// standing for null.
type ProviderInput struct {
	Name        string            `json:"name"`
	Kind        string            `json:"kind"`
	Tier        tier.Tier         `json:"tier"`
	Default     bool              `json:"default"`
	BaseURL     string            `json:"base_url"`
	Keyless     bool              `json:"keyless"`
	Disabled    bool              `json:"disabled"`
	Probe       *bool             `json:"probe"`
	StreamUsage *bool             `json:"stream_usage"`
	Headers     map[string]string `json:"headers"`
	Models      []ModelSpec       `json:"models"`
	Timeouts    Timeouts          `json:"timeouts"`
	Limits      *LimitsJSON       `json:"limits"`
	APIKey      *string           `json:"api_key"`
	Key         *KeyInfo          `json:"key"`
	// Keys is a field of the view, accepted so that a view can be sent
	// back, and ignored: the pool is changed by its own routes.
	Keys   *[]PoolKeyView `json:"keys,omitempty"`
	Notice *string        `json:"notice,omitempty"`
	// Catalog is accepted so a view can be sent back, and ignored: a
	// provider keeps the catalog entry it was made from.
	Catalog *string `json:"catalog,omitempty"`
	// Rename and Hidden are for a local server found by discovery only
	// (see UpdateLocal): its new name, and whether it is kept out of
	// routing.
	Rename *string `json:"rename,omitempty"`
	Hidden *bool   `json:"hidden,omitempty"`
	// Source and Local are fields of the view, accepted so that a view can
	// be sent back, and ignored.
	Source *ProviderSource `json:"source,omitempty"`
	Local  *ProviderLocal  `json:"local,omitempty"`
	// UnreachableOK is not stored: it answers the question an add or an
	// edit asks when the key cannot be tried because the provider's server
	// cannot be reached. True stores the provider all the same; a key the
	// provider refuses is refused whatever it says.
	UnreachableOK bool `json:"unreachable_ok,omitempty"`

	// sent is nil for an input built in Go.
	sent *sent
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
	found := c.localServers()
	c.mu.Lock()
	defer c.mu.Unlock()
	// Only the key state comes from the effective configuration; the rest
	// is the document, whose ${ENV} references must not be expanded.
	eff, err := c.effective(c.doc)
	if err != nil {
		eff = c.doc
	}
	// Providers from the catalog are shown as the catalog completes them.
	doc := config.Fill(c.doc, c.cat)
	out := make([]ProviderView, 0, len(doc.Providers))
	for i, p := range doc.Providers {
		key := p.APIKey
		if i < len(eff.Providers) && eff.Providers[i].Name == p.Name {
			key = eff.Providers[i].APIKey
		}
		out = append(out, c.view(p, key))
	}
	return append(out, c.localViews(found)...)
}

// view shows the stored provider p, whose effective key is key.
func (c *Control) view(p config.Provider, key string) ProviderView {
	v := ProviderView{
		Name: config.Unescape(p.Name), Catalog: p.Catalog, Kind: config.Unescape(p.Kind), Tier: tier.Tier(config.Unescape(string(p.Tier))), Default: p.Default,
		BaseURL: config.Unescape(p.BaseURL), Keyless: p.Keyless, Disabled: p.Disabled, Probe: p.Probed(), StreamUsage: p.WantsStreamUsage(),
		Headers:  make(map[string]string, len(p.Headers)),
		Timeouts: Timeouts{Connect: dur(p.Timeouts.Connect), Header: dur(p.Timeouts.Header), FirstToken: dur(p.Timeouts.FirstToken), Idle: dur(p.Timeouts.Idle)},
	}
	for name, hv := range p.Headers {
		v.Headers[name] = shownHeader(hv)
	}
	for _, m := range p.Models {
		lim, credit := limitsJSON(m.Limits), config.Unescape(m.CreditExpires)
		v.Models = append(v.Models, ModelSpec{ID: config.Unescape(m.ID), ParamsB: m.ParamsB, Context: m.Context, MaxOutput: m.MaxOutput,
			Limits: &lim, Price: priceJSON(m.Price), CreditExpires: &credit, Unpriced: unpriced(p, m)})
	}
	v.Limits = limitsJSON(p.Limits)
	v.Source = c.sourceOf(p)
	v.Key = KeyInfo{Env: append([]string{}, p.APIKeyEnv...), Source: SourceNone, File: c.fileKeyLocked(p.Name)}
	switch k, stored := c.keys[p.Name]; {
	case p.Keyless:
		v.Key.Source = SourceKeyless
	case stored && k.Source == SourceDashboard:
		v.Key.Source = SourceDashboard
	case key != "" && len(p.APIKeyEnv) > 0 && (!stored || c.envSet(p.APIKeyEnv)):
		v.Key.Source = SourceEnv
	case stored:
		v.Key.Source = k.Source
	}
	if key != "" {
		v.Key.Set, v.Key.Masked = true, vault.Mask(key)
	}
	v.Keys = []PoolKeyView{}
	if eff := (config.Provider{APIKey: key, APIKeys: c.expandedPool(p)}); eff.Pooled() {
		for _, k := range eff.Pool() {
			from := "api_keys"
			if k.Key == key {
				from = "api_key"
			}
			v.Keys = append(v.Keys, PoolKeyView{Label: k.Label, From: from})
		}
	}
	return v
}

// expandedPool is p's api_keys with ${ENV} references read.
func (c *Control) expandedPool(p config.Provider) []string {
	out := make([]string, 0, len(p.APIKeys))
	for _, k := range p.APIKeys {
		if config.HasRef(k) {
			if name := strings.TrimSuffix(strings.TrimPrefix(k, "${"), "}"); c.envValue([]string{name}) != "" {
				k = c.envValue([]string{name})
			} else {
				k = ""
			}
		}
		out = append(out, k)
	}
	return out
}

// AddKey adds key to the pool of provider name: it becomes the provider's
// key when it has none, and is tried after its other keys otherwise.
func (c *Control) AddKey(ctx context.Context, name, key string) (ProviderView, error) {
	k := strings.TrimSpace(key)
	if k == "" {
		return ProviderView{}, userErr(http.StatusBadRequest, "key", "paste the key")
	}
	if strings.ContainsAny(k, " \t\r\n") {
		return ProviderView{}, userErr(http.StatusBadRequest, "key", "the key contains spaces or line breaks; paste the key alone")
	}
	err := c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, name)
		if i < 0 {
			return userErr(http.StatusNotFound, "name", "there is no provider %q", name)
		}
		p := &doc.Providers[i]
		eff, err := c.effective(doc)
		if err != nil {
			return err
		}
		first := ""
		if j := providerIndex(eff, name); j >= 0 {
			first = eff.Providers[j].APIKey
		}
		if first == "" {
			p.Keyless = false
			return c.setKeyLocked(name, &k)
		}
		pool := config.Provider{APIKey: first, APIKeys: c.expandedPool(*p)}
		for _, have := range pool.Pool() {
			if have.Key == k {
				return userErr(http.StatusConflict, "key", "provider %q already holds this key (%s)", name, have.Label)
			}
		}
		if n := len(pool.Pool()); n >= config.MaxPoolKeys {
			return userErr(http.StatusBadRequest, "key", "provider %q already holds %d keys, the most a provider may have; remove one first", name, n)
		}
		if how, ok := c.fileKeys[name]; ok {
			return userErr(http.StatusForbidden, "key", "%s gives the keys of %q (%s), and the file wins over the dashboard at every start; add the key to api_keys in the file and restart FreeLane",
				FileLabel(c.fileKeyLocked(name)), name, how)
		}
		p.APIKeys = append(p.APIKeys, k)
		return nil
	})
	if err != nil {
		return ProviderView{}, scoped(err, "providers[")
	}
	return c.Provider(name)
}

// RemoveKey takes the key labelled label out of the pool of provider
// name. The provider's first key is removed as DELETE .../key does; a key
// the environment gives is removed there.
func (c *Control) RemoveKey(ctx context.Context, name, label string) (ProviderView, error) {
	err := c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, name)
		if i < 0 {
			return userErr(http.StatusNotFound, "name", "there is no provider %q", name)
		}
		p := &doc.Providers[i]
		for j, k := range c.expandedPool(*p) {
			if k != "" && config.KeyLabel(k) == label {
				if config.HasRef(p.APIKeys[j]) {
					return userErr(http.StatusConflict, "label", "the key %s of %q comes from the environment (%s); unset it there", label, name, p.APIKeys[j])
				}
				if how, ok := c.fileKeys[name]; ok {
					return userErr(http.StatusForbidden, "label", "%s gives the keys of %q (%s), and the file wins over the dashboard at every start; remove the key in the file and restart FreeLane",
						FileLabel(c.fileKeyLocked(name)), name, how)
				}
				p.APIKeys = slices.Delete(p.APIKeys, j, j+1)
				return nil
			}
		}
		eff, err := c.effective(doc)
		if err != nil {
			return err
		}
		if j := providerIndex(eff, name); j >= 0 && eff.Providers[j].APIKey != "" && config.KeyLabel(eff.Providers[j].APIKey) == label {
			empty := ""
			return c.setKeyLocked(name, &empty)
		}
		return userErr(http.StatusNotFound, "label", "provider %q holds no key labelled %q", name, label)
	})
	if err != nil {
		return ProviderView{}, scoped(err, "providers[")
	}
	return c.Provider(name)
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

// applyTo changes p by what in carries, as ProviderInput describes; create
// says p is a new, empty provider.
func (in *ProviderInput) applyTo(p *config.Provider, create bool) error {
	// What the API is sent is taken literally: only the config file may
	// refer to the environment, so "${" is stored escaped.
	if in.has("kind") {
		p.Kind = config.Escape(in.Kind)
	}
	if in.has("tier") {
		p.Tier = tier.Tier(config.Escape(string(in.Tier)))
	}
	if in.has("default") {
		p.Default = in.Default
	}
	moved := false
	if in.has("base_url") {
		if u := strings.TrimSpace(in.BaseURL); u != config.Unescape(p.BaseURL) {
			p.BaseURL, moved = config.Escape(u), !create
		}
	}
	if in.has("keyless") {
		p.Keyless = in.Keyless
	}
	if in.has("disabled") {
		p.Disabled = in.Disabled
	}
	// After the tier: what an unset probe means depends on it.
	if in.has("probe") {
		p.Probe = boolSetting(p.Probe, p.Probed(), in.Probe, create)
	}
	if in.has("stream_usage") {
		p.StreamUsage = boolSetting(p.StreamUsage, p.WantsStreamUsage(), in.StreamUsage, create)
	}
	p.Headers = mergeHeaders(p.Headers, in.Headers, in.has("headers"), moved)
	if in.has("models") {
		models := make([]config.Model, 0, len(in.Models))
		for j, spec := range in.Models {
			id := strings.TrimSpace(spec.ID)
			m := config.Model{ID: config.Escape(id)}
			if k := slices.IndexFunc(p.Models, func(om config.Model) bool { return config.Unescape(om.ID) == id }); k >= 0 {
				m = p.Models[k]
			}
			if in.hasModelField(j, "params_b") {
				m.ParamsB = spec.ParamsB
			}
			if in.hasModelField(j, "context") {
				m.Context = spec.Context
			}
			if in.hasModelField(j, "max_output") {
				m.MaxOutput = spec.MaxOutput
			}
			m.Limits = mergeLimits(m.Limits, spec.Limits)
			m.Price = mergePrice(m.Price, spec.Price)
			if spec.CreditExpires != nil {
				m.CreditExpires = config.Escape(strings.TrimSpace(*spec.CreditExpires))
			}
			models = append(models, m)
		}
		p.Models = models
	}
	p.Limits = mergeLimits(p.Limits, in.Limits)
	for _, f := range []struct {
		key string
		in  string
		out *time.Duration
	}{
		{"connect", in.Timeouts.Connect, &p.Timeouts.Connect},
		{"header", in.Timeouts.Header, &p.Timeouts.Header},
		{"first_token", in.Timeouts.FirstToken, &p.Timeouts.FirstToken},
		{"idle", in.Timeouts.Idle, &p.Timeouts.Idle},
	} {
		if !in.hasTimeout(f.key) {
			continue
		}
		d, err := parseDur("timeouts."+f.key, f.in)
		if err != nil {
			return err
		}
		*f.out = d
	}
	return nil
}

// shownHeader is how a stored header value shows: a reference as it is
// written, which reveals nothing, and a literal value masked like a key.
func shownHeader(v string) string {
	if config.HasRef(v) {
		return v
	}
	return vault.Mask(config.Unescape(v))
}

// mergeHeaders returns the headers to store for headers stored as old when
// a client sends in (sent says the input has the key). A value sent as it
// shows (masked, or the reference it is) keeps the stored value, anything
// else is taken literally. When the provider moved to another base_url,
// nothing of the old headers is kept: values bound to the old address go
// with it unless the client sends them in full.
func mergeHeaders(old, in map[string]string, sent, moved bool) map[string]string {
	if !sent {
		in = nil
		for name, v := range old {
			if in == nil {
				in = map[string]string{}
			}
			in[name] = shownHeader(v)
		}
	}
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for name, v := range in {
		if ov, ok := old[name]; ok && v == shownHeader(ov) && v != "" {
			if !moved {
				out[name] = ov
			}
			continue
		}
		out[name] = config.Escape(v)
	}
	return out
}

// AddProvider adds a provider, with its key when one is given.
func (c *Control) AddProvider(ctx context.Context, in ProviderInput) (ProviderView, error) {
	name, add, err := c.adding(in)
	if err != nil {
		return ProviderView{}, err
	}
	if err := c.update(ctx, "", add); err != nil {
		return ProviderView{}, scoped(err, "providers[")
	}
	return c.Provider(name)
}

// adding is the change that adds the provider in describes, and the name
// it is stored under.
func (c *Control) adding(in ProviderInput) (string, func(doc *config.Config) error, error) {
	p := config.Provider{Name: config.Escape(strings.TrimSpace(in.Name))}
	if err := in.applyTo(&p, true); err != nil {
		return "", nil, err
	}
	if p.Name == "" {
		return "", nil, userErr(http.StatusBadRequest, "name", "name is required")
	}
	return p.Name, func(doc *config.Config) error {
		if providerIndex(doc, p.Name) >= 0 {
			return userErr(http.StatusConflict, "name", "a provider named %q already exists", p.Name)
		}
		doc.Providers = append(doc.Providers, p)
		return c.setKeyLocked(p.Name, in.APIKey)
	}, nil
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

// UpdateProvider changes a stored provider by what in carries and leaves
// everything else as stored (see ProviderInput). Its name stays.
func (c *Control) UpdateProvider(ctx context.Context, name string, in ProviderInput) (ProviderView, error) {
	if err := renaming(name, in); err != nil {
		return ProviderView{}, err
	}
	before, _ := c.Provider(name)
	err := c.update(ctx, "", c.changing(name, in))
	if err != nil {
		return ProviderView{}, scoped(err, "providers[")
	}
	v, err := c.Provider(name)
	if err == nil {
		v.Notice = notice(before, v, in.APIKey != nil)
		if v.Notice != "" && v.Key.File != "" {
			// The key cannot be sent again from here: it is the file's,
			// and so is the destination at the next start.
			v.Notice = fmt.Sprintf("the provider's destination changed, so FreeLane removed its key until the next start: a key is only sent to the base_url and headers it was given with. %s gives this provider's key and puts its base_url, headers and key back at the next start; edit the file to move it for good",
				FileLabel(v.Key.File))
		}
	}
	return v, err
}

// changing is the change that edits the stored provider name by what in
// carries.
func (c *Control) changing(name string, in ProviderInput) func(doc *config.Config) error {
	return func(doc *config.Config) error {
		i := providerIndex(doc, name)
		if i < 0 {
			return userErr(http.StatusNotFound, "name", "there is no provider %q", name)
		}
		// doc is the update's own copy, so the stored provider can be
		// changed in place.
		stored := doc.Providers[i]
		shown := config.Fill(doc, c.cat).Providers[i]
		if err := in.applyTo(&doc.Providers[i], false); err != nil {
			return err
		}
		keepCatalogShape(stored, shown, &doc.Providers[i])
		return c.setKeyLocked(name, in.APIKey)
	}
}

// keepCatalogShape keeps a provider from the catalog as it was stored
// where an edit sent back what the catalog gave it: a field left to the
// catalog stays left to it, and so follows a newer catalog, unless the
// edit changed it. stored is the provider as stored, shown as the
// catalog completed it, and next the edited provider.
func keepCatalogShape(stored, shown config.Provider, next *config.Provider) {
	if stored.Catalog == "" {
		return
	}
	if stored.Kind == "" && next.Kind == shown.Kind {
		next.Kind = ""
	}
	if stored.Tier == "" && next.Tier == shown.Tier {
		next.Tier = ""
	}
	if stored.BaseURL == "" && config.Unescape(next.BaseURL) == shown.BaseURL {
		next.BaseURL = ""
	}
	if stored.Limits == nil && reflect.DeepEqual(next.Limits, shown.Limits) {
		next.Limits = nil
	}
	if !stored.Keyless && shown.Keyless && next.Keyless {
		next.Keyless = false
	}
	var models []config.Model
	for _, m := range next.Models {
		j := slices.IndexFunc(shown.Models, func(o config.Model) bool { return o.ID == m.ID })
		if j < 0 || !sameModel(m, shown.Models[j]) {
			models = append(models, m)
			continue
		}
		// Sent back as shown: keep what was stored for it, if anything;
		// a model shown only because the catalog has it stays the
		// catalog's.
		if k := slices.IndexFunc(stored.Models, func(o config.Model) bool { return o.ID == m.ID }); k >= 0 {
			models = append(models, stored.Models[k])
		}
	}
	next.Models = models
}

// sameModel compares two models as the dashboard shows them: an empty
// list and none are the same there.
func sameModel(a, b config.Model) bool {
	norm := func(m config.Model) config.Model {
		if len(m.Capabilities) == 0 {
			m.Capabilities = nil
		}
		if len(m.Endpoints) == 0 {
			m.Endpoints = nil
		}
		if len(m.DropParams) == 0 {
			m.DropParams = nil
		}
		if m.Limits != nil && *m.Limits == (config.Limits{}) {
			m.Limits = nil
		}
		return m
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// notice says what an edit of a provider from before to after removed on
// its own account: the key, when it was not sent, and header values.
func notice(before, after ProviderView, keySent bool) string {
	var gone []string
	if before.Key.Set && !after.Key.Set && !keySent {
		gone = append(gone, "its key")
	}
	if before.BaseURL != after.BaseURL {
		var hs []string
		for name := range before.Headers {
			if _, ok := after.Headers[name]; !ok {
				hs = append(hs, name)
			}
		}
		if len(hs) > 0 {
			slices.Sort(hs)
			gone = append(gone, "the values of headers "+strings.Join(hs, ", "))
		}
	}
	if len(gone) == 0 {
		return ""
	}
	return fmt.Sprintf("the provider's destination changed, so FreeLane removed %s: a key and header values are only sent to the base_url and headers they were given with; send them again in the same change (api_key, headers) to use them at %s",
		strings.Join(gone, " and "), after.BaseURL)
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
	if how, ok := c.fileKeys[provider]; ok {
		return userErr(http.StatusForbidden, "api_key",
			"%s gives the key of %q (%s), and the file wins over the dashboard at every start; change the key in the file (or its variable) and restart FreeLane",
			FileLabel(c.fileKeyLocked(provider)), provider, how)
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

// ChainInput edits a chain; nil fields stay as they are. Generated and
// Default are fields of the chain view, accepted so that a chain read with
// GET /api/chains can be sent back as it is:
//   - Generated true says the chain is FreeLane's generated auto chain and
//     asks to keep it so: sending its current backends back then stores
//     nothing. False asks to take it over as a user chain, with its current
//     backends unless others are sent. A user chain cannot be made
//     generated; deleting the chain auto hands it back to FreeLane.
//   - Default true makes the chain the one "auto" routes to; false, sent
//     for the chain that is the default, gives auto back to FreeLane's own
//     chain. A value that is already so changes nothing.
type ChainInput struct {
	Name     *string   `json:"name"`
	Backends *[]string `json:"backends"`
	ChainRouting
	Generated *bool `json:"generated"`
	Default   *bool `json:"default"`
	// Warning and Gone are fields of the chain view, accepted and
	// ignored.
	Warning *string   `json:"warning,omitempty"`
	Gone    *[]string `json:"gone,omitempty"`
}

// ChainRouting is how a chain chooses among its backends; nil fields stay
// as they are.
//   - Strategy is one of config.Strategies; "ordered", the only strategy
//     older versions knew, is taken as priority, and "" means priority.
//   - Gear is auto or manual.
//   - Weights and Priority map backend references of the chain to the
//     weighted strategy's shares and to tiers; an empty map clears them.
//   - MaxWait is a duration such as "3s"; "" means the default.
type ChainRouting struct {
	Strategy *string         `json:"strategy"`
	Gear     *string         `json:"gear"`
	Weights  *map[string]int `json:"weights"`
	Priority *map[string]int `json:"priority"`
	MaxWait  *string         `json:"max_wait"`
}

// legacyStrategy is the one strategy name older dashboards and scripts
// send; it meant the listed order, which is priority now.
const legacyStrategy = "ordered"

// Bounds of the routing settings a chain takes from the admin API, which
// the configuration's validation enforces too; checking them here first
// names the field in the message.
const (
	maxChainWeight   = 1000
	maxChainPriority = 1000
	// maxChainSettings bounds the entries of weights and priority, so a
	// body cannot hold a map larger than any chain.
	maxChainSettings = 4096
)

// check refuses values the configuration would refuse, with messages that
// name the field, and turns the legacy strategy name into priority.
func (r *ChainRouting) check() error {
	if r.Strategy != nil {
		s := strings.TrimSpace(*r.Strategy)
		if s == legacyStrategy {
			s = config.StrategyPriority
		}
		if s != "" && !slices.Contains(config.Strategies, s) {
			return userErr(http.StatusBadRequest, "strategy", "strategy must be one of %s, got %q", strings.Join(config.Strategies, ", "), *r.Strategy)
		}
		r.Strategy = &s
	}
	if r.Gear != nil {
		if err := checkGear(*r.Gear); err != nil {
			return err
		}
	}
	for _, m := range []struct {
		field    string
		vals     *map[string]int
		min, max int
	}{{"weights", r.Weights, 0, maxChainWeight}, {"priority", r.Priority, -maxChainPriority, maxChainPriority}} {
		if m.vals == nil {
			continue
		}
		if len(*m.vals) > maxChainSettings {
			return userErr(http.StatusBadRequest, m.field, "%s has %d entries; at most %d are allowed", m.field, len(*m.vals), maxChainSettings)
		}
		for _, ref := range slices.Sorted(maps.Keys(*m.vals)) {
			if n := (*m.vals)[ref]; n < m.min || n > m.max {
				return userErr(http.StatusBadRequest, m.field, "%s gives %q %d; it must be between %d and %d", m.field, ref, n, m.min, m.max)
			}
		}
	}
	if r.MaxWait != nil && strings.TrimSpace(*r.MaxWait) != "" {
		d, err := time.ParseDuration(strings.TrimSpace(*r.MaxWait))
		if err != nil || d < 0 || d > config.MaxChainWait {
			return userErr(http.StatusBadRequest, "max_wait", "max_wait must be a duration between 0s (no waiting) and %s, such as \"3s\"; got %q", config.MaxChainWait, *r.MaxWait)
		}
	}
	return nil
}

// checkGear refuses a gear that is neither auto nor manual.
func checkGear(g string) error {
	if g != config.GearAuto && g != config.GearManual {
		return userErr(http.StatusBadRequest, "gear", "gear must be %q or %q, got %q", config.GearAuto, config.GearManual, g)
	}
	return nil
}

// apply sets what r carries on ch; r has been checked.
func (r ChainRouting) apply(ch *config.Chain) {
	if r.Strategy != nil {
		ch.Strategy = *r.Strategy
		if ch.Strategy == config.StrategyPriority {
			// priority is the default: the file keeps saying nothing.
			ch.Strategy = ""
		}
	}
	if r.Gear != nil {
		ch.Gear = *r.Gear
		if ch.Gear == config.GearAuto {
			ch.Gear = ""
		}
	}
	if r.Weights != nil {
		ch.Weights = nonEmpty(*r.Weights)
	}
	if r.Priority != nil {
		ch.Priority = nonEmpty(*r.Priority)
	}
	if r.MaxWait != nil {
		ch.MaxWait = nil
		if s := strings.TrimSpace(*r.MaxWait); s != "" {
			d, _ := time.ParseDuration(s)
			ch.MaxWait = &d
		}
	}
}

// takesOver reports whether r asks the generated auto chain for more than
// it has (the priority strategy, no weights, tiers or wait of its own), so
// that it must become a user chain to hold the settings. Its gear is kept
// apart (config.Routing.AutoGear) and needs no chain.
func (r ChainRouting) takesOver() bool {
	return (r.Strategy != nil && *r.Strategy != "" && *r.Strategy != config.StrategyPriority) ||
		(r.Weights != nil && len(*r.Weights) > 0) || (r.Priority != nil && len(*r.Priority) > 0) ||
		(r.MaxWait != nil && strings.TrimSpace(*r.MaxWait) != "")
}

func nonEmpty(m map[string]int) map[string]int {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// literalChain refuses "${" in chain names and backends. The admin API's
// input is literal, and these strings are names that other parts of the
// configuration and the URLs of the API refer to, so rather than store
// them escaped they are kept free of it.
func literalChain(name *string, backends *[]string) error {
	if name != nil && strings.Contains(*name, "${") {
		return userErr(http.StatusBadRequest, "name", "a chain name cannot contain \"${\"")
	}
	if backends != nil {
		for _, b := range *backends {
			if strings.Contains(b, "${") {
				return userErr(http.StatusBadRequest, "backends", "a backend cannot contain \"${\"; name it as provider/model")
			}
		}
	}
	return nil
}

// CreateChain adds a chain, with the routing settings r carries.
func (c *Control) CreateChain(ctx context.Context, name string, backends []string, r ChainRouting) error {
	if err := r.check(); err != nil {
		return err
	}
	if err := literalChain(&name, &backends); err != nil {
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
		ch := config.Chain{Name: name, Backends: backends}
		r.apply(&ch)
		doc.Chains = append(doc.Chains, ch)
		return nil
	}), "chains[")
}

// UpdateChain renames a chain, sets its backends or makes it the default.
// The generated auto chain becomes a user chain the first time it is given
// backends or a new name (see ChainInput for keeping it generated);
// autoOrder is its current order, used when only a rename is asked.
func (c *Control) UpdateChain(ctx context.Context, name string, in ChainInput, autoOrder []string) error {
	if err := in.ChainRouting.check(); err != nil {
		return err
	}
	if err := literalChain(in.Name, in.Backends); err != nil {
		return err
	}
	return scoped(c.update(ctx, "", func(doc *config.Config) error {
		i := chainIndex(doc, name)
		renamed := in.Name != nil && strings.TrimSpace(*in.Name) != name
		switch {
		case i >= 0 && in.Generated != nil && *in.Generated:
			return userErr(http.StatusBadRequest, "generated", "chain %q is a user chain, not generated; delete it to hand %q back to FreeLane", name, "auto")
		case i < 0 && name != "auto":
			return userErr(http.StatusNotFound, "name", "there is no chain %q", name)
		case i < 0:
			keep := in.Generated != nil && *in.Generated
			takeOver := renamed || (in.Generated != nil && !*in.Generated) ||
				(in.Backends != nil && !(keep && slices.Equal(*in.Backends, autoOrder))) || in.takesOver()
			if takeOver {
				doc.Chains = append(doc.Chains, config.Chain{Name: "auto", Backends: slices.Clone(autoOrder), Gear: doc.Routing.AutoGear})
				doc.Routing.AutoGear = ""
				i = len(doc.Chains) - 1
			} else if in.Gear != nil {
				doc.Routing.AutoGear = gearSetting(*in.Gear)
			}
		}
		if i >= 0 {
			in.ChainRouting.apply(&doc.Chains[i])
		}
		if i >= 0 && in.Backends != nil {
			if len(*in.Backends) == 0 {
				return userErr(http.StatusBadRequest, "backends", "a chain needs at least one backend; delete the chain instead")
			}
			doc.Chains[i].Backends = *in.Backends
		}
		final := name
		if renamed {
			final = strings.TrimSpace(*in.Name)
			if chainIndex(doc, final) >= 0 {
				return userErr(http.StatusConflict, "name", "a chain named %q already exists", *in.Name)
			}
			doc.Chains[i].Name = final
			if doc.DefaultChain == name {
				// auto follows the chain it routes to under its new name.
				doc.DefaultChain = final
			}
			// So do the aliases and tasks that route to it.
			for j := range doc.Aliases {
				if doc.Aliases[j].Chain == name {
					doc.Aliases[j].Chain = final
				}
			}
			for j := range doc.Tasks {
				if doc.Tasks[j].Chain == name {
					doc.Tasks[j].Chain = final
				}
			}
		}
		if in.Default != nil {
			return setDefault(doc, final, *in.Default)
		}
		return nil
	}), "chains[")
}

// SetChainGear switches a chain's gear. The generated auto chain keeps its
// gear in config.Routing.AutoGear, since it has no entry under chains.
func (c *Control) SetChainGear(ctx context.Context, name, gear string) error {
	if err := checkGear(gear); err != nil {
		return err
	}
	return scoped(c.update(ctx, "", func(doc *config.Config) error {
		i := chainIndex(doc, name)
		switch {
		case i >= 0:
			doc.Chains[i].Gear = gearSetting(gear)
		case name == "auto":
			doc.Routing.AutoGear = gearSetting(gear)
		default:
			return userErr(http.StatusNotFound, "name", "there is no chain %q", name)
		}
		return nil
	}), "chains[")
}

// ChainGear is the gear a chain is in: auto unless set to manual. The
// generated auto chain's is config.Routing.AutoGear.
func ChainGear(doc *config.Config, name string) string {
	g := doc.Routing.AutoGear
	if i := chainIndex(doc, name); i >= 0 {
		g = doc.Chains[i].Gear
	}
	if g == "" {
		return config.GearAuto
	}
	return g
}

// gearSetting is how the file stores a gear: auto, the default, as
// nothing.
func gearSetting(g string) string {
	if g == config.GearAuto {
		return ""
	}
	return g
}

// defaultName names the chain "auto" routes to, as the chain view shows
// it: the default chain, unless it is unset or a user chain named auto
// overrides it.
func defaultName(doc *config.Config) string {
	if doc.DefaultChain != "" && chainIndex(doc, "auto") < 0 && chainIndex(doc, doc.DefaultChain) >= 0 {
		return doc.DefaultChain
	}
	return "auto"
}

// setDefault makes chain the one "auto" routes to (on) or stops it being
// that (off), leaving doc alone when that is already so.
func setDefault(doc *config.Config, chain string, on bool) error {
	is := defaultName(doc) == chain
	switch {
	case on == is:
		return nil
	case on && chain == "auto":
		doc.DefaultChain = ""
	case on && chainIndex(doc, "auto") >= 0:
		return userErr(http.StatusBadRequest, "default", "a user chain named auto exists, and auto always routes to it; rename or delete it first")
	case on:
		doc.DefaultChain = chain
	case chain == "auto":
		return userErr(http.StatusBadRequest, "default", "auto is the default unless another chain is; make another chain the default instead")
	default:
		doc.DefaultChain = ""
	}
	return nil
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
		// Aliases to the chain go to auto, so the names they caught keep
		// being served rather than turning into 404s.
		for j := range doc.Aliases {
			if doc.Aliases[j].Chain == name {
				doc.Aliases[j].Chain = "auto"
			}
		}
		// A task sent there keeps the chain its requests ask for.
		for j := range doc.Tasks {
			if doc.Tasks[j].Chain == name {
				doc.Tasks[j].Chain = ""
			}
		}
		return nil
	})
}

// AliasView is one model alias as the dashboard shows it.
type AliasView struct {
	Pattern string `json:"pattern"`
	Chain   string `json:"chain"`
	// Default marks a built-in alias that no configured one replaces.
	Default bool `json:"default"`
}

// Aliases returns the aliases in the order they are tried, the built-in
// ones included.
func (c *Control) Aliases() []AliasView {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []AliasView
	for _, a := range c.doc.EffectiveAliases() {
		def := !slices.ContainsFunc(c.doc.Aliases, func(u config.Alias) bool { return u.Pattern == a.Pattern })
		out = append(out, AliasView{Pattern: a.Pattern, Chain: a.Chain, Default: def})
	}
	return out
}

// SetAliases replaces the configured aliases. A built-in alias is kept
// unless the list gives its pattern, so sending the list Aliases returns
// changes nothing. Patterns are trimmed; the config's rules apply (each
// pattern once, an existing chain or auto).
func (c *Control) SetAliases(ctx context.Context, in []config.Alias) error {
	list := make([]config.Alias, 0, len(in))
	for _, a := range in {
		a.Pattern, a.Chain = strings.TrimSpace(a.Pattern), strings.TrimSpace(a.Chain)
		list = append(list, a)
	}
	return c.update(ctx, "", func(doc *config.Config) error {
		// A built-in alias sent back unchanged stays built in, so the
		// file gains only what the user wrote.
		var own []config.Alias
		for _, a := range list {
			if !slices.Contains(config.DefaultAliases, a) || slices.ContainsFunc(doc.Aliases, func(u config.Alias) bool { return u.Pattern == a.Pattern }) {
				own = append(own, a)
			}
		}
		doc.Aliases = own
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
	if s.MaxBodyMB > c.maxBodyMB {
		return userErr(http.StatusForbidden, "max_body_mb",
			"max_body_mb cannot be raised past %d MiB from the dashboard or the API; set max_body_mb in the config file to allow larger requests", c.maxBodyMB)
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
