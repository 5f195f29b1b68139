package gateway_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/api"
	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/llm"
)

// detailOf waits for the request log to hold a request and returns it as
// GET /api/requests/{id} answers.
func detailOf(t *testing.T, e *env, id string, ready func(api.RequestDetail) bool) api.RequestDetail {
	t.Helper()
	var d api.RequestDetail
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := e.do("GET", "/api/requests/"+id, "", nil)
		if r.status == http.StatusOK {
			if err := json.Unmarshal(r.body, &d); err != nil {
				t.Fatalf("GET /api/requests/%s: %v %s", id, err, r.body)
			}
			if ready(d) {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /api/requests/%s never got ready: %d %.500s", id, r.status, r.body)
		}
	}
}

// TestBodyLoggingKeepsRedactedBodies asks with body logging on, for a
// whole answer and a stream, with the provider's key pasted into the
// prompt: the bodies are kept and searchable, the key is in neither the
// answer to the dashboard nor the database file.
func TestBodyLoggingKeepsRedactedBodies(t *testing.T) {
	e, _ := attackEnv(t, func(c *config.Config) {
		c.RequestLog = config.RequestLog{Bodies: true, MaxBodyKB: 1}
	})
	e.up.Set("mok", fakeupstream.Behavior{Chunks: []string{"the ", "aardvark ", "answer"}})
	e.up.Set("mstream", fakeupstream.Behavior{Chunks: []string{"streamed ", "pangolin"}})
	prompt := func(model string, stream bool) string {
		return `{"model":"paid/` + model + `","stream":` + map[bool]string{true: "true", false: "false"}[stream] +
			`,"messages":[{"role":"user","content":"my key is ` + plantedKey + `, tell me about the okapi ` + strings.Repeat("x", 2000) + `"}]}`
	}
	whole := e.do("POST", "/v1/chat/completions", prompt("mok", false), nil)
	streamed := e.do("POST", "/v1/chat/completions", prompt("mstream", true), nil)
	for _, r := range []reply{whole, streamed} {
		if r.status != http.StatusOK || r.header.Get("X-FreeLane-Request-Id") == "" {
			t.Fatalf("chat: %d %s", r.status, r.body)
		}
	}
	for _, c := range []struct {
		r      reply
		answer string
	}{{whole, "the aardvark answer"}, {streamed, "pangolin"}} {
		id := c.r.header.Get("X-FreeLane-Request-Id")
		d := detailOf(t, e, id, func(d api.RequestDetail) bool { return d.Bodies != nil })
		if !d.BodyLogging || d.ID != id {
			t.Errorf("%s: body_logging %v, id %q", id, d.BodyLogging, d.ID)
		}
		if !strings.Contains(d.Bodies.Request, "tell me about the okapi") || strings.Contains(d.Bodies.Request, "PLANTED") {
			t.Errorf("%s: kept request %.300q: want the prompt without the key", id, d.Bodies.Request)
		}
		if !strings.HasSuffix(d.Bodies.Request, "[… cut: longer than request_log.max_body_kb]") || len(d.Bodies.Request) > 1024+64 {
			t.Errorf("%s: kept request of %d bytes, want it cut to 1 KiB with the marker", id, len(d.Bodies.Request))
		}
		if !strings.Contains(d.Bodies.Answer, c.answer) {
			t.Errorf("%s: kept answer %.300q, want what the client got (%q)", id, d.Bodies.Answer, c.answer)
		}
		// The search finds a request by its request's text and by its
		// answer's.
		for _, q := range []string{"okapi", strings.Fields(c.answer)[len(strings.Fields(c.answer))-1]} {
			var list []llm.Trace
			r := e.do("GET", "/api/requests?q="+q, "", nil)
			if err := json.Unmarshal(r.body, &list); err != nil || r.status != http.StatusOK {
				t.Fatalf("search %q: %d %s", q, r.status, r.body)
			}
			found := false
			for _, tr := range list {
				found = found || tr.ID == id
			}
			if !found {
				t.Errorf("search %q does not find %s", q, id)
			}
		}
	}
	// A failed request names its id too, and its bodies are kept: the
	// error the client got is its answer.
	e.up.Set("m400", fakeupstream.Behavior{Status: 400, Code: "invalid_request"})
	failed := e.do("POST", "/v1/chat/completions", prompt("m400", false), nil)
	fid := failed.header.Get("X-FreeLane-Request-Id")
	if failed.status != http.StatusBadRequest || fid == "" {
		t.Fatalf("failed chat: %d, id %q: %s", failed.status, fid, failed.body)
	}
	fd := detailOf(t, e, fid, func(d api.RequestDetail) bool { return d.Bodies != nil })
	if fd.Status != http.StatusBadRequest || !strings.Contains(fd.Bodies.Answer, "error") || !strings.Contains(fd.Bodies.Request, "okapi") {
		t.Errorf("failed request: status %d, kept %.200q / %.200q", fd.Status, fd.Bodies.Request, fd.Bodies.Answer)
	}
	if err := e.g.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "freelane.db*"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), plantedWord) {
			t.Errorf("%s holds the key", f)
		}
		if strings.HasSuffix(f, ".db") && !strings.Contains(string(raw), "okapi") && len(files) == 1 {
			t.Errorf("%s holds no prompt: the test looked in the wrong place", f)
		}
	}
}

// TestBodyLoggingIsOffByDefault keeps no bodies and says so.
func TestBodyLoggingIsOffByDefault(t *testing.T) {
	e, _ := attackEnv(t, nil)
	r := e.do("POST", "/v1/chat/completions", `{"model":"paid/mok","messages":[{"role":"user","content":"the quokka"}]}`, nil)
	id := r.header.Get("X-FreeLane-Request-Id")
	if r.status != http.StatusOK || id == "" {
		t.Fatalf("chat: %d %s", r.status, r.body)
	}
	d := detailOf(t, e, id, func(api.RequestDetail) bool { return true })
	if d.BodyLogging || d.Bodies != nil {
		t.Errorf("body logging off: body_logging %v, bodies %+v", d.BodyLogging, d.Bodies)
	}
	// Nor can the search find the prompt.
	time.Sleep(400 * time.Millisecond)
	if r := e.do("GET", "/api/requests?q=quokka", "", nil); string(r.body) != "[]" {
		t.Errorf("search for the prompt's text found %s", r.body)
	}
}

// TestRequestLogQuery pages, sorts, searches and filters the request log
// through the admin API, and refuses what it cannot read with a sentence
// naming the parameter.
func TestRequestLogQuery(t *testing.T) {
	e, _ := attackEnv(t, nil)
	var ids []string
	for i := range 7 {
		model := "paid/mok"
		if i%3 == 2 {
			model = "paid/mstream"
		}
		r := e.do("POST", "/v1/chat/completions", chat(model, i%3 == 2), nil)
		if r.status != http.StatusOK {
			t.Fatalf("chat: %d %s", r.status, r.body)
		}
		ids = append(ids, r.header.Get("X-FreeLane-Request-Id"))
		e.clock.Advance(time.Second)
	}
	list := func(query string) ([]llm.Trace, reply) {
		t.Helper()
		var out []llm.Trace
		r := e.do("GET", "/api/requests"+query, "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET /api/requests%s: %d %s", query, r.status, r.body)
		}
		if err := json.Unmarshal(r.body, &out); err != nil {
			t.Fatal(err)
		}
		return out, r
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if all, _ := list(""); len(all) == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the requests were not stored")
		}
	}
	// A request id finds exactly that request.
	if got, _ := list("?q=" + ids[3]); len(got) != 1 || got[0].ID != ids[3] {
		t.Errorf("q=<id> found %d requests", len(got))
	}
	// Pages of 3 follow the cursor to the end, newest first.
	var paged []string
	query := "?limit=3"
	for range 5 {
		page, r := list(query)
		for _, tr := range page {
			paged = append(paged, tr.ID)
		}
		next := r.header.Get(api.NextCursorHeader)
		if next == "" {
			break
		}
		query = "?limit=3&cursor=" + next
	}
	if len(paged) != 7 || paged[0] != ids[6] || paged[6] != ids[0] {
		t.Errorf("paged %v, want %v newest first", paged, ids)
	}
	if got, _ := list("?instance=office-9"); len(got) != 0 {
		t.Errorf("instance=office-9 on a single machine: %d requests, want none", len(got))
	}
	if got, _ := list("?stream=true"); len(got) != 2 {
		t.Errorf("stream=true: %d requests, want 2", len(got))
	}
	if got, _ := list("?sort=latency&order=asc&status=2xx&dialect=openai"); len(got) != 7 {
		t.Errorf("sorted and filtered: %d requests, want 7", len(got))
	}
	if got, _ := list("?q=mstream"); len(got) != 2 {
		t.Errorf("q=mstream: %d requests, want 2", len(got))
	}
	if got, _ := list("?from=" + e.clock.Now().Add(-3*time.Second).UTC().Format(time.RFC3339)); len(got) != 3 {
		t.Errorf("from 3 s ago: %d requests, want 3", len(got))
	}
	for query, param := range map[string]string{
		"?limit=0":         "limit",
		"?limit=1001":      "limit",
		"?sort=speed":      "sort",
		"?order=up":        "order",
		"?status=6xx":      "status",
		"?class=fine":      "class",
		"?dialect=klingon": "dialect",
		"?cache=maybe":     "cache",
		"?stream=perhaps":  "stream",
		"?session=xyz":     "session",
		"?from=yesterday":  "from",
		"?from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z": "to",
		"?cursor=bogus":                         "cursor",
		"?q=" + strings.Repeat("a", 201):        "q",
		"?chain=a&chain=b":                      "chain",
		"?instance=" + strings.Repeat("i", 257): "instance",
		"?colour=red":                           "colour",
	} {
		r := e.do("GET", "/api/requests"+query, "", nil)
		if r.status != http.StatusBadRequest || r.param() != param {
			t.Errorf("GET /api/requests%.60s: %d param %q, want 400 for %s: %s", query, r.status, r.param(), param, r.body)
			continue
		}
		var body struct {
			Error struct{ Message string } `json:"error"`
		}
		_ = json.Unmarshal(r.body, &body)
		if m := body.Error.Message; m == "" || strings.Contains(m, "strconv") || strings.Contains(m, "parsing time") {
			t.Errorf("GET /api/requests%.60s: message %q is not a sentence of FreeLane's", query, m)
		}
	}
}
