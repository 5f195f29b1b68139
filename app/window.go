package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// geometry is the window's size and position, kept in the data directory
// (window.json) so the window opens where the user left it.
type geometry struct {
	Width  int  `json:"width"`
	Height int  `json:"height"`
	X      int  `json:"x"`
	Y      int  `json:"y"`
	Placed bool `json:"placed"` // X and Y are known
}

// Smallest window geometry worth restoring; anything smaller is a
// leftover of a broken session and would hide the dashboard.
const minWindowWidth, minWindowHeight = 400, 300

// readGeometry reads the remembered geometry; ok is false when there is
// none worth using.
func readGeometry(path string) (g geometry, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return g, false
	}
	if json.Unmarshal(b, &g) != nil || g.Width < minWindowWidth || g.Height < minWindowHeight {
		return geometry{}, false
	}
	return g, true
}

// writeGeometry remembers the geometry.
func writeGeometry(path string, g geometry) error {
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
