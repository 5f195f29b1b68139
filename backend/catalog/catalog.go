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
	"freelane/backend/tier"
)

//go:embed catalog.yaml
var embedded []byte

// MaxFile bounds a catalog file; the embedded one is about 14 KiB.
const MaxFile = 1 << 20

// Catalog is one catalog file.
type Catalog struct {
	// Date is the day its figures were gathered, YYYY-MM-DD.
	Date      string     `yaml:"date" json:"date"`
	Providers []Provider `yaml:"providers" json:"providers"`
	dateLine  int
}

// Provider is one provider the user can add.
type Provider struct {
	// ID names the provider in the config ("groq"); unique.
	ID   string `yaml:"id" json:"id"`
	Name string `yaml:"name" json:"name"`
	// Tier is how the vendor offers the provider: free, trial, paid or
	// local.
	Tier tier.Offer `yaml:"tier" json:"tier"`
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
	// SharedQuota, when set, says in words what the provider's keys share
	// their limits by (one Google Cloud project): several keys of it are
	// counted as one allowance, not one each.
	SharedQuota string `yaml:"shared_quota,omitempty" json:"shared_quota,omitempty"`
	// KeyTerms, when set, are the provider's own words (with a link) that
	// forbid spreading requests over several keys; a pool of its keys is
	// warned about. Only set from the provider's published terms.
	KeyTerms string `yaml:"key_terms,omitempty" json:"key_terms,omitempty"`
	// Limits apply to the provider as a whole.
	Limits []Limit  `yaml:"limits,omitempty" json:"limits,omitempty"`
	Notes  []string `yaml:"notes,omitempty" json:"notes,omitempty"`
	// CacheTTL is how long the provider keeps a prompt-cache entry after
	// its last use ("5m", "1h"); empty is unknown, taken as 5 minutes.
	CacheTTL string `yaml:"cache_ttl,omitempty" json:"cache_ttl,omitempty"`
	// PricesRead is the date (YYYY-MM-DD) the models' prices were read
	// from the vendor's published price list.
	PricesRead string  `yaml:"prices_read,omitempty" json:"prices_read,omitempty"`
	Models     []Model `yaml:"models" json:"models"`
	line       int     // where the provider starts in its file
	// modelLines are where its models start, in order.
	modelLines []int
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
	// CacheRead and CacheWrite are the prices of prompt tokens read from
	// and written to the vendor's prompt cache; 0 where the vendor has
	// none or the file does not say.
	CacheRead  float64 `yaml:"cache_read,omitempty" json:"cache_read,omitempty"`
	CacheWrite float64 `yaml:"cache_write,omitempty" json:"cache_write,omitempty"`
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
	caps       = []string{"tools", "vision", "json", "reasoning"}
)

// Parse reads and checks a catalog file named name (for messages). A file
// with problems is refused whole, with every problem and its line. The
// problems are in FreeLane's own words and repeat nothing of the file (no
// field name, value or line of it): a file fetched from a URL may be some
// other server's page, which must not be read back through the errors.
func Parse(name string, data []byte) (*Catalog, error) {
	if len(data) > MaxFile {
		return nil, fmt.Errorf("%s: %w (%d bytes, at most %d)", name, ErrTooLarge, len(data), MaxFile)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &Problems{File: name, List: decodeProblems(err)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Catalog
	var ps []string
	if err := dec.Decode(&c); err != nil {
		if _, partial := errors.AsType[*yaml.TypeError](err); !partial {
			return nil, &Problems{File: name, List: decodeProblems(err)}
		}
		// Decoding went on past the values it could not take, so the
		// rules are checked too, and every problem is told at once.
		ps = decodeProblems(err)
	}
	c.dateLine = 1
	if n := memberKey(&root, "date"); n != nil {
		c.dateLine = n.Line
	}
	if seq := member(&root, "providers"); seq != nil && len(seq.Content) == len(c.Providers) {
		for i, n := range seq.Content {
			c.Providers[i].line = n.Line
			if ms := mappingValue(n, "models"); ms != nil && len(ms.Content) == len(c.Providers[i].Models) {
				for _, m := range ms.Content {
					c.Providers[i].modelLines = append(c.Providers[i].modelLines, m.Line)
				}
			}
		}
	}
	ps = append(ps, c.check()...)
	if len(ps) > 0 {
		return nil, &Problems{File: name, List: slices.Compact(ps)}
	}
	return &c, nil
}

// yamlLine finds the line numbers the YAML library puts in its messages.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// decodeProblems says what the YAML library found, in FreeLane's words:
// its own messages quote the file (field names, values), which a problem
// must not.
func decodeProblems(err error) []string {
	var msgs []string
	if te, ok := errors.AsType[*yaml.TypeError](err); ok {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var out []string
	for _, m := range msgs {
		where := ""
		if l := yamlLine.FindStringSubmatch(m); l != nil {
			where = "line " + l[1] + ": "
		}
		switch {
		case strings.Contains(m, "not found in type"):
			out = append(out, where+"a field the catalog does not have; the fields are listed in backend/catalog/catalog.yaml")
		case strings.Contains(m, "already set in map") || strings.Contains(m, "already defined"):
			out = append(out, where+"a field given twice")
		case strings.Contains(m, "cannot unmarshal"):
			out = append(out, where+"a value of the wrong kind (a text, a number, a list or a mapping where another is expected)")
		default:
			out = append(out, where+"the file is not valid YAML")
		}
	}
	if len(out) == 0 {
		out = append(out, "the file is not valid YAML")
	}
	return out
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

// memberKey finds the key node of key in the document's top mapping.
func memberKey(doc *yaml.Node, key string) *yaml.Node {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

// mappingValue is the value of key in the mapping node m.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// check returns every problem of a decoded catalog. Each says where (the
// line, and the provider's or model's place) and which rule is broken,
// without the offending value: see Parse.
func (c *Catalog) check() []string {
	var ps []string
	if _, err := time.Parse(time.DateOnly, c.Date); err != nil {
		ps = append(ps, fmt.Sprintf("line %d: date must be the day the figures were gathered, written YYYY-MM-DD", c.dateLine))
	}
	if len(c.Providers) == 0 {
		ps = append(ps, "providers: the catalog lists no provider")
	}
	seen := map[string]int{}
	for i := range c.Providers {
		p := &c.Providers[i]
		where := fmt.Sprintf("line %d: providers[%d]", p.line, i)
		bad := func(format string, args ...any) {
			ps = append(ps, where+": "+fmt.Sprintf(format, args...))
		}
		if !idPattern.MatchString(p.ID) || len(p.ID) > maxID {
			bad("id must be lower-case letters, digits and '-', at most %d", maxID)
		} else if first, dup := seen[p.ID]; dup {
			bad("id repeats providers[%d]", first)
		} else {
			seen[p.ID] = i
		}
		if strings.TrimSpace(p.Name) == "" {
			bad("name is required")
		}
		if !p.Tier.Valid() {
			bad("tier must be one of %s", tier.Words(tier.Offers()))
		}
		if !slices.Contains(dialects, p.Dialect) {
			bad("dialect must be one of %s", strings.Join(dialects, ", "))
		}
		if msg := checkURL(p.BaseURL, p.Placeholders, p.Tier == tier.OfferLocal); msg != "" {
			bad("base_url %s", msg)
		}
		if p.SignupURL != "" {
			if u, err := url.Parse(p.SignupURL); err != nil || u.Scheme != "https" || u.Host == "" {
				bad("signup_url must be an https URL")
			}
		}
		for _, e := range p.KeyEnv {
			if !envPattern.MatchString(e) {
				bad("key_env must name environment variables (upper-case letters, digits and '_')")
				break
			}
		}
		for _, e := range p.Placeholders {
			if !envPattern.MatchString(e) {
				bad("placeholders must name environment variables (upper-case letters, digits and '_')")
				break
			}
		}
		if p.Tier != tier.OfferLocal && len(p.KeyEnv) == 0 {
			bad("key_env must name the variables a key is read from")
		}
		if p.CacheTTL != "" {
			if d, err := time.ParseDuration(p.CacheTTL); err != nil || d <= 0 || d > 24*time.Hour {
				bad("cache_ttl must be a duration above 0 and at most 24h, such as 5m or 1h")
			}
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
			if j < len(p.modelLines) {
				mw = fmt.Sprintf("models[%d] (line %d)", j, p.modelLines[j])
			}
			switch {
			case strings.TrimSpace(m.ID) == "":
				bad("%s: id is required", mw)
			case models[m.ID]:
				bad("%s: the model is listed twice", mw)
			}
			models[m.ID] = true
			if m.ParamsB < 0 || m.Context < 0 || m.MaxOutput < 0 {
				bad("%s: params_b, context and max_output must not be negative", mw)
			}
			for _, cp := range m.Capabilities {
				if !slices.Contains(caps, cp) {
					bad("%s: capabilities may only be %s", mw, strings.Join(caps, ", "))
					break
				}
			}
			for _, l := range m.Limits {
				if msg := checkLimit(l); msg != "" {
					bad("%s: limits: %s", mw, msg)
				}
			}
			if pr := m.Price; pr != nil && (pr.Input < 0 || pr.Output < 0 || pr.Input > 10000 || pr.Output > 10000) {
				bad("%s: price must be from 0 to 10000 per million tokens", mw)
			}
		}
	}
	return ps
}

// maxID bounds a provider id: it names providers and appears in paths.
const maxID = 64

// checkURL checks a base URL whose ${NAME} placeholders are declared.
func checkURL(raw string, placeholders []string, local bool) string {
	filled := raw
	for _, name := range placeholders {
		if !strings.Contains(raw, "${"+name+"}") {
			return "does not use one of its placeholders"
		}
		filled = strings.ReplaceAll(filled, "${"+name+"}", "x")
	}
	if strings.Contains(filled, "${") {
		return "has a placeholder that placeholders does not list"
	}
	u, err := url.Parse(filled)
	switch {
	case err != nil || u.Host == "":
		return "must be an absolute URL"
	case u.User != nil:
		return "must not hold a user name or password"
	case local && u.Scheme != "http" && u.Scheme != "https":
		return "must be http or https"
	case !local && u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname())):
		// A key sent over plain http to another machine could be read
		// on the way; on this machine it stays in the kernel.
		return "must be https for a remote provider"
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
		return `pool must be "account" or left out`
	}
	if _, err := quota.ParseRule(l.Reset); err != nil {
		return "reset is not a rule FreeLane understands; use one of " + quota.ResetForms
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
