package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGeometryRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "window.json")
	if _, ok := readGeometry(path); ok {
		t.Fatal("geometry without a file")
	}
	g := geometry{Width: 1100, Height: 700, X: 40, Y: 60, Placed: true}
	if err := writeGeometry(path, g); err != nil {
		t.Fatal(err)
	}
	got, ok := readGeometry(path)
	if !ok || got != g {
		t.Errorf("read %+v %v, want %+v", got, ok, g)
	}
	// A window shrunk to nothing or a damaged file is not restored.
	for _, bad := range []string{`{"width":10,"height":10}`, `not json`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok := readGeometry(path); ok {
			t.Errorf("restored %s", bad)
		}
	}
}
