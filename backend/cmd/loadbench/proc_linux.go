//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// clockTicks is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// which the kernel fixes at 100 on every architecture Go runs Linux on,
// whatever the kernel's own tick rate. getconf CLK_TCK reports it too.
const clockTicks = 100

// supported is empty where the harness can measure processes.
const supported = ""

// cpuTicks is the user plus system CPU time the process pid has used, in
// clock ticks, all of its threads together.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cpu time of %d: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces and parentheses of
	// its own, so the fields are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time of %d: no command name in /proc/%d/stat", pid, pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// After the name come state (field 3) and onwards; utime and stime are
	// fields 14 and 15 of the whole line, 11 and 12 after the name.
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time of %d: /proc/%d/stat has %d fields after the name", pid, pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu time of %d: utime %q, stime %q are not numbers", pid, f[11], f[12])
	}
	return ut + st, nil
}

// memory is what /proc/PID/status says of the process's resident memory:
// VmRSS now and VmHWM, the peak since it started, both in kB.
func memory(pid int) (rssKB, peakKB int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, fmt.Errorf("memory of %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("memory of %d: %s is %q", pid, k, v)
		}
		if k == "VmRSS" {
			rssKB = n
		} else {
			peakKB = n
		}
	}
	if rssKB == 0 {
		return 0, 0, fmt.Errorf("memory of %d: no VmRSS in /proc/%d/status", pid, pid)
	}
	return rssKB, peakKB, nil
}

// raiseFileLimit lifts this process's soft RLIMIT_NOFILE to at least need,
// up to the hard limit, before any child starts, so that every child
// inherits it. It fails, saying by how much, when the hard limit is lower
// than need: only root (or the service manager) can raise that.
func raiseFileLimit(need uint64) (soft, hard uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("reading RLIMIT_NOFILE: %w", err)
	}
	if lim.Max < need {
		return lim.Cur, lim.Max, fmt.Errorf("the hard limit on open files (RLIMIT_NOFILE) is %d, and this run needs about %d in each proxy; "+
			"raise it (ulimit -Hn as root, LimitNOFILE= in a systemd unit, or the container's nofile ulimit) or ask for fewer", lim.Max, need)
	}
	if lim.Cur < need {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, 0, fmt.Errorf("raising RLIMIT_NOFILE to %d: %w", lim.Cur, err)
		}
	}
	return lim.Cur, lim.Max, nil
}

// portRange is how many local ports the kernel hands out to outgoing
// connections, each of which holds one for as long as it is open.
func portRange() (int, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, fmt.Errorf("reading the local port range: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, fmt.Errorf("the local port range is %q", b)
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("the local port range is %q", b)
	}
	return hi - lo + 1, nil
}

// dieWithParent has the kernel kill the child when the harness ends,
// however it ends, so that a crashed or interrupted run leaves no proxy
// or router behind holding ports.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
