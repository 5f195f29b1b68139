package hub

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientsShareOneSnapshotPerTick: clients that join between two ticks
// get the same snapshot, built once; after a tick the next joiner gets a
// fresh one.
func TestClientsShareOneSnapshotPerTick(t *testing.T) {
	noLeaks(t)
	var builds atomic.Int64
	h := New(Options{
		Snapshot: func() any { return builds.Add(1) },
		Interval: time.Hour,
		Logger:   quietLogger(),
	})
	th := start(t, h)
	for i := range 10 {
		c, _, err := dial(t, th.url, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := read(t, c, 5*time.Second)
		if err != nil || m.Type != "snapshot" || string(m.Data) != "1" {
			t.Fatalf("client %d got %+v, %v; want the first snapshot", i, m, err)
		}
	}
	if n := builds.Load(); n != 1 {
		t.Fatalf("10 clients within one tick cost %d snapshot builds, want 1", n)
	}
	h.Invalidate()
	c, _, err := dial(t, th.url, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := read(t, c, 5*time.Second); err != nil || string(m.Data) != "2" {
		t.Fatalf("a client after Invalidate got %s, %v; want a fresh snapshot", m.Data, err)
	}
}

// TestMaxClients: one connection over MaxClients is refused with 503 and
// Retry-After before the upgrade, and a freed place can be taken again.
func TestMaxClients(t *testing.T) {
	noLeaks(t)
	h := New(Options{MaxClients: 3, Logger: quietLogger()})
	th := start(t, h)
	var first interface{ Close() error }
	for i := range 3 {
		c, _, err := dial(t, th.url, nil, 0)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		if _, err := read(t, c, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = c
		}
	}
	_, resp, err := dial(t, th.url, nil, 0)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the fourth client got %v, %v; want 503 with Retry-After", resp, err)
	}
	_ = first.Close()
	waitFor(t, "the first client to leave", func() bool { return h.Clients() == 2 && h.conns.Load() == 2 })
	if _, _, err := dial(t, th.url, nil, 0); err != nil {
		t.Fatalf("a client after one left: %v", err)
	}
}
