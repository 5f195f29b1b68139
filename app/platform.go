package main

import (
	"errors"
	"strings"
)

// desktopOS is what the desktop shell needs from the operating system
// beyond the window and the tray; platform_linux.go, platform_darwin.go and
// platform_windows.go provide it.
type desktopOS interface {
	// Notify shows a desktop notification.
	Notify(n notification) error
	// AutostartEnabled reports whether FreeLane starts at login.
	AutostartEnabled() bool
	// SetAutostart makes FreeLane start at login with the given command
	// line, or stops it from doing so.
	SetAutostart(on bool, argv []string) error
	// Close releases what the platform holds (a bus connection).
	Close()
}

// errNoNotifications is returned where the desktop offers no notification
// service (no session bus, say).
var errNoNotifications = errors.New("no notification service on this desktop")

// desktopExecQuote quotes one argument for the Exec key of a .desktop file,
// following the Desktop Entry Specification: arguments with reserved
// characters go in double quotes, with ", `, $ and \ escaped.
func desktopExecQuote(arg string) string {
	if arg != "" && !strings.ContainsAny(arg, " \t\n\"'\\><~|&;$*?#()`=%") {
		return arg
	}
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range arg {
		switch r {
		case '"', '`', '$', '\\':
			sb.WriteByte('\\')
		}
		if r == '%' {
			// A literal percent is written %% in Exec.
			sb.WriteByte('%')
		}
		sb.WriteRune(r)
	}
	sb.WriteByte('"')
	return sb.String()
}
