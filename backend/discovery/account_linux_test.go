package discovery

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procOwner reads, from /proc/net/tcp, the uid of the socket at the far
// end of c: the row whose local address is c's remote one and whose remote
// address is c's local one. It stands in for the platform lookup the
// gateway is given, to check that the connections Scan hands to
// Options.Owner lead to the server's own socket.
func procOwner(c net.Conn) (uint32, error) {
	local, remote := c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	want := func(a *net.TCPAddr) string {
		ip := a.IP.To4()
		return fmt.Sprintf("%08X:%04X", binary.LittleEndian.Uint32(ip), a.Port)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[1] != want(remote) || f[2] != want(local) {
			continue
		}
		uid, err := strconv.ParseUint(f[7], 10, 32)
		return uint32(uid), err
	}
	return 0, errors.New("no row for the connection")
}

// A real server run by another account (nobody, uid 65534) is told apart
// from one run by this account, through the connections the scan made.
func TestRealAccounts(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("starting a server as another account needs root")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv is not installed")
	}
	bin := filepath.Join(t.TempDir(), "fakelocal")
	if out, err := exec.Command("go", "build", "-o", bin, "freelane/backend/cmd/fakelocal").CombinedOutput(); err != nil {
		t.Fatalf("building fakelocal: %v\n%s", err, out)
	}
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(asNobody bool) int {
		port := freePort(t)
		args := []string{"-kind", "ollama", "-port", strconv.Itoa(port), "-model", "qwen2.5:7b:8192"}
		cmd := exec.Command(bin, args...)
		if asNobody {
			cmd = exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		line := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(out)
			if sc.Scan() {
				line <- sc.Text()
			}
			close(line)
		}()
		select {
		case l := <-line:
			if !strings.Contains(l, strconv.Itoa(port)) {
				t.Fatalf("fakelocal printed %q", l)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("fakelocal did not start")
		}
		return port
	}
	theirs, mine := run(true), run(false)
	got := Scan(context.Background(), Options{Ports: []int{theirs, mine}, Owner: procOwner})
	if len(got) != 2 {
		t.Fatalf("found %+v", got)
	}
	byPort := map[int]Owner{got[0].Port: got[0].Owner, got[1].Port: got[1].Owner}
	if o := byPort[theirs]; o != (Owner{UID: 65534, Known: true}) || o.TrustedBy(0) {
		t.Errorf("nobody's server: %+v", o)
	}
	if o := byPort[mine]; o != (Owner{UID: 0, Known: true}) || !o.TrustedBy(0) {
		t.Errorf("root's own server: %+v", o)
	}
}
