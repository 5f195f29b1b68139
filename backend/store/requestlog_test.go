package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"freelane/backend/llm"
)

// quietLogger keeps expected drop warnings out of the test output.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// baseTime is a fixed whole-millisecond instant, so traces round-trip
// through the millisecond started_at column exactly.
var baseTime = time.UnixMilli(1_760_000_000_000)

var (
	testChains   = []string{"chat-fast", "chat-smart"}
	testBackends = []string{"groq/llama-3.3-70b", "cerebras/qwen-3-32b", "openrouter/deepseek-r1"}
)

// sampleTrace builds trace i: one millisecond after trace i-1, cycling
// through chains, backends and classes, with i%4 attempts whose fields
// all differ so a reordering or a dropped column shows up.
func sampleTrace(i int) llm.Trace {
	class := llm.OK
	errMsg := ""
	status := 200
	if i%5 == 4 {
		class, errMsg, status = llm.RateLimited, "all backends rate limited", 429
	}
	t := llm.Trace{
		ID:        fmt.Sprintf("req-%06d", i),
		Start:     baseTime.Add(time.Duration(i) * time.Millisecond),
		Endpoint:  []string{"chat", "completions", "embeddings"}[i%3],
		Dialect:   []llm.Dialect{llm.DialectOpenAI, llm.DialectAnthropic, "", llm.DialectGemini, llm.DialectResponses}[i%5],
		Model:     "auto",
		Chain:     testChains[i%len(testChains)],
		Backend:   testBackends[i%len(testBackends)],
		Stream:    i%2 == 0,
		Status:    status,
		Class:     class,
		Error:     errMsg,
		Latency:   time.Duration(1_234_567_891 + i),
		Usage:     llm.Usage{PromptTokens: 10 + i, CompletionTokens: 20 + i, TotalTokens: 30 + 2*i},
		Committed: i%3 == 0,
	}
	if t.Stream {
		t.TTFT = time.Duration(98_765_432 + i)
	}
	if i%3 != 2 {
		// What caching did: most traces have a session and some cached
		// tokens, and the outcomes cycle so each one is stored.
		t.Usage.CacheReadTokens, t.Usage.CacheWriteTokens = 5+i%7, i%2
		t.Saved = float64(i) / 1024
		t.Cache = []llm.CacheOutcome{llm.CacheHit, llm.CacheMiss, llm.CacheBypassed, llm.CacheRefreshed, ""}[i%5]
		t.Session = fmt.Sprintf("%016x", 0xabc000+i%9)
	}
	for seq := 0; seq < i%4; seq++ {
		a := llm.Attempt{
			Backend: fmt.Sprintf("provider-%d/model-%d", seq, i),
			Dialect: []llm.Dialect{llm.DialectOpenAI, llm.DialectGemini, llm.DialectAnthropic}[(seq+i)%3],
			Class:   []llm.Class{llm.RateLimited, llm.Transient, llm.OK}[seq%3],
			Status:  []int{429, 503, 200}[seq%3],
			Latency: time.Duration(1_000_001*(seq+1) + i),
			Reason:  fmt.Sprintf("reason %d of %d", seq, i),
		}
		if seq == 1 {
			a.Skipped = true
			a.Status = 0
			a.Latency = 0
			a.Reason = "cooling down"
			until := time.Date(2026, 12, 1, 0, 1, 0, 0, time.UTC)
			a.Skip, a.Until, a.Budget = llm.SkipCooling, &until, i%2 == 0
		}
		if seq == 2 {
			a.TTFT = time.Duration(55_555_555 + i)
			a.Saved = float64(i) / 2048
		}
		t.Attempts = append(t.Attempts, a)
	}
	return t
}

func sampleTraces(n int) []llm.Trace {
	out := make([]llm.Trace, n)
	for i := range out {
		out[i] = sampleTrace(i)
	}
	return out
}

func countRequests(t testing.TB, db *DB) int {
	t.Helper()
	var n int
	if err := db.SQL().QueryRow("SELECT count(*) FROM requests").Scan(&n); err != nil {
		t.Fatalf("count requests: %v", err)
	}
	return n
}

func countAttempts(t testing.TB, db *DB) int {
	t.Helper()
	var n int
	if err := db.SQL().QueryRow("SELECT coalesce(sum(json_array_length(attempts)), 0) FROM requests").Scan(&n); err != nil {
		t.Fatalf("count attempts: %v", err)
	}
	return n
}

// startRun runs l.Run in a goroutine owned by the test and returns a
// function that waits for it and reports its error.
func startRun(t *testing.T, ctx context.Context, l *RequestLog) (wait func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- l.Run(ctx) }()
	return func() error {
		select {
		case err := <-errc:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return")
			return nil
		}
	}
}

// assertTracesEqual compares traces as RecentRequests returns them: Start
// at millisecond precision and Attempts never nil.
func assertTracesEqual(t *testing.T, got, want []llm.Trace) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d traces, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if !g.Start.Equal(w.Start) {
			t.Errorf("trace %d (%s): Start = %v, want %v", i, w.ID, g.Start, w.Start)
		}
		g.Start, w.Start = time.Time{}, time.Time{}
		if w.Attempts == nil {
			w.Attempts = []llm.Attempt{}
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("trace %d:\n got  %+v\n want %+v", i, g, w)
		}
	}
}

// newestFirst returns the traces in want that match keep, newest first.
func newestFirst(all []llm.Trace, keep func(llm.Trace) bool) []llm.Trace {
	var out []llm.Trace
	for i := len(all) - 1; i >= 0; i-- {
		if keep(all[i]) {
			out = append(out, all[i])
		}
	}
	return out
}

func TestRecordCloseRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	l := NewRequestLog(db, LogOptions{BatchSize: 16, FlushInterval: 5 * time.Millisecond, Logger: quietLogger})
	wait := startRun(t, ctx, l)

	const n = 300
	all := sampleTraces(n)
	// Record in a shuffled order: the store must order by start time, not
	// by arrival.
	for i := 0; i < n; i += 2 {
		l.Record(all[i])
	}
	for i := 1; i < n; i += 2 {
		l.Record(all[i])
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := l.Dropped(); d != 0 {
		t.Fatalf("Dropped = %d, want 0", d)
	}
	if got := countRequests(t, db); got != n {
		t.Fatalf("%d requests stored, want %d", got, n)
	}

	wantAttempts := 0
	for _, tr := range all {
		wantAttempts += len(tr.Attempts)
	}
	if got := countAttempts(t, db); got != wantAttempts {
		t.Errorf("%d attempts stored, want %d", got, wantAttempts)
	}

	cases := []struct {
		name string
		q    RequestQuery
		keep func(llm.Trace) bool
		max  int
	}{
		{"all", RequestQuery{Limit: 1000}, func(llm.Trace) bool { return true }, 1000},
		{"default limit", RequestQuery{}, func(llm.Trace) bool { return true }, 100},
		{"limit", RequestQuery{Limit: 7}, func(llm.Trace) bool { return true }, 7},
		{"chain", RequestQuery{Limit: 1000, Chain: "chat-smart"},
			func(t llm.Trace) bool { return t.Chain == "chat-smart" }, 1000},
		{"backend", RequestQuery{Limit: 1000, Backend: testBackends[2]},
			func(t llm.Trace) bool { return t.Backend == testBackends[2] }, 1000},
		{"class", RequestQuery{Limit: 1000, Class: llm.RateLimited},
			func(t llm.Trace) bool { return t.Class == llm.RateLimited }, 1000},
		{"chain and backend", RequestQuery{Limit: 1000, Chain: "chat-fast", Backend: testBackends[0]},
			func(t llm.Trace) bool { return t.Chain == "chat-fast" && t.Backend == testBackends[0] }, 1000},
		{"before", RequestQuery{Limit: 10, Before: all[50].Start},
			func(t llm.Trace) bool { return t.Start.Before(all[50].Start) }, 10},
		{"no match", RequestQuery{Chain: "nope"}, func(llm.Trace) bool { return false }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := db.RecentRequests(ctx, tc.q)
			if err != nil {
				t.Fatalf("RecentRequests: %v", err)
			}
			want := newestFirst(all, tc.keep)
			if len(want) > tc.max {
				want = want[:tc.max]
			}
			assertTracesEqual(t, got, want)
		})
	}

	// A limit above the maximum is capped rather than rejected.
	db2 := openTestDB(t)
	if _, err := db2.writeRequests(ctx, sampleTraces(1100), true); err != nil {
		t.Fatal(err)
	}
	got, err := db2.RecentRequests(ctx, RequestQuery{Limit: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != maxQueryLimit {
		t.Errorf("Limit 5000 returned %d traces, want the cap %d", len(got), maxQueryLimit)
	}
}

func TestConcurrentRecordThenCloseLosesNothing(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	l := NewRequestLog(db, LogOptions{Logger: quietLogger})
	wait := startRun(t, ctx, l)

	const writers, per = 10, 500
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			for i := 0; i < per; i++ {
				tr := sampleTrace(i)
				tr.ID = fmt.Sprintf("w%02d-%04d", w, i)
				l.Record(tr)
			}
		})
	}
	wg.Wait()
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := l.Dropped(); d != 0 {
		t.Errorf("Dropped = %d, want 0", d)
	}
	if got := countRequests(t, db); got != writers*per {
		t.Errorf("%d requests stored, want %d", got, writers*per)
	}
}

func TestCancelRunDrains(t *testing.T) {
	db := openTestDB(t)
	// A long flush interval and big batches mean nothing is written before
	// the cancellation, so everything depends on the drain.
	l := NewRequestLog(db, LogOptions{BatchSize: 5000, FlushInterval: time.Hour, Logger: quietLogger})
	ctx, cancel := context.WithCancel(context.Background())
	wait := startRun(t, ctx, l)
	const n = 2000
	for i := 0; i < n; i++ {
		l.Record(sampleTrace(i))
	}
	cancel()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := countRequests(t, db); got != n {
		t.Errorf("%d requests stored after cancelling Run, want %d", got, n)
	}
	// Cancelling Run stops the log: later records are dropped, not queued
	// forever.
	l.Record(sampleTrace(n))
	if d := l.Dropped(); d != 1 {
		t.Errorf("Dropped after Run returned = %d, want 1", d)
	}
	// Close after Run has returned must not hang.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := l.Close(ctx2); err != nil {
		t.Errorf("Close after Run returned: %v", err)
	}
}

func TestCloseWithoutRunDrains(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	l := NewRequestLog(db, LogOptions{BatchSize: 7, Logger: quietLogger})
	const n = 50
	for i := 0; i < n; i++ {
		l.Record(sampleTrace(i))
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := countRequests(t, db); got != n {
		t.Errorf("%d requests stored, want %d", got, n)
	}
	// A Run that loses the race with Close returns at once.
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run after Close did not return")
	}
	// Record after Close is a counted no-op.
	l.Record(sampleTrace(n))
	if d := l.Dropped(); d != 1 {
		t.Errorf("Dropped = %d, want 1", d)
	}
	if got := countRequests(t, db); got != n {
		t.Errorf("Record after Close stored something: %d requests", got)
	}
	// Close is idempotent.
	if err := l.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestFullBufferDropsInsteadOfBlocking(t *testing.T) {
	db := openTestDB(t)
	const buffer, n = 4, 100
	l := NewRequestLog(db, LogOptions{Buffer: buffer, Logger: quietLogger})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			l.Record(sampleTrace(i))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Record blocked on a full buffer")
	}
	if d := l.Dropped(); d != n-buffer {
		t.Errorf("Dropped = %d, want %d", d, n-buffer)
	}
	if got := countRequests(t, db); got != 0 {
		t.Errorf("Record wrote %d rows without a writer running; it must not touch disk", got)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := countRequests(t, db); got != buffer {
		t.Errorf("%d requests stored after Close, want the %d buffered", got, buffer)
	}
}

// TestRecordRacingCloseAccountsForEverything checks the invariant that makes
// Dropped trustworthy: with Close arriving while writers are still
// recording into a small buffer, every trace is either stored or counted as
// dropped, never silently lost.
func TestRecordRacingCloseAccountsForEverything(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	l := NewRequestLog(db, LogOptions{Buffer: 64, BatchSize: 32, FlushInterval: time.Millisecond, Logger: quietLogger})
	wait := startRun(t, ctx, l)

	const writers, per = 8, 2000
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			<-start
			for i := 0; i < per; i++ {
				tr := llm.Trace{ID: fmt.Sprintf("w%d-%d", w, i), Start: baseTime}
				l.Record(tr)
			}
		})
	}
	close(start)
	time.Sleep(2 * time.Millisecond)
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	stored := countRequests(t, db)
	if total := stored + int(l.Dropped()); total != writers*per {
		t.Errorf("stored %d + dropped %d = %d, want %d", stored, l.Dropped(), total, writers*per)
	}
}

func TestRunTwiceFails(t *testing.T) {
	db := openTestDB(t)
	l := NewRequestLog(db, LogOptions{Logger: quietLogger})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := startRun(t, ctx, l)
	// Give the first Run time to claim the log.
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.runMu.Lock()
		started := l.started
		l.runMu.Unlock()
		if started || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.Run(ctx); err == nil {
		t.Error("second concurrent Run returned nil, want an error")
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("first Run: %v", err)
	}
}

// TestTwoHandlesWriteConcurrently opens the same file twice, as two FreeLane
// processes would, and writes from both at once: the busy timeout must make
// each writer wait for the other instead of failing its batch.
func TestTwoHandlesWriteConcurrently(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "freelane.db")
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	var logs [2]*RequestLog
	var waits [2]func() error
	for i := range logs {
		logs[i] = NewRequestLog(dbs[i], LogOptions{BatchSize: 8, FlushInterval: time.Millisecond, Logger: quietLogger})
		waits[i] = startRun(t, ctx, logs[i])
	}
	const per = 2000
	var wg sync.WaitGroup
	for i := range logs {
		wg.Go(func() {
			for j := 0; j < per; j++ {
				tr := sampleTrace(j)
				tr.ID = fmt.Sprintf("h%d-%d", i, j)
				logs[i].Record(tr)
				if j%50 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	for i := range logs {
		if err := logs[i].Close(ctx); err != nil {
			t.Errorf("Close %d: %v", i, err)
		}
		if err := waits[i](); err != nil {
			t.Errorf("Run %d: %v", i, err)
		}
		if d := logs[i].Dropped(); d != 0 {
			t.Errorf("log %d dropped %d", i, d)
		}
	}
	if got := countRequests(t, dbs[0]); got != 2*per {
		t.Errorf("%d requests stored, want %d", got, 2*per)
	}
}

func TestDuplicateIDDoesNotFailBatch(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	traces := sampleTraces(6)
	dup := traces[3]
	dup.Model = "impostor"
	dup.Attempts = []llm.Attempt{{Backend: "x/y", Class: llm.OK}}
	traces = append(traces, dup, llm.Trace{Start: baseTime}, llm.Trace{Start: baseTime})
	skipped, err := db.writeRequests(ctx, traces, true)
	if err != nil {
		t.Fatalf("writeRequests: %v", err)
	}
	if skipped != 1 {
		t.Errorf("skipped = %d, want 1", skipped)
	}
	// 6 originals plus the two ID-less traces, which get IDs of their own.
	if got := countRequests(t, db); got != 8 {
		t.Errorf("%d requests stored, want 8", got)
	}
	got, err := db.RecentRequests(ctx, RequestQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range got {
		if tr.ID == dup.ID {
			assertTracesEqual(t, []llm.Trace{tr}, []llm.Trace{sampleTrace(3)})
		}
	}
}

func TestPruneRequests(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	const n = 2500 // more than one prune chunk
	if _, err := db.writeRequests(ctx, sampleTraces(n), true); err != nil {
		t.Fatal(err)
	}
	const cut = 2100
	deleted, err := db.PruneRequests(ctx, baseTime.Add(cut*time.Millisecond))
	if err != nil {
		t.Fatalf("PruneRequests: %v", err)
	}
	if deleted != cut {
		t.Errorf("deleted %d, want %d", deleted, cut)
	}
	if got := countRequests(t, db); got != n-cut {
		t.Errorf("%d requests left, want %d", got, n-cut)
	}
	// Attempts of pruned requests go with them.
	wantAttempts := 0
	for i := cut; i < n; i++ {
		wantAttempts += i % 4
	}
	if got := countAttempts(t, db); got != wantAttempts {
		t.Errorf("%d attempts left, want %d ", got, wantAttempts)
	}
	deleted, err = db.PruneRequests(ctx, baseTime.Add(cut*time.Millisecond))
	if err != nil || deleted != 0 {
		t.Errorf("second prune = %d, %v; want 0, nil", deleted, err)
	}
}
