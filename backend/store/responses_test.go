package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/llm"
)

// A stored response is found at once, before the writer got to it, and
// after it was written; it expires with its retention, and the prune
// deletes it.
func TestResponseStoreKeepsAndExpires(t *testing.T) {
	db := openTestDB(t)
	clk := clocktest.New(baseTime)
	s := NewResponseStore(db, ResponseOptions{Retention: time.Hour, Clock: clk, Logger: quietLogger, MaxBytes: 1 << 10, Buffer: 2})
	ctx := context.Background()
	r := StoredResponse{ID: "resp_1", Owner: "token", Response: []byte(`{"id":"resp_1"}`), Items: []byte(`[{"type":"message"}]`)}
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Get(ctx, "resp_1", "token")
	if err != nil || !ok || string(got.Items) != string(r.Items) {
		t.Fatalf("pending: %v %v %+v", ok, err, got)
	}
	// A full buffer refuses rather than waits.
	if err := s.Put(StoredResponse{ID: "resp_2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(StoredResponse{ID: "resp_3"}); !errors.Is(err, ErrResponseBacklog) {
		t.Fatalf("third put: %v", err)
	}
	if err := s.Put(StoredResponse{ID: "resp_big", Items: make([]byte, 2<<10)}); !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("big put: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(r); !errors.Is(err, ErrResponsesClosed) {
		t.Fatalf("put after close: %v", err)
	}
	got, ok, err = s.Get(ctx, "resp_1", "token")
	if err != nil || !ok || string(got.Response) != `{"id":"resp_1"}` || !got.Created.Equal(baseTime) {
		t.Fatalf("written: %v %v %+v", ok, err, got)
	}
	clk.Advance(time.Hour)
	if _, ok, err = s.Get(ctx, "resp_1", "token"); ok || err != nil {
		t.Fatalf("expired response found: %v %v", ok, err)
	}
	if n, err := s.PruneResponses(ctx, clk.Now()); err != nil || n != 2 {
		t.Fatalf("pruned %d: %v", n, err)
	}
}

// The writer loop writes what it was handed and stops with its context.
func TestResponseStoreRun(t *testing.T) {
	db := openTestDB(t)
	s := NewResponseStore(db, ResponseOptions{Logger: quietLogger})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for i := range 10 {
		if err := s.Put(StoredResponse{ID: "resp_" + string(rune('a'+i)), Response: []byte("{}"), Items: []byte("[]")}); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.SQL().QueryRow(`SELECT count(*) FROM responses`).Scan(&n); err != nil || n != 10 {
		t.Fatalf("%d rows: %v", n, err)
	}
}

// A trace's notes are stored with it.
func TestRequestNotesRoundTrip(t *testing.T) {
	db := openTestDB(t)
	tr := sampleTrace(1)
	tr.Notes = []string{"tools dropped (no backend runs them): web_search"}
	if _, err := db.writeRequests(context.Background(), []llm.Trace{tr, sampleTrace(2)}, true); err != nil {
		t.Fatal(err)
	}
	got, err := db.RecentRequests(context.Background(), RequestQuery{})
	if err != nil || len(got) != 2 || got[0].Notes != nil || len(got[1].Notes) != 1 || got[1].Notes[0] != tr.Notes[0] {
		t.Fatalf("%v %+v", err, got)
	}
}
