package gateway_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/events"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/llm"
)

// encodedCopies are the spellings of a secret a hostile upstream can give
// a client whose JSON parser, URL decoder or base64 decoder turns them
// back into the secret, or that a person reads as it: other letter cases,
// URL and JSON escapes, base64 at each alignment in both alphabets, the
// key inside Basic auth, and all but one of its characters.
func encodedCopies(s string) map[string]string {
	each := func(format string) string {
		var b strings.Builder
		for i := range len(s) {
			fmt.Fprintf(&b, format, s[i])
		}
		return b.String()
	}
	out := map[string]string{
		"upper":       strings.ToUpper(s),
		"lower":       strings.ToLower(s),
		"%2D":         strings.ReplaceAll(s, "-", "%2D"),
		"%XX":         each("%%%02X"),
		`\u002d`:      strings.ReplaceAll(s, "-", `\u002d`),
		`\uXXXX`:      each(`\u%04x`),
		"basic auth":  "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+s)),
		"all but one": s[1:],
	}
	for a, prefix := range []string{"", "a", "ab"} {
		out[fmt.Sprintf("base64 std %d", a)] = base64.StdEncoding.EncodeToString([]byte(prefix + s))
		out[fmt.Sprintf("base64 url %d", a)] = base64.RawURLEncoding.EncodeToString([]byte(prefix + s))
	}
	return out
}

// leakedCopy reports where text still holds a copy of a secret: a run of
// 16 of its characters in any letter case once URL and JSON escapes (one
// or two levels, as logs quote JSON) are undone, or the base64 of such a
// run at any alignment.
func leakedCopy(text string, secrets ...string) string {
	one := unescapeOnce(text)
	for _, dec := range []string{text, one, unescapeOnce(one)} {
		low := strings.ToLower(dec)
		std := strings.NewReplacer("-", "+", "_", "/").Replace(dec)
		for _, s := range secrets {
			for i := 0; i+16 <= len(s); i++ {
				run := s[i : i+16]
				if j := strings.Index(low, strings.ToLower(run)); j >= 0 {
					return fmt.Sprintf("the run %q at …%s…", run, dec[max(0, j-60):min(len(dec), j+76)])
				}
				for a := range 3 {
					enc := base64.StdEncoding.EncodeToString(append(make([]byte, a), run...))
					core := enc[(8*a+5)/6 : 8*(a+16)/6]
					if j := strings.Index(std, core); j >= 0 {
						return fmt.Sprintf("the base64 %q of %q at …%s…", core, run, dec[max(0, j-60):min(len(dec), j+80)])
					}
				}
			}
		}
	}
	return ""
}

// unescapeOnce undoes one level of URL and JSON escapes.
func unescapeOnce(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		var v int
		switch {
		case s[i] == '%' && i+2 < len(s) && scanHex(s[i+1:i+3], &v):
			b.WriteByte(byte(v))
			i += 2
		case s[i] == '\\' && i+5 < len(s) && s[i+1] == 'u' && scanHex(s[i+2:i+6], &v):
			b.WriteRune(rune(v))
			i += 5
		case s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\/`, s[i+1]) >= 0:
			b.WriteByte(s[i+1])
			i++
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func scanHex(s string, v *int) bool {
	_, err := fmt.Sscanf(s, "%x", v)
	return err == nil && strings.Trim(s, "0123456789abcdefABCDEF") == ""
}

// tableDump reads every row of every table of the database file with a
// connection of its own, as anyone who can read the file would.
func tableDump(t *testing.T, dir string) string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "freelane.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var out []byte
	for _, tb := range tables {
		rows, _ := tableRows(t, db, tb, tb+":")
		out = append(out, rows...)
	}
	return string(out)
}

// TestAttackEncodedCopiesReachNoOne has a hostile upstream write its key
// and its secret header, spelt in every way a client or a person can turn
// back into them, into a successful answer, a stream, a translated answer
// and stream, and error answers. None may reach the client, /api/requests,
// the database file, the websocket or the log.
func TestAttackEncodedCopiesReachNoOne(t *testing.T) {
	e, logs := attackEnv(t, nil)
	secrets := []string{plantedKey, plantedHeader}
	var copies []string
	for _, s := range secrets {
		for _, c := range encodedCopies(s) {
			copies = append(copies, c)
		}
	}
	joined := strings.Join(copies, " | ")
	e.up.Set("mok", fakeupstream.Behavior{Body: `{"id":"c1","object":"chat.completion","created":1,"model":"mok",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"your keys: ` + joined + `"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`})
	var sse strings.Builder
	for _, c := range copies {
		fmt.Fprintf(&sse, "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s \"}}]}\n\n", c)
	}
	sse.WriteString("data: [DONE]\n\n")
	e.up.Set("mstream", fakeupstream.Behavior{Headers: map[string]string{"Content-Type": "text/event-stream"}, Body: sse.String()})

	var answers strings.Builder
	keep := func(r reply) {
		answers.Write(r.body)
		for k, v := range r.header {
			fmt.Fprint(&answers, k, v)
		}
	}
	for _, c := range []struct {
		path, body string
	}{
		{"/v1/chat/completions", chat("paid/mok", false)},
		{"/v1/chat/completions", chat("paid/mstream", true)},
		{"/v1/messages", `{"model":"paid/mok","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages", `{"model":"paid/mstream","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		r := e.post(c.path, c.body)
		if r.status != 200 {
			t.Fatalf("%s %s: %d %s", c.path, c.body, r.status, r.body)
		}
		keep(r)
	}
	// Each copy in an error of its own, so that none is cut away by the
	// length limits before it reaches the request log; and once more in an
	// error event after a stream has started.
	n := 4
	for _, c := range copies {
		e.up.Set("m400", fakeupstream.Behavior{Status: 400, Body: `{"error":{"message":"bad key ` + c + `","type":"invalid_request_error"}}`})
		keep(e.post("/v1/chat/completions", chat("paid/m400", false)))
		e.up.Set("mlong", fakeupstream.Behavior{Headers: map[string]string{"Content-Type": "text/event-stream"},
			Body: "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
				"data: {\"error\":{\"message\":\"upstream broke: " + c + "\"}}\n\n"})
		keep(e.post("/v1/chat/completions", chat("paid/mlong", true)))
		n += 2
	}
	got := answers.String()
	if l := leakedCopy(got, secrets...); l != "" {
		t.Errorf("a client answer holds %s", l)
	}
	if c := strings.Count(got, "[redacted key]"); c < len(copies) {
		t.Errorf("the answers show %d redacted keys, want at least %d: %.3000s", c, len(copies), got)
	}

	var requests string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := e.do("GET", "/api/requests?limit=1000", "", nil)
		requests = string(r.body)
		if strings.Count(requests, `"endpoint"`) >= n || time.Now().After(deadline) {
			break
		}
	}
	if strings.Count(requests, `"endpoint"`) < n {
		t.Fatalf("GET /api/requests lists fewer than %d requests: %.2000s", n, requests)
	}
	if l := leakedCopy(requests, secrets...); l != "" {
		t.Errorf("GET /api/requests holds %s", l)
	}
	if l := leakedCopy(string(wsMessages(t, e, time.Second)), secrets...); l != "" {
		t.Errorf("the websocket holds %s", l)
	}
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := tableDump(t, e.dir)
	if l := leakedCopy(rows, secrets...); l != "" {
		t.Errorf("the database file holds %s", l)
	}
	if !strings.Contains(rows, "[redacted key]") {
		t.Errorf("the database holds no redacted failure: %.2000s", rows)
	}
	if l := leakedCopy(logs.String(), secrets...); l != "" {
		t.Errorf("the log holds %s", l)
	}
}

// TestGatewayLogRedactsTheCurrentSecrets logs, through the logger every
// part of the gateway is given, a key pasted in the dashboard after the
// start, spelt in each encoding.
func TestGatewayLogRedactsTheCurrentSecrets(t *testing.T) {
	// The configuration gives "spare" no key, so the dashboard may set
	// one (a key the configuration gives cannot be replaced there).
	e, logs := attackEnv(t, func(c *config.Config) {
		c.Providers = append(c.Providers, config.Provider{Name: "spare", Kind: "openai", Tier: "own", BaseURL: e0URL(c),
			Models: []config.Model{{ID: "ms", Context: 8192}}})
	})
	const pasted = "sk-PASTED-PLANTED-0123456789abcd"
	if r := e.do("PUT", "/api/providers/spare/key", `{"key":"`+pasted+`"}`, nil); r.status != 200 {
		t.Fatalf("PUT key: %d %s", r.status, r.body)
	}
	for name, c := range encodedCopies(pasted) {
		e.g.Logger().Warn("upstream said "+c, "copy", name, "reason", c, "err", fmt.Errorf("wrapped: %s", c))
	}
	out := logs.String()
	if l := leakedCopy(out, pasted); l != "" {
		t.Errorf("the log holds %s", l)
	}
	if strings.Count(out, "[redacted key]") < 3*len(encodedCopies(pasted)) {
		t.Errorf("the log does not show the redacted copies:\n%.3000s", out)
	}
}

// TestTracesAreRedactedWhereverTheyGo records a finished request whose error,
// reasons and notes hold encoded copies of the key (text the router and
// the parsers write, not only the upstream client) reaches neither
// /api/requests, nor the websocket, nor the database file.
func TestTracesAreRedactedWhereverTheyGo(t *testing.T) {
	e, _ := attackEnv(t, nil)
	var copies []string
	for _, c := range encodedCopies(plantedKey) {
		copies = append(copies, c)
	}
	tr := llm.Trace{ID: "t-redact", Start: e.clock.Now(), Endpoint: "chat", Model: "paid/" + copies[0], Class: llm.Caller, Status: 400,
		Error: "failed: " + copies[1], Notes: []string{"left out " + copies[2]}}
	tr.Decision = &llm.Decision{Requested: "paid/" + copies[0], Fallback: "auto -> manual: " + copies[1], Error: "nowhere: " + copies[2],
		Affinity: "moved", AffinityNote: "warm backend paid/m400 is unavailable: " + copies[len(copies)-1]}
	for _, c := range copies {
		tr.Attempts = append(tr.Attempts, llm.Attempt{Backend: "paid/m400", Class: llm.Caller, Status: 400, Reason: "HTTP 400: " + c})
		tr.Decision.Candidates = append(tr.Decision.Candidates, llm.Candidate{Backend: "paid/m400", Verdict: llm.VerdictSkipped, Reason: "key refused: " + c})
	}
	e.g.RecordTrace(tr)
	var requests string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		requests = string(e.do("GET", "/api/requests", "", nil).body)
		if strings.Contains(requests, "t-redact") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(requests, "t-redact") {
		t.Fatalf("the trace was not stored: %s", requests)
	}
	if l := leakedCopy(requests, plantedKey); l != "" {
		t.Errorf("GET /api/requests holds %s", l)
	}
	one := e.do("GET", "/api/requests/t-redact", "", nil)
	if one.status != 200 || !strings.Contains(string(one.body), "key refused") {
		t.Fatalf("GET /api/requests/t-redact: %d %s", one.status, one.body)
	}
	if l := leakedCopy(string(one.body), plantedKey); l != "" {
		t.Errorf("GET /api/requests/{id} holds %s", l)
	}
	if l := leakedCopy(string(wsMessages(t, e, time.Second)), plantedKey); l != "" {
		t.Errorf("the websocket holds %s", l)
	}
	if err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := leakedCopy(tableDump(t, e.dir), plantedKey); l != "" {
		t.Errorf("the database file holds %s", l)
	}
}

// TestEventsAreRedactedWhereverTheyGo publishes events whose reasons hold
// encoded copies of the key, as a probe or a breaker could write them:
// neither GET /api/state, nor the websocket, nor the log may show one.
func TestEventsAreRedactedWhereverTheyGo(t *testing.T) {
	e, logs := attackEnv(t, nil)
	for name, c := range encodedCopies(plantedKey) {
		e.g.Events().Publish(events.Event{Time: e.clock.Now(), Kind: events.KeyDisabled, Level: events.Warn,
			Provider: "paid", Reason: name + ": HTTP 401: " + c})
	}
	state := string(e.do("GET", "/api/state", "", nil).body)
	if l := leakedCopy(state, plantedKey); l != "" {
		t.Errorf("GET /api/state holds %s", l)
	}
	if !strings.Contains(state, "[redacted key]") {
		t.Errorf("GET /api/state shows no redacted event: %.2000s", state)
	}
	if l := leakedCopy(string(wsMessages(t, e, time.Second)), plantedKey); l != "" {
		t.Errorf("the websocket holds %s", l)
	}
	if l := leakedCopy(logs.String(), plantedKey); l != "" {
		t.Errorf("the log holds %s", l)
	}
}

// e0URL is the base URL of the configuration's first provider.
func e0URL(c *config.Config) string { return c.Providers[0].BaseURL }
