//go:build desktop && darwin

package main

import "log/slog"

// newTray on macOS returns no tray: tray libraries clash with Wails v2's
// AppKit delegate there (see stack notes), so the window's own menu and
// the Dock icon stand in for it.
func newTray(_ trayActions, log *slog.Logger) trayUI {
	log.Info("the tray icon is not available on macOS yet; use the window")
	return noTray{}
}
