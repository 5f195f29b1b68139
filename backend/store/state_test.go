package store

import (
	"context"
	"errors"
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

func TestUpdateStateStoresAllOrNothing(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	if err := db.PutState(ctx, "a", []byte("a0")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := db.UpdateState(ctx, func(put func(string, []byte) error) error {
		if err := put("a", []byte("a1")); err != nil {
			return err
		}
		if err := put("b", []byte("b1")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want fn's error", err)
	}
	if v, _, _ := db.GetState(ctx, "a"); string(v) != "a0" {
		t.Errorf("a = %q after a failed update, want a0", v)
	}
	if _, ok, _ := db.GetState(ctx, "b"); ok {
		t.Error("b is stored after a failed update")
	}
	if err := db.UpdateState(ctx, func(put func(string, []byte) error) error {
		if err := put("a", []byte("a2")); err != nil {
			return err
		}
		return put("b", []byte("b2"))
	}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "a2", "b": "b2"} {
		if v, _, _ := db.GetState(ctx, name); string(v) != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
}
