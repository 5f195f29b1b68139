package sockowner

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// Captured on a little-endian Linux (x86-64): a listener on 127.0.0.1:8080
// owned by root, a connection to it from 127.0.0.1:53924 owned by nobody
// and its accepted end, a socket in time-wait (which the kernel shows as
// uid 0), and a listener of uid 1000 on 0.0.0.0:7788.
const capturedTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 40110 1 0000000000000000 100 0 0 10 0
   1: 0100007F:D2A4 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 65534        0 40117 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000     0        0 40118 1 0000000000000000 20 4 29 10 -1
   3: 0100007F:D2A6 0100007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000
   4: 00000000:1E6C 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 40200 1 0000000000000000 100 0 0 10 0
`

// Captured the same way for IPv6: a listener on [::1]:8080, a connection
// from [::1]:40000 of uid 1000, and an IPv6 socket of uid 1001 connected
// over IPv4 from 127.0.0.1:41000, which tcp6 lists with mapped addresses.
const capturedTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 50110 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:9C40 00000000000000000000000001000000:1F90 01 00000000:00000000 02:000AFC80 00000000  1000        0 50117 1 0000000000000000 20 4 30 10 -1
   2: 0000000000000000FFFF00000100007F:A028 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 00:00000000 00000000  1001        0 50120 1 0000000000000000 20 4 30 10 -1
`

func littleEndian(t *testing.T) {
	t.Helper()
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	if b[0] != 1 {
		t.Skip("the captured tables were printed by a little-endian kernel")
	}
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestScanProcCaptured(t *testing.T) {
	littleEndian(t)
	cases := []struct {
		name          string
		table         string
		local, remote netip.AddrPort
		uid           uint32
		err           error
	}{
		{"client of another account", capturedTCP, ap("127.0.0.1:8080"), ap("127.0.0.1:53924"), 65534, nil},
		{"accepted end seen from the client", capturedTCP, ap("127.0.0.1:53924"), ap("127.0.0.1:8080"), 0, nil},
		{"mapped addresses match IPv4 rows", capturedTCP, ap("[::ffff:127.0.0.1]:8080"), ap("[::ffff:127.0.0.1]:53924"), 65534, nil},
		{"time-wait has no owner", capturedTCP, ap("127.0.0.1:8080"), ap("127.0.0.1:53926"), 0, ErrNotFound},
		{"a listener is not a peer", capturedTCP, ap("127.0.0.1:1"), ap("0.0.0.0:7788"), 0, ErrNotFound},
		{"no such socket", capturedTCP, ap("127.0.0.1:8080"), ap("127.0.0.1:9"), 0, ErrNotFound},
		{"IPv6 client", capturedTCP6, ap("[::1]:8080"), ap("[::1]:40000"), 1000, nil},
		{"IPv6 socket over IPv4", capturedTCP6, ap("127.0.0.1:8080"), ap("127.0.0.1:41000"), 1001, nil},
		{"port order matters", capturedTCP6, ap("[::1]:40000"), ap("[::1]:8080"), 0, ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			uid, err := scanProc(strings.NewReader(c.table), c.local, c.remote)
			if !errors.Is(err, c.err) || err == nil && uid != c.uid {
				t.Errorf("scanProc = %d, %v; want %d, %v", uid, err, c.uid, c.err)
			}
		})
	}
}

func TestParseProcAddr(t *testing.T) {
	littleEndian(t)
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"0201A8C0:0050":                         "192.168.1.2:80",
		"00000000000000000000000001000000:1F90": "[::1]:8080",
		"B80D0120000000000000000001000000:01BB": "[2001:db8::1]:443",
	} {
		got, err := parseProcAddr(in)
		if err != nil || got != ap(want) {
			t.Errorf("parseProcAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:", "0100007F:10000", "0100007:1F90", "0100007G:1F90", "00000000000000000000000001000000"} {
		if _, err := parseProcAddr(bad); err == nil {
			t.Errorf("parseProcAddr(%q) accepted", bad)
		}
	}
}

func TestScanProcRejectsDamagedRows(t *testing.T) {
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for _, row := range []string{
		"   0: 0100007F:1F90 0100007F:D2A4 01",
		"   0: 0100007F:1F90 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000 -1 0 1",
		"   0: 0100007F:1F90 0100007F:D2A4 01 00000000:00000000 zz:00000000 00000000 0 0 1",
		"   0: 0100007F:1F90 nonsense 01 00000000:00000000 00:00000000 00000000 0 0 1",
	} {
		if _, err := scanProc(strings.NewReader(head+row+"\n"), ap("127.0.0.1:53924"), ap("127.0.0.1:8080")); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("row %q: err = %v, want a parse error", row, err)
		}
	}
}
