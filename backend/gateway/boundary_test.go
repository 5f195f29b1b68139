package gateway_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/quota"
)

// A calendar day in a zone, named for what is special about its end or
// its length.
type day struct {
	name string
	zone string
	date string // YYYY-MM-DD, the day whose end is the boundary
}

// boundaryDays are the days whose end tests place the clock around: a
// plain midnight, the ends of a month, a year and a leap February, the day
// before a leap day, and the 23- and 25-hour days of daylight saving time.
var boundaryDays = []day{
	{"midnight", "UTC", "2026-12-01"},
	{"end of month", "UTC", "2026-11-30"},
	{"end of year", "UTC", "2026-12-31"},
	{"before Feb 29", "UTC", "2028-02-28"},
	{"Feb 29", "UTC", "2028-02-29"},
	{"Los Angeles spring forward", "America/Los_Angeles", "2026-03-08"},
	{"Los Angeles fall back", "America/Los_Angeles", "2026-11-01"},
	{"Berlin spring forward", "Europe/Berlin", "2026-03-29"},
	{"Berlin fall back", "Europe/Berlin", "2026-10-25"},
}

// bounds is the local midnight that starts the day and the one that ends
// it.
func (d day) bounds(t *testing.T, loc *time.Location) (start, end time.Time) {
	t.Helper()
	start, err := time.ParseInLocation(time.DateOnly, d.date, loc)
	if err != nil {
		t.Fatal(err)
	}
	return start, start.AddDate(0, 0, 1)
}

func (d day) loc(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(d.zone)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestDailyLimitResetsAtLocalMidnight fills a daily request limit early in
// the day, keeps it exhausted to a minute before the reset zone's next
// midnight (through a restart) and finds it reset a minute after, on every
// boundary day. On the daylight saving days the day is 23 or 25 hours
// long, so a reset 24 hours after the day began would be an hour off.
func TestDailyLimitResetsAtLocalMidnight(t *testing.T) {
	for _, d := range boundaryDays {
		t.Run(d.name, func(t *testing.T) {
			start, end := d.bounds(t, d.loc(t))
			e := newEnvAt(t, start.Add(30*time.Minute), func(c *config.Config) {
				c.Providers[1].Models[0].Limits = &config.Limits{RPD: 2, Reset: "daily 00:00 " + d.zone}
				c.Chains = append(c.Chains, config.Chain{Name: "free", Backends: []string{"b/mb", "c/mc"}})
			})
			served := func(when string, want string) {
				t.Helper()
				if r := e.post("/v1/chat/completions", chat("free", false)); r.status != 200 || r.header.Get("X-FreeLane-Backend") != want {
					t.Fatalf("%s (%s): served by %q (%s), want %s", when, e.clock.Now().In(d.loc(t)), r.header.Get("X-FreeLane-Backend"), r.attempts(), want)
				}
			}
			served("first", "b/mb")
			served("second", "b/mb")
			served("at the limit", "c/mc")
			q := e.state().quota("b/mb")
			if len(q.Limits) != 1 || q.Limits[0].ResetsAt == nil || !q.Limits[0].ResetsAt.Equal(end) {
				t.Fatalf("resets at %+v, want %v", q.Limits, end)
			}
			if err := e.g.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			e.clock.Set(end.Add(-time.Minute))
			e.start(nil)
			served("a minute before midnight, after a restart", "c/mc")
			e.clock.Set(end.Add(time.Minute))
			served("a minute after midnight", "b/mb")
		})
	}
}

// budgets reads /api/budgets by id.
func (e *env) budgets() map[string]quota.BudgetView {
	e.t.Helper()
	r := e.do("GET", "/api/budgets", "", nil)
	var views []quota.BudgetView
	if err := json.Unmarshal(r.body, &views); err != nil {
		e.t.Fatalf("budgets: %v %s", err, r.body)
	}
	out := map[string]quota.BudgetView{}
	for _, v := range views {
		out[v.ID] = v
	}
	return out
}

// reservation makes one paid call whose answer is held back long enough to
// read what it reserves against budget id.
func (e *env) reservation(id string) float64 {
	e.t.Helper()
	e.up.Set("ma", fakeupstream.Behavior{HeaderDelay: 300 * time.Millisecond}, fakeupstream.Behavior{})
	done := make(chan reply, 1)
	go func() { done <- e.post("/v1/chat/completions", chatMax("paid", 5)) }()
	var reserved float64
	for deadline := time.Now().Add(5 * time.Second); reserved == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		reserved = e.budgets()[id].Reserved
	}
	if r := <-done; r.status != 200 || reserved == 0 {
		e.t.Fatalf("measuring the reservation: %d %s, reserved %v", r.status, r.body, reserved)
	}
	return reserved
}

// usageByDay is the ledger's requests per local day from the usage API.
func (e *env) usageByDay(from, to time.Time) map[string]float64 {
	e.t.Helper()
	r := e.do("GET", "/api/usage?group_by=day&from="+from.Format(time.DateOnly)+"&to="+to.Format(time.DateOnly), "", nil)
	var u struct {
		Rows []map[string]any `json:"rows"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &u) != nil {
		e.t.Fatalf("usage: %d %s", r.status, r.body)
	}
	out := map[string]float64{}
	for _, row := range u.Rows {
		out[row["key"].(string)] = row["requests"].(float64)
	}
	return out
}

// patientPaidConfig is paidConfig with timeouts no loaded machine runs
// into: these tests count money and days, and a request that timed out
// under load would only make them fail for nothing.
func patientPaidConfig(budgets ...config.Budget) func(*config.Config) {
	return func(c *config.Config) {
		paidConfig(budgets...)(c)
		for i := range c.Providers {
			c.Providers[i].Timeouts = config.Timeouts{Connect: 5 * time.Second, Header: 10 * time.Second, FirstToken: 10 * time.Second, Idle: 10 * time.Second}
		}
	}
}

// TestBudgetsAndUsageRollAtLocalBoundaries spends on a paid backend in
// the last minutes of a local day until a block budget is spent, crosses
// the day's end, restarts, and checks that the daily budget started over
// while the monthly one started over only at the end of a month, that the
// request is served again exactly when its budget rolled, and that the
// usage ledger puts each request on its own local day. Budgets and the
// ledger count local calendar days, so the days are taken in the process's
// zone (make test runs the backend tests again in a zone with daylight
// saving time).
func TestBudgetsAndUsageRollAtLocalBoundaries(t *testing.T) {
	for _, d := range boundaryDays {
		for _, period := range []string{quota.PeriodDay, quota.PeriodMonth} {
			t.Run(d.name+"/"+period, func(t *testing.T) {
				start, end := d.bounds(t, time.Local)
				monthEnds := end.Day() == 1
				e := newEnvAt(t, end.Add(-10*time.Minute), patientPaidConfig(
					config.Budget{Scope: "global", Period: period, Limit: 1000, Action: "block"}))
				id := "global|" + period
				if got := e.budgets()[id].ResetsAt; period == quota.PeriodDay && !got.Equal(end) {
					t.Fatalf("the daily budget resets at %v, want %v", got, end)
				}
				// Spend until the spend covers what one more call reserves,
				// then lower the limit to exactly the spend: the budget is
				// spent, and a fresh period has room for one call.
				reserve := e.reservation(id)
				calls := 1
				for e.budgets()[id].Spent < reserve {
					if r := e.post("/v1/chat/completions", chatMax("paid", 5)); r.status != 200 {
						t.Fatalf("call %d: %d %s", calls+1, r.status, r.body)
					}
					if calls++; calls > 100 {
						t.Fatal("100 calls did not spend one reservation")
					}
				}
				spent := e.budgets()[id].Spent
				body := fmt.Sprintf(`[{"scope":"global","period":%q,"limit":%v,"action":"block"}]`, period, spent)
				if r := e.do("PUT", "/api/budgets", body, nil); r.status != 200 {
					t.Fatalf("put budgets: %d %s", r.status, r.body)
				}
				if r := e.post("/v1/chat/completions", chatMax("paid", 5)); r.status != 402 {
					t.Fatalf("with the budget spent: %d %s", r.status, r.body)
				}
				e.waitUsage(int64(calls))

				e.clock.Set(end.Add(-time.Second))
				if r := e.post("/v1/chat/completions", chatMax("paid", 5)); r.status != 402 {
					t.Fatalf("a second before the day ends: %d %s", r.status, r.body)
				}
				if err := e.g.Shutdown(t.Context()); err != nil {
					t.Fatal(err)
				}
				e.clock.Set(end.Add(time.Second))
				e.start(nil)
				v := e.budgets()[id]
				rolled := period == quota.PeriodDay || monthEnds
				switch {
				case rolled && v.Spent != 0:
					t.Fatalf("after the period ended the budget still shows %v spent", v.Spent)
				case !rolled && v.Spent != spent:
					t.Fatalf("mid-month restart: monthly spend %v, want %v", v.Spent, spent)
				}
				want := 402
				if rolled {
					want = 200
				}
				if r := e.post("/v1/chat/completions", chatMax("paid", 5)); r.status != want {
					t.Fatalf("a second after the day ended: %d, want %d: %s", r.status, want, r.body)
				}
				if s := e.state().Spend; (want == 200) != (s.Today > 0) || s.Month < s.Today {
					t.Fatalf("spend after the boundary: %+v", s)
				}
				// Refused requests call nothing and leave no ledger row.
				after := 0
				if rolled {
					after = 1
				}
				e.waitUsage(int64(calls + after))
				days := e.usageByDay(start, end)
				if days[start.Format(time.DateOnly)] != float64(calls) || days[end.Format(time.DateOnly)] != float64(after) {
					t.Fatalf("requests per local day %v, want %d on %s and %d on %s", days, calls, start.Format(time.DateOnly), after, end.Format(time.DateOnly))
				}
			})
		}
	}
}
