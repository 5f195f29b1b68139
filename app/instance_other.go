//go:build !unix

package main

import (
	"errors"
	"syscall"
)

// privateDir accepts every directory where there are no Unix owners and
// modes to check.
func privateDir(string) error { return nil }

// checkOwner has no owner to check where there are no Unix owners.
func checkOwner(string) error { return nil }

// lockClaim has nothing to lock with here; a second launch in the instant
// of the first one's bind may then claim a second instance.
func lockClaim(string) (func(), error) { return func() {}, nil }

// wsaEAFNOSUPPORT is Windows' "address family not supported", what a Unix
// socket gets on Windows before 10 (1803) and under Wine.
const wsaEAFNOSUPPORT = syscall.Errno(10047)

// socketsUnsupported reports whether err says the system has no Unix
// sockets.
func socketsUnsupported(err error) bool { return errors.Is(err, wsaEAFNOSUPPORT) }
