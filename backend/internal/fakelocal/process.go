package fakelocal

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BuildBinary builds cmd/fakelocal for t into a directory every account
// may enter, so that StartProcess can run it as another account.
func BuildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakelocal")
	if out, err := exec.Command("go", "build", "-o", bin, "freelane/backend/cmd/fakelocal").CombinedOutput(); err != nil {
		t.Fatalf("building fakelocal: %v\n%s", err, out)
	}
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// StartProcess runs bin (from BuildBinary) as a server of kind with one
// model ("id:context") on a free loopback port, as the account uid, or as
// this process's account when uid is negative, and returns the port once
// the server says it listens. The process is killed when t ends. Running
// as another account needs root and setpriv; without them t is skipped.
func StartProcess(t testing.TB, bin string, uid int, kind, model string) int {
	t.Helper()
	port := freePort(t)
	args := []string{"-kind", kind, "-port", strconv.Itoa(port), "-model", model}
	cmd := exec.Command(bin, args...)
	if uid >= 0 {
		if os.Getuid() != 0 {
			t.Skip("starting a server as another account needs root")
		}
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Skip("setpriv (util-linux) is not installed")
		}
		id := strconv.Itoa(uid)
		cmd = exec.Command("setpriv", append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups", bin}, args...)...)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ready <- sc.Scan() && strings.Contains(sc.Text(), strconv.Itoa(port))
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("fakelocal did not say it listens")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("fakelocal did not start")
	}
	return port
}

// freePort is a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
