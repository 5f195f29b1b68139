// Package probe checks backends with small real requests, apart from user
// traffic, so a dead backend is found before a user's request lands on it
// and a recovered one is found without waiting for a user to try it
// (seeds 000 and 002). Every probe spends a little of a provider's quota, so
// probes are cheap (one short prompt, a few tokens), spaced out, optional per
// provider and paused while the machine is offline.
package probe

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"freelane/backend/clock"
	"freelane/backend/defaults"
	"freelane/backend/dialects"
	"freelane/backend/events"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// Upstream is what a probe calls.
type Upstream interface {
	Complete(ctx context.Context, req *llm.Request, model string) (*llm.Response, error)
}

// Target is one probed backend.
type Target struct {
	ID llm.BackendID
	// Remote is false for servers on this machine; only remote backends
	// tell whether the machine itself is offline.
	Remote bool
	Up     Upstream
}

// Standing is what the prober needs to know of a backend's state.
type Standing struct {
	Down    bool // open or half-open: probe it often
	Retired bool
}

// Breakers receives probe results; breaker.Set provides it through an
// adapter in the composition root.
type Breakers interface {
	Standing(id llm.BackendID) Standing
	ProbeResult(id llm.BackendID, e *llm.Error)
	RetireByProbe(id llm.BackendID, e *llm.Error)
}

// Keys is the state of refused keys that the prober checks again; the
// breaker provides it.
type Keys interface {
	// KeysDue returns the refused keys whose next check is due.
	KeysDue() []llm.KeyID
	// KeyChecked records a check's outcome: nil for a key taken.
	KeyChecked(k llm.KeyID, e *llm.Error)
}

// KeyCheck asks a provider whether key k is taken now, as cheaply as the
// provider allows; a Credential error means it is still refused.
type KeyCheck func(ctx context.Context, k llm.KeyID) *llm.Error

// Settings are the schedules. Zero values mean the defaults in brackets,
// which come from package defaults.
type Settings struct {
	Interval     time.Duration // healthy backends [5m]
	OpenInterval time.Duration // backends that are down [30s]
	Daily        time.Duration // the whole catalog, retiring what fails [24h]
	Timeout      time.Duration // one probe [20s]
	Parallel     int           // probes at once [4]
}

func (s Settings) withDefaults() Settings {
	if s.Interval <= 0 {
		s.Interval = defaults.ProbeInterval
	}
	if s.OpenInterval <= 0 {
		s.OpenInterval = defaults.ProbeOpenInterval
	}
	if s.Daily <= 0 {
		s.Daily = defaults.ProbeDaily
	}
	if s.Timeout <= 0 {
		s.Timeout = defaults.ProbeTimeout
	}
	if s.Parallel <= 0 {
		s.Parallel = defaults.ProbeParallel
	}
	return s
}

// Prober schedules and runs probes. Tick does one scheduling pass; Run
// calls it every second until its context ends.
type Prober struct {
	s       Settings
	targets func() []Target
	br      Breakers
	clock   clock.Clock
	pub     *events.Bus
	log     *slog.Logger
	req     *llm.Request

	keys     Keys
	keyCheck KeyCheck

	mu         sync.Mutex
	last       map[llm.BackendID]time.Time // last probe per backend
	lastDaily  time.Time
	offline    bool
	lastCanary time.Time
	canaryN    int
}

// New returns a Prober. targets is called on every pass so it follows
// configuration changes.
func New(s Settings, targets func() []Target, br Breakers, clk clock.Clock, pub *events.Bus, log *slog.Logger) *Prober {
	clk = clock.OrReal(clk)
	// Probes ask in OpenAI's dialect, which most upstreams speak, so that
	// most probes are relayed without translation.
	req, err := dialects.Registry().Request(llm.DialectOpenAI, protocol.AskOK(), "probe")
	if err != nil {
		panic("probe: the built-in probe request does not parse: " + err.Error())
	}
	if log == nil {
		log = slog.Default()
	}
	return &Prober{s: s.withDefaults(), targets: targets, br: br, clock: clk, pub: pub, log: log, req: req,
		last: map[llm.BackendID]time.Time{}, lastDaily: clk.Now()}
}

// CheckKeys makes every pass also check the refused keys that are due,
// with check. It is called once, before Run.
func (p *Prober) CheckKeys(keys Keys, check KeyCheck) {
	p.keys, p.keyCheck = keys, check
}

// Run probes on schedule until ctx ends. The owner starts it in a goroutine
// and cancels ctx to stop it; Run returns after in-flight probes finish.
func (p *Prober) Run(ctx context.Context) {
	t, tick := p.clock.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			p.Tick(ctx)
		}
	}
}

// Configure replaces the schedules.
func (p *Prober) Configure(s Settings) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.s = s.withDefaults()
}

// LastDaily is when the last daily catalog round ran, so it can be saved
// and a restart does not push the round back by a day.
func (p *Prober) LastDaily() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastDaily
}

// SetLastDaily restores LastDaily after a restart.
func (p *Prober) SetLastDaily(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastDaily = t
}

// Offline reports whether probing is paused because nothing remote answers.
func (p *Prober) Offline() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.offline
}

type job struct {
	t     Target
	daily bool
}

type result struct {
	job
	err *llm.Error
}

// Tick runs every probe that is due now and waits for them.
func (p *Prober) Tick(ctx context.Context) {
	p.checkKeys(ctx)
	now := p.clock.Now()
	jobs := p.due(now)
	if len(jobs) == 0 {
		return
	}
	results := p.run(ctx, jobs)
	if ctx.Err() != nil {
		return // shutting down: results cut short say nothing
	}
	p.apply(now, results)
}

// checkKeys checks the refused keys that are due, one at a time: there
// are few, and each check is one small request. While the machine is
// offline a check could only fail to connect, which proves nothing.
func (p *Prober) checkKeys(ctx context.Context) {
	if p.keys == nil || p.Offline() {
		return
	}
	p.mu.Lock()
	timeout := p.s.Timeout
	p.mu.Unlock()
	for _, k := range p.keys.KeysDue() {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		e := p.keyCheck(cctx, k)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if e != nil {
			p.log.Info("a refused key is still refused or could not be checked", "provider", k.Provider, "class", e.Class, "reason", e.Message)
		}
		p.keys.KeyChecked(k, e)
	}
}

// due picks the probes to send now and marks them as sent.
func (p *Prober) due(now time.Time) []job {
	p.mu.Lock()
	defer p.mu.Unlock()
	targets := p.targets()
	daily := now.Sub(p.lastDaily) >= p.s.Daily
	if daily {
		p.lastDaily = now
	}
	if p.offline {
		return p.canary(now, targets, daily)
	}
	var jobs []job
	for _, t := range targets {
		st := p.br.Standing(t.ID)
		interval := p.s.Interval
		if st.Down && !st.Retired {
			interval = p.s.OpenInterval
		}
		last, seen := p.last[t.ID]
		if !seen {
			// Spread the first round over one interval instead of probing
			// everything at start-up.
			p.last[t.ID] = now.Add(-interval + spread(t.ID.String(), interval))
			last = p.last[t.ID]
		}
		if daily || now.Sub(last) >= interval {
			jobs = append(jobs, job{t: t, daily: daily})
		}
	}
	for _, j := range jobs {
		p.last[j.t.ID] = now
	}
	return jobs
}

// canary picks the one probe sent while offline: a remote backend, a
// different one each time, every OpenInterval. The daily round waits for
// the network to come back. Called with p.mu held.
func (p *Prober) canary(now time.Time, targets []Target, daily bool) []job {
	if daily {
		p.lastDaily = now.Add(-p.s.Daily)
	}
	if now.Sub(p.lastCanary) < p.s.OpenInterval {
		return nil
	}
	var remote []Target
	for _, t := range targets {
		if t.Remote {
			remote = append(remote, t)
		}
	}
	if len(remote) == 0 {
		return nil
	}
	p.lastCanary = now
	p.canaryN++
	return []job{{t: remote[p.canaryN%len(remote)]}}
}

// spread gives each backend a stable offset inside the interval.
func spread(name string, interval time.Duration) time.Duration {
	var h uint32 = 2166136261
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return time.Duration(uint64(h) % uint64(interval))
}

func (p *Prober) run(ctx context.Context, jobs []job) []result {
	p.mu.Lock()
	s := p.s
	p.mu.Unlock()
	out := make([]result, len(jobs))
	sem := make(chan struct{}, s.Parallel)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = result{job: j, err: p.one(ctx, j.t, s.Timeout)}
		}()
	}
	wg.Wait()
	return out
}

// one sends one probe. Any real answer counts as alive, even an empty one
// (a reasoning model may spend five tokens thinking).
func (p *Prober) one(ctx context.Context, t Target, timeout time.Duration) *llm.Error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := t.Up.Complete(ctx, p.req, t.ID.Model)
	if err == nil {
		return nil
	}
	// An error wrapped on its way keeps its class; printed whole it would
	// read "credential: HTTP 401: ..." where the dashboard shows it.
	var le *llm.Error
	if !errors.As(err, &le) {
		return &llm.Error{Class: llm.Transient, Message: err.Error()}
	}
	if le.Class == llm.Soft && le.Sub == llm.SubEmpty {
		return nil
	}
	if le.Class == llm.Cancelled && ctx.Err() != nil {
		return &llm.Error{Class: llm.Transient, Sub: llm.SubTimeout, Message: "probe timed out"}
	}
	return le
}

// apply hands results to the breakers, unless they show the machine is
// offline, in which case they say nothing about the backends.
func (p *Prober) apply(now time.Time, results []result) {
	remote, unreachable := map[string]bool{}, true
	for _, r := range results {
		if !r.t.Remote {
			continue
		}
		remote[r.t.ID.Provider] = true
		if r.err == nil || r.err.Sub != llm.SubConnect {
			unreachable = false
		}
	}
	p.mu.Lock()
	wasOffline := p.offline
	switch {
	case wasOffline && len(remote) > 0 && !unreachable:
		p.offline = false
	case !wasOffline && len(remote) >= 2 && unreachable:
		// Two or more providers that cannot even be connected to: the
		// network is gone, not the backends.
		p.offline = true
	}
	offline := p.offline
	p.mu.Unlock()
	if offline != wasOffline {
		e := events.Event{Time: now, Kind: events.Online, Level: events.Info, Reason: "remote backends answer again; probes resume"}
		if offline {
			e = events.Event{Time: now, Kind: events.Offline, Level: events.Warn, Reason: "no remote backend can be reached; probes paused"}
		}
		p.pub.Publish(e)
	}
	if offline {
		return
	}
	for _, r := range results {
		if r.err != nil && r.err.Class == llm.RateLimited {
			// A 429 means the backend is alive but busy; the probe itself
			// may have been the request too many. It proves nothing.
			continue
		}
		if r.err != nil {
			p.log.Info("probe failed", "backend", r.t.ID, "class", r.err.Class, "reason", r.err.Message)
		}
		if r.daily {
			p.br.RetireByProbe(r.t.ID, r.err)
		}
		p.br.ProbeResult(r.t.ID, r.err)
	}
}
