package router

import (
	"strconv"
	"testing"
	"time"

	"freelane/backend/llm"
)

// TestSessionMapIsBounded: the store holds at most its bound, evicting the
// least recently served, sweeps expired entries on insert, and never
// answers with an expired home.
func TestSessionMapIsBounded(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	s := newSessionMap(3)
	id := func(n int) llm.BackendID { return llm.BackendID{Provider: "p" + strconv.Itoa(n), Model: "m"} }
	for i := range 3 {
		s.SetHome("s"+strconv.Itoa(i), "c", Home{Backend: id(i), Until: now.Add(time.Hour)}, now)
	}
	// s0 is served again, so s1 is now the least recently served.
	s.SetHome("s0", "c", Home{Backend: id(0), Until: now.Add(time.Hour)}, now)
	s.SetHome("s3", "c", Home{Backend: id(3), Until: now.Add(time.Hour)}, now)
	if s.Len() != 3 {
		t.Fatalf("%d sessions, want the bound of 3", s.Len())
	}
	if _, ok := s.Home("s1", "c", now); ok {
		t.Fatal("the least recently served session was kept")
	}
	if h, ok := s.Home("s0", "c", now); !ok || h.Backend != id(0) {
		t.Fatalf("s0 = %v %v", h, ok)
	}
	if _, ok := s.Home("s0", "other", now); ok {
		t.Fatal("a session's home on one route answered for another")
	}
	// An expired home is not answered, and is swept by the next insert.
	later := now.Add(2 * time.Hour)
	if _, ok := s.Home("s0", "c", later); ok {
		t.Fatal("an expired home was answered")
	}
	s.SetHome("s4", "c", Home{Backend: id(4), Until: later.Add(time.Minute)}, later)
	if s.Len() != 1 {
		t.Fatalf("%d sessions after the sweep, want only the new one", s.Len())
	}
	if a := testing.AllocsPerRun(100, func() { s.Home("s4", "c", later) }); a != 0 {
		t.Fatalf("a lookup allocates %v times", a)
	}
}
