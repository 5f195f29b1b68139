package gateway_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/events"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/quota"
)

// state reads the dashboard snapshot's quota parts.
type quotaState struct {
	Quotas  []quota.QuotaView  `json:"quotas"`
	Budgets []quota.BudgetView `json:"budgets"`
	Spend   quota.Spend        `json:"spend"`
	Chains  []struct {
		Name     string   `json:"name"`
		Backends []string `json:"backends"`
	} `json:"chains"`
	Requests []struct {
		Cost     float64 `json:"cost"`
		Attempts []struct {
			Backend   string  `json:"backend"`
			Cost      float64 `json:"cost"`
			Estimated bool    `json:"estimated"`
			Prompt    int     `json:"prompt_tokens"`
		} `json:"attempts"`
	} `json:"requests"`
}

func (e *env) state() quotaState {
	e.t.Helper()
	r := e.do("GET", "/api/state", "", nil)
	var s quotaState
	if err := json.Unmarshal(r.body, &s); err != nil {
		e.t.Fatalf("state: %v %s", err, r.body)
	}
	return s
}

func (s quotaState) quota(backend string) quota.QuotaView {
	for _, q := range s.Quotas {
		if q.Backend == backend {
			return q
		}
	}
	return quota.QuotaView{}
}

func chatMax(model string, maxTokens int) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":"hi"}]}`, model, maxTokens)
}

func TestDailyRequestLimitSkipsUntilReset(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Providers[1].Models[0].Limits = &config.Limits{RPD: 5, Reset: "daily 00:00 UTC"}
		c.Chains = append(c.Chains, config.Chain{Name: "free", Backends: []string{"b/mb", "c/mc"}})
	})
	sub := e.g.Events().Subscribe(64)
	for i := range 5 {
		r := e.post("/v1/chat/completions", chat("free", false))
		if r.status != 200 || r.header.Get("X-FreeLane-Backend") != "b/mb" {
			t.Fatalf("request %d: %d %s %s", i+1, r.status, r.attempts(), r.body)
		}
	}
	r := e.post("/v1/chat/completions", chat("free", false))
	if r.header.Get("X-FreeLane-Backend") != "c/mc" || r.attempts() != "b/mb=skip(quota); c/mc=ok" {
		t.Fatalf("6th request: %q", r.attempts())
	}
	q := e.state().quota("b/mb")
	if !q.Exhausted || q.Reason != "b/mb: daily requests used, resets 00:00 UTC" || len(q.Limits) != 1 || q.Limits[0].Used != 5 || q.Limits[0].Fraction != 1 {
		t.Fatalf("quota view: %+v", q)
	}
	if e.up.Calls("mb") != 5 {
		t.Fatalf("b/mb called %d times", e.up.Calls("mb"))
	}
	var warned, exhausted bool
	for len(sub.C()) > 0 {
		ev := <-sub.C()
		warned = warned || ev.Kind == events.QuotaWarning && ev.Backend == "b/mb" && strings.Contains(ev.Reason, "80% of daily requests")
		exhausted = exhausted || ev.Kind == events.QuotaExhausted && ev.Backend == "b/mb"
	}
	if !warned || !exhausted {
		t.Errorf("events: warning %v, exhausted %v", warned, exhausted)
	}
	// The clock reaches the reset at midnight UTC.
	e.clock.Advance(12*time.Hour - time.Second)
	if r := e.post("/v1/chat/completions", chat("free", false)); r.header.Get("X-FreeLane-Backend") != "c/mc" {
		t.Fatalf("before the reset: %q", r.attempts())
	}
	e.clock.Advance(time.Second)
	if r := e.post("/v1/chat/completions", chat("free", false)); r.header.Get("X-FreeLane-Backend") != "b/mb" {
		t.Fatalf("after the reset: %q", r.attempts())
	}
}

func TestProviderLimitsCoverAllItsModels(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Providers[1].Models = append(c.Providers[1].Models, config.Model{ID: "mb2", ParamsB: 60})
		c.Providers[1].Limits = &config.Limits{RPM: 2}
	})
	e.post("/v1/chat/completions", chat("b/mb", false))
	e.post("/v1/chat/completions", chat("b/mb2", false))
	r := e.post("/v1/chat/completions", chat("b/mb2", false))
	// The provider's bucket paces its models together: the next token is
	// half a minute away.
	if r.status != 429 || !strings.Contains(r.errorMessage(), "b: paced to 2 requests per minute") {
		t.Fatalf("third request to provider b within a minute: %d %s", r.status, r.body)
	}
	e.clock.Advance(61 * time.Second)
	if r := e.post("/v1/chat/completions", chat("b/mb2", false)); r.status != 200 {
		t.Fatalf("after a minute: %d %s", r.status, r.body)
	}
}

func TestLearnedRateLimitHeaders(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Chains = append(c.Chains, config.Chain{Name: "free", Backends: []string{"b/mb", "c/mc"}})
	})
	// Times are compared exactly, so the clock moves only when told to.
	e.clock.Freeze()
	e.up.Set("mb", fakeupstream.Behavior{Headers: map[string]string{
		"x-ratelimit-limit-requests": "1000", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2h",
	}}, fakeupstream.Behavior{})
	if r := e.post("/v1/chat/completions", chat("free", false)); r.header.Get("X-FreeLane-Backend") != "b/mb" {
		t.Fatalf("first: %q", r.attempts())
	}
	r := e.post("/v1/chat/completions", chat("free", false))
	if r.attempts() != "b/mb=skip(quota); c/mc=ok" {
		t.Fatalf("after the upstream said 0 remaining: %q", r.attempts())
	}
	q := e.state().quota("b/mb")
	if !q.Exhausted || len(q.Limits) != 1 || !q.Limits[0].Learned || q.Limits[0].Kind != "rpd" || q.Limits[0].Limit != 1000 ||
		q.Limits[0].ResetsAt == nil || !q.Limits[0].ResetsAt.Equal(e.clock.Now().Add(2*time.Hour)) {
		t.Fatalf("learned view: %+v %+v", q, q.Limits)
	}
	e.clock.Advance(2*time.Hour + time.Second)
	if r := e.post("/v1/chat/completions", chat("free", false)); r.header.Get("X-FreeLane-Backend") != "b/mb" {
		t.Fatalf("after the learned reset: %q", r.attempts())
	}
}

// paidConfig prices a/ma (own) at $1000 per million tokens in and out, so
// each call costs cents.
func paidConfig(budgets ...config.Budget) func(*config.Config) {
	return func(c *config.Config) {
		c.Providers[0].Models[0].Price = &config.Price{Input: 1000, Output: 1000}
		c.Budgets = budgets
		c.Chains = append(c.Chains, config.Chain{Name: "paid", Backends: []string{"a/ma"}})
	}
}

func TestBudgetFreeOnlySkipsPaidBackends(t *testing.T) {
	e := newEnv(t, paidConfig(config.Budget{Scope: "global", Period: "day", Limit: 0.05, Action: "free-only"}))
	paid := 0
	for i := range 30 {
		r := e.post("/v1/chat/completions", chatMax("main", 5))
		if r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
		if r.header.Get("X-FreeLane-Backend") == "a/ma" {
			paid++
			continue
		}
		if !strings.HasPrefix(r.attempts(), "a/ma=skip(quota); b/mb=ok") {
			t.Fatalf("free-only: %q", r.attempts())
		}
	}
	if paid == 0 || paid >= 30 {
		t.Fatalf("paid backend served %d of 30", paid)
	}
	st := e.state()
	b := st.Budgets[0]
	if b.ID != "global|day" || b.Spent > b.Limit || b.Spent <= 0 || st.Spend.Today != b.Spent || !b.ResetsAt.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.Local)) {
		t.Fatalf("budget view %+v, spend %+v", b, st.Spend)
	}
	if st.Requests[0].Attempts[0].Backend != "a/ma" || st.Requests[0].Cost != 0 {
		t.Fatalf("latest request %+v", st.Requests[0])
	}
}

func TestBudgetBlockAnswers402ButFreeBackendsServe(t *testing.T) {
	e := newEnv(t, paidConfig(config.Budget{Scope: "chain:paid", Period: "month", Limit: 0.0001, Action: "block"},
		config.Budget{Scope: "provider:a", Period: "day", Limit: 0.0001, Action: "block"}))
	r := e.post("/v1/chat/completions", chat("paid", false))
	var body struct {
		Error struct {
			Message, Type, Code string
			Param               *string
		}
	}
	_ = json.Unmarshal(r.body, &body)
	if r.status != http.StatusPaymentRequired || body.Error.Type != "insufficient_quota" || body.Error.Code != "budget_exceeded" ||
		!strings.Contains(body.Error.Message, `the monthly budget of chain "paid" of $0.00`) || !strings.Contains(body.Error.Message, "it resets at "+time.Date(2026, 12, 1, 0, 0, 0, 0, time.Local).UTC().Format(time.RFC3339)) {
		t.Fatalf("block: %d %s", r.status, r.body)
	}
	if r.attempts() != "a/ma=skip(quota)" || e.up.Calls("ma") != 0 {
		t.Fatalf("attempts %q, calls %d", r.attempts(), e.up.Calls("ma"))
	}
	// A zero-cost backend is never blocked by a budget: main goes on to
	// the free backends.
	r = e.post("/v1/chat/completions", chat("main", false))
	if r.status != 200 || r.header.Get("X-FreeLane-Backend") != "b/mb" || !strings.HasPrefix(r.attempts(), "a/ma=skip(quota)") {
		t.Fatalf("main under a spent budget: %d %q", r.status, r.attempts())
	}
	if r := e.post("/v1/chat/completions", chat("l/ml", false)); r.status != 200 {
		t.Fatalf("local backend: %d", r.status)
	}
}

// TestConcurrentRequestsDoNotOverspend sends 50 requests at once against a
// budget with room for 10 calls: reservations keep the settled spend within
// the budget plus what was reserved in flight.
func TestConcurrentRequestsDoNotOverspend(t *testing.T) {
	e := newEnv(t, paidConfig())
	// One call first, to learn what a call costs.
	if r := e.post("/v1/chat/completions", chatMax("a/ma", 5)); r.status != 200 {
		t.Fatal(r.status)
	}
	one := e.state().Requests[0].Cost
	if one <= 0 {
		t.Fatalf("cost of one call %v", one)
	}
	budgets := func() quota.BudgetView {
		b := e.do("GET", "/api/budgets", "", nil)
		var views []quota.BudgetView
		if err := json.Unmarshal(b.body, &views); err != nil || len(views) != 1 {
			t.Fatalf("budgets: %s", b.body)
		}
		return views[0]
	}
	// Then what a call reserves while it is in flight: the estimate.
	if r := e.do("PUT", "/api/budgets", `[{"scope":"global","period":"month","limit":1000,"action":"free-only"}]`, nil); r.status != 200 {
		t.Fatalf("put budgets: %d %s", r.status, r.body)
	}
	e.up.SetDefault(fakeupstream.Behavior{HeaderDelay: 300 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.post("/v1/chat/completions", chatMax("a/ma", 5))
	}()
	var estimate float64
	for deadline := time.Now().Add(5 * time.Second); estimate == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		estimate = budgets().Reserved
	}
	<-done
	if estimate < one {
		t.Fatalf("reservation %v does not cover the cost %v", estimate, one)
	}
	spentBefore := budgets().Spent
	limit := spentBefore + 10*estimate // room for 10 calls in flight
	body := fmt.Sprintf(`[{"scope":"global","period":"month","limit":%v,"action":"free-only"}]`, limit)
	if r := e.do("PUT", "/api/budgets", body, nil); r.status != 200 {
		t.Fatalf("put budgets: %d %s", r.status, r.body)
	}
	// Every upstream answer is held until all 50 requests have reached an
	// upstream, so all 50 are in flight at once: none can settle (and so
	// free room) before the last is admitted.
	release := make(chan struct{})
	e.up.SetDefault(fakeupstream.Behavior{Hold: release})
	arrived := func() int { return e.up.Calls("ma") + e.up.Calls("mb") + e.up.Calls("mc") }
	before := arrived()
	var wg sync.WaitGroup
	var mu sync.Mutex
	paid := 0
	for range 50 {
		wg.Go(func() {
			r := e.post("/v1/chat/completions", chatMax("main", 5))
			if r.status == 200 && r.header.Get("X-FreeLane-Backend") == "a/ma" {
				mu.Lock()
				paid++
				mu.Unlock()
			}
		})
	}
	for deadline := time.Now().Add(20 * time.Second); arrived()-before < 50; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			wg.Wait()
			t.Fatalf("only %d of 50 requests reached an upstream", arrived()-before)
		}
	}
	if v := budgets(); v.Spent+v.Reserved > v.Limit+1e-12 {
		t.Errorf("reserved %v on top of %v spent passes the limit %v", v.Reserved, v.Spent, v.Limit)
	}
	close(release)
	wg.Wait()
	v := budgets()
	if v.Reserved != 0 {
		t.Errorf("money still reserved after every request finished: %v", v.Reserved)
	}
	// Every reservation covers the call's real cost, so the settled spend
	// never passes the limit.
	if v.Spent > v.Limit+1e-12 {
		t.Fatalf("spent %v over the limit %v (%d paid calls of %v)", v.Spent, v.Limit, paid, one)
	}
	if paid < 5 || paid > 10 {
		t.Fatalf("%d paid calls with room for 10", paid)
	}
	t.Logf("50 concurrent: %d served by the paid backend, spent %.6f of %.6f", paid, v.Spent, v.Limit)
}

func TestSpendAndCountersSurviveRestart(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		paidConfig(config.Budget{Scope: "global", Period: "day", Limit: 100, Action: "block"})(c)
		c.Providers[1].Models[0].Limits = &config.Limits{RPD: 3}
	})
	for range 3 {
		e.post("/v1/chat/completions", chatMax("a/ma", 5))
		e.post("/v1/chat/completions", chat("b/mb", false))
	}
	before := e.state()
	if err := e.g.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.start(nil)
	after := e.state()
	if after.Budgets[0].Spent != before.Budgets[0].Spent || after.Spend.Today != before.Spend.Today || after.Spend.Today == 0 {
		t.Fatalf("spend before %+v, after restart %+v", before.Budgets, after.Budgets)
	}
	if q := after.quota("b/mb"); !q.Exhausted {
		t.Fatalf("b/mb's daily requests were forgotten: %+v", q)
	}
}

func TestExpiringCreditMovesAheadOfTheFreePool(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Providers[2].Models[0].CreditExpires = "2026-12-01"
	})
	r := e.post("/v1/chat/completions", chat("auto", false))
	if r.header.Get("X-FreeLane-Backend") != "a/ma" {
		t.Fatalf("auto: %q", r.attempts())
	}
	order := func() string {
		for _, c := range e.state().Chains {
			if c.Name == "auto" {
				return strings.Join(c.Backends, ",")
			}
		}
		return ""
	}
	if got := order(); got != "a/ma,c/mc,b/mb,l/ml" {
		t.Fatalf("auto with a running credit: %s", got)
	}
	// Credits run to the end of their last local day.
	e.clock.Set(time.Date(2026, 12, 2, 0, 0, 0, 0, time.Local).Add(-time.Second))
	e.g.CheckCredits()
	if got := order(); got != "a/ma,c/mc,b/mb,l/ml" {
		t.Fatalf("on the credit's last day: %s", got)
	}
	e.clock.Advance(time.Second)
	e.g.CheckCredits()
	if got := order(); got != "a/ma,b/mb,c/mc,l/ml" {
		t.Fatalf("after the credit expired: %s", got)
	}
}

// waitUsage polls /api/usage until the ledger writer has flushed n
// requests (it writes every 250 ms).
func (e *env) waitUsage(n int64) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var u struct {
			Rows []struct{ Requests int64 } `json:"rows"`
		}
		from := e.clock.Now().AddDate(0, 0, -40).Format(time.DateOnly)
		r := e.do("GET", "/api/usage?group_by=chain&from="+from, "", nil)
		_ = json.Unmarshal(r.body, &u)
		var total int64
		for _, row := range u.Rows {
			total += row.Requests
		}
		if total >= n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("ledger has %d rows, want %d: %s", total, n, r.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUsageAPI(t *testing.T) {
	e := newEnv(t, paidConfig())
	e.up.Set("ma", fakeupstream.Behavior{Status: 503}, fakeupstream.Behavior{})
	e.post("/v1/chat/completions", chat("main", false)) // a/ma 503, b/mb ok
	e.post("/v1/chat/completions", chatMax("a/ma", 5))
	e.post("/v1/chat/completions", chat("c/mc", true))
	e.waitUsage(4)

	get := func(q string) (rows []map[string]any) {
		r := e.do("GET", "/api/usage?"+q, "", nil)
		var u struct {
			GroupBy string           `json:"group_by"`
			Rows    []map[string]any `json:"rows"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &u) != nil {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
		return u.Rows
	}
	byBackend := get("group_by=backend&from=2026-11-30&to=2026-11-30")
	if len(byBackend) != 3 || byBackend[0]["key"] != "a/ma" || byBackend[0]["requests"] != 2.0 || byBackend[0]["failures"] != 1.0 || byBackend[0]["cost"].(float64) <= 0 {
		t.Fatalf("by backend: %v", byBackend)
	}
	byDay := get("")
	if len(byDay) != 1 || byDay[0]["key"] != "2026-11-30" || byDay[0]["requests"] != 4.0 {
		t.Fatalf("by day (default): %v", byDay)
	}
	if rows := get("group_by=day,backend&from=2026-11-30T00:00:00Z"); len(rows) != 3 || rows[0]["backend"] != "a/ma" || rows[0]["key"] != "2026-11-30" {
		t.Fatalf("by day and backend: %v", rows)
	}
	if rows := get("group_by=chain"); len(rows) != 2 || rows[0]["key"] != "" || rows[1]["key"] != "main" {
		t.Fatalf("by chain: %v", rows)
	}
	if rows := get("group_by=path"); len(rows) != 1 || rows[0]["key"] != "/v1/chat/completions" || rows[0]["requests"] != 4.0 {
		t.Fatalf("by path: %v", rows)
	}
	if rows := get("group_by=backend&from=2026-12-01&to=2026-12-01"); len(rows) != 0 {
		t.Fatalf("empty range: %v", rows)
	}
	for q, param := range map[string]string{"group_by=week": "group_by", "from=yesterday": "from", "to=2026-13-01": "to", "from=2026-12-01&to=2026-11-01": "from"} {
		if r := e.do("GET", "/api/usage?"+q, "", nil); r.status != 400 || r.param() != param {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}

	r := e.do("GET", "/api/usage.csv?from=2026-11-30&to=2026-11-30", "", nil)
	if r.status != 200 || r.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		r.header.Get("Content-Disposition") != `attachment; filename="freelane-usage-2026-11-30-2026-12-01.csv"` {
		t.Fatalf("csv: %d %v", r.status, r.header)
	}
	recs, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if err != nil || len(recs) != 5 || strings.Join(recs[0], ",") != "time,request_id,chain,backend,outcome,status,latency_ms,ttft_ms,prompt_tokens,completion_tokens,estimated,cost,path" {
		t.Fatalf("csv rows: %v %v", err, recs)
	}
	if recs[1][3] != "a/ma" || recs[1][4] != "transient" || recs[1][5] != "503" || recs[4][3] != "c/mc" || recs[4][7] == "" ||
		recs[1][12] != "/v1/chat/completions" {
		t.Fatalf("csv content: %v", recs)
	}
}

func TestBudgetsAndLimitsAPI(t *testing.T) {
	e := newEnv(t, nil)
	for body, param := range map[string]string{
		`[{"scope":"global","period":"day","limit":0,"action":"block"}]`:                                                                  "budgets[0].limit",
		`[{"scope":"global","period":"day","limit":1,"action":"block"},{"scope":"chain:nope","period":"day","limit":1,"action":"block"}]`: "budgets[1].scope",
		`[{"scope":"global","period":"week","limit":1,"action":"block"}]`:                                                                 "budgets[0].period",
		`[{"scope":"global","period":"day","limit":1,"action":"stop"}]`:                                                                   "budgets[0].action",
		`[{"scope":"provider:zz","period":"day","limit":1,"action":"block"}]`:                                                             "budgets[0].scope",
	} {
		if r := e.do("PUT", "/api/budgets", body, nil); r.status != 400 || r.param() != param {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
	r := e.do("PUT", "/api/budgets", `[{"scope":"global","period":"day","limit":1.5,"action":"free-only"},{"scope":"chain:main","period":"month","limit":20,"action":"block"}]`, nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"id":"chain:main|month"`) {
		t.Fatalf("put budgets: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/budgets", "", nil); !strings.Contains(string(r.body), `"id":"global|day","scope":"global","period":"day","limit":1.5,"action":"free-only","spent":0,"reserved":0,"fraction":0`) {
		t.Fatalf("get budgets: %s", r.body)
	}

	r = e.do("PUT", "/api/limits/b", `{"limits":{"rpm":30,"reset":"hourly"}}`, nil)
	if r.status != 400 || r.param() != "limits.reset" || !strings.Contains(r.errorMessage(), "rolling 24h") {
		t.Fatalf("bad reset: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/api/limits/b/mb", `{"limits":{"rpd":-1}}`, nil); r.status != 400 || r.param() != "limits.rpd" {
		t.Fatalf("negative rpd: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/api/limits/b/mb", `{"credit_expires":"31.12.2026"}`, nil); r.status != 400 || r.param() != "credit_expires" {
		t.Fatalf("bad date: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/api/limits/zz", `{"limits":{"rpm":1}}`, nil); r.status != 404 {
		t.Fatalf("unknown provider: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/api/limits/b", `{"limits":{"rpm":30,"tpd":500000,"reset":"weekly mon 08:00 Europe/Berlin"}}`, nil); r.status != 200 {
		t.Fatalf("provider limits: %d %s", r.status, r.body)
	}
	r = e.do("PUT", "/api/limits/b/mb", `{"limits":{"rpd":500},"price":{"input":0.15,"output":0.6},"credit_expires":"2026-12-31"}`, nil)
	if r.status != 200 {
		t.Fatalf("model limits: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/api/limits", "", nil)
	for _, want := range []string{
		`{"provider":"b","model":"","limits":{"rpm":30,"rpd":0,"tpm":0,"tpd":500000,"concurrency":0,"reset":"weekly mon 08:00 Europe/Berlin"},"price":null,"credit_expires":""}`,
		`{"provider":"b","model":"mb","limits":{"rpm":0,"rpd":500,"tpm":0,"tpd":0,"concurrency":0,"reset":"daily 00:00 UTC"},"price":{"input":0.15,"output":0.6},"credit_expires":"2026-12-31"}`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("limits lack %s:\n%s", want, r.body)
		}
	}
	// A provider edit from the providers form keeps limits, prices and
	// credits it does not send.
	body := `{"name":"b","tier":"free","base_url":"` + e.up.URL + `","models":[{"id":"mb","params_b":70,"context":32768}]}`
	if r := e.do("PUT", "/api/providers/b", body, nil); r.status != 200 {
		t.Fatalf("provider edit: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/api/providers", "", nil)
	if !strings.Contains(string(r.body), `"limits":{"rpm":0,"rpd":500,"tpm":0,"tpd":0,"concurrency":0,"reset":"daily 00:00 UTC"},"price":{"input":0.15,"output":0.6},"credit_expires":"2026-12-31"`) ||
		!strings.Contains(string(r.body), `"limits":{"rpm":30,"rpd":0,"tpm":0,"tpd":500000,"concurrency":0,"reset":"weekly mon 08:00 Europe/Berlin"}`) {
		t.Fatalf("provider view after edit: %s", r.body)
	}
	// Limits apply at once: the snapshot shows them for b/mb.
	if q := e.state().quota("b/mb"); len(q.Limits) != 3 || q.Price.Input != 0.15 || q.CreditExpires == nil || *q.CreditExpires != "2026-12-31" {
		t.Fatalf("quota view: %+v", q)
	}
}

// TestTokensAreEstimatedWhenTheUpstreamReportsNone: a provider that must
// not be sent stream_options reports no usage in its stream, so the ledger
// and the trace get offline estimates, marked estimated.
func TestTokensAreEstimatedWhenTheUpstreamReportsNone(t *testing.T) {
	off := false
	e := newEnv(t, func(c *config.Config) {
		c.Providers[2].StreamUsage = &off
		c.Providers[2].Models[0].Price = &config.Price{Input: 1, Output: 1}
	})
	e.up.Set("mc", fakeupstream.Behavior{Chunks: []string{"The answer ", "is forty-two."}})
	if r := e.post("/v1/chat/completions", chat("c/mc", true)); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	a := e.state().Requests[0].Attempts[0]
	if !a.Estimated || a.Prompt < 5 || a.Cost <= 0 {
		t.Fatalf("attempt %+v", a)
	}
	var tr struct {
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	r := e.do("GET", "/api/state", "", nil)
	var st struct {
		Requests []json.RawMessage `json:"requests"`
	}
	_ = json.Unmarshal(r.body, &st)
	_ = json.Unmarshal(st.Requests[0], &tr)
	// "The answer is forty-two." is 7 tokens in cl100k.
	if tr.Usage.Completion < 6 || tr.Usage.Completion > 8 {
		t.Fatalf("estimated completion tokens %d", tr.Usage.Completion)
	}
}
