//go:build !linux

package main

import (
	"errors"
	"os/exec"
)

// clockTicks is only meaningful on Linux.
const clockTicks = 100

// supported says why the harness cannot run here: it reads each target's
// CPU time and memory from /proc.
const supported = "loadbench measures its targets through /proc and runs on Linux only"

var errUnsupported = errors.New(supported)

func cpuTicks(int) (int64, error)                   { return 0, errUnsupported }
func memory(int) (int64, int64, error)              { return 0, 0, errUnsupported }
func raiseFileLimit(uint64) (uint64, uint64, error) { return 0, 0, errUnsupported }
func portRange() (int, error)                       { return 0, errUnsupported }
func dieWithParent(*exec.Cmd)                       {}
