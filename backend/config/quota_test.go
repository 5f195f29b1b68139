package config

import (
	"strings"
	"testing"

	"freelane/backend/defaults"
)

func TestQuotaKeysAreValidatedWithLines(t *testing.T) {
	src := `providers:
  - name: groq
    tier: free
    base_url: https://api.groq.com/openai/v1
    keyless: true
    limits: {rpm: -1, reset: "hourly"}
    models:
      - {id: m, price: {input: -2, output: 1}, credit_expires: tomorrow, limits: {rpd: 5, reste: "daily 00:00 UTC"}}
budgets:
  - {scope: "chain:nope", period: week, limit: 0, action: stop}
  - {scope: global, period: day, limit: 1, action: block}
  - {scope: global, period: day, limit: 2, action: free-only}
ledger: {retention_days: -3}
`
	_, _, err := Parse("q.yaml", []byte(src), nil)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"q.yaml:6: providers[0].limits.rpm: must be a number of requests per minute >= 0",
		`q.yaml:6: providers[0].limits.reset: reset "hourly" is not understood`,
		`q.yaml:8: providers[0].models[0].limits.reste: unknown field "reste" (did you mean reset?)`,
		"q.yaml:8: providers[0].models[0].price.input: must be money per million tokens >= 0",
		`q.yaml:8: providers[0].models[0].credit_expires: must be a date written YYYY-MM-DD`,
		`q.yaml:10: budgets[0].scope: names no chain: "nope"`,
		`q.yaml:10: budgets[0].period: must be "day" or "month"`,
		"q.yaml:10: budgets[0].limit: must be an amount of money greater than 0",
		`q.yaml:10: budgets[0].action: must be "free-only"`,
		"q.yaml:12: budgets[2].scope: budgets[1] already sets the day budget of global",
		"q.yaml:13: ledger.retention_days: must be a number of days >= 1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	good := `providers:
  - name: groq
    tier: free
    base_url: https://api.groq.com/openai/v1
    keyless: true
    limits: {rpm: 30, reset: "monthly 31 08:00 America/New_York"}
    models:
      - {id: m, price: {input: 0.15, output: 0.6}, credit_expires: 2026-12-31, limits: {rpd: 5, reset: "rolling 24h"}}
budgets:
  - {scope: "provider:groq", period: month, limit: 10, action: block}
  - {scope: "chain:auto", period: day, limit: 1, action: free-only}
`
	cfg, _, err := Parse("g.yaml", []byte(good), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Providers[0].Models[0]
	if m.Price.Output != 0.6 || m.CreditDate().Format("2006-01-02") != "2026-12-31" || m.Limits.RPD != 5 || cfg.Ledger.RetentionDays != defaults.LedgerRetentionDays {
		t.Fatalf("decoded %+v %+v", m, cfg.Ledger)
	}
}
