//go:build desktop && linux

package main

// displayAlwaysPresent is false on Linux: a server has no X11 or Wayland
// display, and GTK would panic trying to open one.
const displayAlwaysPresent = false
