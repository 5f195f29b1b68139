package store

import (
	"context"
	"path/filepath"
	"testing"
)

func TestStateSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.GetState(ctx, "breakers"); ok || err != nil {
		t.Fatalf("empty db: ok %v err %v", ok, err)
	}
	if err := db.PutState(ctx, "breakers", []byte(`[1]`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutState(ctx, "breakers", []byte(`[1,2]`)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, ok, err := db.GetState(ctx, "breakers")
	if !ok || err != nil || string(v) != `[1,2]` {
		t.Fatalf("got %q %v %v", v, ok, err)
	}
}
