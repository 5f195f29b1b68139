package config

import (
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"freelane/backend/defaults"
	"freelane/backend/dialects"
	"freelane/backend/llm"
	"freelane/backend/quota"
	"freelane/backend/tier"
)

var (
	providerName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	chainName    = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

	// providerIdentity matches the paths that decide which "provider/model"
	// references exist.
	providerIdentity = regexp.MustCompile(`^providers(\[\d+\](\.name|\.models(\[\d+\](\.id)?)?)?)?$`)

	// Capabilities and Endpoints are the names models may declare.
	Capabilities = []string{"tools", "vision", "json", "reasoning"}
	Endpoints    = []string{"chat", "completions", "embeddings"}
)

// kindEndpoints is what the registry of dialects says of a provider kind:
// whether a dialect speaks it, and the names of the endpoints its
// upstreams serve.
func kindEndpoints(kind string) (serves []string, known bool) {
	d, ok := dialects.Registry().ByKind(kind)
	if !ok {
		return nil, false
	}
	for _, ep := range d.Outbound.Wire.Endpoints() {
		if name, ok := endpointNames[ep]; ok {
			serves = append(serves, name)
		}
	}
	return serves, true
}

// endpointNames are the names models declare for the kinds of request.
var endpointNames = map[llm.Endpoint]string{llm.Chat: "chat", llm.Completions: "completions", llm.Embeddings: "embeddings"}

// validator checks a decoded Config. It reports problems by field path and
// finds their lines in the decoder's path-to-line map, so no check has to
// know where anything is in the file.
type validator struct {
	d        *decoder
	problems []Problem
	// envHandled holds the paths whose unset environment variables a
	// specific check already reported, so the generic warning is skipped.
	envHandled map[string]bool
}

// line returns the line of field, or of its nearest ancestor present in the
// file when the field itself is missing (a required key points at the
// mapping that lacks it).
func (v *validator) line(field string) int {
	for f := field; f != ""; f = parentField(f) {
		if l, ok := v.d.lines[f]; ok {
			return l
		}
	}
	return 0
}

// parentField strips the last ".name" or "[i]" from a field path.
func parentField(f string) string {
	i := strings.LastIndexAny(f, ".[")
	if i < 0 {
		return ""
	}
	return f[:i]
}

// isBad reports whether field or one of its ancestors failed to decode. Its
// value is then a zero value, and checking it would only add noise.
func (v *validator) isBad(field string) bool {
	for f := field; f != ""; f = parentField(f) {
		if v.d.bad[f] {
			return true
		}
	}
	return false
}

func (v *validator) report(warning bool, field, format string, args ...any) {
	// A field that is absent because its key was misspelt has already been
	// reported as the unknown key, with the right name suggested.
	if v.isBad(field) || (v.d.misspelt[field] && !v.d.set[field]) {
		return
	}
	v.problems = append(v.problems, Problem{
		Line:    v.line(field),
		Field:   field,
		Message: fmt.Sprintf(format, args...),
		Warning: warning,
	})
}

func (v *validator) errorf(field, format string, args ...any) {
	v.report(false, field, format, args...)
}

func (v *validator) warnf(field, format string, args ...any) {
	v.report(true, field, format, args...)
}

func (v *validator) validate(c *Config) {
	v.envHandled = map[string]bool{}
	v.listen(c)
	for i, h := range c.AllowedHosts {
		f := fmt.Sprintf("allowed_hosts[%d]", i)
		switch {
		case strings.TrimSpace(h) == "":
			v.errorf(f, "must not be empty")
		case strings.Contains(h, "/"):
			v.errorf(f, "must be a host name such as \"freelane.lan\", not a URL, got %q", h)
		case strings.ContainsAny(h, " \t\r\n"):
			v.errorf(f, "must be a host name without spaces, got %q", h)
		}
	}
	for i, o := range c.AllowedOrigins {
		f := fmt.Sprintf("allowed_origins[%d]", i)
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			v.errorf(f, "must be a web origin such as \"http://localhost:3000\" (scheme, host and port, no path), got %q", o)
		}
	}
	if t := c.Server.Token; t != "" && len(strings.TrimSpace(t)) < MinTokenLength {
		v.errorf("server.token", "must be at least %d characters so it cannot be guessed (for example the output of openssl rand -hex 24)", MinTokenLength)
	}
	if u := c.Server.LocalUsers; u != "" && u != LocalUsersSelf && u != LocalUsersAny {
		v.errorf("server.local_users", "must be %q (only programs of the account running FreeLane, the default) or %q (programs of every account on this machine), got %q", LocalUsersSelf, LocalUsersAny, u)
	}
	v.team(c)
	if v.d.set["max_body_mb"] && (c.MaxBodyMB < 1 || c.MaxBodyMB > MaxMaxBodyMB) {
		v.errorf("max_body_mb", "must be from 1 to %d (MiB), got %d", MaxMaxBodyMB, c.MaxBodyMB)
	}
	// Zero means the default for both, as it does for the breaker's times.
	if rq := c.Requests; rq.BodyReadTimeout != 0 && (rq.BodyReadTimeout < time.Second || rq.BodyReadTimeout > MaxBodyReadTimeout) {
		v.errorf("requests.body_read_timeout", "must be from 1s to %s; 0 or leaving it out means the default (%s), got %s", MaxBodyReadTimeout, defaults.BodyReadTimeout, rq.BodyReadTimeout)
	}
	if rq := c.Requests; rq.MaxInflightBodyMB != 0 && (rq.MaxInflightBodyMB < 1 || rq.MaxInflightBodyMB > MaxMaxInflightBodyMB) {
		v.errorf("requests.max_inflight_body_mb", "must be from 1 to %d (MiB); 0 or leaving it out means the default (%d), got %d", MaxMaxInflightBodyMB, defaults.MaxInflightBodyMB, rq.MaxInflightBodyMB)
	}
	v.providers(c)
	v.discovery(c)
	v.local(c)
	v.chains(c)
	v.routing(c)
	v.aliases(c)
	v.tasks(c)
	v.breaker(c)
	v.budgets(c)
	if d := c.Requests.ResponseRetentionDays; d < 0 || d > MaxResponseRetentionDays {
		v.errorf("requests.response_retention_days", "must be from 1 to %d (days); 0 or leaving it out means %d, got %d", MaxResponseRetentionDays, defaults.ResponseRetentionDays, d)
	}
	if mb := c.Requests.ResponseStoreMB; mb < 0 || mb > MaxResponseStoreMB {
		v.errorf("requests.response_store_mb", "must be from 1 to %d (MiB); 0 or leaving it out means %d, got %d", MaxResponseStoreMB, defaults.ResponseStoreMB, mb)
	}
	if ttl := c.Cache.TTL; ttl < 0 || ttl > MaxResponseCacheTTL {
		v.errorf("cache.ttl", "must be a duration from 1s to %s (such as 10m or 1h); 0 or leaving it out means %s, got %s", "720h", defaults.ResponseCacheTTL, ttl)
	} else if ttl > 0 && ttl < time.Second {
		v.errorf("cache.ttl", "must be at least 1s (such as 10m or 1h); 0 or leaving it out means %s, got %s", defaults.ResponseCacheTTL, ttl)
	}
	if mb := c.Cache.MaxMB; mb < 0 || mb > MaxCacheMB {
		v.errorf("cache.max_mb", "must be from 1 to %d (MiB); 0 or leaving it out means %d, got %d", MaxCacheMB, defaults.ResponseCacheMB, mb)
	}
	if kb := c.RequestLog.MaxBodyKB; kb < 0 || kb > MaxRequestLogBodyKB {
		v.errorf("request_log.max_body_kb", "must be from 1 to %d (KiB); 0 or leaving it out means %d, got %d", MaxRequestLogBodyKB, defaults.RequestLogBodyKB, kb)
	}
	if d := c.RequestLog.KeepDays; d < 0 || d > MaxRequestLogKeepDays {
		v.errorf("request_log.keep_days", "must be from 1 to %d (days); 0 or leaving it out means %d, got %d", MaxRequestLogKeepDays, defaults.RequestLogKeepDays, d)
	}
	if c.Ledger.RetentionDays < 0 {
		v.errorf("ledger.retention_days", "must be a number of days >= 1 (0 or leaving it out means %d), got %d", defaults.LedgerRetentionDays, c.Ledger.RetentionDays)
	}
	v.unsetEnv()
}

func (v *validator) discovery(c *Config) {
	ports := c.Discovery.Ports
	if len(ports) > MaxDiscoveryPorts {
		v.errorf("discovery.ports", "lists %d ports; at most %d are looked at", len(ports), MaxDiscoveryPorts)
		return
	}
	seen := map[int]bool{}
	for i, port := range ports {
		f := fmt.Sprintf("discovery.ports[%d]", i)
		switch {
		case port < 1 || port > 65535:
			v.errorf(f, "must be a port from 1 to 65535, got %d", port)
		case seen[port]:
			v.errorf(f, "port %d is listed twice", port)
		case c.Listen != "" && strings.HasSuffix(c.Listen, ":"+strconv.Itoa(port)):
			v.warnf(f, "port %d is FreeLane's own; it is not looked at", port)
		}
		seen[port] = true
	}
}

func (v *validator) listen(c *Config) {
	if c.Listen == "" {
		return
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		v.errorf("listen", "must be host:port, e.g. %q, got %q", defaults.Listen, c.Listen)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.errorf("listen", "port must be a number from 0 to 65535, got %q", port)
		return
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		v.warnf("listen", "%q listens on every network interface, so other machines can reach the router and spend its keys; use 127.0.0.1 unless that is intended", c.Listen)
	}
}

func (v *validator) providers(c *Config) {
	seen := map[string]int{}
	defaultAt := -1
	for i := range c.Providers {
		p := &c.Providers[i]
		f := fmt.Sprintf("providers[%d]", i)

		switch {
		case p.Name == "":
			v.errorf(f+".name", "is required: a unique lower-case name such as \"groq\"")
		case !providerName.MatchString(p.Name):
			v.errorf(f+".name", "must be lower-case letters, digits, '_' or '-', starting with a letter or digit, got %q", p.Name)
		}
		if p.Name != "" {
			if first, dup := seen[p.Name]; dup {
				v.errorf(f+".name", "duplicate provider name %q (first used by providers[%d] on line %d)", p.Name, first, v.line(fmt.Sprintf("providers[%d].name", first)))
			} else {
				seen[p.Name] = i
			}
		}

		if _, known := kindEndpoints(p.Kind); p.Kind != "" && !known {
			v.errorf(f+".kind", "unsupported kind %q; supported kinds: %s", p.Kind, strings.Join(dialects.Registry().Kinds(), ", "))
		}
		v.params(p.DropParams, f+".drop_params")
		switch {
		case p.Tier == "":
			v.errorf(f+".tier", "is required: one of %s", tier.Words(tier.Tiers()))
		case !p.Tier.Valid():
			v.errorf(f+".tier", "must be one of %s, got %q", tier.Words(tier.Tiers()), p.Tier)
		}

		if p.Default {
			if defaultAt >= 0 {
				v.errorf(f+".default", "only one provider may set default: true; providers[%d] (%q, line %d) already does",
					defaultAt, c.Providers[defaultAt].Name, v.line(fmt.Sprintf("providers[%d].default", defaultAt)))
			} else {
				defaultAt = i
			}
		}

		v.baseURL(p, f)
		v.apiKey(p, f)
		v.apiKeys(p, f)
		v.headers(p, f)
		v.models(p, f)
		v.timeouts(p, f)
		v.limits(p.Limits, f+".limits")
		if p.CacheTTL < 0 || p.CacheTTL > MaxCacheTTL {
			v.errorf(f+".cache_ttl", "must be a duration between 0 (the catalog's figure, else 5m) and 24h, got %s", p.CacheTTL)
		}
		v.explicitCache(p, f)
	}
}

// explicitCache checks that a provider that turns explicit_cache on is of
// a kind whose API has an explicit prompt cache.
func (v *validator) explicitCache(p *Provider, f string) {
	if !p.ExplicitCache {
		return
	}
	kind := p.Kind
	switch {
	case kind == "" && p.Catalog != "":
		// The catalog gives the kind when the provider is completed,
		// and the completed provider is checked.
		return
	case kind == "":
		kind = KindOpenAI
	}
	d, ok := dialects.Registry().ByKind(kind)
	if !ok || d.Outbound.NewPreparer != nil {
		// An unknown kind has its own message.
		return
	}
	var kinds []string
	for _, k := range dialects.Registry().Kinds() {
		if d, ok := dialects.Registry().ByKind(k); ok && d.Outbound.NewPreparer != nil {
			kinds = append(kinds, k)
		}
	}
	v.errorf(f+".explicit_cache", "provider %q is of kind %q, whose API has no explicit prompt cache; explicit_cache is only for providers of kind %s (remove it, or leave caching to the vendor)",
		p.Name, kind, strings.Join(kinds, ", "))
}

func (v *validator) baseURL(p *Provider, f string) {
	f += ".base_url"
	if p.BaseURL == "" {
		v.errorf(f, "is required, e.g. \"https://api.groq.com/openai/v1\"")
		return
	}
	u, err := url.Parse(p.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		msg := fmt.Sprintf("must be an absolute http(s) URL, got %q", p.BaseURL)
		if !strings.Contains(p.BaseURL, "://") {
			msg += fmt.Sprintf("; add the scheme, e.g. \"https://%s\"", p.BaseURL)
		}
		v.errorf(f, "%s", msg)
		return
	}
	if u.User != nil {
		// Credentials in the URL would end up in logs and error messages.
		v.errorf(f, "must not contain a user name or password; put the key in api_key")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		v.errorf(f, "must not have a query or fragment: the router appends the API's paths to it, got %q", p.BaseURL)
	}
	if u.Scheme == "http" && len(p.Pool()) > 0 && !isLoopback(u.Hostname()) {
		v.warnf(f, "uses plain http to %s, so the API key travels unencrypted; use https", u.Hostname())
	}
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (v *validator) apiKey(p *Provider, f string) {
	f += ".api_key"
	unset := v.d.envUnset[f]
	switch {
	case p.Keyless && p.APIKey != "":
		v.errorf(f, "must be empty when keyless is true; remove api_key, or set keyless: false if the server needs a key")
	case p.Keyless || p.Disabled || (p.APIKey == "" && len(p.Pool()) > 0):
		// No key is needed, the provider is never used, or api_keys gives
		// the keys: a missing api_key is not worth a warning.
		v.envHandled[f] = true
	case p.APIKey == "":
		v.envHandled[f] = true
		reason, fix := "api_key is empty", "set api_key, or add keyless: true for a server that needs no key"
		switch {
		case len(unset) > 0:
			reason = envVarsPhrase(unset) + " not set"
			fix = "set " + strings.Join(unset, ", ") + " to use it"
		case len(p.APIKeyEnv) > 0:
			reason = envVarsPhrase(p.APIKeyEnv) + " empty"
			fix = "give " + strings.Join(p.APIKeyEnv, ", ") + " a value to use it"
		}
		v.warnf(f, "%s; provider %q has no key and is left out of every chain; %s", reason, p.Name, fix)
	}
}

// apiKeys checks a provider's pool: no key twice, none with spaces
// around it, at most MaxPoolKeys, none for a keyless server.
func (v *validator) apiKeys(p *Provider, f string) {
	if len(p.APIKeys) == 0 {
		return
	}
	f += ".api_keys"
	if p.Keyless {
		v.errorf(f, "must be empty when keyless is true; remove api_keys, or set keyless: false if the server needs a key")
		return
	}
	total := len(p.APIKeys)
	if p.APIKey != "" {
		total++
	}
	if total > MaxPoolKeys {
		v.errorf(f, "holds too many keys: a provider may have at most %d (api_key and api_keys together), got %d", MaxPoolKeys, total)
	}
	seen := map[string]string{}
	if p.APIKey != "" {
		seen[p.APIKey] = "api_key"
	}
	for i, k := range p.APIKeys {
		fi := fmt.Sprintf("%s[%d]", f, i)
		if unset := v.d.envUnset[fi]; k == "" {
			v.envHandled[fi] = true
			if len(unset) > 0 {
				v.warnf(fi, "%s not set; this key is left out of the pool of provider %q; set %s to use it", envVarsPhrase(unset), p.Name, strings.Join(unset, ", "))
			} else {
				v.warnf(fi, "is empty and is left out of the pool of provider %q; remove it or give it a key", p.Name)
			}
			continue
		}
		if strings.TrimSpace(k) != k || strings.ContainsAny(k, " \t\r\n") {
			v.errorf(fi, "must not contain spaces or line breaks; copy the key again without them")
			continue
		}
		if was, dup := seen[k]; dup {
			v.errorf(fi, "is the same key as %s; give each key once", was)
			continue
		}
		seen[k] = fi
	}
}

// envVarsPhrase renders "environment variable X is" or "environment
// variables X, Y are" for a message.
func envVarsPhrase(names []string) string {
	if len(names) == 1 {
		return "environment variable " + names[0] + " is"
	}
	return "environment variables " + strings.Join(names, ", ") + " are"
}

func (v *validator) headers(p *Provider, f string) {
	names := make([]string, 0, len(p.Headers))
	for name := range p.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]string{}
	for _, name := range names {
		hf := f + ".headers." + name
		if !validHeaderName(name) {
			v.errorf(hf, "%q is not a valid HTTP header name", name)
			continue
		}
		lower := strings.ToLower(name)
		if other, dup := seen[lower]; dup {
			v.errorf(hf, "header %q is already set as %q; header names ignore case", name, other)
			continue
		}
		seen[lower] = name
		// A newline would let a value, perhaps from the environment, smuggle
		// extra headers into the upstream request.
		if strings.ContainsAny(p.Headers[name], "\r\n\x00") {
			v.errorf(hf, "value must not contain line breaks or NUL characters")
		}
	}
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

// names checks a list drawn from a fixed set of names.
func (v *validator) names(got, allowed []string, f string) {
	for i, n := range got {
		if !slices.Contains(allowed, n) {
			v.errorf(fmt.Sprintf("%s[%d]", f, i), "unknown name %q; use %s", n, strings.Join(allowed, ", "))
		}
	}
}

// params checks a list of request parameter names.
func (v *validator) params(got []string, f string) {
	for i, n := range got {
		if n == "" || n == "model" || n == "messages" || strings.ContainsAny(n, " \t\r\n\"") || len(n) > 64 {
			v.errorf(fmt.Sprintf("%s[%d]", f, i), "%q cannot be dropped: give a top-level request parameter such as stream_options or parallel_tool_calls", n)
		}
	}
}

func (v *validator) models(p *Provider, f string) {
	if len(p.Models) == 0 {
		v.errorf(f+".models", "needs at least one model, e.g. models: [{id: llama-3.3-70b-versatile}]")
		return
	}
	seen := map[string]int{}
	for j, m := range p.Models {
		mf := fmt.Sprintf("%s.models[%d]", f, j)
		switch {
		case m.ID == "":
			v.errorf(mf+".id", "is required: the model id the provider expects, e.g. \"llama-3.3-70b-versatile\"")
		case strings.TrimSpace(m.ID) != m.ID:
			v.errorf(mf+".id", "must not start or end with spaces, got %q", m.ID)
		}
		if m.ID != "" {
			if first, dup := seen[m.ID]; dup {
				v.errorf(mf+".id", "duplicate model id %q (first given on line %d)", m.ID, v.line(fmt.Sprintf("%s.models[%d].id", f, first)))
			} else {
				seen[m.ID] = j
			}
		}
		if m.ParamsB < 0 || math.IsNaN(m.ParamsB) || math.IsInf(m.ParamsB, 0) {
			v.errorf(mf+".params_b", "must be a number of billions of parameters >= 0 (0 = unknown), got %v", m.ParamsB)
		}
		if m.Context < 0 {
			v.errorf(mf+".context", "must be a number of tokens >= 0 (0 = unknown), got %d", m.Context)
		}
		if m.MaxOutput < 0 {
			v.errorf(mf+".max_output", "must be a number of tokens >= 0 (0 = unknown), got %d", m.MaxOutput)
		}
		v.names(m.Capabilities, Capabilities, mf+".capabilities")
		v.names(m.Endpoints, Endpoints, mf+".endpoints")
		if serves, known := kindEndpoints(p.Kind); known {
			for k, e := range m.Endpoints {
				if !slices.Contains(serves, e) && slices.Contains(Endpoints, e) {
					v.errorf(fmt.Sprintf("%s.endpoints[%d]", mf, k), "a provider of kind %s serves %s only, got %q", p.Kind, strings.Join(serves, " and "), e)
				}
			}
		}
		v.params(m.DropParams, mf+".drop_params")
		v.limits(m.Limits, mf+".limits")
		if m.Price != nil {
			for _, pr := range []struct {
				key string
				val float64
			}{{"input", m.Price.Input}, {"output", m.Price.Output}, {"cache_read", m.Price.CacheRead}, {"cache_write", m.Price.CacheWrite}} {
				if pr.val < 0 || math.IsNaN(pr.val) || math.IsInf(pr.val, 0) {
					v.errorf(mf+".price."+pr.key, "must be money per million tokens >= 0 (0 = free), got %v", pr.val)
				}
			}
		}
		if m.CreditExpires != "" && m.CreditDate().IsZero() {
			v.errorf(mf+".credit_expires", "must be a date written YYYY-MM-DD, e.g. 2026-12-31, got %q", m.CreditExpires)
		}
	}
}

func (v *validator) timeouts(p *Provider, f string) {
	for _, t := range []struct {
		key string
		val time.Duration
		def time.Duration
	}{
		{"connect", p.Timeouts.Connect, defaults.ConnectTimeout},
		{"header", p.Timeouts.Header, defaults.HeaderTimeout},
		{"first_token", p.Timeouts.FirstToken, defaults.FirstTokenTimeout},
		{"idle", p.Timeouts.Idle, defaults.IdleTimeout},
	} {
		if t.val < 0 {
			v.errorf(f+".timeouts."+t.key, "must not be negative; 0 or leaving it out means the default (%s), got %s", t.def, t.val)
		}
	}
}

func (v *validator) chains(c *Config) {
	// When provider names or model ids could not be decoded, references to
	// them would look broken; say nothing about references rather than
	// mislead.
	providersBad := false
	for path := range v.d.bad {
		if providerIdentity.MatchString(path) {
			providersBad = true
			break
		}
	}
	modelOwners := map[string][]string{}
	for _, p := range c.Providers {
		for _, m := range p.Models {
			if !slices.Contains(modelOwners[m.ID], p.Name) {
				modelOwners[m.ID] = append(modelOwners[m.ID], p.Name)
			}
		}
	}

	if c.DefaultChain != "" && c.DefaultChain != "auto" &&
		!slices.ContainsFunc(c.Chains, func(ch Chain) bool { return ch.Name == c.DefaultChain }) {
		var names []string
		for _, ch := range c.Chains {
			names = append(names, ch.Name)
		}
		v.errorf("default_chain", "names no chain: %q is not among the chains (%s); use one of them or auto", c.DefaultChain, strings.Join(append(names, "auto"), ", "))
	}

	seen := map[string]int{}
	for i, ch := range c.Chains {
		f := fmt.Sprintf("chains[%d]", i)
		nf := f + ".name"
		switch {
		case ch.Name == "":
			v.errorf(nf, "is required: a name clients ask for as the model, e.g. \"coding\"")
		case strings.Contains(ch.Name, "/"):
			v.errorf(nf, "must not contain '/': a model name with '/' is read as a \"provider/model\" reference, got %q", ch.Name)
		case !chainName.MatchString(ch.Name):
			v.errorf(nf, "must be lower-case letters, digits, '_', '-' or '.', starting with a letter or digit, got %q", ch.Name)
		}
		if ch.Name != "" {
			if first, dup := seen[ch.Name]; dup {
				v.errorf(nf, "duplicate chain name %q (first used by chains[%d] on line %d)", ch.Name, first, v.line(fmt.Sprintf("chains[%d].name", first)))
			} else {
				seen[ch.Name] = i
			}
			if owners := modelOwners[ch.Name]; len(owners) > 0 {
				v.warnf(nf, "chain %q has the same name as a model served by %s; requests for %q go to the chain", ch.Name, strings.Join(owners, ", "), ch.Name)
			}
		}

		if len(ch.Backends) == 0 {
			v.errorf(f+".backends", "a chain needs at least one backend, e.g. backends: [groq/llama-3.3-70b-versatile]")
			continue
		}
		refs := map[string]int{}
		for j, ref := range ch.Backends {
			bf := fmt.Sprintf("%s.backends[%d]", f, j)
			pname, model, ok := SplitRef(ref)
			if !ok {
				v.errorf(bf, "must be \"provider/model\", e.g. \"groq/llama-3.3-70b-versatile\", got %q", ref)
				continue
			}
			if first, dup := refs[ref]; dup {
				v.warnf(bf, "repeats backends[%d] %q; a backend is tried only once per request", first, ref)
				continue
			}
			refs[ref] = j
			if providersBad {
				continue
			}
			p, found := c.Provider(pname)
			if _, local := c.LocalByName(pname); !found && local {
				// A local server's models are what it lists when it
				// answers; a model it does not list then is shown as
				// gone, not refused here.
				continue
			}
			if !found {
				v.errorf(bf, "unknown provider %q in %q; %s%s", pname, ref, providerList(c), localList(c))
				continue
			}
			if !slices.ContainsFunc(p.Models, func(m Model) bool { return m.ID == model }) {
				v.errorf(bf, "provider %q has no model %q; %s", pname, model, modelList(p))
				continue
			}
			if p.Disabled {
				v.warnf(bf, "provider %q is disabled, so this backend is skipped", pname)
			}
		}
		v.chainRouting(f, ch)
	}
}

// MaxChainWait bounds a chain's max_wait: a client waiting longer for a
// rate limit to reset is better told when to come back.
const MaxChainWait = time.Minute

// chainRouting checks how a chain chooses among its backends.
func (v *validator) chainRouting(f string, ch Chain) {
	if ch.Strategy != "" && !slices.Contains(Strategies, ch.Strategy) {
		v.errorf(f+".strategy", "must be one of %s, got %q", strings.Join(Strategies, ", "), ch.Strategy)
	}
	if ch.Gear != "" && ch.Gear != GearAuto && ch.Gear != GearManual {
		v.errorf(f+".gear", "must be %q or %q, got %q", GearAuto, GearManual, ch.Gear)
	}
	if ch.MaxWait != nil && (*ch.MaxWait < 0 || *ch.MaxWait > MaxChainWait) {
		v.errorf(f+".max_wait", "must be between 0 (no waiting) and %s, got %s", MaxChainWait, *ch.MaxWait)
	}
	for _, m := range []struct {
		key      string
		vals     map[string]int
		min, max int
	}{{"weights", ch.Weights, 0, 1000}, {"priority", ch.Priority, -1000, 1000}} {
		for _, ref := range slices.Sorted(maps.Keys(m.vals)) {
			n := m.vals[ref]
			if !slices.Contains(ch.Backends, ref) {
				v.errorf(f+"."+m.key, "names %q, which is not among the chain's backends (%s)", ref, strings.Join(ch.Backends, ", "))
				continue
			}
			if n < m.min || n > m.max {
				v.errorf(f+"."+m.key, "gives %q %d; it must be between %d and %d", ref, n, m.min, m.max)
			}
		}
	}
	if len(ch.Weights) > 0 && ch.Strategy != StrategyWeighted && slices.Contains(Strategies, ch.Strategy) {
		v.warnf(f+".weights", "are used only by the weighted strategy; this chain's strategy is %s", ch.Strategy)
	}
}

// routing checks the auto strategy's settings.
func (v *validator) routing(c *Config) {
	r := c.Routing
	for _, w := range []struct {
		key string
		val *float64
		min float64
	}{{"health", r.Score.Health, MinHealthWeight}, {"headroom", r.Score.Headroom, 0}, {"latency", r.Score.Latency, 0},
		{"cost", r.Score.Cost, 0}, {"task", r.Score.Task, 0}} {
		if w.val != nil && (*w.val < w.min || *w.val > 1) {
			v.errorf("routing.score."+w.key, "must be between %g and 1, got %g", w.min, *w.val)
		}
	}
	if r.MinSamples < 0 || r.MinSamples > 10000 {
		v.errorf("routing.min_samples", "must be between 0 and 10000, got %d", r.MinSamples)
	}
	if r.MinScore < 0 || r.MinScore > 1 {
		v.errorf("routing.min_score", "must be between 0 and 1, got %g", r.MinScore)
	}
	if r.AutoGear != "" && r.AutoGear != GearAuto && r.AutoGear != GearManual {
		v.errorf("routing.auto_gear", "must be %q or %q, got %q", GearAuto, GearManual, r.AutoGear)
	}
}

// MinHealthWeight is the least weight health has in the auto score: below
// it a backend that keeps failing could win on price or quota alone.
const MinHealthWeight = 0.3

// aliasPattern is the characters of a model name, plus the glob's '*' and
// '?'.
var aliasPattern = regexp.MustCompile(`^[A-Za-z0-9._:/@*?+-]+$`)

func (v *validator) aliases(c *Config) {
	if len(c.Aliases) > MaxAliases {
		v.errorf("aliases", "has %d entries; at most %d are allowed", len(c.Aliases), MaxAliases)
		return
	}
	seen := map[string]int{}
	for i, a := range c.Aliases {
		f := fmt.Sprintf("aliases[%d]", i)
		switch {
		case a.Pattern == "":
			v.errorf(f+".pattern", "is required: a model name or a glob such as \"claude-*\"")
		case len(a.Pattern) > 200:
			v.errorf(f+".pattern", "is %d characters long; at most 200 are allowed", len(a.Pattern))
		case !aliasPattern.MatchString(a.Pattern):
			v.errorf(f+".pattern", "may hold the characters of a model name and the wildcards '*' and '?', got %q", a.Pattern)
		default:
			if first, dup := seen[a.Pattern]; dup {
				v.errorf(f+".pattern", "repeats aliases[%d] (line %d); each pattern may appear once", first, v.line(fmt.Sprintf("aliases[%d].pattern", first)))
			}
			seen[a.Pattern] = i
		}
		if a.Chain == "auto" {
			continue
		}
		if !slices.ContainsFunc(c.Chains, func(ch Chain) bool { return ch.Name == a.Chain }) {
			names := []string{"auto"}
			for _, ch := range c.Chains {
				names = append(names, ch.Name)
			}
			if a.Chain == "" {
				v.errorf(f+".chain", "is required: the chain the names go to (%s)", strings.Join(names, ", "))
				continue
			}
			v.errorf(f+".chain", "names no chain: %q is not among the chains (%s)", a.Chain, strings.Join(names, ", "))
		}
	}
}

// taskName is the characters of a task name, which clients send in a
// header and the dashboard shows.
var taskName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// MaxPromptTokensOver bounds a task rule's prompt_tokens_over: no model
// holds more.
const MaxPromptTokensOver = 10_000_000

func (v *validator) tasks(c *Config) {
	if len(c.Tasks) > MaxTasks {
		v.errorf("tasks", "has %d entries; at most %d are allowed", len(c.Tasks), MaxTasks)
		return
	}
	chainOf := map[string]int{} // task -> index of the rule that gave its chain
	for i, t := range c.Tasks {
		f := fmt.Sprintf("tasks[%d]", i)
		switch {
		case t.Name == "":
			v.errorf(f+".name", "is required: default, background, think, long_context or a name of your own")
		case !taskName.MatchString(t.Name):
			v.errorf(f+".name", "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit, got %q", t.Name)
		}
		if w := t.When; w != nil {
			switch {
			case w.Model == "" && w.Tools == nil && w.Thinking == nil && w.PromptTokensOver == 0:
				v.errorf(f+".when", "has no condition: set model, tools, thinking or prompt_tokens_over, or leave when out for a task that only X-FreeLane-Task chooses")
			case len(w.Model) > 200:
				v.errorf(f+".when.model", "is %d characters long; at most 200 are allowed", len(w.Model))
			case w.Model != "" && !aliasPattern.MatchString(w.Model):
				v.errorf(f+".when.model", "may hold the characters of a model name and the wildcards '*' and '?', got %q", w.Model)
			}
			if w.PromptTokensOver < 0 || w.PromptTokensOver > MaxPromptTokensOver {
				v.errorf(f+".when.prompt_tokens_over", "must be a number of tokens from 1 to %d, got %d", MaxPromptTokensOver, w.PromptTokensOver)
			}
		}
		if t.Chain != "" {
			if t.Chain != "auto" && !slices.ContainsFunc(c.Chains, func(ch Chain) bool { return ch.Name == t.Chain }) {
				names := []string{"auto"}
				for _, ch := range c.Chains {
					names = append(names, ch.Name)
				}
				v.errorf(f+".chain", "names no chain: %q is not among the chains (%s)", t.Chain, strings.Join(names, ", "))
			} else if first, ok := chainOf[t.Name]; ok && c.Tasks[first].Chain != t.Chain {
				v.errorf(f+".chain", "sends task %s to %q, but tasks[%d] (line %d) sends it to %q; a task has one chain", t.Name, t.Chain,
					first, v.line(fmt.Sprintf("tasks[%d].chain", first)), c.Tasks[first].Chain)
			} else if !ok {
				chainOf[t.Name] = i
			}
		}
		for j, ref := range t.Prefer {
			pf := fmt.Sprintf("%s.prefer[%d]", f, j)
			pname, _, ok := strings.Cut(ref, "/")
			if !ok || pname == "" || strings.HasSuffix(ref, "/") {
				v.errorf(pf, "must be a \"provider/model\" backend, got %q", ref)
				continue
			}
			pname, _, _ = strings.Cut(pname, "@")
			if _, found := c.Provider(pname); !found {
				if _, local := c.LocalByName(pname); !local {
					v.errorf(pf, "unknown provider %q in %q; %s%s", pname, ref, providerList(c), localList(c))
				}
			}
		}
	}
}

func providerList(c *Config) string {
	var names []string
	for _, p := range c.Providers {
		if p.Name != "" {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return "no providers are defined"
	}
	return "providers are: " + strings.Join(names, ", ")
}

func modelList(p *Provider) string {
	var ids []string
	for _, m := range p.Models {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) == 0 {
		return "it lists no models"
	}
	return "its models are: " + strings.Join(ids, ", ")
}

func (v *validator) breaker(c *Config) {
	b := c.Breaker
	if v.d.set["breaker.failures"] && b.Failures < 1 {
		v.errorf("breaker.failures", "must be at least 1, got %d", b.Failures)
	}
	if b.Open < 0 {
		v.errorf("breaker.open", "must not be negative; 0 or leaving it out means the default (%s), got %s", defaults.BreakerOpen, b.Open)
	}
	if b.RateLimitCooldown < 0 {
		v.errorf("breaker.rate_limit_cooldown", "must not be negative; 0 or leaving it out means the default (%s), got %s", defaults.RateLimitCooldown, b.RateLimitCooldown)
	}
	if v.d.set["breaker.health_threshold"] && (b.HealthThreshold <= 0 || b.HealthThreshold >= 1) {
		v.errorf("breaker.health_threshold", "must be between 0 and 1 (exclusive), got %g", b.HealthThreshold)
	}
	pr := c.Probes
	for _, p := range []struct {
		field  string
		d, def time.Duration
	}{
		{"probes.interval", pr.Interval, defaults.ProbeInterval},
		{"probes.open_interval", pr.OpenInterval, defaults.ProbeOpenInterval},
		{"probes.daily", pr.Daily, defaults.ProbeDaily},
	} {
		if p.d < 0 {
			v.errorf(p.field, "must not be negative; 0 or leaving it out means the default (%s), got %s", p.def, p.d)
		} else if p.d > 0 && p.d < time.Second {
			v.errorf(p.field, "must be at least 1s: probes spend the providers' quota, got %s", p.d)
		}
	}
}

// unsetEnv warns about every unset environment variable that no specific
// check has already explained.
func (v *validator) unsetEnv() {
	paths := make([]string, 0, len(v.d.envUnset))
	for path := range v.d.envUnset {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		if v.envHandled[path] {
			continue
		}
		for _, name := range v.d.envUnset[path] {
			v.warnf(path, "environment variable %s is not set; using an empty value", name)
		}
	}
}

// limits checks a provider's or a model's limits at field f.
func (v *validator) limits(l *Limits, f string) {
	if l == nil {
		return
	}
	for _, n := range []struct {
		key  string
		val  int
		what string
	}{
		{"rpm", l.RPM, "requests per minute"}, {"rpd", l.RPD, "requests per reset period"},
		{"tpm", l.TPM, "tokens per minute"}, {"tpd", l.TPD, "tokens per reset period"},
		{"concurrency", l.Concurrency, "requests at once"},
	} {
		if n.val < 0 {
			v.errorf(f+"."+n.key, "must be a number of %s >= 0 (0 or leaving it out = no limit), got %d", n.what, n.val)
		}
	}
	if l.QueueWait != nil && (*l.QueueWait < 0 || *l.QueueWait > MaxQueueWait) {
		v.errorf(f+".queue_wait", "must be between 0 (pass a busy backend by at once) and %s, got %s", MaxQueueWait, *l.QueueWait)
	}
	if _, err := quota.ParseRule(l.Reset); err != nil {
		v.errorf(f+".reset", "%s", err.Error())
	}
}

// MaxCacheTTL bounds a provider's cache_ttl: no provider keeps a prompt
// cache longer than a day, and a session held longer to one backend would
// only keep it from the strategy.
const MaxCacheTTL = 24 * time.Hour

// MaxQueueWait bounds limits.queue_wait: a request that would wait longer
// for a busy backend is better sent to the next one.
const MaxQueueWait = 30 * time.Second

// budgets checks the money budgets.
func (v *validator) budgets(c *Config) {
	seen := map[string]int{}
	for i, b := range c.Budgets {
		f := fmt.Sprintf("budgets[%d]", i)
		scopeOK := true
		switch name, isChain := strings.CutPrefix(b.Scope, "chain:"); {
		case b.Scope == "global":
		case isChain:
			if name != "auto" && !slices.ContainsFunc(c.Chains, func(ch Chain) bool { return ch.Name == name }) {
				scopeOK = false
				v.errorf(f+".scope", "names no chain: %q is not among the chains (auto%s)", name, chainList(c))
			}
		case strings.HasPrefix(b.Scope, "provider:"):
			name := strings.TrimPrefix(b.Scope, "provider:")
			_, ok := c.Provider(name)
			if _, local := c.LocalByName(name); !ok && !local {
				scopeOK = false
				v.errorf(f+".scope", "names no provider: %q; %s%s", name, providerList(c), localList(c))
			}
		default:
			scopeOK = false
			v.errorf(f+".scope", "must be \"global\", \"chain:NAME\" or \"provider:NAME\", got %q", b.Scope)
		}
		if b.Period != "day" && b.Period != "month" {
			v.errorf(f+".period", "must be \"day\" or \"month\", got %q", b.Period)
		}
		if !(b.Limit > 0) || math.IsInf(b.Limit, 0) {
			v.errorf(f+".limit", "must be an amount of money greater than 0, got %v", b.Limit)
		}
		if b.Action != "free-only" && b.Action != "block" {
			v.errorf(f+".action", "must be \"free-only\" (paid backends are skipped, free and local still serve) or \"block\" (requests are refused with HTTP 402), got %q", b.Action)
		}
		if id := b.Scope + "|" + b.Period; scopeOK {
			if first, dup := seen[id]; dup {
				v.errorf(f+".scope", "budgets[%d] already sets the %s budget of %s; give each scope one budget per period", first, b.Period, b.Scope)
			} else {
				seen[id] = i
			}
		}
	}
}

func chainList(c *Config) string {
	var sb strings.Builder
	for _, ch := range c.Chains {
		sb.WriteString(", ")
		sb.WriteString(ch.Name)
	}
	return sb.String()
}

// team checks the settings of a team's shared parts: an instance name
// the dashboard can show, and URLs of the schemes their clients speak.
func (v *validator) team(c *Config) {
	if n := c.Instance; n != "" && (len(n) > MaxInstanceName || strings.ContainsFunc(n, func(r rune) bool { return r < ' ' || r == 0x7f })) {
		v.errorf("instance", "must be a name of at most %d characters without control characters, got %q", MaxInstanceName, n)
	}
	if r := c.State.Redis; r != "" {
		u, err := url.Parse(r)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") || (u.Scheme != "unix" && u.Host == "") {
			v.errorf("state.redis", "must be a Redis URL such as \"redis://:${REDIS_PASSWORD}@redis.lan:6379/0\" (redis://, rediss:// or unix://)")
		}
	}
	if c.State.FailClosed && c.State.Redis == "" {
		v.errorf("state.fail_closed", "applies to budgets shared on Redis; set state.redis too, or leave fail_closed out")
	}
	if p := c.Store.Postgres; p != "" {
		u, err := url.Parse(p)
		keyValue := strings.Contains(p, "=") && !strings.Contains(p, "://")
		if !keyValue && (err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "") {
			v.errorf("store.postgres", "must be a PostgreSQL URL such as \"postgres://freelane:${PG_PASSWORD}@db.lan:5432/freelane\" or a key=value connection string")
		}
	}
}
