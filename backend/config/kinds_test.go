package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"freelane/backend/dialects"
	"freelane/backend/llm"
)

// The provider kinds a configuration may name are those of the registry
// of dialects, and what each kind's upstreams serve is what its dialect's
// wire says: every registered kind is accepted, a kind no dialect has is
// refused with the registry's list, and a model may declare only the
// endpoints its kind's wire serves.
func TestKindsComeFromTheRegistry(t *testing.T) {
	reg := dialects.Registry()
	for _, kind := range reg.Kinds() {
		d, _ := reg.ByKind(kind)
		serves := d.Outbound.Wire.Endpoints()
		for _, ep := range Endpoints {
			_, problems, _ := Parse("t.yaml", doc(
				"providers:",
				"  - name: p",
				"    kind: "+kind,
				"    tier: own",
				"    base_url: https://example.invalid/v1",
				"    api_key: k",
				"    models: [{id: m, endpoints: ["+ep+"]}]",
			), envMap(nil))
			var wire llm.Endpoint
			for e, name := range endpointNames {
				if name == ep {
					wire = e
				}
			}
			p, refused := findProblem(problems, "providers[0].models[0].endpoints[0]")
			if want := !slices.Contains(serves, wire); refused != want {
				t.Errorf("kind %s, endpoint %s: refused %v (%v), want %v", kind, ep, refused, p, want)
			}
			if _, bad := findProblem(problems, "providers[0].kind"); bad {
				t.Errorf("kind %s refused", kind)
			}
		}
	}
	_, problems, _ := Parse("t.yaml", withGroq("    kind: toy"), envMap(nil))
	p, ok := findProblem(problems, "providers[0].kind")
	if want := fmt.Sprintf("supported kinds: %s", strings.Join(reg.Kinds(), ", ")); !ok || !strings.Contains(p.Message, want) {
		t.Errorf("an unknown kind: %+v, want a problem naming %q", p, want)
	}
}
