// Package catalog is FreeLane's list of model providers: the free tiers,
// the trial credits, the paid vendors users bring keys for and the local
// servers, each with its address, key variables, models and published
// limits. The list is a data file embedded in the binary; a newer file of
// the same form replaces it once it passes Parse's checks.
package catalog

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	// The catalog's limits start over at midnight in the providers' own
	// zones (Pacific for Google); the zone data is built in so that holds
	// on systems without a zone database, such as Windows.
	_ "time/tzdata"

	"go.yaml.in/yaml/v3"

	"freelane/backend/quota"
)

//go:embed catalog.yaml
var embedded []byte

// MaxFile bounds a catalog file; the embedded one is a few tens of KiB.
const MaxFile = 4 << 20

// Tiers, in the order a user meets them.
const (
	TierFree  = "free"
	TierTrial = "trial"
	TierPaid  = "paid"
	TierLocal = "local"
)

// Catalog is one catalog file.
type Catalog struct {
	// Date is the day its figures were gathered, YYYY-MM-DD.
	Date      string     `yaml:"date" json:"date"`
	Providers []Provider `yaml:"providers" json:"providers"`
}

// Provider is one provider the user can add.
type Provider struct {
	// ID names the provider in the config ("groq"); unique.
	ID   string `yaml:"id" json:"id"`
	Name string `yaml:"name" json:"name"`
	// Tier is free, trial, paid or local.
	Tier string `yaml:"tier" json:"tier"`
	// Dialect is the wire protocol: openai, anthropic or gemini.
	Dialect string `yaml:"dialect" json:"dialect"`
	// BaseURL may hold ${NAME} placeholders, each listed in Placeholders,
	// such as a Cloudflare account id.
	BaseURL      string   `yaml:"base_url" json:"base_url"`
	Placeholders []string `yaml:"placeholders,omitempty" json:"placeholders,omitempty"`
	// KeyEnv are the environment variables a key is read from, in order of
	// preference; none for local servers.
	KeyEnv    []string `yaml:"key_env,omitempty" json:"key_env,omitempty"`
	SignupURL string   `yaml:"signup_url,omitempty" json:"signup_url,omitempty"`
	// ListModels is set for providers whose model list endpoint gives the
	// models they serve, so the list here is a starting point.
	ListModels bool `yaml:"list_models,omitempty" json:"list_models,omitempty"`
	// Credit is a trial or one-time allowance, in words.
	Credit string `yaml:"credit,omitempty" json:"credit,omitempty"`
	// Limits apply to the provider as a whole.
	Limits []Limit  `yaml:"limits,omitempty" json:"limits,omitempty"`
	Notes  []string `yaml:"notes,omitempty" json:"notes,omitempty"`
	Models []Model  `yaml:"models" json:"models"`
	line   int      // where the provider starts in its file
}

// Model is one model a provider serves.
type Model struct {
	ID      string  `yaml:"id" json:"id"`
	ParamsB float64 `yaml:"params_b,omitempty" json:"params_b,omitempty"`
	// Context and MaxOutput are in tokens; zero when not published.
	Context   int `yaml:"context,omitempty" json:"context,omitempty"`
	MaxOutput int `yaml:"max_output,omitempty" json:"max_output,omitempty"`
	// Capabilities are tools, vision, json and reasoning; empty when not
	// known.
	Capabilities []string `yaml:"capabilities,omitempty" json:"capabilities,omitempty"`
	Limits       []Limit  `yaml:"limits,omitempty" json:"limits,omitempty"`
	// Price is the published price per million tokens, for paid models;
	// nil when the model is free or its price is not in the file.
	Price *Price `yaml:"price,omitempty" json:"price,omitempty"`
}

// Price is money per million tokens.
type Price struct {
	Input  float64 `yaml:"input" json:"input"`
	Output float64 `yaml:"output" json:"output"`
}

// Limit is a published limit, in the config file's units.
type Limit struct {
	RPM         int    `yaml:"rpm,omitempty" json:"rpm,omitempty"`
	RPD         int    `yaml:"rpd,omitempty" json:"rpd,omitempty"`
	TPM         int    `yaml:"tpm,omitempty" json:"tpm,omitempty"`
	TPD         int    `yaml:"tpd,omitempty" json:"tpd,omitempty"`
	Concurrency int    `yaml:"concurrency,omitempty" json:"concurrency,omitempty"`
	Reset       string `yaml:"reset,omitempty" json:"reset,omitempty"`
	// Pool "account" marks a limit every model of the account shares.
	Pool string `yaml:"pool,omitempty" json:"pool,omitempty"`
}

// Embedded returns the catalog built into this binary.
// It is parsed once and shared: callers must not change it.
func Embedded() *Catalog { return embeddedOnce() }

var embeddedOnce = sync.OnceValue(func() *Catalog {
	c, err := Parse("catalog.yaml", embedded)
	if err != nil {
		// The embedded file is checked by the package's tests.
		panic("catalog: the embedded catalog is invalid: " + err.Error())
	}
	return c
})

// Provider returns the provider with the id.
func (c *Catalog) Provider(id string) (*Provider, bool) {
	i := slices.IndexFunc(c.Providers, func(p Provider) bool { return p.ID == id })
	if i < 0 {
		return nil, false
	}
	return &c.Providers[i], true
}

// Problems is a catalog file that failed its checks: every problem, each
// with its line.
type Problems struct {
	File string
	List []string
}

func (p *Problems) Error() string {
	return fmt.Sprintf("%s is not a valid catalog: %s", p.File, strings.Join(p.List, "; "))
}

// ErrTooLarge is a catalog file over MaxFile.
var ErrTooLarge = errors.New("catalog file too large")

var (
	idPattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	envPattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	dialects   = []string{"openai", "anthropic", "gemini"}
	tiers      = []string{TierFree, TierTrial, TierPaid, TierLocal}
	caps       = []string{"tools", "vision", "json", "reasoning"}
)

// Parse reads and checks a catalog file named name (for messages). A file
// with problems is refused whole, with every problem and its line.
func Parse(name string, data []byte) (*Catalog, error) {
	if len(data) > MaxFile {
		return nil, fmt.Errorf("%s: %w (%d bytes, at most %d)", name, ErrTooLarge, len(data), MaxFile)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Catalog
	if err := dec.Decode(&c); err != nil {
		return nil, &Problems{File: name, List: []string{strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err == nil {
		if seq := member(&root, "providers"); seq != nil && len(seq.Content) == len(c.Providers) {
			for i, n := range seq.Content {
				c.Providers[i].line = n.Line
			}
		}
	}
	if ps := c.check(); len(ps) > 0 {
		return nil, &Problems{File: name, List: ps}
	}
	return &c, nil
}

// member finds key in the document's top mapping.
func member(doc *yaml.Node, key string) *yaml.Node {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// check returns every problem of a decoded catalog.
func (c *Catalog) check() []string {
	var ps []string
	if _, err := time.Parse(time.DateOnly, c.Date); err != nil {
		ps = append(ps, fmt.Sprintf("date must be the day the figures were gathered, YYYY-MM-DD, got %q", c.Date))
	}
	if len(c.Providers) == 0 {
		ps = append(ps, "providers: the catalog lists no provider")
	}
	seen := map[string]int{}
	for i := range c.Providers {
		p := &c.Providers[i]
		where := fmt.Sprintf("line %d: providers[%d]", p.line, i)
		if p.ID != "" {
			where += " (" + p.ID + ")"
		}
		bad := func(format string, args ...any) {
			ps = append(ps, where+": "+fmt.Sprintf(format, args...))
		}
		if !idPattern.MatchString(p.ID) {
			bad("id must be lower-case letters, digits and '-', got %q", p.ID)
		} else if first, dup := seen[p.ID]; dup {
			bad("id repeats providers[%d]", first)
		} else {
			seen[p.ID] = i
		}
		if strings.TrimSpace(p.Name) == "" {
			bad("name is required")
		}
		if !slices.Contains(tiers, p.Tier) {
			bad("tier must be one of %s, got %q", strings.Join(tiers, ", "), p.Tier)
		}
		if !slices.Contains(dialects, p.Dialect) {
			bad("dialect must be one of %s, got %q", strings.Join(dialects, ", "), p.Dialect)
		}
		if msg := checkURL(p.BaseURL, p.Placeholders, p.Tier == TierLocal); msg != "" {
			bad("base_url %s", msg)
		}
		if p.SignupURL != "" {
			if u, err := url.Parse(p.SignupURL); err != nil || u.Scheme != "https" || u.Host == "" {
				bad("signup_url must be an https URL, got %q", p.SignupURL)
			}
		}
		for _, e := range append(slices.Clone(p.KeyEnv), p.Placeholders...) {
			if !envPattern.MatchString(e) {
				bad("%q is not an environment variable name (upper-case letters, digits and '_')", e)
			}
		}
		if p.Tier != TierLocal && len(p.KeyEnv) == 0 {
			bad("key_env must name the variables a key is read from")
		}
		if len(p.Models) == 0 && !p.ListModels {
			bad("models is empty and list_models is not set, so the provider would serve nothing")
		}
		for _, l := range p.Limits {
			if msg := checkLimit(l); msg != "" {
				bad("limits: %s", msg)
			}
		}
		models := map[string]bool{}
		for j, m := range p.Models {
			mw := fmt.Sprintf("models[%d]", j)
			switch {
			case strings.TrimSpace(m.ID) == "":
				bad("%s: id is required", mw)
			case models[m.ID]:
				bad("%s: model %q is listed twice", mw, m.ID)
			}
			models[m.ID] = true
			if m.ParamsB < 0 || m.Context < 0 || m.MaxOutput < 0 {
				bad("%s (%s): params_b, context and max_output must not be negative", mw, m.ID)
			}
			for _, cp := range m.Capabilities {
				if !slices.Contains(caps, cp) {
					bad("%s (%s): capability %q is not one of %s", mw, m.ID, cp, strings.Join(caps, ", "))
				}
			}
			for _, l := range m.Limits {
				if msg := checkLimit(l); msg != "" {
					bad("%s (%s): limits: %s", mw, m.ID, msg)
				}
			}
			if pr := m.Price; pr != nil && (pr.Input < 0 || pr.Output < 0 || pr.Input > 10000 || pr.Output > 10000) {
				bad("%s (%s): price must be from 0 to 10000 per million tokens", mw, m.ID)
			}
		}
	}
	return ps
}

// checkURL checks a base URL whose ${NAME} placeholders are declared.
func checkURL(raw string, placeholders []string, local bool) string {
	filled := raw
	for _, name := range placeholders {
		if !strings.Contains(raw, "${"+name+"}") {
			return fmt.Sprintf("does not use its placeholder ${%s}", name)
		}
		filled = strings.ReplaceAll(filled, "${"+name+"}", "x")
	}
	if strings.Contains(filled, "${") {
		return fmt.Sprintf("has a placeholder that placeholders does not list: %q", raw)
	}
	u, err := url.Parse(filled)
	switch {
	case err != nil || u.Host == "":
		return fmt.Sprintf("must be an absolute URL, got %q", raw)
	case local && u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("must be http or https, got %q", raw)
	case !local && u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname())):
		// A key sent over plain http to another machine could be read
		// on the way; on this machine it stays in the kernel.
		return fmt.Sprintf("must be https for a remote provider, got %q", raw)
	}
	return ""
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkLimit checks one limit.
func checkLimit(l Limit) string {
	if l.RPM < 0 || l.RPD < 0 || l.TPM < 0 || l.TPD < 0 || l.Concurrency < 0 {
		return "a limit must not be negative"
	}
	if l.RPM == 0 && l.RPD == 0 && l.TPM == 0 && l.TPD == 0 && l.Concurrency == 0 {
		return "a limit needs at least one of rpm, rpd, tpm, tpd and concurrency"
	}
	if l.Pool != "" && l.Pool != "account" {
		return fmt.Sprintf("pool must be \"account\" or left out, got %q", l.Pool)
	}
	if _, err := quota.ParseRule(l.Reset); err != nil {
		return err.Error()
	}
	return ""
}

// Words says the limit in plain words, as the dashboard shows it: "20
// requests a minute, 50 a day (shared by every model of the account); the
// day starts at 00:00 UTC".
func (l Limit) Words() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", thousands(n), what))
		}
	}
	add(l.RPM, "requests a minute")
	add(l.RPD, "requests a day")
	add(l.TPM, "tokens a minute")
	add(l.TPD, "tokens a day")
	add(l.Concurrency, "at once")
	s := strings.Join(parts, ", ")
	if l.Pool == "account" {
		s += " (shared by every model of the account)"
	}
	if l.RPD > 0 || l.TPD > 0 {
		switch r := l.Reset; {
		case r == "" || r == "daily 00:00 UTC":
			s += "; the day starts at 00:00 UTC"
		case strings.HasPrefix(r, "daily "):
			s += "; the day starts at " + strings.TrimPrefix(r, "daily ")
		case r == "rolling 24h":
			s += "; a day is the last 24 hours"
		default:
			s += "; it starts over " + r
		}
	} else if strings.HasPrefix(l.Reset, "monthly ") {
		s += "; it starts over " + l.Reset
	}
	return s
}

// thousands writes n with commas: 14400 is "14,400".
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
