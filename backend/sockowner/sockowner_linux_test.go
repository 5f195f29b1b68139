package sockowner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv switches the test binary into a helper that holds one socket
// for a test running it as another account: "dial ADDR" connects to ADDR,
// "listen" accepts one connection, "listen, never accept" leaves it in the
// listener's queue. It prints its socket's address, then
// closes the socket when a line arrives on stdin and exits at EOF.
const childEnv = "SOCKOWNER_TEST_CHILD"

const nobody = 65534

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

func child(mode string) int {
	var c io.Closer
	var err error
	switch {
	case strings.HasPrefix(mode, "dial "):
		var d net.Conn
		d, err = net.Dial("tcp", strings.TrimPrefix(mode, "dial "))
		if err == nil {
			fmt.Println(d.LocalAddr())
			c = d
		}
	case mode == "listen" || mode == "listen, never accept":
		var ln net.Listener
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			fmt.Println(ln.Addr())
			c = ln
			if mode == "listen" {
				c, err = ln.Accept()
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	in := bufio.NewReader(os.Stdin)
	_, _ = in.ReadString('\n')
	c.Close()
	_, _ = io.Copy(io.Discard, in)
	return 0
}

// asNobody starts the test binary as a helper running as nobody, and
// returns the address it printed and a function that makes it close its
// socket.
func asNobody(t *testing.T, mode string) (addr string, closeSocket func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a helper as the account nobody (uid 65534)")
	}
	cmd := exec.Command(exported(t), "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper printed no address: %v", err)
	}
	return strings.TrimSpace(line), func() { _, _ = io.WriteString(stdin, "close\n") }
}

// exported copies the test binary where nobody may run it: go test builds
// it in a directory only its owner can enter.
func exported(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sockowner-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// pair returns both ends of a connection made over network to a listener on
// listen, dialing dial (the listener's address when empty).
func pair(t *testing.T, network, listen, dial string) (accepted, dialed net.Conn) {
	t.Helper()
	ln, err := net.Listen(network, listen)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", listen, err)
	}
	defer ln.Close()
	if dial == "" {
		dial = ln.Addr().String()
	} else {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		dial = net.JoinHostPort(dial, port)
	}
	dialed, err = net.Dial("tcp", dial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dialed.Close() })
	accepted, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { accepted.Close() })
	return accepted, dialed
}

func ends(c net.Conn) (local, remote netip.AddrPort) {
	return c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
}

// agree checks that PeerUID, netlink alone and /proc alone all give want
// for the other end of c.
func agree(t *testing.T, c net.Conn, want uint32) {
	t.Helper()
	uid, err := PeerUID(c)
	if err != nil || uid != want {
		t.Errorf("PeerUID(%v -> %v) = %d, %v; want %d", c.LocalAddr(), c.RemoteAddr(), uid, err, want)
	}
	local, remote := ends(c)
	local, remote = netip.AddrPortFrom(local.Addr().Unmap(), local.Port()), netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	if uid, err := diagUID(local, remote); err != nil || uid != want {
		t.Errorf("netlink says %d, %v; want %d", uid, err, want)
	}
	if uid, err := procUID(local, remote); err != nil || uid != want {
		t.Errorf("/proc says %d, %v; want %d", uid, err, want)
	}
}

func TestPeerUIDOwnSockets(t *testing.T) {
	me := uint32(os.Getuid())
	for _, c := range []struct{ name, network, listen, dial string }{
		{"IPv4", "tcp4", "127.0.0.1:0", ""},
		{"IPv6", "tcp6", "[::1]:0", ""},
		{"IPv4 to a dual-stack listener", "tcp", "[::]:0", "127.0.0.1"},
		{"IPv4 elsewhere in 127/8", "tcp4", "127.0.0.2:0", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			accepted, dialed := pair(t, c.network, c.listen, c.dial)
			agree(t, accepted, me)
			agree(t, dialed, me)
		})
	}
}

// TestPeerUIDAnotherAccount looks up real sockets of nobody: a client
// that connects to this test's listener, and a server this test connects
// to (whose accepted socket keeps its listener's owner).
func TestPeerUIDAnotherAccount(t *testing.T) {
	t.Run("client", func(t *testing.T) {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addr, closeSocket := asNobody(t, "dial "+ln.Addr().String())
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.RemoteAddr().String() != addr {
			t.Fatalf("accepted %v, the helper dialed from %s", c.RemoteAddr(), addr)
		}
		agree(t, c, nobody)

		// Once the client has closed, its socket goes to time-wait, which
		// the kernel shows as uid 0: that must not pass for root.
		closeSocket()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("read after the helper closed: %v", err)
		}
		for range 100 {
			uid, err := PeerUID(c)
			if errors.Is(err, ErrNotFound) {
				return
			}
			if err != nil || uid != nobody {
				t.Fatalf("PeerUID of a closed peer = %d, %v; want nobody or ErrNotFound", uid, err)
			}
			time.Sleep(10 * time.Millisecond) // the kernel's FIN handshake, not FreeLane's time
		}
		t.Error("a closed client's socket was still found after a second")
	})
	t.Run("server", func(t *testing.T) {
		addr, _ := asNobody(t, "listen")
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		agree(t, c, nobody)
	})
	t.Run("server that has not accepted yet", func(t *testing.T) {
		addr, _ := asNobody(t, "listen, never accept")
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		agree(t, c, nobody)
	})
}

func TestPeerUIDNotLocal(t *testing.T) {
	_, err := PeerUIDAddrPort(ap("127.0.0.1:8080"), ap("127.0.0.1:1"))
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("a socket nobody has: %v, want ErrNotFound", err)
	}
	if _, err := PeerUIDAddrPort(ap("127.0.0.1:8080"), ap("[::1]:1")); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("mixed families: %v, want a usage error", err)
	}
	if _, err := PeerUIDAddrPort(netip.AddrPort{}, ap("[::1]:1")); err == nil {
		t.Error("a zero address was accepted")
	}
}

func BenchmarkPeerUID(b *testing.B) {
	bench(b, PeerUIDAddrPort)
}

func BenchmarkPeerUIDProc(b *testing.B) {
	bench(b, procUID)
}

func bench(b *testing.B, lookup func(local, remote netip.AddrPort) (uint32, error)) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	d, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	c, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	local, remote := ends(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lookup(local, remote); err != nil {
			b.Fatal(err)
		}
	}
}
