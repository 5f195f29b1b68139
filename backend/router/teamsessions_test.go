package router

import (
	"sync"
	"testing"
	"time"

	"freelane/backend/llm"
)

// fakeTeam is a team's shared homes in memory, counting the lookups.
type fakeTeam struct {
	mu      sync.Mutex
	homes   map[sessionKey]Home
	lookups int
}

func (f *fakeTeam) TeamHome(session, route string) (Home, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	h, ok := f.homes[sessionKey{session, route}]
	return h, ok
}

func (f *fakeTeam) ShareHome(session, route string, h Home) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.homes[sessionKey{session, route}] = h
}

// A team's store asks the team for a session it does not know, then not
// again for a second, whether the team knew it or not; a home another
// instance set since is taken at the next refresh; a home set here is
// shared and answered from memory without asking.
func TestTeamSessionsAskOncePerSecond(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	a := llm.BackendID{Provider: "a", Model: "m"}
	b := llm.BackendID{Provider: "b", Model: "m"}
	team := &fakeTeam{homes: map[sessionKey]Home{{"s", "c"}: {Backend: a, Until: now.Add(time.Minute)}}}
	s := &teamSessions{local: newSessionMap(10), team: team}
	for range 3 {
		if h, ok := s.Home("s", "c", now); !ok || h.Backend != a {
			t.Fatalf("home = %v %v, want the team's a", h, ok)
		}
	}
	if _, ok := s.Home("unknown", "c", now); ok {
		t.Fatal("a session nobody knows has a home")
	}
	s.Home("unknown", "c", now.Add(500*time.Millisecond))
	if team.lookups != 2 {
		t.Fatalf("%d lookups, want one per session within the second", team.lookups)
	}
	// Another instance serves s on b.
	team.ShareHome("s", "c", Home{Backend: b, Until: now.Add(2 * time.Minute)})
	if h, _ := s.Home("s", "c", now.Add(900*time.Millisecond)); h.Backend != a {
		t.Fatalf("home within the second = %v, want the remembered a", h.Backend)
	}
	if h, _ := s.Home("s", "c", now.Add(1100*time.Millisecond)); h.Backend != b {
		t.Fatalf("home after the second = %v, want b, where another instance served it", h.Backend)
	}
	// This instance serves a new session: shared, and not asked for.
	before := team.lookups
	s.SetHome("n", "c", Home{Backend: a, Until: now.Add(3 * time.Minute)}, now.Add(2*time.Second))
	if h, ok := s.Home("n", "c", now.Add(2*time.Second)); !ok || h.Backend != a {
		t.Fatalf("new session's home = %v %v", h, ok)
	}
	if team.lookups != before {
		t.Fatal("a home set here was asked of the team")
	}
	if _, ok := team.homes[sessionKey{"n", "c"}]; !ok {
		t.Fatal("a home set here was not shared")
	}
	if a := testing.AllocsPerRun(100, func() { s.Home("n", "c", now.Add(2*time.Second)) }); a != 0 {
		t.Fatalf("a lookup answered from memory allocates %v times", a)
	}
}
