package teamtest

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// sysProcAttr makes a started server die with the test binary even when
// Main's cleanup does not run (a test binary killed on timeout).
func sysProcAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	if a == nil {
		a = &syscall.SysProcAttr{}
	}
	a.Pdeathsig = syscall.SIGKILL
	return a
}

// unprivileged returns, when the tests run as root, process attributes
// that run a program as the postgres user (which Debian's postgresql
// package creates) or else nobody, and hands dir to that user: PostgreSQL
// refuses to run as root. It returns nil when the tests are not root.
func unprivileged(dir string) (*syscall.SysProcAttr, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		if u, err = user.Lookup("nobody"); err != nil {
			return nil, fmt.Errorf("teamtest: running as root and neither a postgres nor a nobody user exists: %w", err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("teamtest: handing %s to %s: %w", dir, u.Username, err)
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, nil
}
