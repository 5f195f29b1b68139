package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	// The sqlite3 driver, to read the database file as it is.
	_ "github.com/mattn/go-sqlite3"

	"freelane/backend/config"
	"freelane/backend/tier"
)

// A hostile upstream, speaking OpenAI's chat completions: it answers every
// request, streamed or not, with the same id "resp_fixed", and writes the
// key it was sent into its answer. FreeLane translates its answers for
// Responses API clients.

const hostileKey = "sk-hostile-upstream-key-0123456789abcdef"

type hostileUpstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	// bodies are the request bodies it was sent, in order.
	bodies []string
}

func startHostile(t *testing.T) *hostileUpstream {
	t.Helper()
	h := &hostileUpstream{}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hostileUpstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, string(body))
	n := len(h.bodies)
	h.mu.Unlock()
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	text := fmt.Sprintf("answer %d; the key I was given is %s", n, key)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_fixed","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`, text)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, chunk := range []string{
		fmt.Sprintf(`{"id":"resp_fixed","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":%q},"finish_reason":null}]}`, text),
		`{"id":"resp_fixed","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"id":"resp_fixed","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`,
	} {
		fmt.Fprintf(w, "data: %s\n\n", chunk)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (h *hostileUpstream) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.bodies)
}

func (h *hostileUpstream) last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bodies[len(h.bodies)-1]
}

// hostileConfig routes the chain "h" to the hostile upstream only.
func hostileConfig(url string) func(*config.Config) {
	return func(cfg *config.Config) {
		cfg.Providers = []config.Provider{{Name: "hostile", Kind: config.KindOpenAI, Tier: tier.Own, BaseURL: url + "/v1",
			APIKey: hostileKey, Models: []config.Model{{ID: "m", Context: 1000000}}, Timeouts: fastTimeouts}}
		cfg.Chains = []config.Chain{{Name: "h", Backends: []string{"hostile/m"}}}
	}
}

var freelaneID = regexp.MustCompile(`^resp_[0-9a-f]{32}$`)

// respond sends a Responses request and returns the response id the client
// was given: from the body, or from a stream, where every event that
// carries the response must carry the same id.
func (e *env) respond(body string, header map[string]string) (string, reply) {
	e.t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	if e.token != "" {
		h["Authorization"] = "Bearer " + e.token
	}
	for k, v := range header {
		h[k] = v
	}
	r := e.raw(http.MethodPost, "/v1/responses", body, h)
	if r.status != http.StatusOK {
		e.t.Fatalf("POST /v1/responses %s: %d %s", body, r.status, r.body)
	}
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		var resp struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(r.body, &resp); err != nil {
			e.t.Fatalf("answer %s: %v", r.body, err)
		}
		return resp.ID, r
	}
	id := ""
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type     string `json:"type"`
			Response *struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			e.t.Fatalf("event %s: %v", data, err)
		}
		if ev.Response == nil {
			continue
		}
		if id == "" {
			id = ev.Response.ID
		}
		if ev.Response.ID != id {
			e.t.Fatalf("%s has id %q, the stream began with %q", ev.Type, ev.Response.ID, id)
		}
	}
	if strings.Contains(string(r.body), "resp_fixed") {
		e.t.Errorf("the upstream's id reached the client:\n%s", r.body)
	}
	return id, r
}

// An upstream that gives every answer the same id does not make two
// conversations one: each gets an id FreeLane made, streamed or not, and
// continuing each by its id sends that conversation's own history.
func TestResponsesIDsAreFreeLanesNotTheUpstreams(t *testing.T) {
	up := startHostile(t)
	e := newEnv(t, hostileConfig(up.srv.URL))
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			e.t = t
			req := func(extra string) string {
				return fmt.Sprintf(`{"model":"h","stream":%v,%s}`, stream, extra)
			}
			idA, _ := e.respond(req(`"input":"I am conversation A"`), nil)
			idB, _ := e.respond(req(`"input":"I am conversation B"`), nil)
			for _, id := range []string{idA, idB} {
				if !freelaneID.MatchString(id) {
					t.Fatalf("response id %q is not one FreeLane made", id)
				}
			}
			if idA == idB {
				t.Fatalf("two conversations share the id %s", idA)
			}
			for _, c := range []struct{ id, own, other string }{{idA, "conversation A", "conversation B"}, {idB, "conversation B", "conversation A"}} {
				next, _ := e.respond(req(`"previous_response_id":"`+c.id+`","input":"go on"`), nil)
				sent := up.last()
				if !strings.Contains(sent, c.own) || strings.Contains(sent, c.other) || !strings.Contains(sent, "go on") {
					t.Errorf("continuing %s sent %s", c.id, sent)
				}
				if next == c.id || !freelaneID.MatchString(next) {
					t.Errorf("the continued turn has id %q", next)
				}
				// What is stored is filed under the id the client got.
				got := e.raw(http.MethodGet, "/v1/responses/"+next, "", nil)
				var stored struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(got.body, &stored); got.status != http.StatusOK || stored.ID != next {
					t.Errorf("GET %s: %d %s", next, got.status, got.body)
				}
			}
			if r := e.raw(http.MethodGet, "/v1/responses/resp_fixed", "", nil); r.status != http.StatusNotFound {
				t.Errorf("the upstream's id finds a stored response: %d %s", r.status, r.body)
			}
		})
	}
}

// A stored response is read and continued only by the caller that created
// it; for another caller it does not exist, in the very words an unknown id
// gets. The other caller is a program of another account (nobody) that
// holds the inbound token, so the /v1 guard lets it in and only the
// stored answer's owner keeps it out; it reads and continues what it
// stores itself. Without a token, and on a system that does not tell
// accounts apart, the holder of the token is one caller and everybody
// else another.
func TestResponsesStoredAnswerIsOnlyForItsCaller(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running a client as another account needs root")
	}
	up := startHostile(t)
	e := newEnv(t, func(c *config.Config) {
		hostileConfig(up.srv.URL)(c)
		c.Server.Token = "inbound-token-0123456789abcdef"
	})
	id, _ := e.respond(`{"model":"h","input":"a private question"}`, nil)
	auth := map[string]string{"Authorization": "Bearer " + e.token, "Content-Type": "application/json"}
	waitStored := func(id string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			r := e.raw(http.MethodGet, "/v1/responses/"+id, "", auth)
			if r.status == http.StatusOK {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the creator cannot read its response: %d %s", r.status, r.body)
			}
			time.Sleep(20 * time.Millisecond) // the response store's writer
		}
	}
	waitStored(id)

	const unknown = "resp_00000000000000000000000000000000"
	cont := func(prev string) string {
		return `{"model":"h","previous_response_id":"` + prev + `","input":"what did I ask?"}`
	}
	compact := func(prev string) string {
		return `{"model":"h","previous_response_id":"` + prev + `","input":"compact"}`
	}
	n := up.count()
	got := asAccount(t, nobodyUID,
		peerRequest{Method: http.MethodGet, URL: e.at("/v1/responses/" + id), Header: auth},
		peerRequest{Method: http.MethodGet, URL: e.at("/v1/responses/" + unknown), Header: auth},
		peerRequest{Method: http.MethodPost, URL: e.at("/v1/responses"), Body: cont(id), Header: auth},
		peerRequest{Method: http.MethodPost, URL: e.at("/v1/responses"), Body: cont(unknown), Header: auth},
		peerRequest{Method: http.MethodPost, URL: e.at("/v1/responses/compact"), Body: compact(id), Header: auth},
		peerRequest{Method: http.MethodPost, URL: e.at("/v1/responses/compact"), Body: compact(unknown), Header: auth},
		peerRequest{Method: http.MethodPost, URL: e.at("/v1/responses"), Body: `{"model":"h","input":"nobody's own question"}`, Header: auth},
	)
	for i, what := range []string{"GET", "previous_response_id", "compact"} {
		theirs, missing := got[2*i], got[2*i+1]
		if theirs.Status != http.StatusNotFound || theirs.Status != missing.Status ||
			theirs.Body != strings.ReplaceAll(missing.Body, unknown, id) {
			t.Errorf("%s by another account: %d %s\nan unknown id gets: %d %s", what, theirs.Status, theirs.Body, missing.Status, missing.Body)
		}
	}
	if strings.Contains(got[0].Body+got[2].Body+got[4].Body, "private question") {
		t.Errorf("another account saw the question")
	}
	if c := up.count(); c != n+1 {
		t.Errorf("the upstream got %d requests from the other account, want only its own question: %s", c-n, up.last())
	}

	// The other account's own answer is its own: it reads it, and this
	// account, token or not, does not.
	var theirs struct{ ID string }
	if err := json.Unmarshal([]byte(got[6].Body), &theirs); got[6].Status != http.StatusOK || err != nil || theirs.ID == "" {
		t.Fatalf("nobody storing an answer: %d %s", got[6].Status, got[6].Body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := asAccount(t, nobodyUID, peerRequest{Method: http.MethodGet, URL: e.at("/v1/responses/" + theirs.ID), Header: auth})[0]
		if r.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nobody reading its own answer: %d %s", r.Status, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := e.raw(http.MethodGet, "/v1/responses/"+theirs.ID, "", auth); r.status != http.StatusNotFound {
		t.Errorf("this account reading nobody's answer: %d %s", r.status, r.body)
	}

	// This account reads and continues what it stored.
	if _, r := e.respond(`{"model":"h","previous_response_id":"`+id+`","input":"again"}`, nil); !strings.Contains(up.last(), "a private question") {
		t.Fatalf("continuing own: %s", r.body)
	}
}

// dbFiles reads the database file and its write-ahead log as they are on
// disk.
func dbFiles(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	for _, name := range []string{"freelane.db", "freelane.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// An upstream that writes the provider's key into its answers does not get
// it stored: the response objects and conversations FreeLane keeps pass
// through the redactor, so neither the rows nor the file hold the key.
func TestResponsesStoredRowsHoldNoKey(t *testing.T) {
	up := startHostile(t)
	e := newEnv(t, hostileConfig(up.srv.URL))
	id1, r1 := e.respond(`{"model":"h","input":"first"}`, nil)
	// The client's copy is redacted too; the marker shows the upstream
	// did echo its key, so the rows below have one to hide.
	if strings.Contains(string(r1.body), hostileKey) || !strings.Contains(string(r1.body), "[redacted key]") {
		t.Fatalf("the upstream's echo of its key, as the client got it: %s", r1.body)
	}
	id2, _ := e.respond(`{"model":"h","stream":true,"previous_response_id":"`+id1+`","input":"second"}`, nil)
	// The client's own input may hold a key too.
	_, _ = e.respond(`{"model":"h","previous_response_id":"`+id2+`","input":"my key is `+hostileKey+`"}`, nil)
	got := e.raw(http.MethodGet, "/v1/responses/"+id2, "", nil)
	if got.status != http.StatusOK || strings.Contains(string(got.body), hostileKey) || !strings.Contains(string(got.body), "[redacted key]") {
		t.Errorf("GET %s: %d %s", id2, got.status, got.body)
	}
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(e.dir, "freelane.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows, withKey int
	if err := db.QueryRow(`SELECT count(*), coalesce(sum(instr(response, ?) > 0 OR instr(items, ?) > 0), 0) FROM responses`, hostileKey, hostileKey).Scan(&rows, &withKey); err != nil {
		t.Fatal(err)
	}
	if rows != 3 || withKey != 0 {
		t.Errorf("%d stored rows, %d of them with the key", rows, withKey)
	}
	if bytes.Contains(dbFiles(t, e.dir), []byte(hostileKey)) {
		t.Error("the database file holds the upstream's key")
	}
}

// storedResponses counts the stored responses in the database file,
// read beside the running gateway.
func storedResponses(t *testing.T, dir string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "freelane.db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM responses`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitForStore(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// requests.response_retention_days deletes stored responses once the
// clock passes it, from the file itself, not only from what GET finds.
func TestResponsesRetentionPrunesWhenTimeMoves(t *testing.T) {
	up := startHostile(t)
	e := newEnv(t, func(cfg *config.Config) {
		hostileConfig(up.srv.URL)(cfg)
		cfg.Requests.ResponseRetentionDays = 2
	})
	id, _ := e.respond(`{"model":"h","input":"keep me for two days"}`, nil)
	waitForStore(t, "the response is written", func() bool { return storedResponses(t, e.dir) == 1 })
	e.clock.Advance(47 * time.Hour)
	if r := e.raw(http.MethodGet, "/v1/responses/"+id, "", nil); r.status != http.StatusOK {
		t.Fatalf("gone before two days: %d", r.status)
	}
	e.clock.Advance(2 * time.Hour)
	waitForStore(t, "the hourly prune deletes it", func() bool { return storedResponses(t, e.dir) == 0 })
	if r := e.raw(http.MethodGet, "/v1/responses/"+id, "", nil); r.status != http.StatusNotFound {
		t.Fatalf("found after two days: %d", r.status)
	}
}

// requests.response_store_mb bounds the stored responses' total size: past
// it the oldest go first, and the newest stay readable.
func TestResponsesStoreSizeBoundPrunesTheOldest(t *testing.T) {
	up := startHostile(t)
	e := newEnv(t, func(cfg *config.Config) {
		hostileConfig(up.srv.URL)(cfg)
		cfg.Requests.ResponseStoreMB = 1
	})
	big := strings.Repeat("x", 300<<10)
	var ids []string
	for i := range 5 {
		id, _ := e.respond(fmt.Sprintf(`{"model":"h","input":"%d %s"}`, i, big), nil)
		ids = append(ids, id)
		e.clock.Advance(time.Second)
	}
	// Five of about 300 KiB pass 1 MiB: the oldest go, down to 0.9 MiB.
	// The writer stores them one by one, so three rows alone may be the
	// first three before any pruning: wait for the two oldest to be gone.
	gone := func(id string) bool {
		return e.raw(http.MethodGet, "/v1/responses/"+id, "", nil).status == http.StatusNotFound
	}
	waitForStore(t, "the oldest are pruned", func() bool { return storedResponses(t, e.dir) == 3 && gone(ids[0]) && gone(ids[1]) })
	for i, id := range ids {
		r := e.raw(http.MethodGet, "/v1/responses/"+id, "", nil)
		if want := map[bool]int{true: http.StatusNotFound, false: http.StatusOK}[i < 2]; r.status != want {
			t.Errorf("response %d: %d, want %d", i, r.status, want)
		}
	}
}
