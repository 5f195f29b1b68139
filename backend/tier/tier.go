// Package tier is FreeLane's one vocabulary of tiers: how a configured
// provider is paid for (Tier), which orders the auto chain and decides who
// is probed, and how the catalog offers a vendor (Offer), which becomes a
// provider's tier when it is added from the catalog. The config, the
// catalog, the router, the control plane and the dashboard's wire types
// all take their words from here.
package tier

import (
	"slices"
	"strings"
)

// Tier is how a provider is paid for.
type Tier string

// The tiers of providers.
const (
	// Own marks a provider reached with the user's own paid key.
	Own Tier = "own"
	// Free marks a provider used through its free tier.
	Free Tier = "free"
	// Local marks a server running on the user's machine or network.
	Local Tier = "local"
)

// Tiers are the tiers in the order the auto chain uses them.
func Tiers() []Tier { return []Tier{Own, Free, Local} }

// Valid reports whether t is one of Tiers.
func (t Tier) Valid() bool { return slices.Contains(Tiers(), t) }

// Offer is how the catalog offers a provider. The words it shares with
// Tier are Tier's.
type Offer string

// The catalog's offers.
const (
	// OfferFree is a vendor's free tier.
	OfferFree Offer = Offer(Free)
	// OfferTrial is a vendor's trial credit.
	OfferTrial Offer = "trial"
	// OfferPaid is a vendor that is paid with the user's own key.
	OfferPaid Offer = "paid"
	// OfferLocal is a server run on the user's machine.
	OfferLocal Offer = Offer(Local)
)

// Offers are the offers in the order a user meets them.
func Offers() []Offer { return []Offer{OfferFree, OfferTrial, OfferPaid, OfferLocal} }

// Valid reports whether o is one of Offers.
func (o Offer) Valid() bool { return slices.Contains(Offers(), o) }

// Tier is the tier of a provider added from an entry offered so: trial
// credits are spent like a free tier, paid vendors take the user's own key.
func (o Offer) Tier() Tier {
	switch o {
	case OfferPaid:
		return Own
	case OfferLocal:
		return Local
	default:
		return Free
	}
}

// Words lists tiers or offers for a message: "own, free, local".
func Words[T Tier | Offer](ts []T) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}
