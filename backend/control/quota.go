package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"freelane/backend/config"
	"freelane/backend/quota"
	"freelane/backend/tier"
)

// LimitsJSON is a provider's or a model's limits as the API shows and
// accepts them; zero means no limit.
type LimitsJSON struct {
	RPM         int    `json:"rpm"`
	RPD         int    `json:"rpd"`
	TPM         int    `json:"tpm"`
	TPD         int    `json:"tpd"`
	Concurrency int    `json:"concurrency"`
	Reset       string `json:"reset"`
	// QueueWait is how long a request waits for a busy or paced backend
	// ("2s", "0s" to pass it by at once); "" is the default.
	QueueWait string `json:"queue_wait,omitempty"`
}

// UnmarshalJSON reads limits and refuses a queue wait that is not a
// duration.
func (l *LimitsJSON) UnmarshalJSON(b []byte) error {
	type plain LimitsJSON
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	p.QueueWait = strings.TrimSpace(p.QueueWait)
	if p.QueueWait != "" {
		if _, err := time.ParseDuration(p.QueueWait); err != nil {
			return fmt.Errorf("queue_wait must be a duration such as \"2s\" or \"500ms\", got %q", p.QueueWait)
		}
	}
	*l = LimitsJSON(p)
	return nil
}

// PriceJSON is money per million tokens. CacheRead and CacheWrite price
// the prompt tokens read from and written to the provider's prompt cache;
// 0 means the input price.
type PriceJSON struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// LimitsEntry is one row of GET /api/limits: a provider (Model "") or
// one of its models.
type LimitsEntry struct {
	Provider      string     `json:"provider"`
	Model         string     `json:"model"`
	Limits        LimitsJSON `json:"limits"`
	Price         *PriceJSON `json:"price"`
	CreditExpires string     `json:"credit_expires"`
	// Unpriced marks a model of a provider reached with the user's own
	// paid key that has no price, from the catalog or here: a money budget
	// refuses it rather than count it as free.
	Unpriced bool `json:"unpriced,omitempty"`
}

// ModelLimitsInput is the body of PUT /api/limits/{provider}/{model} and
// of PUT /api/limits/{provider}. It has the shape of a LimitsEntry, so an
// entry read with GET /api/limits can be sent back as it is. Nil fields are
// left as they are, and so are values equal to what GET shows for them, in
// the form they are stored (an explicit "daily 00:00 UTC" reset or a zero
// price stays written). Provider and Model, when given, must name the entry
// the path names; a provider's own entry takes no price and no credit.
type ModelLimitsInput struct {
	Provider      *string     `json:"provider"`
	Model         *string     `json:"model"`
	Limits        *LimitsJSON `json:"limits"`
	Price         *PriceJSON  `json:"price"`
	CreditExpires *string     `json:"credit_expires"`
	// Unpriced is only shown; what is sent is ignored, so that an entry
	// can be sent back as GET showed it.
	Unpriced *bool `json:"unpriced,omitempty"`
}

// Check reports an input that does not fit the entry of provider and model
// (model "" for the provider's own limits), naming the field.
func (in ModelLimitsInput) Check(provider, model string) error {
	if in.Provider != nil && *in.Provider != provider {
		return userErr(http.StatusBadRequest, "provider", "provider is %q but the path names %q; leave it out or make them agree", *in.Provider, provider)
	}
	if in.Model != nil && *in.Model != model {
		return userErr(http.StatusBadRequest, "model", "model is %q but the path names %q; leave it out or make them agree", *in.Model, model)
	}
	if model != "" {
		return nil
	}
	if in.Price != nil {
		return userErr(http.StatusBadRequest, "price", "a provider has no price; set prices per model with PUT /api/limits/%s/{model}", provider)
	}
	if in.CreditExpires != nil && strings.TrimSpace(*in.CreditExpires) != "" {
		return userErr(http.StatusBadRequest, "credit_expires", "a provider has no credit; set credit_expires per model with PUT /api/limits/%s/{model}", provider)
	}
	return nil
}

// BudgetJSON is a budget as the API accepts it. ID, Spent, Reserved,
// Fraction, ResetsAt and Exceeded are the budget view's read-only fields:
// they are accepted so that the list read with GET /api/budgets can be sent
// back as it is, and ignored.
type BudgetJSON struct {
	Scope  string  `json:"scope"`
	Period string  `json:"period"`
	Limit  float64 `json:"limit"`
	Action string  `json:"action"`

	ID       string     `json:"id,omitempty"`
	Spent    float64    `json:"spent,omitempty"`
	Reserved float64    `json:"reserved,omitempty"`
	Fraction float64    `json:"fraction,omitempty"`
	ResetsAt *time.Time `json:"resets_at,omitempty"`
	Exceeded bool       `json:"exceeded,omitempty"`
}

func limitsJSON(l *config.Limits) LimitsJSON {
	if l == nil {
		return LimitsJSON{Reset: quota.DefaultReset}
	}
	out := LimitsJSON{RPM: l.RPM, RPD: l.RPD, TPM: l.TPM, TPD: l.TPD, Concurrency: l.Concurrency, Reset: l.Reset}
	if l.QueueWait != nil {
		out.QueueWait = l.QueueWait.String()
	}
	if out.Reset == "" {
		out.Reset = quota.DefaultReset
	}
	return out
}

// toLimits turns API limits into config limits; all zero means none.
func toLimits(in *LimitsJSON) *config.Limits {
	if in == nil {
		return nil
	}
	l := &config.Limits{RPM: in.RPM, RPD: in.RPD, TPM: in.TPM, TPD: in.TPD, Concurrency: in.Concurrency, Reset: strings.TrimSpace(in.Reset)}
	if l.Reset == quota.DefaultReset {
		l.Reset = ""
	}
	if in.QueueWait != "" {
		// UnmarshalJSON checked it.
		d, _ := time.ParseDuration(in.QueueWait)
		l.QueueWait = &d
	}
	if *l == (config.Limits{}) {
		return nil
	}
	return l
}

func priceJSON(p *config.Price) *PriceJSON {
	if p == nil {
		return nil
	}
	return &PriceJSON{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite}
}

// unpriced reports whether a model of provider p, as the catalog completes
// it, is paid for with the user's own key and has no price, which a money
// budget refuses.
func unpriced(p config.Provider, m config.Model) bool {
	return config.Unescape(string(p.Tier)) == string(tier.Own) && m.Price == nil
}

// Limits lists every provider's and model's limits, price and credit.
func (c *Control) Limits() []LimitsEntry {
	found := c.localServers()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []LimitsEntry{}
	// A provider from the catalog lists its models as the catalog
	// completes them, with the catalog's limits and prices where the
	// configuration sets none.
	doc := config.Fill(c.doc, c.cat)
	for _, p := range doc.Providers {
		out = append(out, LimitsEntry{Provider: p.Name, Limits: limitsJSON(p.Limits)})
		for _, m := range p.Models {
			out = append(out, LimitsEntry{Provider: p.Name, Model: m.ID, Limits: limitsJSON(m.Limits),
				Price: priceJSON(m.Price), CreditExpires: m.CreditExpires, Unpriced: unpriced(p, m)})
		}
	}
	// A local server's limits are shared by all its models.
	for _, s := range allLocal(c.doc, found) {
		var l *config.Limits
		if r, ok := c.doc.LocalAt(s.Local.Kind, s.Local.Port); ok {
			l = r.Limits
		}
		out = append(out, LimitsEntry{Provider: s.Provider.Name, Limits: limitsJSON(l)})
	}
	return out
}

// SetProviderLimits replaces the limits shared by a provider's models; a
// value equal to what Limits shows for them leaves them as stored.
func (c *Control) SetProviderLimits(ctx context.Context, provider string, in *LimitsJSON) error {
	if in == nil {
		return userErr(http.StatusBadRequest, "limits", "send {\"limits\": {...}}; all zero removes them")
	}
	found := c.localServers()
	err := c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, provider)
		if s, ok := localServer(doc, found, provider); i < 0 && ok {
			r := ensureRecord(doc, s)
			r.Limits = mergeLimits(r.Limits, in)
			return nil
		}
		if i < 0 {
			return userErr(http.StatusNotFound, "provider", "there is no provider %q", provider)
		}
		doc.Providers[i].Limits = mergeLimits(doc.Providers[i].Limits, in)
		return nil
	})
	return localErr(scoped(err, "providers["))
}

// SetModelLimits changes a model's limits, price and credit expiry.
func (c *Control) SetModelLimits(ctx context.Context, provider, model string, in ModelLimitsInput) error {
	if err := in.Check(provider, model); err != nil {
		return err
	}
	found := c.localServers()
	err := c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, provider)
		if _, ok := localServer(doc, found, provider); i < 0 && ok {
			return userErr(http.StatusBadRequest, "model",
				"%q is a local server found by discovery: its limits are shared by all its models; set them with PUT /api/limits/%s", provider, provider)
		}
		if i < 0 {
			return userErr(http.StatusNotFound, "provider", "there is no provider %q", provider)
		}
		// What the form shows for the model is the stored model laid over
		// the catalog's; a value sent back as shown changes nothing, so a
		// catalog model keeps following a newer catalog.
		shown, ok := modelOf(config.Fill(doc, c.cat).Providers[i], model)
		if !ok {
			return userErr(http.StatusNotFound, "model", "provider %q has no model %q", provider, model)
		}
		newLimits := in.Limits != nil && limitsJSON(shown.Limits) != *in.Limits
		sp := priceJSON(shown.Price)
		newPrice := in.Price != nil && (sp == nil || *sp != *in.Price)
		credit := ""
		if in.CreditExpires != nil {
			credit = config.Escape(strings.TrimSpace(*in.CreditExpires))
		}
		p := &doc.Providers[i]
		j := slices.IndexFunc(p.Models, func(m config.Model) bool { return config.Unescape(m.ID) == model })
		if j < 0 {
			if !newLimits && !newPrice && credit == "" {
				return nil
			}
			// A model only the catalog lists takes what is set here as
			// the configuration's own entry for it, laid over the
			// catalog's.
			p.Models = append(p.Models, config.Model{ID: config.Escape(model)})
			j = len(p.Models) - 1
		}
		m := &p.Models[j]
		if newLimits {
			m.Limits = mergeLimits(m.Limits, in.Limits)
		}
		if newPrice {
			m.Price = mergePrice(m.Price, in.Price)
		}
		if in.CreditExpires != nil {
			m.CreditExpires = credit
		}
		return nil
	})
	if e, ok := err.(*Error); ok {
		// "providers[1].models[0].limits.reset" is "limits.reset" to a
		// form about one model.
		if i := strings.Index(e.Param, "]."); i >= 0 && strings.HasPrefix(e.Param, "providers[") {
			e.Param = e.Param[i+2:]
			if j := strings.Index(e.Param, "]."); j >= 0 && strings.HasPrefix(e.Param, "models[") {
				e.Param = e.Param[j+2:]
			}
		}
	}
	return err
}

// Budgets returns the configured budgets.
func (c *Control) Budgets() []config.Budget {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]config.Budget{}, c.doc.Budgets...)
}

// SetBudgets replaces every budget.
func (c *Control) SetBudgets(ctx context.Context, in []BudgetJSON) error {
	bs := make([]config.Budget, 0, len(in))
	for _, b := range in {
		bs = append(bs, config.Budget{Scope: strings.TrimSpace(b.Scope), Period: b.Period, Limit: b.Limit, Action: b.Action})
	}
	return c.update(ctx, "", func(doc *config.Config) error {
		doc.Budgets = bs
		return nil
	})
}

// modelOf returns provider p's model with the given id.
func modelOf(p config.Provider, id string) (config.Model, bool) {
	for _, m := range p.Models {
		if config.Unescape(m.ID) == id {
			return m, true
		}
	}
	return config.Model{}, false
}
