package router

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/llm"
)

// Strategy orders the backends of one priority tier.
type Strategy uint8

// The strategies, in the configuration's words (see StrategyName).
const (
	// Priority keeps the listed order.
	Priority Strategy = iota
	// RoundRobin starts each request one backend further, with one
	// counter per chain and tier.
	RoundRobin
	// Weighted is smooth weighted round-robin: deterministic, so shares
	// of 3:1 are exactly 3:1 over every four requests.
	Weighted
	// LeastLatency tries the backend with the lowest recent time to first
	// token (streams) or latency (everything else) first.
	LeastLatency
	// Cost tries the cheapest expected call first: free and local first,
	// unknown prices last.
	Cost
	// Auto scores health, quota headroom, latency, cost and task match.
	Auto
)

var strategyNames = [...]string{"priority", "round_robin", "weighted", "least_latency", "cost", "auto"}

// String is the strategy's name in the configuration.
func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return "priority"
}

// ParseStrategy reads a strategy's configuration name; "" and unknown
// names are Priority (configuration validation reports unknown ones).
func ParseStrategy(name string) Strategy {
	if i := slices.Index(strategyNames[:], name); i >= 0 {
		return Strategy(i)
	}
	return Priority
}

// Gears, as the configuration and the X-FreeLane-Gear header name them.
const (
	GearAuto   = "auto"
	GearManual = "manual"
)

// plan is how one route chooses among its backends, made when the table
// is built: its tiers in order, the strategy and gear, and the state the
// stateful strategies keep between requests.
type plan struct {
	chain    string
	strategy Strategy
	manual   bool
	maxWait  time.Duration
	backends []*Backend
	tiers    []tierPlan
}

// tierPlan is the backends sharing one priority number, grouped in units.
type tierPlan struct {
	prio  int
	units []unit
	state *tierState
}

// unit is one entry of a chain: one model of one provider, with one
// backend per key of its provider's pool, backends[start:start+n].
type unit struct {
	start, n int
	// weight is the weighted strategy's share; 0 drains the unit.
	weight int
	// keys rotates the pool's keys; nil for a single key.
	keys *keyState
}

// tierState is what round-robin and weighted keep per chain and tier.
type tierState struct {
	turn atomic.Uint64
	mu   sync.Mutex
	cur  []int // weighted: the current weight of each unit
	sig  string
}

// keyState rotates one model's keys: by turn, or smooth weighted when
// any key has a weight.
type keyState struct {
	turn     atomic.Uint64
	weighted bool
	mu       sync.Mutex
	cur      []int
}

// newPlan groups backends (keys of one model adjacent) into units and
// tiers. weights and prio are by keyless backend ID; nil maps leave every
// unit at weight 1 in tier 0.
func newPlan(chain string, bs []*Backend, s ChainSpec) *plan {
	p := &plan{chain: chain, strategy: ParseStrategy(s.Strategy), manual: s.Gear == GearManual, backends: bs, maxWait: DefaultMaxWait}
	if s.MaxWait != nil {
		p.maxWait = max(*s.MaxWait, 0)
	}
	var units []unit
	var prios []int
	for i := 0; i < len(bs); {
		j := i + 1
		for j < len(bs) && bs[j].ID.Provider == bs[i].ID.Provider && bs[j].ID.Model == bs[i].ID.Model {
			j++
		}
		group := llm.BackendID{Provider: bs[i].ID.Provider, Model: bs[i].ID.Model}
		u := unit{start: i, n: j - i, weight: 1}
		if w, ok := s.Weights[group]; ok {
			u.weight = w
		} else if w, ok := s.Weights[bs[i].ID]; ok {
			u.weight = w
		}
		if u.n > 1 {
			u.keys = &keyState{cur: make([]int, u.n)}
			for _, b := range bs[i:j] {
				if b.KeyWeight > 0 {
					u.keys.weighted = true
				}
			}
		}
		prio, ok := s.Priority[group]
		if !ok {
			prio = s.Priority[bs[i].ID]
		}
		units = append(units, u)
		prios = append(prios, prio)
		i = j
	}
	order := slices.Clone(prios)
	slices.Sort(order)
	order = slices.Compact(order)
	for _, pr := range order {
		t := tierPlan{prio: pr}
		for i, u := range units {
			if prios[i] == pr {
				t.units = append(t.units, u)
			}
		}
		t.state = &tierState{cur: make([]int, len(t.units)), sig: t.signature(bs)}
		p.tiers = append(p.tiers, t)
	}
	return p
}

// signature names a tier's members and weights, so that a rebuilt table
// keeps a tier's turn and weights only while the tier is the same.
func (t *tierPlan) signature(bs []*Backend) string {
	var sig []byte
	for _, u := range t.units {
		sig = append(sig, bs[u.start].name...)
		sig = append(sig, byte(u.n), byte(u.weight), byte(u.weight>>8), 0)
	}
	return string(sig)
}

// carryOver keeps the stateful strategies' state and the latency stats of
// old in p where the chain, tier and members are unchanged, so a
// configuration change elsewhere does not restart every rotation.
func (p *plan) carryOver(old *plan) {
	if old == nil {
		return
	}
	for i := range p.tiers {
		t := &p.tiers[i]
		for _, o := range old.tiers {
			if o.prio == t.prio && o.state.sig == t.state.sig {
				t.state = o.state
				for k := range t.units {
					if t.units[k].keys != nil && o.units[k].keys != nil && len(o.units[k].keys.cur) == t.units[k].n {
						t.units[k].keys = o.units[k].keys
					}
				}
			}
		}
	}
}
