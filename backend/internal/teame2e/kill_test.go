package teame2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"freelane/backend/gateway"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/internal/teamtest"
	"freelane/backend/vault"
)

// killConfig is the config file of every instance of the kill test; the
// team's configuration lives on PostgreSQL, so each instance ships its
// ledger there.
func killConfig(upstream, lb, redisURL, pgURL string, durable string) string {
	return fmt.Sprintf(`allowed_hosts: [%q]
discovery: {disabled: true}
state: {redis: %q}
store: {postgres: %q}
request_log: {%s}
providers:
  - name: free
    kind: openai
    tier: free
    base_url: %q
    api_key: sk-test-free
    models: [{id: mf, context: 8192}]
chains:
  - name: main
    backends: [free/mf]
`, lb, redisURL, pgURL, durable, upstream)
}

// answered sends requests through the balancer until stop is closed and
// returns the request ids of the answers it received whole: a plain
// answer read to its end, a stream read to its [DONE].
func answered(lb string, stop <-chan struct{}, stream bool) []string {
	client := &http.Client{Timeout: 30 * time.Second}
	body := `{"model":"main","messages":[{"role":"user","content":"hi"}]}`
	if stream {
		body = `{"model":"main","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	}
	var ids []string
	for {
		select {
		case <-stop:
			return ids
		default:
		}
		resp, err := client.Post("http://"+lb+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		whole := err == nil && resp.StatusCode == http.StatusOK
		if stream {
			whole = whole && bytes.HasSuffix(b, []byte("data: [DONE]\n\n"))
		}
		if id := resp.Header.Get("X-FreeLane-Request-Id"); whole && id != "" {
			ids = append(ids, id)
		}
	}
}

// killTeam starts three freelane serve processes on one Redis and one
// PostgreSQL database behind a load balancer, loads them from many
// clients, kills one with SIGKILL under that load, starts it again on its
// data directory, and returns the ids of the answers the clients received
// whole and those of them PostgreSQL's ledger lacks once it has caught up.
func killTeam(t *testing.T, durable string) (answers []string, missing []string) {
	r := teamtest.StartRedis(t)
	p := teamtest.StartPostgres(t)
	db := p.NewDatabase(t)
	up := fakeupstream.Start()
	t.Cleanup(up.Close)
	// A few milliseconds per answer keep requests in flight when the
	// instance dies.
	up.SetDefault(fakeupstream.Behavior{HeaderDelay: 3 * time.Millisecond})
	lb := teamtest.NewBalancer(t)
	cfg := filepath.Join(t.TempDir(), "freelane.yaml")
	text := killConfig(up.URL, lb.Addr, fmt.Sprintf("redis://%s/%d", r.Addr, r.NewDB(t)), p.DSN(db), durable)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	key := gateway.VaultKeyEnv + "=" + vault.NewKey()
	var fls []*teamtest.FreeLane
	var addrs []string
	for range 3 {
		f := teamtest.StartFreeLane(t, cfg, t.TempDir(), key)
		fls = append(fls, f)
		addrs = append(addrs, f.Addr)
	}
	lb.Start(t, addrs...)

	stop := make(chan struct{})
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := answered(lb.Addr, stop, c%2 == 1)
			mu.Lock()
			answers = append(answers, ids...)
			mu.Unlock()
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	fls[1].Kill()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	// The killed instance ships what its own file holds once it runs
	// again.
	fls[1].Start(t)

	pg, err := pgx.Connect(context.Background(), p.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows, err := pg.Query(context.Background(), `SELECT request_id FROM ledger`)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			have[id] = true
		}
		rows.Close()
		missing = missing[:0]
		for _, id := range answers {
			if !have[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			return answers, missing
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kill -9 of one of three instances under load from many clients loses
// no ledger row of an answer a client received: each answer's rows are
// written before its last bytes go out, and the killed instance ships
// them to the team's ledger when it runs again.
func TestKilledInstanceLosesNoAnsweredRow(t *testing.T) {
	answers, missing := killTeam(t, "")
	if len(answers) < 100 {
		t.Fatalf("only %d answers under load", len(answers))
	}
	if len(missing) > 0 {
		t.Fatalf("PostgreSQL's ledger lacks %d of the %d answers the clients received, e.g. %s", len(missing), len(answers), missing[0])
	}
	t.Logf("%d answers received whole, one instance killed with SIGKILL among them; the team's ledger holds every one", len(answers))
}
