package tier

import "testing"

// TestOffersBecomeTiers fails when an offer of the catalog maps to a tier
// that is not the one a provider added from it must have, or to no tier.
func TestOffersBecomeTiers(t *testing.T) {
	want := map[Offer]Tier{OfferFree: Free, OfferTrial: Free, OfferPaid: Own, OfferLocal: Local}
	for _, o := range Offers() {
		if got := o.Tier(); got != want[o] || !got.Valid() {
			t.Errorf("%s becomes %q, want %q", o, got, want[o])
		}
	}
	if len(want) != len(Offers()) {
		t.Errorf("Offers() = %v, want the %d of this test", Offers(), len(want))
	}
	// The words an offer shares with a tier are the tier's.
	if string(OfferFree) != string(Free) || string(OfferLocal) != string(Local) {
		t.Errorf("free and local are %q and %q among offers, %q and %q among tiers", OfferFree, OfferLocal, Free, Local)
	}
}

func TestValid(t *testing.T) {
	for _, s := range []string{"own", "free", "local"} {
		if !Tier(s).Valid() {
			t.Errorf("tier %q is not valid", s)
		}
	}
	for _, s := range []string{"", "paid", "trial", "Own", "free "} {
		if Tier(s).Valid() {
			t.Errorf("tier %q is valid", s)
		}
	}
	for _, s := range []string{"free", "trial", "paid", "local"} {
		if !Offer(s).Valid() {
			t.Errorf("offer %q is not valid", s)
		}
	}
	for _, s := range []string{"", "own", "sponsored"} {
		if Offer(s).Valid() {
			t.Errorf("offer %q is valid", s)
		}
	}
	if got := Words(Tiers()); got != "own, free, local" {
		t.Errorf("Words(Tiers()) = %q", got)
	}
}
