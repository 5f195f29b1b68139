package events

import (
	"fmt"
	"testing"
	"time"
)

// TestRestorePutsEarlierEventsFirst restores a run's events into a Bus
// that has published since it was made: they come before the new ones,
// subscribers are not sent them again, and only the newest keep are kept.
func TestRestorePutsEarlierEventsFirst(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	b := NewBus(nil)
	sub := b.Subscribe(8)
	b.Publish(Event{Time: at, Kind: Online, Level: Info})
	old := []Event{
		{Time: at.Add(-2 * time.Minute), Kind: KeyDisabled, Level: Alert, Provider: "a"},
		{Time: at.Add(-time.Minute), Kind: StateChange, Level: Warn, Backend: "a/m"},
	}
	b.Restore(old)
	got := b.Recent()
	if len(got) != 3 || got[0].Kind != KeyDisabled || got[1].Kind != StateChange || got[2].Kind != Online {
		t.Fatalf("recent after restoring %+v", got)
	}
	if n := len(sub.C()); n != 1 {
		t.Fatalf("the subscriber got %d events, want only the one published", n)
	}
	b.Publish(Event{Time: at.Add(time.Second), Kind: Offline, Level: Warn})
	if got := b.Recent(); len(got) != 4 || got[3].Kind != Offline {
		t.Fatalf("recent after one more %+v", got)
	}

	many := make([]Event, keep+10)
	for i := range many {
		many[i] = Event{Time: at.Add(time.Duration(i) * time.Second), Kind: Probe, Reason: fmt.Sprint(i)}
	}
	b = NewBus(nil)
	b.Publish(Event{Time: at.Add(time.Hour), Kind: Online})
	b.Restore(many)
	got = b.Recent()
	if len(got) != keep || got[0].Reason != fmt.Sprint(11) || got[keep-2].Reason != fmt.Sprint(keep+9) || got[keep-1].Kind != Online {
		t.Fatalf("kept %d events, from %q to %q (%s)", len(got), got[0].Reason, got[keep-2].Reason, got[keep-1].Kind)
	}
	b.Publish(Event{Kind: Offline})
	if got := b.Recent(); len(got) != keep || got[keep-1].Kind != Offline || got[0].Reason != fmt.Sprint(12) {
		t.Fatalf("after one more on a full bus: %d, last %s, first %q", len(got), got[keep-1].Kind, got[0].Reason)
	}
}
