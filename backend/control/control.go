// Package control is FreeLane's control plane: the configuration the
// dashboard edits. It keeps the configuration document and the encrypted
// keys in SQLite, validates every change with the same rules as the config
// file, and hands the effective configuration (with keys) to the gateway,
// which rebuilds routing for the next request. Keys never leave it in
// plaintext except inside that effective configuration.
package control

import (
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

	"freelane/backend/config"
	"freelane/backend/store"
	"freelane/backend/vault"
)

// State document names.
const (
	docConfig = "config"
	docKeys   = "keys"
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
}

// Control owns the editable configuration. It is safe for concurrent use.
type Control struct {
	db     *store.DB
	vault  *vault.Vault
	apply  Applier
	log    *slog.Logger
	lookup func(string) (string, bool)

	mu         sync.Mutex
	doc        *config.Config // api_key holds "${VAR}" references or "", never a key
	keys       map[string]sealedKey
	seededFrom string
	changed    []func()
	// maxBodyMB is the largest max_body_mb the admin API may set: what the
	// config file (or, without one, the stored configuration) allows at
	// start. Raising the body limit is a decision for whoever owns the
	// file, not for a caller of the API.
	maxBodyMB int
}

// Options for Open.
type Options struct {
	DB    *store.DB
	Vault *vault.Vault
	// Seed, when set, is the --config file's content: it replaces the
	// stored configuration at start. SeedPath names it for the dashboard.
	Seed     *config.Config
	SeedPath string
	Apply    Applier
	Logger   *slog.Logger
	// LookupEnv resolves ${VAR} references (os.LookupEnv when nil).
	LookupEnv func(string) (string, bool)
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
	c := &Control{db: o.DB, vault: o.Vault, apply: o.Apply, log: o.Logger, lookup: o.LookupEnv, keys: map[string]sealedKey{}}
	if raw, ok, err := c.db.GetState(ctx, docKeys); err != nil {
		return nil, err
	} else if ok {
		if err := json.Unmarshal(raw, &c.keys); err != nil {
			return nil, fmt.Errorf("control: stored keys are damaged: %w", err)
		}
	}
	switch {
	case o.Seed != nil:
		doc := o.Seed
		for i := range doc.Providers {
			p := &doc.Providers[i]
			switch {
			case len(p.APIKeyEnv) > 0:
				// Keep the reference, not the value: the environment stays
				// the source of truth for such keys.
				p.APIKey = "${" + p.APIKeyEnv[0] + "}"
			case p.APIKey != "":
				if k, ok := c.keys[p.Name]; !ok || k.Source != SourceDashboard {
					c.keys[p.Name] = sealedKey{Sealed: c.vault.Seal(p.APIKey, p.Name), Source: SourceConfig}
				}
				p.APIKey = ""
			}
		}
		// Hold the seed as it is stored and read back (defaults filled in,
		// references kept), so that the dashboard sees now what it would
		// see after a restart.
		stored, err := clone(doc)
		if err != nil {
			return nil, fmt.Errorf("control: the configuration cannot be stored: %w", err)
		}
		c.doc, c.seededFrom = stored, o.SeedPath
	default:
		raw, ok, err := c.db.GetState(ctx, docConfig)
		if err != nil {
			return nil, err
		}
		if ok {
			doc, _, err := config.Parse("stored configuration", raw, keepRefs)
			if err != nil {
				return nil, fmt.Errorf("control: the stored configuration is invalid: %w", err)
			}
			c.doc = doc
		} else {
			c.doc = config.Default()
		}
	}
	c.maxBodyMB = c.doc.MaxBodyMB
	if o.Seed == nil {
		c.maxBodyMB = max(c.maxBodyMB, config.DefaultMaxBodyMB)
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

// keepRefs leaves ${VAR} references in place when the stored document is
// parsed, so keys from the environment are read fresh each time.
func keepRefs(name string) (string, bool) { return "${" + name + "}", true }

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
	doc, _ := clone(c.doc)
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
func clone(doc *config.Config) (*config.Config, error) {
	b, err := marshal(doc)
	if err != nil {
		return nil, err
	}
	out, _, err := config.Parse("configuration", b, keepRefs)
	return out, err
}

// effective resolves ${VAR} references from the environment and fills in
// the keys from the vault: a key pasted in the dashboard wins, then the
// environment, then a key written in the config file.
func (c *Control) effective(doc *config.Config) (*config.Config, error) {
	b, err := marshal(doc)
	if err != nil {
		return nil, err
	}
	eff, _, err := config.Parse("configuration", b, c.lookup)
	if err != nil {
		return nil, err
	}
	for i := range eff.Providers {
		p := &eff.Providers[i]
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

func (c *Control) persist(ctx context.Context, doc *config.Config) error {
	b, err := marshal(doc)
	if err != nil {
		return err
	}
	if err := c.db.PutState(ctx, docConfig, b); err != nil {
		return err
	}
	kb, err := json.Marshal(c.keys)
	if err != nil {
		return fmt.Errorf("control: encoding keys: %w", err)
	}
	return c.db.PutState(ctx, docKeys, kb)
}

// Error is a change the user must correct; Param names the field.
type Error struct {
	Status  int
	Param   string
	Message string
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
	next, err := clone(c.doc)
	if err != nil {
		return err
	}
	oldKeys := maps.Clone(c.keys)
	if err := fn(next); err != nil {
		c.keys = oldKeys
		return err
	}
	checked, err := clone(next)
	if err != nil {
		c.keys = oldKeys
		return validationError(err, scope)
	}
	eff, err := c.effective(checked)
	if err != nil {
		c.keys = oldKeys
		return validationError(err, scope)
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
