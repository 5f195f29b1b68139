// Package quota keeps what each backend may still be asked and what the user
// may still spend: request and token limits per minute and per day (or
// week, month, rolling 24 hours) on providers and models, concurrency
// limits, what upstream rate-limit headers say, and money budgets. The
// router asks it before every call (Admit) and tells it what the call used
// afterwards (Settle). Time comes from an injected clock, so tests move time
// instead of sleeping.
package quota

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"freelane/backend/clock"
	"freelane/backend/events"
	"freelane/backend/llm"
	"freelane/backend/tokens"
)

// Publisher receives quota and budget events; events.Bus implements it.
type Publisher interface{ Publish(events.Event) }

// Answers reads the answers calls produced, so that Settle can estimate
// the completion tokens of an upstream that reported none from the text
// the model generated rather than from a dialect's wire format.
// protocol.Registry implements it.
type Answers interface {
	// AnswerText appends the text, reasoning and tool calls (names and
	// arguments) of an answer its client got in dialect d: output is the
	// answer's body or, with stream set, the stream's content events as
	// llm.CallUsage.Output holds them.
	AnswerText(dst []byte, d llm.Dialect, stream bool, output []byte) []byte
}

// Limits are the configured limits of a provider or a model. Zero means
// no limit.
type Limits struct {
	RPM, RPD, TPM, TPD, Concurrency int64
	Reset                           Rule
}

// Price is money per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheRead and CacheWrite are the prices of prompt tokens read from
	// and written to the provider's prompt cache; 0 means Input.
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// Free reports whether calls at this price cost nothing.
func (p Price) Free() bool { return p.Input <= 0 && p.Output <= 0 }

// Backend is one backend's quota settings.
type Backend struct {
	ID     llm.BackendID
	Limits Limits
	Price  Price
	// Unpriced marks a paid model nobody gave a price: under a money
	// budget it is refused, since what it spends cannot be counted.
	Unpriced bool
	// CreditExpires is the last day of a prepaid credit, zero for none.
	CreditExpires time.Time
}

// Settings are everything the Manager enforces.
type Settings struct {
	// Providers maps a provider name to limits shared by all its models.
	Providers map[string]Limits
	Backends  []Backend
	Budgets   []Budget
	// DefaultMaxTokens is the completion length assumed for a budget's
	// reservation when a request sets no max_tokens [1024].
	DefaultMaxTokens int
	// RateHeaders maps a provider name to the rate-limit headers of its
	// dialect, which limits are learned from; a provider missing here has
	// none learned from headers.
	RateHeaders map[string]llm.RateHeaders
	// SharedKeys names the providers whose keys share one quota, so that
	// a pool of their keys is counted as one key.
	SharedKeys map[string]bool
}

// Manager enforces limits and budgets. It is safe for concurrent use.
type Manager struct {
	clock clock.Clock
	pub   Publisher
	loc   *time.Location // budget periods are local calendar days and months

	mu sync.Mutex
	// scopes are the counters of each key of a provider (shared by the
	// models called with it) and of each backend; kept across Configure.
	scopes    map[scopeKey]*scope
	backends  map[llm.BackendID]*Backend
	providers map[string]Limits
	shared    map[string]bool
	rates     map[string]llm.RateHeaders
	budgets   []*budgetState // kept across Configure by id
	spend     spendTotals
	maxTok    int
	// answers reads outputs for the estimate; set before traffic.
	answers Answers
	// team, when set, counts limits and budgets with the other instances
	// of a team; failClosed refuses paid calls under a budget while it is
	// unreachable; teach, when the team also takes them, tells it the
	// limits learned from the providers (see ShareWith).
	team       Shared
	failClosed bool
	teach      Teacher
}

// New returns a Manager with no limits. loc is the zone of budget periods
// (nil: time.Local).
func New(clk clock.Clock, pub Publisher, loc *time.Location) *Manager {
	if loc == nil {
		loc = time.Local
	}
	return &Manager{clock: clock.OrReal(clk), pub: pub, loc: loc, scopes: map[scopeKey]*scope{}, backends: map[llm.BackendID]*Backend{}, maxTok: 1024}
}

// ReadAnswersWith installs what reads the calls' answers when an upstream
// reports no usage (see Answers). Call it before traffic; without it an
// answer's tokens are estimated from the size of its body, which
// overcounts them.
func (m *Manager) ReadAnswersWith(a Answers) { m.answers = a }

// Configure installs new settings. Counters and spend carry over for the
// providers, backends and budgets that remain.
func (m *Manager) Configure(s Settings) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maxTok = s.DefaultMaxTokens
	if m.maxTok <= 0 {
		m.maxTok = 1024
	}
	backends := map[llm.BackendID]*Backend{}
	for i := range s.Backends {
		b := s.Backends[i]
		backends[b.ID] = &b
	}
	m.backends = backends
	m.providers = s.Providers
	m.rates = s.RateHeaders
	m.shared = s.SharedKeys
	// A provider or model whose limits were removed keeps its counters
	// (learned limits still apply) but loses its configured limits.
	for k, sc := range m.scopes {
		sc.lim = m.limitsOf(k)
		sc.rate = m.rates[k.key.Provider]
	}
	m.budgets = m.configureBudgets(s.Budgets)
}

// scopeKey names a scope: one key of a provider when model is empty,
// otherwise one backend. Provider limits count per key, since each key is
// its own account at the provider.
type scopeKey struct {
	key   llm.KeyID
	model string
}

// backendOf is the configuration of backend id: a model's limits and
// price are the same for every key of a pool, so they are configured
// once, without a key.
func (m *Manager) backendOf(id llm.BackendID) *Backend {
	if b := m.backends[id]; b != nil {
		return b
	}
	id.Key = ""
	return m.backends[id]
}

// keyScope is the scope of the key id is called with. The keys of a
// provider whose keys share one quota (all keys of one Google project)
// are counted together, as the provider's one key.
func (m *Manager) keyScope(id llm.BackendID) scopeKey { return scopeKey{key: m.quotaKey(id)} }

func (m *Manager) backendScope(id llm.BackendID) scopeKey {
	return scopeKey{key: m.quotaKey(id), model: id.Model}
}

func (m *Manager) quotaKey(id llm.BackendID) llm.KeyID {
	if m.shared[id.Provider] {
		return llm.KeyID{Provider: id.Provider}
	}
	return id.KeyID()
}

// limitsOf is the configured limits of a scope.
func (m *Manager) limitsOf(k scopeKey) Limits {
	if k.model == "" {
		return m.providers[k.key.Provider]
	}
	if b := m.backendOf(llm.BackendID{Provider: k.key.Provider, Key: k.key.Key, Model: k.model}); b != nil {
		return b.Limits
	}
	return Limits{}
}

func (m *Manager) scope(k scopeKey) *scope {
	sc := m.scopes[k]
	if sc == nil {
		name := k.key.String()
		if k.model != "" {
			name = llm.BackendID{Provider: k.key.Provider, Key: k.key.Key, Model: k.model}.String()
		}
		sc = newScope(name)
		sc.lim = m.limitsOf(k)
		sc.rate = m.rates[k.key.Provider]
		m.scopes[k] = sc
	}
	return sc
}

// Target names the backend a call goes to.
type Target struct {
	ID llm.BackendID
}

// Available reports, without counting anything, whether b is at a limit or
// shut out by a budget.
func (m *Manager) Available(chain string, b Target) *llm.Skip {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	if sk := m.limitsLocked(b, now); sk != nil {
		return sk
	}
	if bk := m.backendOf(b.ID); bk != nil && bk.Unpriced {
		if sk := m.unpricedLocked(chain, b.ID); sk != nil {
			return sk
		}
	} else if bk != nil && !bk.Price.Free() {
		if bs := m.exceededLocked(chain, b.ID.Provider, 0, now); bs != nil {
			return bs.skip()
		}
	}
	return nil
}

// unpricedLocked refuses a paid model without a price when a money budget
// covers it: its spending could not be counted, so it is treated as over
// every budget that applies rather than as free. Without a budget that
// applies it returns nil.
func (m *Manager) unpricedLocked(chain string, id llm.BackendID) *llm.Skip {
	var cover *budgetState
	for _, bs := range m.budgets {
		if bs.applies(chain, id.Provider) && (cover == nil || bs.Action == ActionBlock) {
			cover = bs
		}
	}
	if cover == nil {
		return nil
	}
	return &llm.Skip{Word: llm.SkipQuota, Class: llm.Quota, Budget: true, Blocked: cover.Action == ActionBlock,
		Reason: fmt.Sprintf("budget: %s has no price, so %s cannot count what it spends; set its price (price: {input, output} on the model in the config, or in the dashboard)",
			id, cover.describe())}
}

// Hold is an admitted call: a concurrency slot, the request counted at
// admission and any money reserved against budgets. Settle, Release or
// Done gives it back; whichever comes first counts, the rest do nothing.
type Hold struct {
	m        *Manager
	req      *llm.Request
	chain    string
	b        Target
	at       time.Time
	reserved float64
	budgets  []*budgetState
	done     bool
	// counts are what the team counted for the hold, refs what each
	// stands for; empty outside a team.
	counts []Count
	refs   []teamRef
}

// Admit decides whether b may be called for req now. It counts the request
// against the backend's and its provider's limits, takes a concurrency
// slot and reserves the call's estimated cost against the budgets that
// apply. The check against every limit and the reservation are one step
// under the manager's lock, so concurrent calls cannot together overspend,
// and the refusal is worded under it too. The caller defers the Hold's
// Done (or calls Settle or Release) on every path.
func (m *Manager) Admit(req *llm.Request, chain string, b Target) (*Hold, *llm.Skip) {
	h := &Hold{m: m, req: req, chain: chain, b: b}
	var evs []events.Event
	m.mu.Lock()
	bk := m.backendOf(b.ID)
	paid := bk != nil && !bk.Price.Free() && len(m.budgets) > 0
	now := m.clock.Now()
	h.at = now
	if sk := m.limitsLocked(b, now); sk != nil {
		evs = m.exhaustedLocked(b, now)
		m.mu.Unlock()
		m.publish(evs)
		return nil, sk
	}
	if bk != nil && bk.Unpriced {
		if sk := m.unpricedLocked(chain, b.ID); sk != nil {
			m.mu.Unlock()
			return nil, sk
		}
	}
	if paid {
		maxOut := req.MaxTokens
		if maxOut <= 0 {
			maxOut = m.maxTok
		}
		h.reserved = cost(bk.Price, llm.Usage{PromptTokens: reservePrompt(req), CompletionTokens: maxOut})
		if bs := m.exceededLocked(chain, b.ID.Provider, h.reserved, now); bs != nil {
			evs = bs.exceededEvent(now)
			sk := bs.skip()
			m.mu.Unlock()
			m.publish(evs)
			return nil, sk
		}
		for _, bs := range m.budgets {
			if bs.applies(chain, b.ID.Provider) {
				bs.roll(now, m.loc)
				bs.reserved += h.reserved
				h.budgets = append(h.budgets, bs)
			}
		}
	}
	for _, sc := range m.scopesOf(b) {
		sc.admit(now)
		evs = sc.note(now, evs)
	}
	if m.team != nil {
		m.teamCountsLocked(h, now)
	}
	m.mu.Unlock()
	m.publish(evs)
	if len(h.counts) > 0 {
		// The team's count is asked outside the lock: its round trip must
		// not hold up the other requests of this instance.
		if sk := m.takeTeam(h); sk != nil {
			return nil, sk
		}
	}
	return h, nil
}

func (m *Manager) scopesOf(b Target) [2]*scope {
	return [2]*scope{m.scope(m.keyScope(b.ID)), m.scope(m.backendScope(b.ID))}
}

// limitsLocked returns a skip when b or its provider is at a limit.
func (m *Manager) limitsLocked(b Target, now time.Time) *llm.Skip {
	for _, sc := range m.scopesOf(b) {
		if sk := sc.full(now); sk != nil {
			return sk
		}
	}
	return nil
}

func (m *Manager) exhaustedLocked(b Target, now time.Time) []events.Event {
	var evs []events.Event
	for _, sc := range m.scopesOf(b) {
		evs = sc.note(now, evs)
	}
	return evs
}

func (m *Manager) publish(evs []events.Event) {
	if m.pub == nil {
		return
	}
	for _, e := range evs {
		m.pub.Publish(e)
	}
}

// Done gives the hold back: with c nil the call was not made (Release),
// otherwise it is accounted for (Settle). It is the form the router defers.
func (h *Hold) Done(c *llm.CallUsage) {
	if c == nil {
		h.Release()
		return
	}
	h.Settle(*c)
}

// Release gives back what the hold took without counting a call: the
// router admitted the backend but did not call it.
func (h *Hold) Release() {
	m := h.m
	m.mu.Lock()
	if h.done {
		m.mu.Unlock()
		return
	}
	h.done = true
	m.undoLocked(h)
	m.mu.Unlock()
	if len(h.counts) > 0 {
		h.teamGiveBack()
	}
}

// completionEstimate is the completion tokens of a call that did not
// report them: counted in what the client got when the call kept it
// (scaled up to the whole stream when it kept only its first events), or
// else a token per content event of its stream.
func (h *Hold) completionEstimate(c llm.CallUsage) int {
	if len(c.Output) == 0 {
		return c.ContentEvents
	}
	n := h.m.completionEstimate(h.req, c.Output)
	if c.KeptBytes > 0 && c.ContentBytes > c.KeptBytes {
		n = int(float64(n) * float64(c.ContentBytes) / float64(c.KeptBytes))
	}
	return n
}

// Settle accounts for the call made under the hold: tokens from the
// upstream's usage or, when it sent none, estimated from the request and
// the output seen; the cost at the backend's price; and what the
// upstream's rate-limit headers or 429 body say about its quota. It fills
// in the attempt's tokens and cost.
func (h *Hold) Settle(c llm.CallUsage) {
	a := c.Attempt
	prompt, completion, estimated := 0, 0, false
	var cacheRead, cacheWrite int
	if u := c.Usage; u != nil {
		cacheRead, cacheWrite = u.CacheReadTokens, u.CacheWriteTokens
	}
	switch u := c.Usage; {
	case u.CountsCompletion():
		prompt, completion = u.PromptTokens, u.CompletionTokens
	case u != nil && u.PromptTokens > 0:
		// Only the prompt was counted (as some dialects count it until
		// the last event, which a broken stream never sends); an answer
		// that says something has its completion estimated. Embeddings
		// say nothing.
		prompt = u.PromptTokens
		completion = h.completionEstimate(c)
		estimated = completion > 0
	case c.Err == nil || len(c.Output) > 0 || c.ContentEvents > 0:
		// The call produced something but reported no usage.
		estimated = true
		prompt = h.promptEstimate()
		completion = h.completionEstimate(c)
	}
	m := h.m
	var evs []events.Event
	m.mu.Lock()
	var price Price
	if bk := m.backendOf(h.b.ID); bk != nil {
		price = bk.Price
	}
	used := llm.Usage{PromptTokens: prompt, CompletionTokens: completion, CacheReadTokens: cacheRead, CacheWriteTokens: cacheWrite}
	spent := cost(price, used)
	if a != nil {
		a.PromptTokens, a.CompletionTokens, a.Estimated, a.Cost = prompt, completion, estimated, spent
		a.Saved = saved(price, used)
	}
	now := m.clock.Now()
	var team []Count
	var taught []Learned
	if !h.done {
		h.done = true
		if len(h.counts) > 0 {
			team = h.teamSettleLocked(now, int64(prompt+completion), spent)
		}
		for _, sc := range m.scopesOf(h.b) {
			sc.settle(now, int64(prompt+completion))
			evs = sc.note(now, evs)
		}
		for _, bs := range h.budgets {
			bs.unreserve(h.reserved)
		}
		evs = m.spendLocked(now, h.chain, h.b.ID.Provider, spent, evs)
		if c.Header != nil || (c.Err != nil && c.Err.Status == http.StatusTooManyRequests) {
			sc := m.scope(m.backendScope(h.b.ID))
			prev := sc.learned
			sc.learn(now, c.Header, c.Err)
			if m.teach != nil {
				taught = learnedOf(h.b.ID, sc, prev, now, nil)
			}
		}
	}
	teach := m.teach
	m.mu.Unlock()
	if len(team) > 0 {
		m.team.Add(team)
	}
	for _, l := range taught {
		teach.Teach(l)
	}
	m.publish(evs)
}

// promptEstimate is the prompt tokens of the held request. A chat request
// is counted in the neutral model, the same in every dialect; the other
// endpoints (completions, embeddings) have the one body shape that
// tokens.Prompt reads.
func (h *Hold) promptEstimate() int { return PromptTokens(h.req) }

// PromptTokens estimates req's prompt tokens offline: a chat request is
// counted in the neutral model, the same in every dialect; the other
// endpoints (completions, embeddings) have the one body shape that
// tokens.Prompt reads.
func PromptTokens(req *llm.Request) int {
	if req.Endpoint == llm.Chat {
		if c, err := req.Conversation(); err == nil {
			return tokens.Conversation(c)
		}
	}
	return tokens.Prompt(req.Raw())
}

// completionEstimate is the tokens of the text an answer generated, read
// from output (see llm.CallUsage.Output) in the client's dialect.
func (m *Manager) completionEstimate(req *llm.Request, output []byte) int {
	if m.answers == nil {
		return tokens.Count(output)
	}
	return tokens.Count(m.answers.AnswerText(nil, req.Dialect, req.Stream, output))
}

// reservePrompt bounds a request's prompt tokens from above without
// tokenizing, which would put tens of microseconds on every paid request:
// a token is rarely shorter than three bytes of JSON, so reserving a token
// per three bytes of the whole body covers the real count (the settled
// cost, from the upstream's usage, is what is charged).
func reservePrompt(req *llm.Request) int { return (req.Size() + 2) / 3 }

// cost is what a call's tokens cost at p: the prompt tokens neither read
// from nor written to the provider's cache at the input price, those read
// and written at the cache prices (the input price where p has none), and
// the completion at the output price.
func cost(p Price, u llm.Usage) float64 {
	read, write := p.cacheRead(), p.cacheWrite()
	return (float64(u.Uncached())*p.Input + float64(u.CacheReadTokens)*read +
		float64(u.CacheWriteTokens)*write + float64(u.CompletionTokens)*p.Output) / 1e6
}

// saved is what the provider's prompt cache saved on a call: the tokens it
// read at the cache-read price instead of the input price; never negative.
func saved(p Price, u llm.Usage) float64 {
	return max(float64(u.CacheReadTokens)*(p.Input-p.cacheRead())/1e6, 0)
}

func (p Price) cacheRead() float64 {
	if p.CacheRead > 0 {
		return p.CacheRead
	}
	return p.Input
}

func (p Price) cacheWrite() float64 {
	if p.CacheWrite > 0 {
		return p.CacheWrite
	}
	return p.Input
}

// Restore replays ledger totals (oldest first) into the counters and the
// spend, so limits and budgets hold across a restart. It must be called
// after Configure and before traffic.
func (m *Manager) Restore(rows []Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for _, r := range rows {
		if r.Time.After(now) {
			continue
		}
		if r.Backend.IsZero() {
			// A row of a request no backend served still spent nothing.
			continue
		}
		for _, k := range []scopeKey{m.keyScope(r.Backend), m.backendScope(r.Backend)} {
			m.scope(k).record(r.Time, r.Requests, r.Tokens)
		}
		m.spendLocked(r.Time, r.Chain, r.Backend.Provider, r.Cost, nil)
	}
}

// Usage is one ledger total replayed by Restore.
type Usage struct {
	Time     time.Time
	Backend  llm.BackendID
	Chain    string
	Requests int64
	Tokens   int64
	Cost     float64
}

// ErrUnknownBackend is returned by views for a backend not configured.
var ErrUnknownBackend = errors.New("quota: unknown backend")

func pct(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }
