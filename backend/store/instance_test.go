package store

import (
	"context"
	"testing"
	"time"

	"freelane/backend/llm"
)

// A request row keeps the team instance that served it, and a row of a
// single machine keeps none.
func TestRequestRowsKeepTheirInstance(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	traces := []llm.Trace{
		{ID: "team", Start: at, Endpoint: "chat", Model: "auto", Backend: "a/m", Status: 200, Class: llm.OK, Instance: "office-2"},
		{ID: "alone", Start: at.Add(time.Second), Endpoint: "chat", Model: "auto", Backend: "a/m", Status: 200, Class: llm.OK},
	}
	if _, err := db.writeRequests(ctx, traces, true); err != nil {
		t.Fatal(err)
	}
	got, err := db.RecentRequests(ctx, RequestQuery{})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]string{}
	for _, tr := range got {
		byID[tr.ID] = tr.Instance
	}
	if len(byID) != 2 || byID["team"] != "office-2" || byID["alone"] != "" {
		t.Fatalf("instances read back: %v", byID)
	}
}
