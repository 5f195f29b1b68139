package redisstate_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/teamtest"
	"freelane/backend/llm"
	"freelane/backend/protocol/openai"
	"freelane/backend/quota"
	"freelane/backend/redisstate"
)

var backend = llm.BackendID{Provider: "free", Model: "m"}

// managers builds one quota manager per instance, each counting with the
// team through its instance, all at the same fixed noon.
func managers(t *testing.T, insts []*redisstate.State, s quota.Settings, failClosed ...bool) []*quota.Manager {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var out []*quota.Manager
	for _, in := range insts {
		m := quota.New(clk, nil, time.UTC)
		m.Configure(s)
		m.ShareWith(in, len(failClosed) > 0 && failClosed[0])
		out = append(out, m)
	}
	return out
}

func request(t *testing.T) *llm.Request {
	t.Helper()
	req, err := openai.ParseRequest(llm.Chat, []byte(`{"model":"auto","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// admitAll admits from every manager, many at once, until each is refused
// every time, and returns how many each admitted and one refusal's reason.
func admitAll(t *testing.T, ms []*quota.Manager, tries int) ([]int64, string) {
	t.Helper()
	req := request(t)
	got := make([]atomic.Int64, len(ms))
	var reason atomic.Value
	var wg sync.WaitGroup
	for g := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := g % len(ms)
			for range tries {
				h, sk := ms[i].Admit(req, "", quota.Target{ID: backend})
				if sk != nil {
					reason.Store(sk.Reason)
					continue
				}
				got[i].Add(1)
				h.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 10, CompletionTokens: 5}})
			}
		}()
	}
	wg.Wait()
	out := make([]int64, len(ms))
	for i := range got {
		out[i] = got[i].Load()
	}
	r, _ := reason.Load().(string)
	return out, r
}

func sum(ns []int64) (s int64) {
	for _, n := range ns {
		s += n
	}
	return s
}

// Three instances' managers under concurrent load serve a 100-a-day
// backend exactly 100 times between them, and say why the rest were
// refused.
func TestManagersShareADailyLimit(t *testing.T) {
	r := teamtest.StartRedis(t)
	ms := managers(t, team(t, r.Addr, r.NewDB(t), 3), quota.Settings{
		Backends: []quota.Backend{{ID: backend, Limits: quota.Limits{RPD: 100}}}})
	got, reason := admitAll(t, ms, 10)
	if sum(got) != 100 {
		t.Fatalf("the three instances admitted %v = %d, want exactly 100", got, sum(got))
	}
	if !strings.Contains(reason, "across the team's instances") {
		t.Fatalf("refusal reason %q does not say the team's limit was reached", reason)
	}
	// Once refused, an instance passes the backend by without asking
	// Redis again until the day starts over.
	if sk := ms[0].Available("", quota.Target{ID: backend}); sk == nil {
		t.Fatal("a backend the team used up still shows as available")
	}
}

// A budget shared by three instances is never overspent beyond the
// reservations in flight.
func TestManagersShareABudget(t *testing.T) {
	r := teamtest.StartRedis(t)
	const limit = 0.05
	// Each call reserves (body/3 + 100 tokens) at $100 per million
	// output tokens and spends 10 prompt + 5 completion tokens.
	ms := managers(t, team(t, r.Addr, r.NewDB(t), 3), quota.Settings{
		Backends: []quota.Backend{{ID: backend, Price: quota.Price{Input: 100, Output: 100}}},
		Budgets:  []quota.Budget{{Scope: "global", Period: quota.PeriodDay, Limit: limit, Action: quota.ActionBlock}}})
	// Calls take time: a settled call's reservation goes back to the
	// team's count within the batching delay, so each round of calls
	// starts after the last one's are back.
	var got []int64
	var reason string
	for range 30 {
		n, r := admitAll(t, ms, 1)
		got = append(got, n...)
		if r != "" {
			reason = r
		}
		time.Sleep(80 * time.Millisecond)
	}
	spent := float64(sum(got)) * 15 * 100 / 1e6
	if spent > limit+1e-9 {
		t.Fatalf("the team spent $%.4f of a $%.2f budget", spent, limit)
	}
	// Every call spends $0.0015 and reserves about $0.0117, so the
	// budget is full once fewer than a reservation's worth is left.
	if spent < limit-0.0125 {
		t.Fatalf("the team spent only $%.4f of $%.2f: reservations were not given back", spent, limit)
	}
	if !strings.Contains(reason, "across the team's instances") {
		t.Fatalf("refusal reason %q", reason)
	}
}

// With Redis cut off mid-day, each of three instances serves its third of
// what was left (a 90-a-day limit unused so far: 30 each), says so, and
// the counts it kept reach Redis when it is back.
func TestManagersSplitALimitWhileRedisIsDown(t *testing.T) {
	h := teamtest.StartHAProxy(t)
	r := teamtest.StartRedis(t)
	db := r.NewDB(t)
	ms := managers(t, team(t, h.RedisAddr, db, 3), quota.Settings{
		Backends: []quota.Backend{{ID: backend, Limits: quota.Limits{RPD: 90}}}})
	// Twelve requests while Redis is up, four through each instance.
	req := request(t)
	for _, m := range ms {
		for range 4 {
			hold, sk := m.Admit(req, "", quota.Target{ID: backend})
			if sk != nil {
				t.Fatal(sk.Reason)
			}
			hold.Release()
			hold, sk = m.Admit(req, "", quota.Target{ID: backend})
			if sk != nil {
				t.Fatal(sk.Reason)
			}
			hold.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}})
		}
	}
	h.Down(t, teamtest.BackendRedis)
	defer h.Up(t, teamtest.BackendRedis)
	got, reason := admitAll(t, ms, 20)
	// Each may serve up to a third of the limit in all (26 more after its
	// own four), and less when the team it last saw was further along:
	// the releases still on their way to Redis then counted as used,
	// which errs on the safe side.
	for i, n := range got {
		if n+4 > 30 || n < 20 {
			t.Errorf("instance %d served %d while Redis was down (%d in all), want its share of at most 30", i+1, n, n+4)
		}
	}
	if total := sum(got) + 12; total > 90 {
		t.Fatalf("the team served %d of a 90-a-day limit while Redis was down", total)
	}
	if !strings.Contains(reason, "split across 3 instances") {
		t.Fatalf("refusal reason %q does not say the limit is split", reason)
	}
	h.Up(t, teamtest.BackendRedis)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, DB: db})
	defer rdb.Close()
	want := sum(got) + 12
	waitFor(t, "the counts kept while down to reach Redis", func() bool {
		vals, _ := rdb.HGetAll(context.Background(), "{freelane}:q:free/m:rpd").Result()
		var n int64
		for _, v := range vals {
			var x int64
			for _, c := range v {
				x = x*10 + int64(c-'0')
			}
			n += x
		}
		return n == want
	})
	// Back on the team's count, the instances serve the rest of the day's
	// 90 and no more.
	more, _ := admitAll(t, ms, 5)
	if total := want + sum(more); total != 90 {
		t.Fatalf("after Redis returned the team served %d in all, want 90", total)
	}
}

// With state.fail_closed, a budget refuses paid calls while Redis is
// unreachable instead of spending this instance's share, and serves them
// again once it is back; limits without money keep their split.
func TestBudgetsFailClosedWhileRedisIsDown(t *testing.T) {
	h := teamtest.StartHAProxy(t)
	r := teamtest.StartRedis(t)
	insts := team(t, h.RedisAddr, r.NewDB(t), 1)
	free := llm.BackendID{Provider: "free", Model: "f"}
	m := managers(t, insts, quota.Settings{
		Backends: []quota.Backend{{ID: backend, Price: quota.Price{Input: 1, Output: 1}}, {ID: free, Limits: quota.Limits{RPD: 10}}},
		Budgets:  []quota.Budget{{Scope: "global", Period: quota.PeriodDay, Limit: 100, Action: quota.ActionFreeOnly}}}, true)[0]
	req := request(t)
	hold, sk := m.Admit(req, "", quota.Target{ID: backend})
	if sk != nil {
		t.Fatal(sk.Reason)
	}
	hold.Release()
	h.Down(t, teamtest.BackendRedis)
	defer h.Up(t, teamtest.BackendRedis)
	// Until the instance finds Redis gone it may still spend money the
	// team's count had leased to it; from then on it fails closed.
	waitFor(t, "Redis to be known unreachable", func() bool { return !insts[0].Up() })
	_, sk = m.Admit(req, "", quota.Target{ID: backend})
	if sk == nil || !sk.Budget || !strings.Contains(sk.Reason, "fails closed") {
		t.Fatalf("a paid call with Redis down: %+v, want refused by the budget failing closed", sk)
	}
	if hold, sk := m.Admit(req, "", quota.Target{ID: free}); sk != nil {
		t.Fatalf("a free call with Redis down was refused: %s", sk.Reason)
	} else {
		hold.Release()
	}
	h.Up(t, teamtest.BackendRedis)
	waitFor(t, "Redis to be back", insts[0].Up)
	if hold, sk := m.Admit(req, "", quota.Target{ID: backend}); sk != nil {
		t.Fatalf("a paid call once Redis is back: %s", sk.Reason)
	} else {
		hold.Release()
	}
}
