package main

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"freelane/backend/gateway"
)

// trayLevel is what the tray icon's colour says.
type trayLevel int

const (
	levelGreen  trayLevel = iota // the default chain's first choice serves
	levelAmber                   // degraded: failing over, a backend down, a quota near
	levelRed                     // no backend of the default chain can serve
	levelPaused                  // routing paused by the user
)

func (l trayLevel) color() color.RGBA {
	switch l {
	case levelAmber:
		return amberColor
	case levelRed:
		return redColor
	case levelPaused:
		return greyColor
	}
	return greenColor
}

func (l trayLevel) String() string {
	return [...]string{"green", "amber", "red", "paused"}[l]
}

// trayBackend is one backend of the default chain as the tray sees it.
type trayBackend struct {
	Name   string
	Status string // a gateway.BackendView status
	// NearQuota is set when one of the backend's limits is 80 % used.
	NearQuota bool
	// Exhausted is set when the backend is at a limit and skipped until
	// it resets.
	Exhausted bool
}

// trayInput is what the tray's look depends on; trayInputFrom derives it
// from the dashboard's snapshot so the two never disagree.
type trayInput struct {
	Paused        bool
	Chain         string
	Backends      []trayBackend // in chain order
	RequestsToday int
	Endpoint      string
	// Budgets names budgets at 80 % or more of their limit.
	Budgets []string
	// TeamDown names the parts a team shares that this instance cannot
	// reach ("Redis", "PostgreSQL").
	TeamDown []string
}

// trayView is the tray's look: icon colour, the menu's status line and the
// tooltip.
type trayView struct {
	Level   trayLevel
	Status  string
	Tooltip string
}

// canServe reports whether a backend in this status can take a request now.
// A half-open backend takes its trial request, so it counts.
func canServe(status string) bool {
	switch status {
	case "serving", "degraded", "half_open":
		return true
	}
	return false
}

// computeTray decides the tray's colour and words.
func computeTray(in trayInput) trayView {
	v := trayView{Tooltip: fmt.Sprintf("FreeLane: %s\n%d requests today", in.Endpoint, in.RequestsToday)}
	if in.Paused {
		v.Level, v.Status = levelPaused, "Paused: /v1 answers 503 until you resume"
		return v
	}
	var first string
	var down, near []string
	serving := 0
	for _, b := range in.Backends {
		if b.Exhausted {
			b.Status = "quota_used"
		}
		if canServe(b.Status) {
			serving++
			if first == "" {
				first = b.Name
			}
		}
		if b.Status != "serving" {
			down = append(down, b.Name+" "+strings.ReplaceAll(b.Status, "_", " "))
		}
		if b.NearQuota {
			near = append(near, b.Name)
		}
	}
	switch {
	case serving == 0:
		v.Level = levelRed
		if len(in.Backends) == 0 {
			v.Status = fmt.Sprintf("No backend in %q: add a provider key", in.Chain)
		} else {
			v.Status = fmt.Sprintf("No backend of %q can serve", in.Chain)
		}
	case len(in.TeamDown) > 0:
		// The instance serves, but on its own: its share of each limit,
		// or the configuration it last read.
		v.Level = levelAmber
		v.Status = fmt.Sprintf("Degraded: %s unreachable, serving from %s on this instance's share", strings.Join(in.TeamDown, " and "), first)
	case len(down) > 0:
		v.Level = levelAmber
		v.Status = fmt.Sprintf("Degraded: serving from %s (%d of %d up)", first, serving, len(in.Backends))
	case len(near) > 0:
		v.Level = levelAmber
		v.Status = fmt.Sprintf("Near quota: %s", strings.Join(near, ", "))
	case len(in.Budgets) > 0:
		v.Level = levelAmber
		v.Status = fmt.Sprintf("Near budget: %s", strings.Join(in.Budgets, ", "))
	default:
		v.Level = levelGreen
		v.Status = fmt.Sprintf("Serving from %s (%d of %d up)", first, serving, len(in.Backends))
	}
	v.Tooltip = v.Status + "\n" + v.Tooltip
	return v
}

// trayInputFrom reads the tray's input off a snapshot: the default chain is
// the first one listed ("auto").
func trayInputFrom(s gateway.Snapshot) trayInput {
	in := trayInput{Paused: s.RoutingPaused, RequestsToday: s.Totals.RequestsToday, Endpoint: s.Endpoint, TeamDown: s.Team.Unreachable()}
	if len(s.Chains) == 0 {
		return in
	}
	chain := s.Chains[0]
	in.Chain = chain.Name
	for _, name := range chain.Backends {
		i := slices.IndexFunc(s.Backends, func(b gateway.BackendView) bool { return b.Name == name })
		if i < 0 {
			continue
		}
		st := s.Backends[i].Status
		if st == "no_key" || st == "disabled" {
			// Not part of routing at all; the dashboard says why.
			continue
		}
		near, exhausted := quotaUse(s, name)
		in.Backends = append(in.Backends, trayBackend{Name: name, Status: st, NearQuota: near, Exhausted: exhausted})
	}
	for _, b := range s.Budgets {
		if b.Fraction >= nearFraction {
			in.Budgets = append(in.Budgets, b.Scope+" "+b.Period)
		}
	}
	return in
}

// nearFraction is where a quota or budget counts as nearly used: the 80 %
// at which FreeLane also raises its warning event.
const nearFraction = 0.8

// quotaUse reports whether one of the backend's quotas is 80 % used, and
// whether it is used up. Concurrency is not a quota: a busy backend is not
// running out of anything.
func quotaUse(s gateway.Snapshot, backend string) (near, exhausted bool) {
	for _, q := range s.Quotas {
		if q.Backend != backend {
			continue
		}
		for _, l := range q.Limits {
			if l.Kind != "concurrency" && l.Fraction >= nearFraction {
				near = true
			}
		}
		return near || q.Exhausted, q.Exhausted
	}
	return false, false
}
