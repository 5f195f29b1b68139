package quota

import (
	"slices"
	"testing"
	"time"

	"freelane/backend/dialects"
	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
	"freelane/backend/protocol/openai"
	"freelane/backend/tokens"
)

func testManager(t testing.TB) (*Manager, *clocktest.Clock) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	m := New(clock, nil, time.UTC)
	rule, err := ParseRule("rolling 24h")
	if err != nil {
		t.Fatal(err)
	}
	m.Configure(Settings{
		Providers: map[string]Limits{"p": {RPM: 1 << 40, TPD: 1 << 40, Concurrency: 1 << 20}},
		Backends: []Backend{{ID: llm.BackendID{Provider: "p", Model: "m"}, Price: Price{Input: 1, Output: 2},
			Limits: Limits{RPD: 1 << 40, TPM: 1 << 40, Reset: rule}}},
		Budgets: []Budget{{Scope: "global", Period: PeriodMonth, Limit: 1e9, Action: ActionBlock}},
	})
	return m, clock
}

func testRequest(t testing.TB) *llm.Request {
	req, err := openai.ParseRequest(llm.Chat, []byte(`{"model":"auto","max_tokens":100,"messages":[{"role":"user","content":"Write a function that adds two numbers."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRollingWindowAndConcurrency(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	m := New(clock, nil, time.UTC)
	rolling, _ := ParseRule("rolling 24h")
	m.Configure(Settings{Backends: []Backend{{ID: llm.BackendID{Provider: "p", Model: "m"}, Limits: Limits{RPD: 2, Concurrency: 1, Reset: rolling}}}})
	req := testRequest(t)
	tg := Target{ID: llm.BackendID{Provider: "p", Model: "m"}}
	h, err := m.Admit(req, "", tg)
	if err != nil {
		t.Fatal(err)
	}
	// The shaper holds the concurrency limit, with its queue: the quota
	// only counts what is in flight, for the dashboard.
	h2, err := m.Admit(req, "", tg)
	if err != nil {
		t.Fatalf("second at once: %v", err)
	}
	if q := m.Quotas([]llm.BackendID{tg.ID}); len(q) != 1 || !slices.ContainsFunc(q[0].Limits, func(u LimitUse) bool {
		return u.Kind == KindConcurrency && u.Used == 2 && u.Limit == 1
	}) {
		t.Fatalf("two in flight: %+v", q)
	}
	h2.Release()
	h.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}})
	clock.Advance(6 * time.Hour)
	h, _ = m.Admit(req, "", tg)
	h.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1}})
	if err := m.Available("", tg); err == nil {
		t.Fatal("a third request in 24 hours was allowed")
	}
	// The first request leaves the rolling window 24 hours after it was
	// made, not at a fixed time of day.
	clock.Advance(18*time.Hour - time.Minute)
	if err := m.Available("", tg); err == nil {
		t.Fatal("allowed before the first request left the window")
	}
	clock.Advance(time.Minute)
	if err := m.Available("", tg); err != nil {
		t.Fatalf("after 24 hours: %v", err)
	}
	// A released hold gives its request and its slot back.
	h, _ = m.Admit(req, "", tg)
	h.Release()
	if err := m.Available("", tg); err != nil {
		t.Fatalf("after a release: %v", err)
	}
}

func TestEstimatedTokensWhenNoUsage(t *testing.T) {
	m, _ := testManager(t)
	req := testRequest(t)
	h, err := m.Admit(req, "auto", Target{ID: llm.BackendID{Provider: "p", Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	m.ReadAnswersWith(dialects.Registry())
	var a llm.Attempt
	h.Settle(llm.CallUsage{Output: []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"func add(a, b int) int { return a + b }"},"finish_reason":"stop"}]}`), Attempt: &a})
	if !a.Estimated || a.PromptTokens < 15 || a.PromptTokens > 25 || a.CompletionTokens < 12 || a.CompletionTokens > 18 {
		t.Fatalf("estimate: %+v", a)
	}
	if want := (float64(a.PromptTokens)*1 + float64(a.CompletionTokens)*2) / 1e6; a.Cost != want {
		t.Fatalf("cost %v, want %v", a.Cost, want)
	}
	if s := m.Spend(); s.Today != a.Cost || s.Month != a.Cost {
		t.Fatalf("spend %+v", s)
	}
}

// A stream that kept only its first events is estimated from them, scaled
// by its bytes to the whole answer.
func TestEstimateScalesWhatWasKept(t *testing.T) {
	m, _ := testManager(t)
	m.ReadAnswersWith(dialects.Registry())
	out := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"func add(a, b int) int { return a + b }"},"finish_reason":"stop"}]}`)
	settle := func(c llm.CallUsage) llm.Attempt {
		t.Helper()
		h, err := m.Admit(testRequest(t), "auto", Target{ID: llm.BackendID{Provider: "p", Model: "m"}})
		if err != nil {
			t.Fatal(err)
		}
		var a llm.Attempt
		c.Attempt = &a
		h.Settle(c)
		return a
	}
	whole := settle(llm.CallUsage{Output: out, ContentBytes: 1000, KeptBytes: 1000})
	part := settle(llm.CallUsage{Output: out, ContentBytes: 4000, KeptBytes: 1000})
	if !part.Estimated || whole.CompletionTokens == 0 || part.CompletionTokens != 4*whole.CompletionTokens {
		t.Fatalf("a quarter kept: %d completion tokens, all kept: %d; want four times", part.CompletionTokens, whole.CompletionTokens)
	}
}

// A stream that kept no events (its backend had been reporting usage)
// and then reported none is estimated at a token per content event.
func TestEstimatedFromContentEventsWhenNothingWasKept(t *testing.T) {
	m, _ := testManager(t)
	h, err := m.Admit(testRequest(t), "auto", Target{ID: llm.BackendID{Provider: "p", Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	var a llm.Attempt
	h.Settle(llm.CallUsage{ContentEvents: 42, Attempt: &a})
	if !a.Estimated || a.CompletionTokens != 42 || a.PromptTokens == 0 {
		t.Fatalf("estimate: %+v", a)
	}
}

// TestEstimateReadsTheClientsDialect: a Responses stream names its text
// "delta" and a tool call's name sits in its item, yet the estimate counts
// the same text as for any other dialect: the text, the tool's name and its
// arguments.
func TestEstimateReadsTheClientsDialect(t *testing.T) {
	m, _ := testManager(t)
	m.ReadAnswersWith(dialects.Registry())
	codec, _ := dialects.Registry().Codec(llm.DialectResponses)
	req, err := codec.ParseRequest(llm.Chat, []byte(`{"model":"auto","input":"Write a function that adds two numbers.","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, ev := range []string{
		`{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"Here it is: "}`,
		`{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"func add(a, b int) int"}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc","type":"function_call","status":"in_progress","call_id":"c1","name":"write_file","arguments":""}}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc","output_index":1,"delta":"{\"path\":"}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc","output_index":1,"delta":"\"add.go\"}"}`,
	} {
		out = llm.AppendEvent(out, []byte(ev))
	}
	want := tokens.Count([]byte(`Here it is: func add(a, b int) intwrite_file{"path":"add.go"}`))
	for _, c := range []struct {
		name       string
		usage      *llm.Usage
		prompt     int
		estimated  bool
		completion int
	}{
		{"no usage", nil, 0, true, want},
		{"the prompt only", &llm.Usage{PromptTokens: 40}, 40, true, want},
		{"whole usage", &llm.Usage{PromptTokens: 40, CompletionTokens: 3}, 40, false, 3},
	} {
		h, sk := m.Admit(req, "auto", Target{ID: llm.BackendID{Provider: "p", Model: "m"}})
		if sk != nil {
			t.Fatal(sk)
		}
		var a llm.Attempt
		h.Settle(llm.CallUsage{Usage: c.usage, Output: out, Attempt: &a})
		if a.Estimated != c.estimated || a.CompletionTokens != c.completion || (c.prompt > 0 && a.PromptTokens != c.prompt) || a.PromptTokens <= 0 {
			t.Errorf("%s: %+v, want completion %d", c.name, a, c.completion)
		}
	}
}

// TestPromptOnlyUsageOfAnAnswerWithoutText: an embeddings answer reports
// prompt tokens only, and has no text to estimate a completion from.
func TestPromptOnlyUsageOfAnAnswerWithoutText(t *testing.T) {
	m, _ := testManager(t)
	m.ReadAnswersWith(dialects.Registry())
	req, err := openai.ParseRequest(llm.Embeddings, []byte(`{"model":"auto","input":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	h, sk := m.Admit(req, "auto", Target{ID: llm.BackendID{Provider: "p", Model: "m"}})
	if sk != nil {
		t.Fatal(sk)
	}
	var a llm.Attempt
	h.Settle(llm.CallUsage{Usage: &llm.Usage{PromptTokens: 2, TotalTokens: 2},
		Output: []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"usage":{"prompt_tokens":2,"total_tokens":2}}`), Attempt: &a})
	if a.Estimated || a.PromptTokens != 2 || a.CompletionTokens != 0 {
		t.Fatalf("embeddings: %+v", a)
	}
}

// BenchmarkAdmitSettle is what quotas and budgets add to every call to a
// priced backend with limits and a budget, when the upstream reports usage.
func BenchmarkAdmitSettle(b *testing.B) {
	m, _ := testManager(b)
	req := testRequest(b)
	tg := Target{ID: llm.BackendID{Provider: "p", Model: "m"}}
	usage := &llm.Usage{PromptTokens: 20, CompletionTokens: 100}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Available("auto", tg); err != nil {
			b.Fatal(err)
		}
		h, err := m.Admit(req, "auto", tg)
		if err != nil {
			b.Fatal(err)
		}
		var a llm.Attempt
		h.Settle(llm.CallUsage{Usage: usage, Attempt: &a})
	}
}

// A provider's refusal that says its daily or monthly quota is used up
// keeps the backend out until that quota starts over, on the provider's
// reset rule, then lets it back; a per-minute 429 only informs.
func TestDailyQuotaRefusalHoldsUntilTheReset(t *testing.T) {
	for _, tc := range []struct {
		name, reset, body string
		retry             time.Duration
		back              time.Time
	}{
		{"gemini per day, reset at midnight Pacific", "daily 00:00 America/Los_Angeles",
			`{"error":{"code":429,"message":"You exceeded your current quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`,
			0, time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)},
		{"openrouter free models per day, no rule", "",
			`{"error":{"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day","code":429}}`,
			0, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"monthly", "monthly 1 00:00 UTC", `{"error":{"message":"Monthly limit reached"}}`,
			0, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"groq tokens per day with its own wait", "",
			`{"error":{"message":"Rate limit reached for model m on tokens per day (TPD): Limit 500000, Used 499900, Requested 900. Please try again in 7m12s."}}`,
			7*time.Minute + 12*time.Second, time.Date(2026, 11, 30, 12, 7, 12, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			m := New(clock, nil, time.UTC)
			rule, err := ParseRule(tc.reset)
			if err != nil {
				t.Fatal(err)
			}
			id := llm.BackendID{Provider: "p", Model: "m"}
			m.Configure(Settings{Backends: []Backend{{ID: id, Limits: Limits{Reset: rule}}}})
			tg := Target{ID: id}
			h, sk := m.Admit(testRequest(t), "", tg)
			if sk != nil {
				t.Fatal(sk)
			}
			h.Settle(llm.CallUsage{Err: &llm.Error{Class: llm.RateLimited, Status: 429, Body: []byte(tc.body), RetryAfter: tc.retry}})
			sk = m.Available("", tg)
			if sk == nil || !sk.Until.Equal(tc.back) {
				t.Fatalf("after the refusal: skip %+v, want one until %v", sk, tc.back)
			}
			if reason, until, ok := m.Exhausted(id); !ok || !until.Equal(tc.back) || reason == "" {
				t.Fatalf("Exhausted = %q %v %v", reason, until, ok)
			}
			clock.Set(tc.back.Add(-time.Second))
			if m.Available("", tg) == nil {
				t.Fatal("back before the reset")
			}
			clock.Set(tc.back)
			if sk := m.Available("", tg); sk != nil {
				t.Fatalf("still out at the reset: %+v", sk)
			}
		})
	}
	t.Run("per minute only informs", func(t *testing.T) {
		m, _ := testManager(t)
		tg := Target{ID: llm.BackendID{Provider: "p", Model: "m"}}
		h, _ := m.Admit(testRequest(t), "", tg)
		h.Settle(llm.CallUsage{Err: &llm.Error{Class: llm.RateLimited, Status: 429, Body: []byte(`{"error":{"message":"Rate limit reached (RPM)"}}`), RetryAfter: 20 * time.Second}})
		if sk := m.Available("", tg); sk != nil {
			t.Fatalf("a per-minute 429 skipped the backend in quotas: %+v", sk)
		}
	})
}
