package router_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"freelane/backend/router"
	"freelane/backend/tier"
)

func names(bs []*router.Backend) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name()
	}
	return out
}

const mistralHint = "add a Mistral key in the dashboard or set MISTRAL_API_KEY"

// catalogSpec is a catalog with every kind of provider: own keys (one marked
// default, listed second), free tiers with ties in model size, a model id
// with slashes, a model id served by several providers, a local server, a
// provider without its key and a disabled one.
func catalogSpec() router.Spec {
	return router.Spec{
		Providers: []router.ProviderSpec{
			{Name: "openai", Tier: tier.Own, HasKey: true, Models: []router.ModelSpec{{ID: "gpt-4o-mini"}, {ID: "gpt-4o"}}},
			{Name: "mine", Tier: tier.Own, Default: true, HasKey: true, Models: []router.ModelSpec{{ID: "claude-sonnet"}}},
			{Name: "groq", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{
				{ID: "llama-3.1-8b", ParamsB: 8, Context: 131072}, {ID: "llama-3.3-70b", ParamsB: 70, Context: 131072}}},
			{Name: "mistral", Tier: tier.Free, HasKey: false, KeyHint: mistralHint, Models: []router.ModelSpec{{ID: "mistral-large", ParamsB: 123}}},
			{Name: "cerebras", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{
				{ID: "llama-3.3-70b", ParamsB: 70, Context: 8192}, {ID: "qwen-3-32b", ParamsB: 32}}},
			{Name: "ollama", Tier: tier.Local, HasKey: true, Models: []router.ModelSpec{{ID: "qwen2.5:72b", ParamsB: 72}}},
			{Name: "openrouter", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{
				{ID: "meta-llama/llama-3.3-70b-instruct:free", ParamsB: 70}, {ID: "deepseek/deepseek-r1:free", ParamsB: 671}}},
			{Name: "off", Tier: tier.Free, Disabled: true, HasKey: true, Models: []router.ModelSpec{{ID: "huge", ParamsB: 1000}}},
			{Name: "offnokey", Tier: tier.Free, Disabled: true, HasKey: false, KeyHint: "set OFF_KEY", Models: []router.ModelSpec{{ID: "x"}}},
		},
		Chains: []router.ChainSpec{
			{Name: "fast", Backends: ids("groq/llama-3.1-8b", "nope/missing", "cerebras/qwen-3-32b", "off/huge")},
			{Name: "premium", Backends: ids("mistral/mistral-large")},
			{Name: "mixed", Backends: ids("mistral/mistral-large", "ollama/qwen2.5:72b")},
			{Name: "ghost", Backends: ids("nope/missing")},
		},
	}
}

var wantAuto = []string{
	"mine/claude-sonnet",                  // own, default
	"openai/gpt-4o-mini", "openai/gpt-4o", // own, config order
	"openrouter/deepseek/deepseek-r1:free",         // free, 671B
	"groq/llama-3.3-70b", "cerebras/llama-3.3-70b", // free, 70B, config order
	"openrouter/meta-llama/llama-3.3-70b-instruct:free",
	"cerebras/qwen-3-32b", // free, 32B
	"groq/llama-3.1-8b",   // free, 8B
	"ollama/qwen2.5:72b",  // local last, whatever its size
}

func TestBuildDefaultChainOrder(t *testing.T) {
	tb := router.Build(catalogSpec())
	if got := names(tb.Chain(router.DefaultChain)); !slices.Equal(got, wantAuto) {
		t.Fatalf("auto chain:\n got %q\nwant %q", got, wantAuto)
	}
	if got := names(tb.Backends()); !slices.Equal(got, wantAuto) {
		t.Fatalf("Backends:\n got %q\nwant %q", got, wantAuto)
	}
	// Backends carry what the router needs.
	b := tb.Chain("auto")[4]
	if b.ID.Provider != "groq" || b.ID.Model != "llama-3.3-70b" || b.Tier != tier.Free || b.ParamsB != 70 || b.Context != 131072 {
		t.Errorf("backend = %+v", b)
	}
	// Listing copies: changing the result does not change the table.
	bs := tb.Backends()
	bs[0] = nil
	if tb.Backends()[0] == nil {
		t.Error("Backends returns the table's own slice")
	}
}

func TestBuildDefaultOwnWithoutDefaultMark(t *testing.T) {
	tb := router.Build(router.Spec{Providers: []router.ProviderSpec{
		{Name: "local", Tier: tier.Local, HasKey: true, Models: []router.ModelSpec{{ID: "l"}}},
		{Name: "free", Tier: tier.Free, HasKey: true, Models: []router.ModelSpec{{ID: "f"}}},
		{Name: "b", Tier: tier.Own, HasKey: true, Models: []router.ModelSpec{{ID: "b"}}},
		{Name: "a", Tier: tier.Own, HasKey: true, Models: []router.ModelSpec{{ID: "a"}}},
	}})
	want := []string{"b/b", "a/a", "free/f", "local/l"}
	if got := names(tb.Chain("auto")); !slices.Equal(got, want) {
		t.Fatalf("auto = %q, want %q", got, want)
	}
}

func TestResolve(t *testing.T) {
	tb := router.Build(catalogSpec())
	tests := []struct {
		model  string
		chain  string
		pinned bool
		want   []string
	}{
		{"auto", "auto", false, wantAuto},
		{"fast", "fast", false, []string{"groq/llama-3.1-8b", "cerebras/qwen-3-32b"}},
		{"mixed", "mixed", false, []string{"ollama/qwen2.5:72b"}},
		{"groq/llama-3.3-70b", "", true, []string{"groq/llama-3.3-70b"}},
		{"openrouter/meta-llama/llama-3.3-70b-instruct:free", "", true, []string{"openrouter/meta-llama/llama-3.3-70b-instruct:free"}},
		{"ollama/qwen2.5:72b", "", true, []string{"ollama/qwen2.5:72b"}},
		// A bare upstream id: every provider serving it, in default-chain order.
		{"llama-3.3-70b", "", false, []string{"groq/llama-3.3-70b", "cerebras/llama-3.3-70b"}},
		{"meta-llama/llama-3.3-70b-instruct:free", "", false, []string{"openrouter/meta-llama/llama-3.3-70b-instruct:free"}},
		{"deepseek/deepseek-r1:free", "", false, []string{"openrouter/deepseek/deepseek-r1:free"}},
		{"gpt-4o", "", false, []string{"openai/gpt-4o"}},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			r, err := tb.Resolve(tc.model)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if r.Chain != tc.chain || r.Pinned != tc.pinned {
				t.Errorf("chain %q pinned %v, want %q %v", r.Chain, r.Pinned, tc.chain, tc.pinned)
			}
			if got := names(r.Backends); !slices.Equal(got, tc.want) {
				t.Errorf("backends:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	if r, _ := tb.Resolve("openrouter/meta-llama/llama-3.3-70b-instruct:free"); r.Backends[0].ID.Provider != "openrouter" || r.Backends[0].ID.Model != "meta-llama/llama-3.3-70b-instruct:free" {
		t.Errorf("model id with slashes split wrongly: %+v", r.Backends[0])
	}
}

func resolveErr(t *testing.T, tb *router.Table, model string) *router.ResolveError {
	t.Helper()
	r, err := tb.Resolve(model)
	if err == nil {
		t.Fatalf("Resolve(%q) = %q, want an error", model, names(r.Backends))
	}
	var re *router.ResolveError
	if !errors.As(err, &re) {
		t.Fatalf("error %T is not a *ResolveError", err)
	}
	if re.Error() != re.Message {
		t.Errorf("Error() = %q, want the message", re.Error())
	}
	return re
}

func TestResolveUnknown(t *testing.T) {
	tb := router.Build(catalogSpec())
	for _, model := range []string{"gpt-5", "groq/llama-9", "off/huge", "huge", "nope/missing", "mistral", "AUTO", ""} {
		t.Run(model, func(t *testing.T) {
			re := resolveErr(t, tb, model)
			if re.Status != http.StatusNotFound || re.Code != "model_not_found" {
				t.Fatalf("got %d %s, want 404 model_not_found (%s)", re.Status, re.Code, re.Message)
			}
			// The message lists what exists, auto first, and never what
			// cannot be used.
			if !strings.Contains(re.Message, `"`+model+`"`) {
				t.Errorf("message does not name the model: %s", re.Message)
			}
			_, list, ok := strings.Cut(re.Message, "use one of: ")
			if !ok {
				t.Fatalf("message lists no names: %s", re.Message)
			}
			if want := strings.Join(tb.Names(), ", "); list != want {
				t.Errorf("listed names:\n got %s\nwant %s", list, want)
			}
			for _, hidden := range []string{"off/huge", "mistral/mistral-large", "offnokey"} {
				if strings.Contains(list, hidden) {
					t.Errorf("message lists unusable %s: %s", hidden, list)
				}
			}
		})
	}
}

func TestResolveUnknownListIsCapped(t *testing.T) {
	var models []router.ModelSpec
	for _, id := range strings.Fields("a b c d e f g h i j k l m n o p q r s t u v w x y z") {
		models = append(models, router.ModelSpec{ID: id})
	}
	tb := router.Build(router.Spec{Providers: []router.ProviderSpec{{Name: "p", Tier: tier.Free, HasKey: true, Models: models}}})
	re := resolveErr(t, tb, "nope")
	if !strings.Contains(re.Message, "auto, p/a, ") || !strings.HasSuffix(re.Message, " and 2 more (GET /v1/models)") {
		t.Fatalf("message = %s", re.Message)
	}
}

func TestResolveMissingKeys(t *testing.T) {
	tb := router.Build(catalogSpec())
	if got := tb.MissingKeys(); !slices.Equal(got, []string{mistralHint}) {
		t.Errorf("MissingKeys = %q, want only the enabled keyless provider", got)
	}
	for _, tc := range []struct {
		model, code string
	}{
		{"mistral/mistral-large", "missing_api_key"}, // pinned keyless backend
		{"mistral-large", "missing_api_key"},         // bare id only a keyless provider serves
		{"premium", "missing_api_key"},               // chain emptied by the missing key
		{"ghost", "no_backend_available"},            // chain of unknown backends
	} {
		t.Run(tc.model, func(t *testing.T) {
			re := resolveErr(t, tb, tc.model)
			if re.Status != http.StatusServiceUnavailable || re.Code != tc.code {
				t.Fatalf("got %d %s, want 503 %s (%s)", re.Status, re.Code, tc.code, re.Message)
			}
			if hint := tc.code == "missing_api_key"; strings.Contains(re.Message, mistralHint) != hint {
				t.Errorf("message %q: hint present = %v, want %v", re.Message, !hint, hint)
			}
			if !strings.Contains(re.Message, tc.model) {
				t.Errorf("message does not name %s: %s", tc.model, re.Message)
			}
		})
	}
}

func TestResolveEmptyAutoNamesEveryMissingKey(t *testing.T) {
	tb := router.Build(router.Spec{Providers: []router.ProviderSpec{
		{Name: "groq", Tier: tier.Free, KeyHint: "set GROQ_API_KEY", Models: []router.ModelSpec{{ID: "g"}}},
		{Name: "off", Tier: tier.Free, Disabled: true, HasKey: true, Models: []router.ModelSpec{{ID: "o"}}},
		{Name: "cerebras", Tier: tier.Free, KeyHint: "set CEREBRAS_API_KEY", Models: []router.ModelSpec{{ID: "c"}}},
	}})
	re := resolveErr(t, tb, "auto")
	if re.Status != http.StatusServiceUnavailable || re.Code != "missing_api_key" {
		t.Fatalf("got %d %s: %s", re.Status, re.Code, re.Message)
	}
	if !strings.Contains(re.Message, "set GROQ_API_KEY; set CEREBRAS_API_KEY") {
		t.Errorf("message does not name both keys in order: %s", re.Message)
	}
	// With nothing configured at all there is no key to name.
	re = resolveErr(t, router.Build(router.Spec{}), "auto")
	if re.Status != http.StatusServiceUnavailable || re.Code != "no_backend_available" {
		t.Fatalf("empty config: got %d %s: %s", re.Status, re.Code, re.Message)
	}
}

func TestUserChainNamedAuto(t *testing.T) {
	spec := catalogSpec()
	spec.Chains = append(spec.Chains, router.ChainSpec{Name: "auto", Backends: ids("ollama/qwen2.5:72b", "groq/llama-3.1-8b")})
	tb := router.Build(spec)
	r, err := tb.Resolve("auto")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(r.Backends), []string{"ollama/qwen2.5:72b", "groq/llama-3.1-8b"}; !slices.Equal(got, want) || r.Chain != "auto" {
		t.Fatalf("auto = %q (chain %q), want the user's %q", got, r.Chain, want)
	}
	if got, want := tb.Chains(), []string{"auto", "fast", "premium", "mixed", "ghost"}; !slices.Equal(got, want) {
		t.Fatalf("Chains = %q, want %q", got, want)
	}
	// Backends still lists everything routable in default order.
	if got := names(tb.Backends()); !slices.Equal(got, wantAuto) {
		t.Fatalf("Backends = %q", got)
	}

	// A user auto chain emptied by a missing key says which key.
	spec = catalogSpec()
	spec.Chains = []router.ChainSpec{{Name: "auto", Backends: ids("mistral/mistral-large")}}
	re := resolveErr(t, router.Build(spec), "auto")
	if re.Code != "missing_api_key" || !strings.Contains(re.Message, mistralHint) {
		t.Fatalf("got %s: %s", re.Code, re.Message)
	}
}

func TestNamesAndChains(t *testing.T) {
	tb := router.Build(catalogSpec())
	wantChains := []string{"auto", "fast", "premium", "mixed", "ghost"}
	if got := tb.Chains(); !slices.Equal(got, wantChains) {
		t.Fatalf("Chains = %q, want %q", got, wantChains)
	}
	if got, want := tb.Names(), slices.Concat(wantChains, wantAuto); !slices.Equal(got, want) {
		t.Fatalf("Names:\n got %q\nwant %q", got, want)
	}
	// Copies, not the table's own slices.
	c := tb.Chains()
	c[0] = "changed"
	if tb.Chains()[0] != "auto" {
		t.Fatal("Chains returns the table's own slice")
	}
	ch := tb.Chain("fast")
	ch[0] = nil
	if tb.Chain("fast")[0] == nil {
		t.Fatal("Chain returns the table's own slice")
	}
	if tb.Chain("no-such-chain") != nil {
		t.Fatal("Chain of an unknown name is not empty")
	}
}

func TestBuildFreeOrderIsStable(t *testing.T) {
	// Enough models for the sort to leave insertion sort: ties must keep
	// their config order however many there are.
	var spec router.Spec
	var want []string
	sizes := []float64{8, 70, 8, 32, 70, 8, 0, 32, 70, 8}
	for p := range 4 {
		var models []router.ModelSpec
		for i, size := range sizes {
			models = append(models, router.ModelSpec{ID: fmt.Sprintf("m%d", i), ParamsB: size})
		}
		spec.Providers = append(spec.Providers, router.ProviderSpec{Name: fmt.Sprintf("p%d", p), Tier: tier.Free, HasKey: true, Models: models})
	}
	for _, size := range []float64{70, 32, 8, 0} {
		for p := range 4 {
			for i, s := range sizes {
				if s == size {
					want = append(want, fmt.Sprintf("p%d/m%d", p, i))
				}
			}
		}
	}
	if got := names(router.Build(spec).Chain("auto")); !slices.Equal(got, want) {
		t.Fatalf("auto:\n got %q\nwant %q", got, want)
	}
}
