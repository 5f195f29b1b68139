package pgstore

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"freelane/backend/llm"
	"freelane/backend/store"
)

// logTraces writes traces to the spool through its request log, as the
// router does, with the given bodies, and waits until they are stored.
func logTraces(t *testing.T, spool *store.DB, traces []llm.Trace, bodies []store.Bodies) {
	t.Helper()
	l := store.NewRequestLog(spool, store.LogOptions{})
	for _, tr := range traces {
		l.Record(tr)
	}
	for _, b := range bodies {
		l.RecordBodies(b)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

var logStart = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// teamTrace is request i of instance inst: times repeat in runs of three
// (and across instances), so the tiebreaks are exercised, and every
// filter and sort key takes several values.
func teamTrace(inst string, i int) llm.Trace {
	tr := llm.Trace{
		ID:       fmt.Sprintf("req_%s_%04d", inst, i),
		Start:    logStart.Add(time.Duration(i/3) * time.Second),
		Endpoint: "chat", Path: "/v1/chat/completions",
		Dialect: []llm.Dialect{llm.DialectOpenAI, llm.DialectAnthropic, llm.DialectGemini}[i%3],
		Model:   []string{"auto", "claude-sonnet-4-5", "gpt-5"}[i%3],
		Chain:   []string{"default", "fast"}[i%2],
		Backend: []string{"groq/llama", "cerebras/qwen", "local/qwen"}[i%3],
		Stream:  i%2 == 0,
		Status:  200, Class: llm.OK,
		Latency:  time.Duration(i%17) * time.Millisecond,
		Usage:    llm.Usage{PromptTokens: i % 7, CompletionTokens: i % 5, TotalTokens: (i * 7) % 23},
		Instance: inst,
		Session:  fmt.Sprintf("%016x", i%4),
		Cache:    []llm.CacheOutcome{llm.CacheHit, llm.CacheMiss, ""}[i%3],
		Attempts: []llm.Attempt{{Backend: "groq/llama", Class: llm.OK, Status: 200, Latency: time.Millisecond, Cost: float64(i%5) / 1000}},
		Notes:    []string{fmt.Sprintf("note %d", i)},
	}
	if tr.Stream {
		tr.TTFT = time.Duration(i%11) * time.Millisecond
	}
	switch i % 10 {
	case 3:
		tr.Class, tr.Status, tr.Error = llm.Transient, 502, "upstream said: connection refused"
	case 7:
		tr.Class, tr.Status, tr.Error = llm.Caller, 400, "the prompt has 100% of the 50_000 allowed tokens"
	}
	return tr
}

// pageIDs follows q's cursors through pages of read and returns every
// id in the order the pages gave them.
func pageIDs(t *testing.T, read func(store.RequestQuery) (store.RequestPage, error), q store.RequestQuery) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 500 {
			t.Fatal("the cursors never end")
		}
		page, err := read(q)
		if err != nil {
			t.Fatalf("query %+v: %v", q, err)
		}
		for _, tr := range page.Traces {
			ids = append(ids, tr.ID)
		}
		if page.Next == "" {
			return ids
		}
		q.Cursor = page.Next
	}
}

// queries are the filters and sorts the Requests screen sends.
func queries() []store.RequestQuery {
	yes := true
	var qs []store.RequestQuery
	for _, s := range store.RequestSorts {
		qs = append(qs, store.RequestQuery{Sort: s, Limit: 7}, store.RequestQuery{Sort: s, Asc: true, Limit: 7})
	}
	return append(qs,
		store.RequestQuery{Chain: "fast", Limit: 5},
		store.RequestQuery{Backend: "local/qwen", Status: "2xx", Limit: 5},
		store.RequestQuery{Class: llm.Transient, Limit: 5},
		store.RequestQuery{Dialect: llm.DialectGemini, Stream: &yes, Limit: 5},
		store.RequestQuery{Cache: store.CacheNone, Limit: 5},
		store.RequestQuery{Cache: llm.CacheHit, Session: fmt.Sprintf("%016x", 1), Limit: 5},
		store.RequestQuery{Status: "4xx", Limit: 5},
		store.RequestQuery{Instance: "a", Class: llm.Transient, Limit: 5},
		store.RequestQuery{Text: "CONNECTION", Limit: 5},
		store.RequestQuery{Text: "100%", Limit: 5},
		store.RequestQuery{Text: "50_000", Limit: 5},
		store.RequestQuery{Text: "note 4", Limit: 5},
		store.RequestQuery{Text: "sonnet", Sort: store.SortCost, Limit: 5},
		store.RequestQuery{ID: "req_a_0042"},
		store.RequestQuery{From: logStart.Add(10 * time.Second), To: logStart.Add(20 * time.Second), Sort: store.SortLatency, Limit: 4},
		store.RequestQuery{Before: logStart.Add(30 * time.Second), Limit: 9},
	)
}

// TestRequestLogOnPostgresPagesAsSQLiteDoes ships one instance's request
// log and checks that every query of the Requests screen gives the same
// rows in the same order, page after page, from PostgreSQL as from the
// SQLite file, and that each trace reads back whole.
func TestRequestLogOnPostgresPagesAsSQLiteDoes(t *testing.T) {
	t.Parallel()
	spool, db := openSpool(t), openDB(t, newDSN(t), "a")
	ctx := context.Background()
	var traces []llm.Trace
	for i := range 150 {
		traces = append(traces, teamTrace("a", i))
	}
	logTraces(t, spool, traces, nil)
	if _, err := NewShipper(spool, db, ShipOptions{Batch: 40}).Ship(ctx); err != nil {
		t.Fatal(err)
	}
	local := func(q store.RequestQuery) (store.RequestPage, error) { return spool.QueryRequests(ctx, q) }
	shared := func(q store.RequestQuery) (store.RequestPage, error) { return db.QueryRequests(ctx, q) }
	for _, q := range queries() {
		want, got := pageIDs(t, local, q), pageIDs(t, shared, q)
		if len(want) == 0 && q.ID == "" {
			t.Errorf("query %+v matches nothing in SQLite: the fixture does not exercise it", q)
		}
		if !slices.Equal(got, want) {
			t.Errorf("query %+v:\n PostgreSQL %v\n     SQLite %v", q, got, want)
		}
	}
	for _, id := range []string{"req_a_0000", "req_a_0003", "req_a_0149"} {
		want, _, err := spool.RequestByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, found, err := db.RequestByID(ctx, id)
		if err != nil || !found {
			t.Fatalf("RequestByID(%s) = found %v, %v", id, found, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s reads back from PostgreSQL as\n %+v\nnot as from SQLite\n %+v", id, got, want)
		}
	}
	if _, found, err := db.RequestByID(ctx, "req_none"); found || err != nil {
		t.Errorf("RequestByID of an unknown id = found %v, %v", found, err)
	}
}

// TestTeamRequestLogPagesEveryInstancesRows ships two instances' logs,
// whose rows have the same seqs and times, and checks that a page walk
// from either instance's connection lists every row of both once, ties
// in a stable order, with each row naming its instance; and that bodies,
// text PostgreSQL's text refuses, and the prune work.
func TestTeamRequestLogPagesEveryInstancesRows(t *testing.T) {
	t.Parallel()
	dsn := newDSN(t)
	ctx := context.Background()
	spoolA, spoolB := openSpool(t), openSpool(t)
	dbA, dbB := openDB(t, dsn, "a"), openDB(t, dsn, "b")
	var a, b []llm.Trace
	for i := range 40 {
		a, b = append(a, teamTrace("a", i)), append(b, teamTrace("b", i))
	}
	// A NUL and bytes that are not UTF-8, as an upstream's error may hold.
	b[5].Error = "bad \x00 byte \xff\xfe here"
	// A row written before the instance had a name.
	b[6].Instance = ""
	logTraces(t, spoolA, a, []store.Bodies{{RequestID: "req_a_0001", Start: a[1].Start,
		Request: []byte(`{"messages":[{"role":"user","content":"find the PELICAN"}]}`), Answer: []byte(`{"content":"here"}`), Max: 1 << 16}})
	logTraces(t, spoolB, b, nil)
	for _, s := range []*Shipper{NewShipper(spoolA, dbA, ShipOptions{Batch: 7}), NewShipper(spoolB, dbB, ShipOptions{Batch: 7})} {
		if n, err := s.Ship(ctx); err != nil || n < 40+40 {
			// Each instance ships its request rows and their ledger rows.
			t.Fatalf("Ship = %d, %v", n, err)
		}
	}
	for _, db := range []*DB{dbA, dbB} {
		read := func(q store.RequestQuery) (store.RequestPage, error) { return db.QueryRequests(ctx, q) }
		ids := pageIDs(t, read, store.RequestQuery{Limit: 3})
		if len(ids) != 80 || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != 80 {
			t.Fatalf("%s: the pages listed %d ids (%d distinct), want 80 once each", db.instance, len(ids), len(slices.Compact(slices.Sorted(slices.Values(ids)))))
		}
		// Newest first, and within a millisecond b before a, each
		// instance's rows newest first.
		if ids[0] != "req_b_0039" || ids[1] != "req_a_0039" || ids[len(ids)-1] != "req_a_0000" {
			t.Errorf("%s: the order begins %v and ends %s", db.instance, ids[:4], ids[len(ids)-1])
		}
		if again := pageIDs(t, read, store.RequestQuery{Limit: 80}); !slices.Equal(again, ids) {
			t.Errorf("%s: one page of 80 lists another order than pages of 3", db.instance)
		}
	}
	if ids := pageIDs(t, func(q store.RequestQuery) (store.RequestPage, error) { return dbA.QueryRequests(ctx, q) },
		store.RequestQuery{Instance: "b", Status: "2xx", Limit: 6}); len(ids) != 32 || !strings.HasPrefix(ids[0], "req_b_") || !strings.HasPrefix(ids[31], "req_b_") {
		t.Errorf("b's answered requests, from a's connection: %d ids from %v to %v; want b's 32", len(ids), ids[:1], ids[len(ids)-1:])
	}
	page, err := dbA.QueryRequests(ctx, store.RequestQuery{Text: "pelican"})
	if err != nil || len(page.Traces) != 1 || page.Traces[0].ID != "req_a_0001" {
		t.Fatalf("a search of the bodies from PostgreSQL = %+v, %v; want req_a_0001", page.Traces, err)
	}
	bodies, found, err := dbB.RequestBodies(ctx, "req_a_0001")
	if err != nil || !found || bodies.Answer != `{"content":"here"}` {
		t.Fatalf("instance b reads a's bodies as %+v, %v, %v", bodies, found, err)
	}
	odd, found, err := dbA.RequestByID(ctx, "req_b_0005")
	if err != nil || !found || odd.Error != "bad \uFFFD byte \uFFFD here" {
		t.Fatalf("the row with a NUL and bad UTF-8 reads back as %q, %v, %v", odd.Error, found, err)
	}
	unnamed, _, err := dbA.RequestByID(ctx, "req_b_0006")
	if err != nil || unnamed.Instance != "b" {
		t.Fatalf("a row written before its instance had a name is kept under %q, %v; want b", unnamed.Instance, err)
	}

	// The prune deletes rows and bodies that started before its cutoff;
	// shipping again copies none of them back.
	n, err := dbB.PruneRequests(ctx, logStart.Add(5*time.Second))
	if err != nil || n != 2*15 {
		t.Fatalf("PruneRequests = %d, %v; want 30", n, err)
	}
	if _, found, _ := dbA.RequestBodies(ctx, "req_a_0001"); found {
		t.Error("the prune left the bodies of a pruned request")
	}
	again := NewShipper(spoolA, dbA, ShipOptions{})
	if _, err := again.Ship(ctx); err != nil {
		t.Fatal(err)
	}
	read := func(q store.RequestQuery) (store.RequestPage, error) { return dbA.QueryRequests(ctx, q) }
	if ids := pageIDs(t, read, store.RequestQuery{Limit: 100}); len(ids) != 50 {
		t.Errorf("after the prune and another ship the team's log holds %d requests, want 50", len(ids))
	}
}
