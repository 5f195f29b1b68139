//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// privateDir checks that dir is a real directory (not a symlink) owned by
// this user that neither the group nor others may write to.
func privateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to user id %d, not to you (%d)", dir, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s may be written by other users (mode %o)", dir, fi.Mode().Perm())
	}
	return nil
}

// checkOwner refuses an instance socket that is not a socket of this
// user's: a running FreeLane's own socket always is.
func checkOwner(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		// Gone since the listen failed: the dial reports it as stale.
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&os.ModeSocket == 0:
		return fmt.Errorf("%s is in the way of FreeLane's single-instance socket and is not a socket; remove it if it is not yours to keep", path)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("the single-instance socket %s belongs to user id %d, not to you (%d): another user may be posing as FreeLane, so it is not trusted; remove it or use another data directory", path, st.Uid, os.Getuid())
	}
	return nil
}

// lockClaim takes an exclusive lock on a file next to the socket and
// returns its release. The kernel drops the lock when a process dies, so
// it never goes stale; the file itself stays, empty.
func lockClaim(socket string) (func(), error) {
	f, err := os.OpenFile(socket+".lock", os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the single-instance socket: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the single-instance socket: %w", err)
	}
	return func() { f.Close() }, nil
}

// socketsUnsupported reports whether err says the system has no Unix
// sockets; every Unix has them.
func socketsUnsupported(err error) bool { return errors.Is(err, syscall.EAFNOSUPPORT) }
