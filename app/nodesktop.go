//go:build !desktop

package main

import (
	"log/slog"

	"freelane/backend/gateway"
)

// desktopBuilt is false in binaries built without the desktop tag: they
// always serve headless.
const desktopBuilt = false

// displayAlwaysPresent is true where a desktop always exists (macOS,
// Windows); it only matters in desktop builds.
const displayAlwaysPresent = false

func runDesktop(*gateway.Gateway, *instance, *serveFlags, *slog.Logger) int {
	panic("runDesktop called in a build without the desktop tag")
}
