//go:build !linux

package teamtest

import "syscall"

func sysProcAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }

func unprivileged(string) (*syscall.SysProcAttr, error) { return nil, nil }
