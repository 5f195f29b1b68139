package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"freelane/backend/clock"
	"freelane/backend/llm"
)

// queryTrace is trace i of the query tests: times repeat in runs of
// three, so the tiebreak is exercised, and the sort keys repeat too.
func queryTrace(i int) llm.Trace {
	t := sampleTrace(i)
	t.ID = fmt.Sprintf("req_q%05d", i)
	t.Start = baseTime.Add(time.Duration(i/3) * time.Second)
	t.Latency = time.Duration(i%17) * time.Millisecond
	t.Usage.TotalTokens = (i * 7) % 23
	t.Class, t.Status, t.Error = llm.OK, 200, ""
	switch i % 10 {
	case 3:
		t.Class, t.Status, t.Error = llm.Transient, 502, "upstream said: connection refused"
	case 7:
		t.Class, t.Status, t.Error = llm.Caller, 400, "the prompt has 100% of the 50_000 allowed tokens"
	}
	if n := len(t.Attempts); n > 0 {
		t.Attempts[n-1].Cost = float64(i%5) / 1000
	}
	if i%11 == 0 {
		t.Model, t.Alias = "claude-sonnet-4-5", "claude-*"
	}
	return t
}

// queryFixture stores n query traces in a real SQLite file and returns
// them in write order (seq i+1 is trace i).
func queryFixture(t *testing.T, n int) (*DB, []llm.Trace) {
	t.Helper()
	db := openTestDB(t)
	all := make([]llm.Trace, n)
	for i := range all {
		all[i] = queryTrace(i)
	}
	if _, err := db.writeRequests(context.Background(), all, true); err != nil {
		t.Fatal(err)
	}
	return db, all
}

// sortKey is what the request log sorts trace t by, as stored.
func sortKey(t llm.Trace, s RequestSort) float64 {
	switch s {
	case SortLatency:
		return durationMS(t.Latency)
	case SortTTFT:
		return durationMS(t.TTFT)
	case SortTokens:
		return float64(t.Usage.TotalTokens)
	case SortCost:
		var c float64
		for _, a := range t.Attempts {
			c += a.Cost
		}
		return c
	}
	return float64(t.Start.UnixMilli())
}

// expectedIDs is the order the log must list all (in write order) in:
// by the sort key, ties by write order, both in the direction asked.
func expectedIDs(all []llm.Trace, s RequestSort, asc bool, keep func(llm.Trace) bool) []string {
	type row struct {
		key float64
		seq int
		id  string
	}
	var rows []row
	for i, t := range all {
		if keep != nil && !keep(t) {
			continue
		}
		if s == SortTTFT && t.TTFT == 0 {
			continue
		}
		rows = append(rows, row{sortKey(t, s), i, t.ID})
	}
	slices.SortFunc(rows, func(a, b row) int {
		c := 0
		switch {
		case a.key < b.key:
			c = -1
		case a.key > b.key:
			c = 1
		default:
			c = a.seq - b.seq
		}
		if !asc {
			c = -c
		}
		return c
	})
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	return ids
}

// pageAll follows the cursors of q to the end and returns every id in
// the order the pages gave them.
func pageAll(t *testing.T, db *DB, q RequestQuery) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the cursors never end")
		}
		page, err := db.QueryRequests(context.Background(), q)
		if err != nil {
			t.Fatalf("QueryRequests(%+v): %v", q, err)
		}
		if len(page.Traces) > max(q.Limit, 1) {
			t.Fatalf("page of %d rows, limit %d", len(page.Traces), q.Limit)
		}
		for _, tr := range page.Traces {
			ids = append(ids, tr.ID)
		}
		if page.Next == "" {
			return ids
		}
		if len(page.Traces) != q.Limit {
			t.Fatalf("a page of %d rows (limit %d) has a next cursor", len(page.Traces), q.Limit)
		}
		q.Cursor = page.Next
	}
}

func TestQueryRequestsPagesEverySortWithoutGapsOrRepeats(t *testing.T) {
	db, all := queryFixture(t, 200)
	for _, s := range RequestSorts {
		for _, asc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s asc=%v", s, asc), func(t *testing.T) {
				got := pageAll(t, db, RequestQuery{Sort: s, Asc: asc, Limit: 7})
				want := expectedIDs(all, s, asc, nil)
				if !slices.Equal(got, want) {
					t.Fatalf("paged %d ids, want %d in order:\n got %v\nwant %v", len(got), len(want), head(got), head(want))
				}
			})
		}
	}
}

func head(ids []string) []string { return ids[:min(len(ids), 12)] }

func TestQueryRequestsFilters(t *testing.T) {
	db, all := queryFixture(t, 200)
	yes, no := true, false
	from, to := all[30].Start, all[90].Start
	cases := []struct {
		name string
		q    RequestQuery
		keep func(llm.Trace) bool
	}{
		{"chain", RequestQuery{Chain: "chat-smart"}, func(t llm.Trace) bool { return t.Chain == "chat-smart" }},
		{"backend", RequestQuery{Backend: testBackends[1]}, func(t llm.Trace) bool { return t.Backend == testBackends[1] }},
		{"class", RequestQuery{Class: llm.Caller}, func(t llm.Trace) bool { return t.Class == llm.Caller }},
		{"dialect", RequestQuery{Dialect: llm.DialectGemini}, func(t llm.Trace) bool { return t.Dialect == llm.DialectGemini }},
		{"status 5xx", RequestQuery{Status: "5xx"}, func(t llm.Trace) bool { return t.Status >= 500 }},
		{"status 2xx", RequestQuery{Status: "2xx"}, func(t llm.Trace) bool { return t.Status == 200 }},
		{"cache hit", RequestQuery{Cache: llm.CacheHit}, func(t llm.Trace) bool { return t.Cache == llm.CacheHit }},
		{"cache none", RequestQuery{Cache: CacheNone}, func(t llm.Trace) bool { return t.Cache == "" }},
		{"streamed", RequestQuery{Stream: &yes}, func(t llm.Trace) bool { return t.Stream }},
		{"not streamed", RequestQuery{Stream: &no}, func(t llm.Trace) bool { return !t.Stream }},
		{"session", RequestQuery{Session: all[1].Session}, func(t llm.Trace) bool { return t.Session == all[1].Session }},
		{"id", RequestQuery{ID: all[42].ID}, func(t llm.Trace) bool { return t.ID == all[42].ID }},
		{"range", RequestQuery{From: from, To: to}, func(t llm.Trace) bool { return !t.Start.Before(from) && t.Start.Before(to) }},
		{"text in error", RequestQuery{Text: "CONNECTION refused"}, func(t llm.Trace) bool { return strings.Contains(t.Error, "connection refused") }},
		{"text in alias", RequestQuery{Text: "claude-*"}, func(t llm.Trace) bool { return t.Alias == "claude-*" }},
		{"text in model", RequestQuery{Text: "sonnet"}, func(t llm.Trace) bool { return strings.Contains(t.Model, "sonnet") }},
		{"text in backend", RequestQuery{Text: "qwen-3"}, func(t llm.Trace) bool { return strings.Contains(t.Backend, "qwen-3") }},
		// The pattern's own wildcards match only themselves.
		{"percent is literal", RequestQuery{Text: "100%"}, func(t llm.Trace) bool { return strings.Contains(t.Error, "100%") }},
		{"underscore is literal", RequestQuery{Text: "50_0"}, func(t llm.Trace) bool { return strings.Contains(t.Error, "50_0") }},
		{"no match", RequestQuery{Text: "nothing like this"}, func(llm.Trace) bool { return false }},
		{"combined", RequestQuery{Status: "5xx", Stream: &no, Sort: SortLatency},
			func(t llm.Trace) bool { return t.Status >= 500 && !t.Stream }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Limit = 9
			got := pageAll(t, db, tc.q)
			want := expectedIDs(all, cmpSort(tc.q.Sort), tc.q.Asc, tc.keep)
			if tc.name != "no match" && len(want) == 0 {
				t.Fatal("the fixture has no matching trace; the case tests nothing")
			}
			if !slices.Equal(got, want) {
				t.Fatalf("got %d ids, want %d:\n got %v\nwant %v", len(got), len(want), head(got), head(want))
			}
		})
	}
}

func cmpSort(s RequestSort) RequestSort {
	if s == "" {
		return SortTime
	}
	return s
}

func TestQueryRequestsRefusesForeignCursors(t *testing.T) {
	db, _ := queryFixture(t, 20)
	ctx := context.Background()
	page, err := db.QueryRequests(ctx, RequestQuery{Limit: 5, Sort: SortLatency})
	if err != nil || page.Next == "" {
		t.Fatalf("first page: %v, next %q", err, page.Next)
	}
	for name, q := range map[string]RequestQuery{
		"garbage":       {Cursor: "not a cursor!"},
		"json garbage":  {Cursor: "e30"},
		"another sort":  {Cursor: page.Next, Sort: SortTokens},
		"another order": {Cursor: page.Next, Sort: SortLatency, Asc: true},
		"too long":      {Cursor: strings.Repeat("A", 500)},
	} {
		if _, err := db.QueryRequests(ctx, q); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%s: err %v, want ErrBadCursor", name, err)
		}
	}
	if _, err := db.QueryRequests(ctx, RequestQuery{Sort: "speed"}); err == nil {
		t.Error("an unknown sort was accepted")
	}
}

func TestQueryRequestsLimits(t *testing.T) {
	db, _ := queryFixture(t, 1200)
	ctx := context.Background()
	for limit, want := range map[int]int{0: defaultQueryLimit, 5: 5, 5000: maxQueryLimit} {
		page, err := db.QueryRequests(ctx, RequestQuery{Limit: limit})
		if err != nil || len(page.Traces) != want {
			t.Errorf("limit %d: %d rows, %v; want %d", limit, len(page.Traces), err, want)
		}
	}
}

// secretRedactor stands for the redactor of package redact, which knows
// the configured keys.
type secretRedactor string

func (s secretRedactor) String(v string) string {
	return strings.ReplaceAll(v, string(s), "[redacted key]")
}

func TestBodiesAreRedactedCutSearchedAndPruned(t *testing.T) {
	const secret = "sk-live-0123456789abcdefghij"
	ctx := context.Background()
	path := t.TempDir() + "/freelane.db"
	db, err := Open(ctx, path, WithRedactor(secretRedactor(secret)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := NewRequestLog(db, LogOptions{Logger: quietLogger})
	wait := startRun(t, ctx, l)

	old, fresh := queryTrace(1), queryTrace(2)
	old.Start = baseTime.Add(-48 * time.Hour)
	l.Record(old)
	l.Record(fresh)
	prompt := `{"messages":[{"role":"user","content":"my key is ` + secret + `; find the zebra"}]}`
	long := strings.Repeat("é", 600) // 1200 bytes, cut on a character boundary
	l.RecordBodies(Bodies{RequestID: fresh.ID, Start: fresh.Start, Request: []byte(prompt), Answer: []byte(long), Max: 1001})
	l.RecordBodies(Bodies{RequestID: old.ID, Start: old.Start, Request: []byte("old prompt"), Answer: []byte("old answer"), Max: 1001})
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}

	b, found, err := db.RequestBodies(ctx, fresh.ID)
	if err != nil || !found {
		t.Fatalf("RequestBodies: %v, found %v", err, found)
	}
	if strings.Contains(b.Request, secret) || !strings.Contains(b.Request, "[redacted key]; find the zebra") {
		t.Errorf("stored request %q: the key must be redacted and the rest kept", b.Request)
	}
	if !strings.HasSuffix(b.Answer, CutMarker) || len(b.Answer) > 1001+len(CutMarker) || !strings.HasPrefix(b.Answer, "éé") {
		t.Errorf("stored answer (%d bytes) is not cut to 1001 bytes with the marker: %q", len(b.Answer), b.Answer[max(0, len(b.Answer)-80):])
	}
	if strings.ContainsRune(strings.TrimSuffix(b.Answer, CutMarker), '\uFFFD') {
		t.Error("the cut split a character")
	}

	// The bodies are searched like the rest of the row.
	page, err := db.QueryRequests(ctx, RequestQuery{Text: "ZEBRA"})
	if err != nil || len(page.Traces) != 1 || page.Traces[0].ID != fresh.ID {
		t.Errorf("search in bodies: %v, %d traces", err, len(page.Traces))
	}

	// Pruning the log prunes its bodies.
	if _, err := db.PruneRequests(ctx, baseTime.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := db.RequestBodies(ctx, old.ID); found {
		t.Error("the pruned request's bodies are still kept")
	}
	if _, found, _ := db.RequestBodies(ctx, fresh.ID); !found {
		t.Error("the kept request lost its bodies")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal"} {
		raw, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), secret) {
			t.Errorf("%s holds the key", f)
		}
	}
}

func TestRecordBodiesIsBounded(t *testing.T) {
	l := NewRequestLog(openTestDB(t), LogOptions{Logger: quietLogger})
	big := make([]byte, maxQueuedBodyBytes/2+1)
	l.RecordBodies(Bodies{RequestID: "a", Request: big})
	l.RecordBodies(Bodies{RequestID: "b", Request: big})
	if l.DroppedBodies() != 1 {
		t.Fatalf("%d bodies dropped, want 1: the queue must hold at most %d bytes", l.DroppedBodies(), maxQueuedBodyBytes)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.bodyBytes.Load() != 0 {
		t.Errorf("%d bytes still counted after the drain", l.bodyBytes.Load())
	}
}

// TestMigrateSchema12SortsOldRowsByCost stores requests at the schema
// before the request log's own cost column: migrating gives them the cost
// of their attempts, so a sort by cost places them among the new ones.
func TestMigrateSchema12SortsOldRowsByCost(t *testing.T) {
	ctx := context.Background()
	const previous = 12
	path := filepath.Join(t.TempDir(), "freelane.db")
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	old := &DB{sql: raw, path: path, clock: clock.Real{}}
	for _, m := range migs {
		if m.Version > previous {
			break
		}
		if err := old.apply(ctx, m, previous); err != nil {
			t.Fatal(err)
		}
	}
	for id, attempts := range map[string]string{
		"dear":  `[{"backend":"a/m","class":"rate_limited","cost":0.25},{"backend":"b/m","class":"ok","cost":0.5}]`,
		"free":  `[{"backend":"a/m","class":"ok"}]`,
		"never": `[]`,
	} {
		if _, err := raw.Exec(`INSERT INTO requests (id, started_at, attempts) VALUES (?, ?, ?)`, id, baseTime.UnixMilli(), attempts); err != nil {
			t.Fatal(err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open of a schema %d database: %v", previous, err)
	}
	defer db.Close()
	mid := queryTrace(1)
	mid.ID, mid.Attempts = "mid", []llm.Attempt{{Backend: "c/m", Class: llm.OK, Cost: 0.5}}
	if _, err := db.writeRequests(ctx, []llm.Trace{mid}, false); err != nil {
		t.Fatal(err)
	}
	page, err := db.QueryRequests(ctx, RequestQuery{Sort: SortCost})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range page.Traces {
		got = append(got, fmt.Sprintf("%s=%g", tr.ID, tr.Cost))
	}
	if want := []string{"dear=0.75", "mid=0.5", "free=0", "never=0"}; !slices.Equal(got[:2], want[:2]) || len(got) != 4 {
		t.Fatalf("by cost after migrating: %v, want %v (the last two in either order of their seq)", got, want)
	}
}
