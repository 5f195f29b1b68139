package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"freelane/backend/api"
	"freelane/backend/breaker"
	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/dialects"
	"freelane/backend/events"
	"freelane/backend/llm"
	"freelane/backend/metrics"
	"freelane/backend/notify"
	"freelane/backend/protocol"
	"freelane/backend/quota"
	"freelane/backend/router"
	"freelane/backend/store"
	"freelane/backend/tier"
)

// BackendView is one backend as the dashboard shows it.
type BackendView struct {
	// ID is the backend; Name, Provider and Model are its parts as the
	// dashboard reads them.
	ID       llm.BackendID `json:"-"`
	Name     string        `json:"name"`
	Provider string        `json:"provider"`
	// Key is the label of the key of a provider's pool this backend is
	// called with; "" for a provider with one key.
	Key     string                    `json:"key"`
	Model   string                    `json:"model"`
	Tier    tier.Tier                 `json:"tier"`
	Status  string                    `json:"status"`
	State   breaker.State             `json:"state"`
	Health  float64                   `json:"health"`
	Reason  string                    `json:"reason"`
	Until   *time.Time                `json:"until"`
	Windows map[string]metrics.Window `json:"windows"`
	// Today is the backend's calls today (local time), the figure the
	// usage ledger gives for the day.
	Today metrics.DayCount `json:"today"`
	Probe ProbeView        `json:"probe"`
}

// ProbeView is a backend's last probe.
type ProbeView struct {
	Last    *time.Time `json:"last"`
	OK      bool       `json:"ok"`
	Message string     `json:"message"`
}

// Totals are the headline numbers.
type Totals struct {
	// RequestsToday counts the requests started today (local time), the
	// figure the request log gives for the day.
	RequestsToday int     `json:"requests_today"`
	RPS1m         float64 `json:"rps_1m"`
}

// Snapshot is everything the dashboard starts from.
type Snapshot struct {
	Version    string `json:"version"`
	Endpoint   string `json:"endpoint"`
	SeededFrom string `json:"seeded_from"`
	// Paused is true while probes are paused because nothing remote
	// answers (the machine is offline).
	Paused bool `json:"paused"`
	// RoutingPaused is true while the user has paused routing: /v1
	// answers 503.
	RoutingPaused bool                   `json:"routing_paused"`
	Backends      []BackendView          `json:"backends"`
	Providers     []control.ProviderView `json:"providers"`
	Chains        []api.ChainView        `json:"chains"`
	MissingKeys   []string               `json:"missing_keys"`
	Requests      []llm.Trace            `json:"requests"`
	Events        []events.Event         `json:"events"`
	Totals        Totals                 `json:"totals"`
	// Quotas, Budgets and Spend are each backend's limits, the budgets and
	// what was spent today and this month.
	Quotas  []quota.QuotaView  `json:"quotas"`
	Budgets []quota.BudgetView `json:"budgets"`
	Spend   quota.Spend        `json:"spend"`
	// Notifications are the recent notifications, newest first.
	Notifications []notify.Notification `json:"notifications"`
	// Team is the team as this instance sees it; enabled is false on a
	// single machine.
	Team TeamView `json:"team"`
}

// Update is what changed since the last message to the dashboard.
type Update struct {
	Type     string         `json:"type"`
	Time     time.Time      `json:"time"`
	Backends []BackendView  `json:"backends"`
	Requests []llm.Trace    `json:"requests"`
	Events   []events.Event `json:"events"`
	Totals   Totals         `json:"totals"`
	// RoutingPaused is repeated in every update so a pause from the tray
	// shows at once.
	RoutingPaused bool `json:"routing_paused"`
	// Quotas, Budgets and Spend are always full lists; they are small.
	Quotas  []quota.QuotaView  `json:"quotas"`
	Budgets []quota.BudgetView `json:"budgets"`
	Spend   quota.Spend        `json:"spend"`
	// Notifications are those raised since the last update, oldest
	// first; a client may have them from its snapshot already (they
	// carry ids).
	Notifications []notify.Notification `json:"notifications"`
	// Team is the team as this instance sees it, sent when it changed
	// (an instance joined or left, a shared part went down or came back,
	// a count moved); left out otherwise.
	Team *TeamView `json:"team,omitempty"`
}

// adminView implements api.Admin over the gateway.
type adminView struct{ g *Gateway }

func (a adminView) Control() *control.Control { return a.g.control }

// Providers are the control plane's providers, each key marked when it
// was stored without being tried.
func (a adminView) Providers() []control.ProviderView { return a.g.providerViews() }

func (a adminView) WebSocket() http.Handler { return a.g.hub }

func (a adminView) Metrics(w io.Writer) {
	if err := a.g.metrics.WritePrometheus(w); err != nil {
		a.g.log.Warn("writing metrics", "err", err)
	}
}

func (a adminView) QueryRequests(ctx context.Context, q store.RequestQuery) (store.RequestPage, error) {
	if a.g.team != nil {
		return a.g.team.requests(ctx, q)
	}
	return a.g.db.QueryRequests(ctx, q)
}

// State is the snapshot redacted whole, as the websocket sends it: it
// copies text from every part (failure reasons, probe results, events).
func (a adminView) State() any {
	snap := a.g.snapshot()
	b, err := json.Marshal(snap)
	if err != nil {
		return snap
	}
	return json.RawMessage(a.g.redact.Bytes(b))
}

func (a adminView) Chains() []api.ChainView { return a.g.chains() }

func (a adminView) Notifications() []notify.Notification { return a.g.notes.Recent() }

func (a adminView) SetRoutingPaused(paused bool) { a.g.SetRoutingPaused(paused) }

func (a adminView) TokenRequired() bool { return a.g.token.Set() }

// TestProvider sends one probe to a provider's model and reports what came
// back, for the dashboard's "Test" button.
func (a adminView) TestProvider(ctx context.Context, provider, model string) api.TestResult {
	g := a.g
	g.mu.Lock()
	c := g.clients[provider]
	p, _ := g.cfg.Provider(provider)
	g.mu.Unlock()
	res := api.TestResult{}
	if p == nil {
		res.Error = fmt.Sprintf("there is no provider %q", provider)
		if v, err := g.control.Provider(provider); err == nil && v.Local != nil {
			res.Error = fmt.Sprintf("the local server %q cannot serve now (%s): %s", provider, v.Local.Status, v.Local.Found)
		}
		return res
	}
	if model == "" && len(p.Models) > 0 {
		model = p.Models[0].ID
	}
	res.Backend = llm.BackendID{Provider: provider, Model: model}.String()
	switch {
	case p.Disabled:
		res.Error = "the provider is disabled; enable it first"
		return res
	case c == nil:
		res.Error = "the provider has no API key: " + keyHint(*p)
		return res
	}
	t0 := g.clock.Now()
	resp, err := c.Complete(ctx, testRequest, model)
	res.LatencyMS = float64(g.clock.Since(t0).Microseconds()) / 1000
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.OK, res.Answer = true, g.answerText(resp.Body)
	// The provider took the key just now: a refusal it gave earlier is
	// over, and the next request may use it.
	g.gate.KeyPassed(llm.KeyID{Provider: provider}, "a test request succeeded")
	return res
}

// testRequest is the short question of key checks and the Test button,
// asked in OpenAI's dialect, which most upstreams speak.
var testRequest = func() *llm.Request {
	c := protocol.AskOK()
	c.Temperature = nil
	r, err := dialects.Registry().Request(llm.DialectOpenAI, c, "test")
	if err != nil {
		panic(err)
	}
	return r
}()

// answerText is the text of an answer to testRequest, read by the codec
// of the dialect it was asked in.
func (g *Gateway) answerText(body []byte) string {
	codec, ok := g.dialects.Codec(testRequest.Dialect)
	if !ok {
		return ""
	}
	a, err := codec.DecodeResponse(body)
	if err != nil {
		return ""
	}
	return a.Text()
}

// chains lists the chains: user chains as declared (with backends that
// currently lack a key), then the generated auto chain if there is one.
func (g *Gateway) chains() []api.ChainView {
	t := g.router.Table()
	doc := g.control.Config()
	g.mu.Lock()
	cfg := g.cfg
	g.mu.Unlock()
	var out []api.ChainView
	for _, name := range t.Chains() {
		v := api.ChainView{Name: name, Strategy: config.StrategyPriority, Gear: control.ChainGear(doc, name), Backends: []string{}}
		v.Default = name == cmp.Or(t.DefaultOf(), router.DefaultChain)
		if i := slices.IndexFunc(doc.Chains, func(c config.Chain) bool { return c.Name == name }); i >= 0 {
			ch := doc.Chains[i]
			v.Backends = append(v.Backends, ch.Backends...)
			v.Strategy = cmp.Or(ch.Strategy, config.StrategyPriority)
			v.Weights, v.Priority = maps.Clone(ch.Weights), maps.Clone(ch.Priority)
			if ch.MaxWait != nil {
				v.MaxWait = ch.MaxWait.String()
			}
			v.Gone = goneBackends(doc, cfg, v.Backends)
		} else {
			v.Generated = true
			for _, b := range t.Chain(name) {
				v.Backends = append(v.Backends, b.Name())
			}
		}
		v.Warning = chainWarning(cfg, v.Backends)
		out = append(out, v)
	}
	return out
}

// goneBackends are the backends of refs that the stored configuration
// doc does not configure and that the pool in use (cfg) does not serve: a
// local server's models while it is stopped or hidden, or a model it no
// longer lists.
func goneBackends(doc, cfg *config.Config, refs []string) []string {
	var out []string
	for _, ref := range refs {
		id, err := llm.ParseBackendID(ref)
		if err != nil {
			continue
		}
		if _, configured := doc.Provider(id.Provider); configured {
			continue
		}
		if p, ok := cfg.Provider(id.Provider); ok && slices.ContainsFunc(p.Models, func(m config.Model) bool { return m.ID == id.Model }) {
			continue
		}
		out = append(out, ref)
	}
	return out
}

// backendViews lists every configured backend, routable ones first in
// default-chain order, with its live state and metrics.
func (g *Gateway) backendViews() []BackendView {
	g.mu.Lock()
	cfg := g.cfg
	g.mu.Unlock()
	now := g.clock.Now()
	threshold := cfg.Breaker.HealthThreshold
	var out []BackendView
	seen := map[llm.BackendID]bool{}
	add := func(p config.Provider, m config.Model, key string) {
		id := llm.BackendID{Provider: p.Name, Key: key, Model: m.ID}
		if seen[id] || (key == "" && seen[llm.BackendID{Provider: p.Name, Model: m.ID, Key: "\x00pooled"}]) {
			return
		}
		seen[id] = true
		if key != "" {
			// The keys of a pool stand for the model: it is not listed
			// again without a key.
			seen[llm.BackendID{Provider: p.Name, Model: m.ID, Key: "\x00pooled"}] = true
		}
		name := id.String()
		v := BackendView{ID: id, Name: name, Provider: p.Name, Key: key, Model: m.ID, Tier: p.Tier, Windows: g.metrics.Windows(name),
			Today: g.feed.today.Backend(now, name), Health: 1, State: breaker.Closed}
		switch {
		case p.Disabled:
			v.Status, v.Reason = "disabled", "the provider is disabled"
		case !p.Keyless && len(p.Pool()) == 0:
			v.Status, v.Reason = "no_key", keyHint(p)
		default:
			st := g.gate.Status(id)
			v.State, v.Health = st.State, st.Health
			if !st.LastProbe.IsZero() {
				last := st.LastProbe
				v.Probe = ProbeView{Last: &last, OK: st.LastProbeOK, Message: st.LastProbeMsg}
			}
			until := func(t time.Time) *time.Time { return &t }
			quotaWhy, quotaUntil, exhausted := g.quota.Exhausted(id)
			switch {
			case !st.KeyOffUntil.IsZero():
				// Until is the next check: the key is used again as soon as
				// one passes, not at the end of a fixed wait.
				v.Status, v.Reason, v.Until = "key_disabled", keyOffWords(st), until(cmp.Or(st.KeyNextCheck, st.KeyOffUntil))
			case st.Retired:
				v.Status, v.Reason = "retired", st.RetiredWhy
			case st.State == breaker.Open:
				v.Status, v.Reason, v.Until = "open", st.OpenWhy, until(st.OpenUntil)
			case st.State == breaker.HalfOpen:
				v.Status, v.Reason = "half_open", "waiting for a trial request"
			case exhausted && !quotaUntil.IsZero():
				v.Status, v.Reason, v.Until = "exhausted", quotaWhy, until(quotaUntil)
			case st.CoolUntil.After(now):
				v.Status, v.Reason, v.Until = "cooling", st.CoolWhy, until(st.CoolUntil)
			case st.Health < threshold:
				v.Status, v.Reason = "degraded", fmt.Sprintf("health %.2f is below %.2f", st.Health, threshold)
			default:
				v.Status = "serving"
			}
		}
		v.Reason = sentence(v.Reason)
		out = append(out, v)
	}
	byName := map[string]config.Provider{}
	for _, p := range cfg.Providers {
		byName[p.Name] = p
	}
	for _, b := range g.router.Table().Backends() {
		p := byName[b.ID.Provider]
		for _, m := range p.Models {
			if m.ID == b.ID.Model {
				add(p, m, b.ID.Key)
			}
		}
	}
	for _, p := range cfg.Providers {
		for _, m := range p.Models {
			add(p, m, "")
		}
	}
	return out
}

func (g *Gateway) totals() Totals {
	var rps float64
	for _, name := range g.metrics.Backends() {
		rps += g.metrics.Window(name, time.Minute).RPS
	}
	return Totals{RequestsToday: int(g.feed.today.Requests(g.clock.Now())), RPS1m: rps}
}

func (g *Gateway) snapshot() Snapshot {
	backends := g.backendViews()
	return Snapshot{
		Quotas:        g.quotaViews(backends),
		Budgets:       g.quota.Budgets(),
		Spend:         g.quota.Spend(),
		Version:       g.o.Version,
		Endpoint:      "http://" + g.Addr() + "/v1",
		SeededFrom:    g.control.SeededFrom(),
		Paused:        g.prober.Offline(),
		RoutingPaused: g.api.Paused(),
		Backends:      backends,
		Providers:     g.providerViews(),
		Chains:        g.chains(),
		MissingKeys:   g.router.Table().MissingKeys(),
		Requests:      g.feed.Recent(),
		Events:        g.bus.Recent(),
		Totals:        g.totals(),
		Notifications: g.notes.Recent(),
		Team:          g.teamView(),
	}
}

// update builds the dashboard's periodic message. It is sent when requests
// finished or events happened, and at least every two seconds so rolling
// numbers visibly decay when traffic stops.
func (g *Gateway) update(since time.Time) any {
	reqs := g.feed.Take()
	var evs []events.Event
drain:
	for {
		select {
		case e, ok := <-g.dashEvents.C():
			if !ok {
				break drain
			}
			evs = append(evs, e)
		default:
			break drain
		}
	}
	notes := g.notes.Since(g.lastNote)
	if len(notes) > 0 {
		g.lastNote = notes[len(notes)-1].ID
	}
	now := g.clock.Now()
	var team *TeamView
	if tv := g.teamView(); tv.Enabled {
		if k := tv.changeKey(); k != g.lastTeam {
			g.lastTeam, team = k, &tv
		}
	}
	if len(reqs) == 0 && len(evs) == 0 && len(notes) == 0 && team == nil && now.Sub(g.lastUpdate) < 2*time.Second {
		return nil
	}
	if notes == nil {
		notes = []notify.Notification{}
	}
	g.lastUpdate = now
	if reqs == nil {
		reqs = []llm.Trace{}
	}
	if evs == nil {
		evs = []events.Event{}
	}
	backends := g.backendViews()
	return Update{Type: "update", Time: now, Backends: backends, Requests: reqs, Events: evs, Totals: g.totals(), RoutingPaused: g.api.Paused(),
		Quotas: g.quotaViews(backends), Budgets: g.quota.Budgets(), Spend: g.quota.Spend(), Notifications: notes, Team: team}
}

// backendStatus is the breakers' view of a backend that the admin views
// show.
type backendStatus interface {
	Status(id llm.BackendID) breaker.Status
}

// quotaReport is what the admin views show of the quotas and budgets.
type quotaReport interface {
	Exhausted(id llm.BackendID) (reason string, until time.Time, ok bool)
	Budgets() []quota.BudgetView
	Spend() quota.Spend
	Quotas(order []llm.BackendID) []quota.QuotaView
}
