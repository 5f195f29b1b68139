package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"freelane/backend/control"
)

// A plan shows the provider a change would leave, key included, and
// changes nothing: not the document, not the keys, not what is applied.
func TestPlanStoresNothing(t *testing.T) {
	r := newRig(t)
	c := r.open(nil)
	ctx := context.Background()
	in := groqInput()
	in.APIKey = ptr("gsk-first-key-0123456789")
	plan, err := c.PlanAdd(in)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Before != nil || plan.After.Name != "groq" || plan.After.APIKey != "gsk-first-key-0123456789" || plan.After.Kind != "openai" || !plan.Reaches() {
		t.Fatalf("add plan: %+v", plan)
	}
	if len(c.Providers()) != 0 || len(r.applied) != 1 {
		t.Fatalf("planning an add stored it: %d providers, %d applied", len(c.Providers()), len(r.applied))
	}
	if _, err := c.AddProvider(ctx, in); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Provider("groq")
	applied := len(r.applied)

	// A move without a key would drop the key: the plan says so, and the
	// key stays stored.
	var move control.ProviderInput
	if err := json.Unmarshal([]byte(`{"base_url":"https://elsewhere.example/v1"}`), &move); err != nil {
		t.Fatal(err)
	}
	plan, err = c.PlanUpdate("groq", move)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Before == nil || plan.Before.APIKey != "gsk-first-key-0123456789" || plan.After.APIKey != "" || plan.After.BaseURL != "https://elsewhere.example/v1" || !plan.Reaches() {
		t.Fatalf("move plan: before %+v after %+v", plan.Before, plan.After)
	}
	var tier control.ProviderInput
	if err := json.Unmarshal([]byte(`{"tier":"own","models":[{"id":"other"}]}`), &tier); err != nil {
		t.Fatal(err)
	}
	if plan, err = c.PlanUpdate("groq", tier); err != nil || plan.Reaches() || plan.After.Tier != "own" {
		t.Fatalf("tier plan: %+v %v", plan.After, err)
	}
	after, _ := c.Provider("groq")
	if after.Key.Masked != before.Key.Masked || after.Key.Set != before.Key.Set || after.BaseURL != before.BaseURL || after.Tier != before.Tier || len(r.applied) != applied {
		t.Fatalf("planning edits changed the provider: %+v, then %+v", before, after)
	}
	if r.last().Providers[0].APIKey != "gsk-first-key-0123456789" {
		t.Fatal("the key in use changed")
	}

	// A plan fails as the change would.
	if _, err := c.PlanUpdate("nope", tier); !isStatus(err, http.StatusNotFound) {
		t.Errorf("unknown provider: %v", err)
	}
	bad := groqInput()
	bad.Name, bad.Tier = "x", "gold"
	if _, err := c.PlanAdd(bad); !isStatus(err, http.StatusBadRequest) {
		t.Errorf("bad tier: %v", err)
	}
	if _, err := c.PlanAdd(groqInput()); !isStatus(err, http.StatusConflict) {
		t.Errorf("taken name: %v", err)
	}
}

func isStatus(err error, status int) bool {
	var ce *control.Error
	return errors.As(err, &ce) && ce.Status == status
}
