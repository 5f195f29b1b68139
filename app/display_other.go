//go:build desktop && !linux

package main

// displayAlwaysPresent is true on macOS and Windows, which always have a
// desktop for a logged-in user.
const displayAlwaysPresent = true
