package router_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"freelane/backend/router"
	"freelane/backend/tier"
)

// pinSpec has a configured provider "openai" that lacks gpt-4o, an
// OpenRouter that serves the literal id "openai/gpt-4o", and a server
// discovery found that lists model ids shaped like pins of providers
// that exist ("openai/...", "groq/...") and of one that does not
// ("paid/gpt-x"), beside Ollama's ordinary "library/model:tag".
func pinSpec() router.Spec {
	return router.Spec{Providers: []router.ProviderSpec{
		{Name: "openai", Tier: tier.Own, HasKey: true, Models: []router.ModelSpec{{ID: "gpt-4.1"}}},
		{Name: "groq", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{{ID: "llama-3.3-70b"}}},
		{Name: "mistral", Tier: tier.Free, HasKey: false, KeyHint: mistralHint, Models: []router.ModelSpec{{ID: "mistral-large"}}},
		{Name: "off", Tier: tier.Free, Disabled: true, HasKey: true, Models: []router.ModelSpec{{ID: "huge"}}},
		{Name: "openrouter", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{
			{ID: "openai/gpt-4o"}, {ID: "meta-llama/llama-3.3-70b-instruct:free"}, {ID: "paid/configured"}}},
		{Name: "ollama-11500", Tier: tier.Local, HasKey: true, Discovered: true, Models: []router.ModelSpec{
			{ID: "openai/gpt-4o"}, {ID: "openai/gpt-5"}, {ID: "groq/llama-3.1-8b"}, {ID: "mistral/mistral-small"},
			{ID: "off/huge"}, {ID: "paid/gpt-x"}, {ID: "library/llama3.2:3b"}, {ID: "qwen2.5:7b"}, {ID: "paid/configured"}}},
	}}
}

func pinErr(t *testing.T, tb *router.Table, model string) *router.ResolveError {
	t.Helper()
	r, err := tb.Resolve(model)
	var re *router.ResolveError
	if !errors.As(err, &re) {
		t.Fatalf("%s resolved to %v, want an error", model, names(r.Backends))
	}
	return re
}

// A provider/model name reaches that provider or nothing: a model id
// with a slash that another provider serves never answers a pin of a
// provider that exists, whether that provider lacks the model, has no
// key or is disabled.
func TestPinNeverReachesAnotherProvider(t *testing.T) {
	tb := router.Build(pinSpec())
	for _, model := range []string{"openai/gpt-4o", "openai/gpt-5", "groq/llama-3.1-8b", "off/huge"} {
		re := pinErr(t, tb, model)
		if re.Status != http.StatusNotFound || re.Code != "model_not_found" {
			t.Errorf("%s: %d %s %s", model, re.Status, re.Code, re.Message)
		}
	}
	if re := pinErr(t, tb, "openai/gpt-4o"); !strings.Contains(re.Message, `provider "openai" has no model "gpt-4o"`) ||
		!strings.Contains(re.Message, "openrouter/openai/gpt-4o") {
		t.Errorf("message %q should say the pin names openai and where the id is served", re.Message)
	}
	if re := pinErr(t, tb, "off/huge"); !strings.Contains(re.Message, `provider "off" is disabled`) {
		t.Errorf("message %q", re.Message)
	}
	if re := pinErr(t, tb, "mistral/mistral-small"); re.Code != "model_not_found" {
		t.Errorf("a pin of a keyless provider's missing model: %d %s %s", re.Status, re.Code, re.Message)
	}
	// The provider's own models still pin, and the key hint still shows.
	if r, err := tb.Resolve("openai/gpt-4.1"); err != nil || !r.Pinned || names(r.Backends)[0] != "openai/gpt-4.1" {
		t.Errorf("openai/gpt-4.1: %v %v", r, err)
	}
	if re := pinErr(t, tb, "mistral/mistral-large"); re.Code != "missing_api_key" {
		t.Errorf("keyless pin: %+v", re)
	}
}

// A name whose first segment is no provider is not answered by a server
// discovery found that lists that literal id: anyone can make a local
// server list "paid/gpt-x". A configured provider's id still answers,
// and the local server's model is reached through its own name.
func TestSlashIDOfDiscoveredServerNeedsItsPin(t *testing.T) {
	tb := router.Build(pinSpec())
	re := pinErr(t, tb, "paid/gpt-x")
	if re.Status != http.StatusNotFound || re.Code != "model_not_found" || !strings.Contains(re.Message, "ollama-11500/paid/gpt-x") {
		t.Errorf("paid/gpt-x: %d %s %s", re.Status, re.Code, re.Message)
	}
	if r, err := tb.Resolve("ollama-11500/paid/gpt-x"); err != nil || !r.Pinned || names(r.Backends)[0] != "ollama-11500/paid/gpt-x" {
		t.Errorf("the local server's own pin: %v %v", r, err)
	}
	// A configured provider's id with a slash answers as before; a
	// discovered server listing the same id is not among its backends.
	r, err := tb.Resolve("paid/configured")
	if err != nil || !slices.Equal(names(r.Backends), []string{"openrouter/paid/configured"}) {
		t.Errorf("paid/configured: %v %v", names(r.Backends), err)
	}
	r, err = tb.Resolve("meta-llama/llama-3.3-70b-instruct:free")
	if err != nil || !slices.Equal(names(r.Backends), []string{"openrouter/meta-llama/llama-3.3-70b-instruct:free"}) {
		t.Errorf("openrouter's id: %v %v", names(r.Backends), err)
	}
	// Ollama's ordinary names: library/model:tag through the server's
	// name, and a bare tag as a model id.
	if r, err := tb.Resolve("ollama-11500/library/llama3.2:3b"); err != nil || !r.Pinned {
		t.Errorf("library/model:tag through its pin: %v %v", r, err)
	}
	if r, err := tb.Resolve("qwen2.5:7b"); err != nil || !slices.Equal(names(r.Backends), []string{"ollama-11500/qwen2.5:7b"}) {
		t.Errorf("a bare local id: %v %v", names(r.Backends), err)
	}
	if re := pinErr(t, tb, "library/llama3.2:3b"); !strings.Contains(re.Message, "ollama-11500/library/llama3.2:3b") {
		t.Errorf("library/llama3.2:3b: %s", re.Message)
	}
	// Every discovered backend is still in auto.
	if !slices.Contains(names(tb.Chain("auto")), "ollama-11500/paid/gpt-x") {
		t.Errorf("auto %v", names(tb.Chain("auto")))
	}
}

// An alias never turns a pin of an existing provider into a chain, but
// still routes other names with a slash.
func TestAliasDoesNotCatchPins(t *testing.T) {
	s := pinSpec()
	s.Chains = []router.ChainSpec{{Name: "coding", Backends: ids("groq/llama-3.3-70b")}}
	s.Aliases = []router.AliasSpec{{Pattern: "*/*", Chain: "coding"}}
	tb := router.Build(s)
	if re := pinErr(t, tb, "openai/gpt-5"); re.Code != "model_not_found" {
		t.Errorf("openai/gpt-5: %+v", re)
	}
	if r, err := tb.Resolve("vendor/thing"); err != nil || r.Chain != "coding" || r.Alias != "*/*" {
		t.Errorf("vendor/thing: %+v %v", r, err)
	}
}
