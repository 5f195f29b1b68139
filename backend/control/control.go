// Package control is FreeLane's control plane: the configuration the
// dashboard edits. It keeps the configuration document and the encrypted
// keys in SQLite, validates every change with the same rules as the config
// file, and hands the effective configuration (with keys) to the gateway,
// which rebuilds routing for the next request. Keys and header values are
// sealed at rest and never leave it in plaintext except inside that
// effective configuration; views show them masked.
package control

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"freelane/backend/catalog"
	"freelane/backend/config"
	"freelane/backend/defaults"
	"freelane/backend/store"
	"freelane/backend/vault"
)

// State document names.
const (
	docConfig  = "config"
	docKeys    = "keys"
	docHeaders = "headers"
	// docPools holds the sealed keys of api_keys, by provider and
	// position; the document holds them empty.
	docPools = "pool_keys"
)

// Key sources, as the dashboard shows them.
const (
	SourceDashboard = "dashboard" // pasted in the dashboard
	SourceConfig    = "config"    // written literally in the config file
	SourceEnv       = "env"       // from an environment variable the config names
	SourceNone      = "none"
	SourceKeyless   = "keyless"
)

// Applier installs an effective configuration (keys included).
type Applier func(cfg *config.Config) error

type sealedKey struct {
	Sealed string `json:"sealed"`
	Source string `json:"source"`
	// Bound is the sealed destination (see binding) the key was given
	// for. A key is only ever sent there: when the provider's base_url or
	// headers change without the key being given again, the key goes.
	Bound string `json:"bound,omitempty"`
}

// binding is what a key is bound to: the provider's base_url and headers,
// as stored (references unexpanded).
func binding(p *config.Provider) string {
	var b strings.Builder
	b.WriteString(p.BaseURL)
	if p.BaseURL == "" && p.Catalog != "" {
		// The catalog gives the address; the key is bound to the entry.
		b.WriteString("catalog:" + p.Catalog)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Headers)) {
		fmt.Fprintf(&b, "\n%s: %s", strings.ToLower(name), p.Headers[name])
	}
	return b.String()
}

func bindLabel(provider string) string { return provider + "\x00binding" }

// poolLabel binds a sealed pool key to its provider.
func poolLabel(provider string) string { return provider + "\x00api_keys" }

func headerLabel(provider, name string) string {
	return provider + "\x00header\x00" + strings.ToLower(name)
}

// boundTo reports whether the key k was given for the destination of p. A
// key stored before keys were bound has no binding, and is taken to be
// bound to what it was stored with.
func (c *Control) boundTo(k sealedKey, p *config.Provider) bool {
	if k.Bound == "" {
		return true
	}
	b, err := c.vault.Open(k.Bound, bindLabel(p.Name))
	return err == nil && b == binding(p)
}

// bindKeys binds every stored key that has no binding yet to its
// provider's destination in doc.
func (c *Control) bindKeys(doc *config.Config) {
	for name, k := range c.keys {
		if p, ok := doc.Provider(name); ok && k.Bound == "" {
			k.Bound = c.vault.Seal(binding(p), bindLabel(name))
			c.keys[name] = k
		}
	}
}

// Store keeps control's documents: the configuration, the sealed keys and
// header values, and the providers picked up from the environment.
// *store.DB keeps them in SQLite.
type Store interface {
	// GetState returns the document stored under name; ok is false when
	// there is none.
	GetState(ctx context.Context, name string) (value []byte, ok bool, err error)
	// UpdateState stores the documents fn puts all together, or none of
	// them when fn or the store fails.
	UpdateState(ctx context.Context, fn func(put func(name string, value []byte) error) error) error
}

var _ Store = (*store.DB)(nil)

// Control owns the editable configuration. It is safe for concurrent use.
type Control struct {
	db     Store
	vault  *vault.Vault
	apply  Applier
	log    *slog.Logger
	lookup func(string) (string, bool)
	pool   Pool

	mu         sync.Mutex
	doc        *config.Config // api_key holds "${VAR}" references or "", never a key
	keys       map[string]sealedKey
	seededFrom string
	changed    []func()
	// cat completes the providers that name a catalog entry: newer (the
	// newest catalog given) with every address the user has not confirmed
	// held back (see addresses.go); changes are those held.
	cat       *catalog.Catalog
	newer     *catalog.Catalog
	builtIn   *catalog.Catalog
	changes   []catalog.Change
	decisions catalog.Decisions
	book      AddressBook
	// adopted are the providers added at start because their key was in
	// the environment.
	adopted []string
	// fileKeys are the providers whose key the --config file gives, each
	// with how it gives it (see fileKeySource). The file wins for what it
	// declares: such a key cannot be set from the dashboard, and a key
	// pasted there earlier is dropped at start.
	fileKeys map[string]string
	// maxBodyMB is the largest max_body_mb the admin API may set: what the
	// config file (or, without one, the stored configuration) allows at
	// start. Raising the body limit is a decision for whoever owns the
	// file, not for a caller of the API.
	maxBodyMB int
}

// Options for Open.
type Options struct {
	DB    Store
	Vault *vault.Vault
	// Seed, when set, is the --config file's content: it replaces the
	// stored configuration at start. SeedPath names it for the dashboard.
	Seed     *config.Config
	SeedPath string
	Apply    Applier
	Logger   *slog.Logger
	// LookupEnv resolves ${VAR} references (os.LookupEnv when nil).
	LookupEnv func(string) (string, bool)
	// Catalog completes providers that name a catalog entry and lists
	// the keys picked up from the environment; nil means the catalog
	// built into the binary. Addresses it gives that neither the
	// built-in catalog (BuiltIn; nil means catalog.Embedded) nor the
	// user's answers kept in Addresses (nil: for this run only) vouch
	// for are held until the user confirms them.
	Catalog   *catalog.Catalog
	BuiltIn   *catalog.Catalog
	Addresses AddressBook
	// Pool tells about the model servers found on this machine, which
	// chains, limits and budgets may name like providers; nil for none.
	Pool Pool
}

// Open loads the stored configuration (or seeds it from the file) and
// applies it once.
func Open(ctx context.Context, o Options) (*Control, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	c := &Control{db: o.DB, vault: o.Vault, apply: o.Apply, log: o.Logger, lookup: o.LookupEnv, keys: map[string]sealedKey{}, fileKeys: map[string]string{},
		pool: o.Pool}
	raw, _, err := c.db.GetState(ctx, docConfig)
	if err != nil {
		return nil, err
	}
	if err := c.openAddresses(o, catalogNames(raw, o.Seed)); err != nil {
		return nil, err
	}
	if raw, ok, err := c.db.GetState(ctx, docKeys); err != nil {
		return nil, err
	} else if ok {
		if err := json.Unmarshal(raw, &c.keys); err != nil {
			return nil, fmt.Errorf("control: stored keys are damaged: %w", err)
		}
	}
	prev, err := c.loadStored(ctx)
	if err != nil {
		if o.Seed == nil {
			return nil, err
		}
		// The seed replaces the stored configuration anyway; only the
		// bindings of old keys are lost with it.
		c.log.Warn("the stored configuration cannot be read; the config file replaces it", "err", err)
	}
	switch {
	case o.Seed != nil:
		doc := o.Seed
		if prev != nil {
			// Keys stored before keys were bound belong to the address
			// they were stored with.
			c.bindKeys(prev)
		}
		for i := range doc.Providers {
			p := &doc.Providers[i]
			if how := fileKeySource(p); how != "" {
				// The file is read at every start and must come out the
				// same each time: a key pasted in the dashboard would
				// otherwise outlive every edit of the file.
				c.fileKeys[p.Name] = how
				if k, ok := c.keys[p.Name]; ok && k.Source == SourceDashboard {
					delete(c.keys, p.Name)
					c.log.Warn("the key pasted in the dashboard is not used: the config file gives this provider's key, and the file wins",
						"provider", p.Name, "file", o.SeedPath, "key", how)
				}
			}
			if k, ok := c.keys[p.Name]; ok && k.Source == SourceDashboard && !c.boundTo(k, p) {
				// The file now sends this provider somewhere else (or
				// with other headers); the key pasted in the dashboard
				// was given for the old destination only.
				delete(c.keys, p.Name)
				c.log.Warn("the key pasted in the dashboard was for another base_url or other headers, so it is not sent to the new ones; paste it again to use it there",
					"provider", p.Name, "base_url", p.BaseURL)
			}
			switch {
			case len(p.APIKeyEnv) > 0:
				// Keep the reference, not the value: the environment stays
				// the source of truth for such keys.
				p.APIKey = "${" + p.APIKeyEnv[0] + "}"
				// A key an earlier file wrote literally is not the
				// fallback of an unset variable.
				delete(c.keys, p.Name)
			case p.APIKey != "":
				c.keys[p.Name] = sealedKey{Sealed: c.vault.Seal(p.APIKey, p.Name), Source: SourceConfig}
				p.APIKey = ""
			case p.Keyless:
				delete(c.keys, p.Name)
			}
		}
		// Hold the seed as it is stored and read back (defaults filled in,
		// references kept), so that the dashboard sees now what it would
		// see after a restart.
		stored, err := c.clone(doc)
		if err != nil {
			return nil, fmt.Errorf("control: the configuration cannot be stored: %w", err)
		}
		c.doc, c.seededFrom = stored, o.SeedPath
	case prev != nil:
		c.doc = prev
	default:
		c.doc = config.Default()
	}
	if err := c.adoptEnvKeys(ctx); err != nil {
		return nil, err
	}
	c.bindKeys(c.doc)
	c.maxBodyMB = c.doc.MaxBodyMB
	if o.Seed == nil {
		c.maxBodyMB = max(c.maxBodyMB, defaults.MaxBodyMB)
	}
	if err := c.persist(ctx, c.doc); err != nil {
		return nil, err
	}
	eff, err := c.effective(c.doc)
	if err != nil {
		return nil, err
	}
	if c.apply != nil {
		if err := c.apply(eff); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// fileKeySource says how the config file gives provider p its key, as it
// stands in the file: "api_key" for a key written in it, the variables
// it is read from, or "keyless: true"; "" when the file gives none, which
// leaves the key to the dashboard.
func fileKeySource(p *config.Provider) string {
	switch {
	case p.Keyless:
		return "keyless: true"
	case len(p.APIKeyEnv) > 0:
		return "from " + strings.Join(p.APIKeyEnv, " or ")
	case p.APIKey != "":
		return "api_key"
	}
	return ""
}

// fileKeyLocked names the config file that gives provider its key, ""
// when the dashboard may set it.
func (c *Control) fileKeyLocked(provider string) string {
	if _, ok := c.fileKeys[provider]; !ok {
		return ""
	}
	// A seed is always given with its path by freelane itself; the
	// fallback only keeps the field from reading as "the dashboard's".
	return cmp.Or(c.seededFrom, "--config")
}

// FileLabel is how a message names the config file called path.
func FileLabel(path string) string {
	if path == "--config" {
		return "the --config file"
	}
	return "the config file " + path
}

// loadStored reads the stored configuration with its sealed header values
// put back; nil when none is stored. References stay unexpanded, so keys
// from the environment are read fresh each time.
func (c *Control) loadStored(ctx context.Context) (*config.Config, error) {
	raw, ok, err := c.db.GetState(ctx, docConfig)
	if err != nil || !ok {
		return nil, err
	}
	doc, _, err := config.ParseWith("stored configuration", raw, config.ParseOptions{Verbatim: true, Catalog: c.cat})
	if err != nil {
		return nil, fmt.Errorf("control: the stored configuration is invalid: %w", err)
	}
	if err := c.openPools(ctx, doc); err != nil {
		return nil, err
	}
	hraw, ok, err := c.db.GetState(ctx, docHeaders)
	if err != nil || !ok {
		return doc, err
	}
	var sealed map[string]map[string]string
	if err := json.Unmarshal(hraw, &sealed); err != nil {
		return nil, fmt.Errorf("control: stored header values are damaged: %w", err)
	}
	for i := range doc.Providers {
		p := &doc.Providers[i]
		for name, v := range sealed[p.Name] {
			if _, ok := p.Headers[name]; !ok {
				continue
			}
			h, err := c.vault.Open(v, headerLabel(p.Name, name))
			if err != nil {
				c.log.Error("cannot open a stored header value", "provider", p.Name, "header", name, "err", err)
				continue
			}
			p.Headers[name] = h
		}
	}
	return doc, nil
}

// openPools puts the sealed keys of api_keys back into doc.
func (c *Control) openPools(ctx context.Context, doc *config.Config) error {
	raw, ok, err := c.db.GetState(ctx, docPools)
	if err != nil || !ok {
		return err
	}
	var pools map[string][]string
	if err := json.Unmarshal(raw, &pools); err != nil {
		return fmt.Errorf("control: stored pool keys are damaged: %w", err)
	}
	for i := range doc.Providers {
		p := &doc.Providers[i]
		seals := pools[p.Name]
		for j := range p.APIKeys {
			if j >= len(seals) || seals[j] == "" || p.APIKeys[j] != "" {
				continue
			}
			k, err := c.vault.Open(seals[j], poolLabel(p.Name))
			if err != nil {
				c.log.Error("cannot open a stored pool key", "provider", p.Name, "err", err)
				continue
			}
			p.APIKeys[j] = k
		}
	}
	return nil
}

// OnChange registers f to run after every applied change.
func (c *Control) OnChange(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changed = append(c.changed, f)
}

// SeededFrom is the config file that seeded the configuration at start.
func (c *Control) SeededFrom() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seededFrom
}

// Config returns a copy of the document (no keys in it).
func (c *Control) Config() *config.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	doc, _ := c.clone(c.doc)
	return doc
}

// Effective returns the configuration with keys, as it is applied.
func (c *Control) Effective() (*config.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.effective(c.doc)
}

func marshal(doc *config.Config) ([]byte, error) {
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("control: encoding the configuration: %w", err)
	}
	return b, nil
}

// clone copies a document through its YAML form, which also validates it
// with the config file's rules and fills in defaults.
func (c *Control) clone(doc *config.Config) (*config.Config, error) {
	b, err := marshal(doc)
	if err != nil {
		return nil, err
	}
	out, _, err := config.ParseWith("configuration", b, config.ParseOptions{Verbatim: true, Catalog: c.cat})
	return out, err
}

// effective resolves ${VAR} references from the environment and fills in
// the keys from the vault: a key pasted in the dashboard wins, then the
// environment, then a key written in the config file. A provider whose key
// the --config file gives has no dashboard key (see fileKeys).
func (c *Control) effective(doc *config.Config) (*config.Config, error) {
	b, err := marshal(doc)
	if err != nil {
		return nil, err
	}
	eff, _, err := config.ParseWith("configuration", b, config.ParseOptions{LookupEnv: c.lookup, Catalog: c.cat})
	if err != nil {
		return nil, err
	}
	for i := range eff.Providers {
		p := &eff.Providers[i]
		p.KeyFile = c.fileKeyLocked(p.Name)
		k, ok := c.keys[p.Name]
		if !ok {
			continue
		}
		if k.Source == SourceDashboard || p.APIKey == "" {
			key, err := c.vault.Open(k.Sealed, p.Name)
			if err != nil {
				c.log.Error("cannot open a stored key", "provider", p.Name, "err", err)
				continue
			}
			p.APIKey = key
		}
	}
	return eff, nil
}

// persist stores doc and the keys. Header values are secret-ish (tokens,
// account ids), so literal ones are sealed like keys and stored apart from
// the document, which holds them empty; references are stored as they are.
func (c *Control) persist(ctx context.Context, doc *config.Config) error {
	open := *doc
	open.Providers = slices.Clone(doc.Providers)
	sealed := map[string]map[string]string{}
	pools := map[string][]string{}
	for i := range open.Providers {
		p := &open.Providers[i]
		if len(p.APIKeys) > 0 {
			keys := slices.Clone(p.APIKeys)
			seals := make([]string, len(keys))
			for j, k := range keys {
				if k == "" || config.HasRef(k) {
					continue
				}
				seals[j] = c.vault.Seal(k, poolLabel(p.Name))
				keys[j] = ""
			}
			p.APIKeys, pools[p.Name] = keys, seals
		}
		if len(p.Headers) == 0 {
			continue
		}
		hs := maps.Clone(p.Headers)
		for name, v := range hs {
			if v == "" || config.HasRef(v) {
				continue
			}
			if sealed[p.Name] == nil {
				sealed[p.Name] = map[string]string{}
			}
			sealed[p.Name][name] = c.vault.Seal(v, headerLabel(p.Name, name))
			hs[name] = ""
		}
		p.Headers = hs
	}
	b, err := marshal(&open)
	if err != nil {
		return err
	}
	hb, err := json.Marshal(sealed)
	if err != nil {
		return fmt.Errorf("control: encoding header values: %w", err)
	}
	pb, err := json.Marshal(pools)
	if err != nil {
		return fmt.Errorf("control: encoding pool keys: %w", err)
	}
	kb, err := json.Marshal(c.keys)
	if err != nil {
		return fmt.Errorf("control: encoding keys: %w", err)
	}
	// One change is stored whole or not at all: a document must never
	// name header values or keys that were not stored with it.
	return c.db.UpdateState(ctx, func(put func(name string, value []byte) error) error {
		for _, d := range []struct {
			name  string
			value []byte
		}{{docHeaders, hb}, {docPools, pb}, {docConfig, b}, {docKeys, kb}} {
			if err := put(d.name, d.value); err != nil {
				return err
			}
		}
		return nil
	})
}

// Error is a change the user must correct; Param names the field.
type Error struct {
	Status  int
	Param   string
	Message string
	// Code is the error's code in the API's answer; "" for the usual
	// invalid_value.
	Code string
}

func (e *Error) Error() string { return e.Message }

func userErr(status int, param, format string, args ...any) *Error {
	return &Error{Status: status, Param: param, Message: fmt.Sprintf(format, args...)}
}

// update applies fn to a copy of the document, validates it, stores it and
// installs it. Nothing changes when any step fails.
func (c *Control) update(ctx context.Context, scope string, fn func(doc *config.Config) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updateLocked(ctx, scope, fn)
}

func (c *Control) updateLocked(ctx context.Context, scope string, fn func(doc *config.Config) error) error {
	oldKeys := maps.Clone(c.keys)
	checked, eff, err := c.prepareLocked(scope, fn)
	if err != nil {
		c.keys = oldKeys
		return err
	}
	if err := c.persist(ctx, checked); err != nil {
		c.keys = oldKeys
		return err
	}
	if c.apply != nil {
		if err := c.apply(eff); err != nil {
			return err
		}
	}
	c.doc = checked
	for _, f := range c.changed {
		f()
	}
	return nil
}

// prepareLocked applies fn to a copy of the document and validates the
// result: it returns the document to store and its effective form. The
// keys fn sets or unbind forgets are changed in c.keys, which the caller
// puts back when it does not store the result.
func (c *Control) prepareLocked(scope string, fn func(doc *config.Config) error) (checked, eff *config.Config, err error) {
	next, err := c.clone(c.doc)
	if err != nil {
		return nil, nil, err
	}
	if err := fn(next); err != nil {
		return nil, nil, err
	}
	// A chain or budget naming a server discovery found records it, so
	// that the configuration still loads while the server is stopped.
	recordLocal(next, c.localServers())
	c.unbind(c.doc, next)
	if checked, err = c.clone(next); err != nil {
		return nil, nil, validationError(err, scope)
	}
	if eff, err = c.effective(checked); err != nil {
		return nil, nil, validationError(err, scope)
	}
	return checked, eff, nil
}

// unbind forgets the credentials of every provider whose destination
// (base_url or headers) differs between old and next, unless this change
// gave them anew: a stored key, and an api_key that refers to the
// environment, would otherwise follow the provider to wherever the change
// points it. A key given in the same change has no binding yet and is
// bound to the new destination.
func (c *Control) unbind(old, next *config.Config) {
	for i := range next.Providers {
		p := &next.Providers[i]
		was, ok := old.Provider(p.Name)
		if !ok || binding(was) == binding(p) {
			continue
		}
		k, stored := c.keys[p.Name]
		if given := stored && k.Bound == ""; given {
			continue
		}
		if stored {
			delete(c.keys, p.Name)
		}
		if config.HasRef(p.APIKey) {
			p.APIKey, p.APIKeyEnv = "", nil
		}
		// The pool's other keys were given for the old destination too.
		p.APIKeys = nil
	}
	c.bindKeys(next)
}

// validationError turns the config validator's first problem into an Error
// whose Param is relative to the edited object (scope "providers[2]" turns
// "providers[2].base_url" into "base_url").
func validationError(err error, scope string) error {
	var ve *config.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) == 0 {
		return err
	}
	// Prefer a problem inside the edited object.
	p := ve.Problems[0]
	for _, q := range ve.Problems {
		if scope != "" && strings.HasPrefix(q.Field, scope) {
			p = q
			break
		}
	}
	param := p.Field
	if scope != "" {
		param = strings.TrimPrefix(strings.TrimPrefix(param, scope), ".")
	}
	return &Error{Status: 400, Param: param, Message: p.Message}
}

func providerIndex(doc *config.Config, name string) int {
	return slices.IndexFunc(doc.Providers, func(p config.Provider) bool { return p.Name == name })
}

func chainIndex(doc *config.Config, name string) int {
	return slices.IndexFunc(doc.Chains, func(ch config.Chain) bool { return ch.Name == name })
}
