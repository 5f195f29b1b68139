package pool

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/discovery"
	"freelane/backend/events"
	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/tier"
)

// record keeps what the pool tells the breakers and the events.
type record struct {
	mu        sync.Mutex
	retired   []llm.BackendID
	unretired []llm.BackendID
	kinds     []events.Kind
	rebuilds  int
}

func (r *record) Retire(id llm.BackendID, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retired = append(r.retired, id)
}

func (r *record) Unretire(id llm.BackendID, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unretired = append(r.unretired, id)
}

func (r *record) Publish(e events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds = append(r.kinds, e.Kind)
}

func newPool(t *testing.T) (*Pool, *record) {
	t.Helper()
	r := &record{}
	p := New(Options{DataDir: t.TempDir(), Clock: clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)),
		Breakers: r, Events: r, Rebuild: func() { r.mu.Lock(); r.rebuilds++; r.mu.Unlock() }})
	return p, r
}

func ollama(port int, models ...string) discovery.Server {
	s := discovery.Server{Kind: discovery.KindOllama, Name: "Ollama", Port: port, BaseURL: "http://127.0.0.1:" + strconv.Itoa(port) + "/v1"}
	for _, m := range models {
		s.Models = append(s.Models, discovery.Model{ID: m, Context: 4096})
	}
	return s
}

func names(cfg *config.Config) []string {
	var out []string
	for _, p := range cfg.Providers {
		out = append(out, p.Name)
	}
	return out
}

// The pool composes the configured providers with the servers found:
// a server joins under its kind's name, takes the name and limits its
// record gives, leaves routing when hidden or stopped (its backends
// retired, restored when it answers again), and the control plane is
// told about it in every state.
func TestPoolComposesTheServersFound(t *testing.T) {
	p, r := newPool(t)
	base := config.Default()
	base.Providers = []config.Provider{{Name: "acme", Kind: config.KindOpenAI, Tier: tier.Free, BaseURL: "https://acme.example/v1",
		Models: []config.Model{{ID: "m"}}}}
	if v := p.View(); v.Config != nil {
		t.Fatalf("a pool without a configuration composes %v", names(v.Config))
	}
	p.SetBase(base)
	p.Found([]discovery.Server{ollama(11500, "qwen2.5:7b")})
	v := p.View()
	if got := names(v.Config); !slices.Equal(got, []string{"acme", "ollama-11500"}) || !v.Discovered("ollama-11500") || v.Discovered("acme") {
		t.Fatalf("composed %v", got)
	}
	if r.rebuilds != 1 || !slices.Equal(r.kinds, []events.Kind{events.LocalFound}) {
		t.Fatalf("rebuilds %d, events %v", r.rebuilds, r.kinds)
	}

	named := *base
	named.Local = []config.LocalProvider{{Name: "desk", Kind: discovery.KindOllama, Port: 11500, Limits: &config.Limits{RPM: 3}}}
	v = p.SetBase(&named)
	desk, ok := v.Config.Provider("desk")
	if !ok || desk.Limits == nil || desk.Limits.RPM != 3 || !v.Discovered("desk") {
		t.Fatalf("with its record: %v", names(v.Config))
	}
	if ls := p.LocalServers(); len(ls) != 1 || ls[0].Provider.Name != "desk" || ls[0].Local.Status != control.LocalServing {
		t.Fatalf("local servers %+v", ls)
	}

	hidden := named
	hidden.Local = []config.LocalProvider{{Name: "desk", Kind: discovery.KindOllama, Port: 11500, Hidden: true}}
	if v := p.SetBase(&hidden); !slices.Equal(names(v.Config), []string{"acme"}) {
		t.Fatalf("hidden, composed %v", names(v.Config))
	}
	if ls := p.LocalServers(); len(ls) != 1 || ls[0].Local.Status != control.LocalHidden {
		t.Fatalf("hidden: %+v", ls)
	}

	p.SetBase(&named)
	p.Found(nil)
	id := llm.BackendID{Provider: "desk", Model: "qwen2.5:7b"}
	if got := names(p.View().Config); !slices.Equal(got, []string{"acme"}) || !slices.Equal(r.retired, []llm.BackendID{id}) {
		t.Fatalf("after the server stopped: composed %v, retired %v", got, r.retired)
	}
	if ls := p.LocalServers(); len(ls) != 1 || ls[0].Local.Status != control.LocalGone || len(ls[0].Provider.Models) != 1 {
		t.Fatalf("gone: %+v", ls)
	}
	if h := p.View().EmptyHint("127.0.0.1:7788"); !strings.Contains(h, "Ollama stopped answering on port 11500") {
		t.Fatalf("hint %q", h)
	}
	p.Found([]discovery.Server{ollama(11500, "qwen2.5:7b")})
	if !slices.Equal(r.unretired, []llm.BackendID{id}) || !slices.Contains(names(p.View().Config), "desk") {
		t.Fatalf("back: unretired %v, composed %v", r.unretired, names(p.View().Config))
	}
}

// A server of another account does not serve until it is allowed, and
// the permission outlives the pool.
func TestPoolKeepsForeignServersOut(t *testing.T) {
	p, r := newPool(t)
	p.SetBase(config.Default())
	s := ollama(11500, "m")
	s.Owner = discovery.Owner{Known: true, UID: 4242}
	if p.self == 4242 {
		t.Skip("the test runs as uid 4242")
	}
	p.Found([]discovery.Server{s})
	if got := names(p.View().Config); len(got) != 0 || !slices.Equal(r.kinds, []events.Kind{events.LocalForeign}) {
		t.Fatalf("a foreign server: composed %v, events %v", got, r.kinds)
	}
	if ls := p.LocalServers(); len(ls) != 1 || ls[0].Local.Status != control.LocalForeign || ls[0].Local.Owner == "" {
		t.Fatalf("foreign: %+v", ls)
	}
	if err := p.Allow(11500, discovery.KindOllama, 4242, true); err != nil {
		t.Fatal(err)
	}
	if got := names(p.View().Config); !slices.Equal(got, []string{"ollama-11500"}) {
		t.Fatalf("allowed: %v", got)
	}
	again := New(Options{DataDir: p.o.DataDir, Clock: p.o.Clock})
	again.SetBase(config.Default())
	again.Found([]discovery.Server{s})
	if got := names(again.View().Config); !slices.Equal(got, []string{"ollama-11500"}) {
		t.Fatalf("allowed, in a new pool on the same data directory: %v", got)
	}
	if err := p.Allow(11500, discovery.KindOllama, 4242, false); err != nil {
		t.Fatal(err)
	}
	if got := names(p.View().Config); len(got) != 0 {
		t.Fatalf("withdrawn: %v", got)
	}
}
