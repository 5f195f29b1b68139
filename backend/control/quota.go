package control

import (
	"context"
	"net/http"
	"strings"

	"freelane/backend/config"
	"freelane/backend/quota"
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
}

// PriceJSON is money per million tokens.
type PriceJSON struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// LimitsEntry is one row of GET /api/limits: a provider (Model "") or
// one of its models.
type LimitsEntry struct {
	Provider      string     `json:"provider"`
	Model         string     `json:"model"`
	Limits        LimitsJSON `json:"limits"`
	Price         *PriceJSON `json:"price"`
	CreditExpires string     `json:"credit_expires"`
}

// ModelLimitsInput is the body of PUT /api/limits/{provider}/{model}.
// Nil fields are left as they are.
type ModelLimitsInput struct {
	Limits        *LimitsJSON `json:"limits"`
	Price         *PriceJSON  `json:"price"`
	CreditExpires *string     `json:"credit_expires"`
}

// BudgetJSON is a budget as the API accepts it.
type BudgetJSON struct {
	Scope  string  `json:"scope"`
	Period string  `json:"period"`
	Limit  float64 `json:"limit"`
	Action string  `json:"action"`
}

func limitsJSON(l *config.Limits) LimitsJSON {
	if l == nil {
		return LimitsJSON{Reset: quota.DefaultReset}
	}
	out := LimitsJSON{RPM: l.RPM, RPD: l.RPD, TPM: l.TPM, TPD: l.TPD, Concurrency: l.Concurrency, Reset: l.Reset}
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
	if *l == (config.Limits{}) {
		return nil
	}
	return l
}

func priceJSON(p *config.Price) *PriceJSON {
	if p == nil {
		return nil
	}
	return &PriceJSON{Input: p.Input, Output: p.Output}
}

// Limits lists every provider's and model's limits, price and credit.
func (c *Control) Limits() []LimitsEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []LimitsEntry{}
	for _, p := range c.doc.Providers {
		out = append(out, LimitsEntry{Provider: p.Name, Limits: limitsJSON(p.Limits)})
		for _, m := range p.Models {
			out = append(out, LimitsEntry{Provider: p.Name, Model: m.ID, Limits: limitsJSON(m.Limits),
				Price: priceJSON(m.Price), CreditExpires: m.CreditExpires})
		}
	}
	return out
}

// SetProviderLimits replaces the limits shared by a provider's models.
func (c *Control) SetProviderLimits(ctx context.Context, provider string, in *LimitsJSON) error {
	if in == nil {
		return userErr(http.StatusBadRequest, "limits", "send {\"limits\": {...}}; all zero removes them")
	}
	err := c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, provider)
		if i < 0 {
			return userErr(http.StatusNotFound, "provider", "there is no provider %q", provider)
		}
		doc.Providers[i].Limits = toLimits(in)
		return nil
	})
	return scoped(err, "providers[")
}

// SetModelLimits changes a model's limits, price and credit expiry.
func (c *Control) SetModelLimits(ctx context.Context, provider, model string, in ModelLimitsInput) error {
	err := c.update(ctx, "", func(doc *config.Config) error {
		i := providerIndex(doc, provider)
		if i < 0 {
			return userErr(http.StatusNotFound, "provider", "there is no provider %q", provider)
		}
		p := &doc.Providers[i]
		for j := range p.Models {
			m := &p.Models[j]
			if m.ID != model {
				continue
			}
			if in.Limits != nil {
				m.Limits = toLimits(in.Limits)
			}
			if in.Price != nil {
				m.Price = &config.Price{Input: in.Price.Input, Output: in.Price.Output}
				if *m.Price == (config.Price{}) {
					m.Price = nil
				}
			}
			if in.CreditExpires != nil {
				m.CreditExpires = strings.TrimSpace(*in.CreditExpires)
			}
			return nil
		}
		return userErr(http.StatusNotFound, "model", "provider %q has no model %q", provider, model)
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
