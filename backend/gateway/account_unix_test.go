//go:build unix

package gateway_test

import "syscall"

// accountAttr starts a process as the account uid (its group the same
// number, as nobody's is).
func accountAttr(uid uint32) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
}
