//go:build !unix

package main

// privateDir accepts every directory where there are no Unix owners and
// modes to check.
func privateDir(string) error { return nil }

// checkOwner has no owner to check where there are no Unix owners.
func checkOwner(string) error { return nil }

// lockClaim has nothing to lock with here; a second launch in the instant
// of the first one's bind may then claim a second instance.
func lockClaim(string) (func(), error) { return func() {}, nil }
