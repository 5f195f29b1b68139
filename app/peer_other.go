//go:build !linux

package main

import (
	"errors"
	"net"
)

// peerUID is not known here; the socket file's owner, checked before the
// dial, and its private directory stand in for it.
var peerUID = func(net.Conn) (int, error) { return 0, errors.New("peer credentials are not available on this system") }
