package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"freelane/backend/store"
)

// killUpstream is a tiny OpenAI-compatible upstream in the test process:
// every chat completion succeeds after a short pause, with usage.
func killUpstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
			return
		}
		time.Sleep(3 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// server is one run of the real freelane binary.
type server struct {
	cmd  *exec.Cmd
	addr string
	logs *bytes.Buffer
}

func startServer(t *testing.T, cfg, dir string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{addr: addr, logs: &bytes.Buffer{}}
	s.cmd = exec.Command(os.Args[0], "serve", "--config", cfg, "--data-dir", dir, "--listen", addr)
	s.cmd.Env = append(os.Environ(), "FREELANE_TEST_MAIN=1")
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cmd.Process.Kill() })
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up: %v\n%s", err, s.logs.String())
		}
	}
}

// served is a request a client saw succeed, and when.
type served struct {
	id   string
	done time.Time
}

// load sends chat requests from conc clients until stop is closed and
// returns the requests that succeeded.
func load(addr string, conc int, stop <-chan struct{}) []served {
	var mu sync.Mutex
	var out []served
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	body := `{"model":"auto","messages":[{"role":"user","content":"count me"}]}`
	for range conc {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					continue // the server was killed under this request
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					mu.Lock()
					out = append(out, served{id: resp.Header.Get("X-FreeLane-Request-Id"), done: time.Now()})
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return out
}

// ledgerIDs opens the database like the server does (which recovers the
// WAL), checks its integrity and returns the request id of every ledger
// row and every request row.
func ledgerIDs(t *testing.T, dir string) (ledger map[string]int, requests map[string]bool) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(dir, "freelane.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.SQL().QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q %v", check, err)
	}
	ledger, requests = map[string]int{}, map[string]bool{}
	collect := func(q string, fn func(id string)) {
		rows, err := db.SQL().Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			fn(id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	collect("SELECT request_id FROM ledger", func(id string) { ledger[id]++ })
	collect("SELECT id FROM requests", func(id string) { requests[id] = true })
	return ledger, requests
}

// TestLedgerSurvivesKill runs concurrent load through the real binary,
// kills it with SIGKILL in the middle, restarts it on the same data
// directory and compares the ledger with what the clients saw: rows only
// for requests that were served or in flight, only rows of the last second
// missing, and an intact database. A graceful stop after that loses nothing.
func TestLedgerSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary under load")
	}
	up := killUpstream(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "freelane.yaml")
	yaml := fmt.Sprintf(`providers:
  - name: up
    tier: own
    base_url: %s/v1
    keyless: true
    models:
      - {id: m, price: {input: 1, output: 2}}
`, up.URL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	const conc = 16

	s := startServer(t, cfg, dir)
	stop := make(chan struct{})
	var got []served
	doneLoad := make(chan struct{})
	go func() {
		got = load(s.addr, conc, stop)
		close(doneLoad)
	}()
	time.Sleep(1500 * time.Millisecond) // let the load run; no time logic depends on it
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	_ = s.cmd.Wait()
	close(stop)
	<-doneLoad

	ledger, requests := ledgerIDs(t, dir)
	servedIDs := map[string]bool{}
	var missing, lateMissing int
	var oldestMissing time.Duration
	for _, r := range got {
		servedIDs[r.id] = true
		if ledger[r.id] == 1 && requests[r.id] {
			continue
		}
		missing++
		age := killedAt.Sub(r.done)
		if age > time.Second {
			lateMissing++
		}
		oldestMissing = max(oldestMissing, age)
	}
	var unknown int
	for id, n := range ledger {
		if n != 1 {
			t.Errorf("request %s has %d ledger rows, want 1", id, n)
		}
		if !servedIDs[id] {
			unknown++ // served by the router while the client was cut off
		}
	}
	t.Logf("kill -9 after %d served requests: %d ledger rows, %d served requests missing (oldest %s before the kill), %d rows for requests in flight",
		len(got), len(ledger), missing, oldestMissing.Round(time.Millisecond), unknown)
	if len(got) < 100 {
		t.Fatalf("only %d requests served before the kill; the test proves little", len(got))
	}
	if lateMissing > 0 {
		t.Errorf("%d served requests older than 1 s before the kill are missing from the ledger", lateMissing)
	}
	if unknown > conc {
		t.Errorf("%d ledger rows belong to no request a client saw served; at most %d were in flight", unknown, conc)
	}

	// Restart on the same data directory, run more load, stop gracefully:
	// nothing may be lost.
	s = startServer(t, cfg, dir)
	stop = make(chan struct{})
	doneLoad = make(chan struct{})
	go func() {
		got = load(s.addr, conc, stop)
		close(doneLoad)
	}()
	time.Sleep(500 * time.Millisecond)
	close(stop)
	<-doneLoad
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, s.logs.String())
	}
	ledger, _ = ledgerIDs(t, dir)
	for _, r := range got {
		if ledger[r.id] != 1 {
			t.Fatalf("after a graceful stop request %s is missing from the ledger", r.id)
		}
	}
	t.Logf("graceful stop: all %d served requests are in the ledger", len(got))
}
