//go:build !unix

package gateway_test

import "syscall"

// accountAttr has no account to switch to where processes have no Unix
// credentials; the tests that need one skip before asking.
func accountAttr(uint32) *syscall.SysProcAttr { return nil }
