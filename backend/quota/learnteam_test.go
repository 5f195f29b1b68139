package quota

import (
	"net/http"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
)

// teacherTeam is a team that admits everything and records what it is
// taught.
type teacherTeam struct{ taught []Learned }

func (*teacherTeam) Take([]Count, []int64) (int, error) { return -1, nil }
func (*teacherTeam) Add([]Count)                        {}
func (*teacherTeam) Alive() int                         { return 1 }
func (f *teacherTeam) Teach(l Learned)                  { f.taught = append(f.taught, l) }

// The team is told a limit when it is first learned and when it is used
// up, not at every call that counts it down; and a limit told by another
// instance is applied only when it is newer than what this one knows.
func TestLearnedLimitsTaughtWhenNews(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := clocktest.New(start)
	m := New(clk, nil, time.UTC)
	id := llm.BackendID{Provider: "toy", Model: "m"}
	m.Configure(Settings{Backends: []Backend{{ID: id}}, RateHeaders: map[string]llm.RateHeaders{"toy": toyRates}})
	team := &teacherTeam{}
	m.ShareWith(team, false)
	fresh := start.Add(2 * time.Hour)
	call := func(left string) {
		t.Helper()
		h := http.Header{}
		h.Set("Toy-Calls-Cap", "50")
		h.Set("Toy-Calls-Left", left)
		h.Set("Toy-Calls-Fresh-At", fresh.Format(time.RFC3339))
		hold, sk := m.Admit(testRequest(t), "", Target{ID: id})
		if sk != nil {
			t.Fatal(sk.Reason)
		}
		hold.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}, Header: h})
		clk.Advance(time.Second)
	}
	call("10")
	call("9")
	call("8")
	if len(team.taught) != 1 || team.taught[0].Kind != KindRPD || team.taught[0].Limit != 50 || !team.taught[0].Reset.Equal(fresh) {
		t.Fatalf("taught %+v, want the limit once when first learned", team.taught)
	}
	call("0")
	if len(team.taught) != 2 || team.taught[1].Remaining != 0 {
		t.Fatalf("taught %+v, want the limit used up told", team.taught)
	}
	used := team.taught[1]
	// Older word from another instance is not applied; newer is.
	older := used
	older.Remaining, older.At = 30, used.At.Add(-time.Minute)
	m.ApplyLearned(older)
	if m.Available("", Target{ID: id}) == nil {
		t.Fatal("an older learned limit undid a newer one")
	}
	newer := used
	newer.Remaining, newer.At = 30, clk.Now()
	m.ApplyLearned(newer)
	if sk := m.Available("", Target{ID: id}); sk != nil {
		t.Fatalf("a newer learned limit was not applied: %s", sk.Reason)
	}
	if len(team.taught) != 2 {
		t.Fatalf("applying another instance's limit told the team again: %+v", team.taught)
	}
}
