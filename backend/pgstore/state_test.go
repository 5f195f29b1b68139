package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"freelane/backend/internal/teamtest"
)

func put(t *testing.T, db *DB, docs map[string]string) {
	t.Helper()
	err := db.UpdateState(context.Background(), func(put func(string, []byte) error) error {
		for name, v := range docs {
			if err := put(name, []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpdateStateIsAllOrNothing stores two documents, then fails a
// change half-way, and checks that neither of its documents was stored.
func TestUpdateStateIsAllOrNothing(t *testing.T) {
	t.Parallel()
	db := openDB(t, newDSN(t), "a")
	ctx := context.Background()
	put(t, db, map[string]string{"config": "v1", "keys": "k1"})
	boom := errors.New("boom")
	err := db.UpdateState(ctx, func(put func(string, []byte) error) error {
		if err := put("config", []byte("v2")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("UpdateState = %v, want fn's error", err)
	}
	for name, want := range map[string]string{"config": "v1", "keys": "k1"} {
		got, ok, err := db.GetState(ctx, name)
		if err != nil || !ok || string(got) != want {
			t.Errorf("%s = %q %v %v, want %q", name, got, ok, err, want)
		}
	}
	if _, ok, err := db.GetState(ctx, "nothing"); ok || err != nil {
		t.Errorf("a document never stored: ok %v, err %v", ok, err)
	}
}

// watcher runs Watch on db and collects the names it is told.
func watcher(t *testing.T, db *DB) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	names := make(chan string, 100)
	done := make(chan error, 1)
	go func() { done <- db.Watch(ctx, func(n string) { names <- n }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Watch returned %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Watch did not stop when its context ended")
		}
	})
	return names
}

func expect(t *testing.T, names <-chan string, want string, within time.Duration) {
	t.Helper()
	select {
	case got := <-names:
		if got != want {
			t.Fatalf("Watch told of %q, want %q", got, want)
		}
	case <-time.After(within):
		t.Fatalf("Watch told nothing of %q within %s", want, within)
	}
}

// TestWatchSkipsOwnChanges: b hears of a's change, a of nothing.
func TestWatchSkipsOwnChanges(t *testing.T) {
	t.Parallel()
	dsn := newDSN(t)
	a, b := openDB(t, dsn, "a"), openDB(t, dsn, "b")
	fromA, fromB := watcher(t, a), watcher(t, b)
	time.Sleep(200 * time.Millisecond) // both listening
	put(t, a, map[string]string{"config": "v1"})
	expect(t, fromB, "config", time.Second)
	select {
	case n := <-fromA:
		t.Fatalf("a was told of its own change to %q", n)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestWatchReconnectsAfterOutage cuts the watcher's link to PostgreSQL
// while another instance changes a document, and checks that once the
// link is back the watcher says to read everything again (it missed the
// change) and then hears of the next change.
func TestWatchReconnectsAfterOutage(t *testing.T) {
	h := teamtest.StartHAProxy(t)
	p := teamtest.StartPostgres(t)
	name := p.NewDatabase(t)
	a, b := openDB(t, p.DSN(name), "a"), openDB(t, p.Via(h.PostgresAddr, name), "b")
	names := watcher(t, b)
	time.Sleep(200 * time.Millisecond)
	h.Down(t, teamtest.BackendPostgres)
	t.Cleanup(func() { h.Up(t, teamtest.BackendPostgres) })
	put(t, a, map[string]string{"config": "during the outage"})
	if _, _, err := b.GetState(context.Background(), "config"); err == nil {
		t.Fatal("b read a document with PostgreSQL cut off")
	}
	time.Sleep(300 * time.Millisecond)
	h.Up(t, teamtest.BackendPostgres)
	expect(t, names, Resync, 5*time.Second)
	put(t, a, map[string]string{"keys": "after"})
	expect(t, names, "keys", time.Second)
}
