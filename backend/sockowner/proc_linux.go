package sockowner

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// scanProc reads a /proc/net/tcp or /proc/net/tcp6 table and returns the
// uid of the row whose local address is remote and whose remote address is
// local: the socket at the other end of the connection. IPv4 addresses are
// also matched in their IPv6-mapped form, as tcp6 lists an IPv6 socket
// connected over IPv4.
func scanProc(r io.Reader, local, remote netip.AddrPort) (uint32, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), 4096)
	first := true
	for sc.Scan() {
		if first {
			first = false // the column titles
			continue
		}
		row, err := parseProcRow(sc.Text())
		if err != nil {
			return 0, err
		}
		if sameEnd(row.local, remote) && sameEnd(row.remote, local) {
			if row.timer == timerTimeWait {
				return 0, ErrNotFound
			}
			return row.uid, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("sockowner: reading the socket table: %w", err)
	}
	return 0, ErrNotFound
}

func sameEnd(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}

// procRow is what scanProc needs of one row.
type procRow struct {
	local, remote netip.AddrPort
	timer         byte
	uid           uint32
}

// parseProcRow parses one row of the table:
//
//	sl  local_address rem_address   st tx_queue:rx_queue tr:tm->when retrnsmt   uid  timeout inode
//	0: 0100007F:1F90 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000     0        0 12345 ...
func parseProcRow(line string) (procRow, error) {
	f := strings.Fields(line)
	if len(f) < 8 {
		return procRow{}, fmt.Errorf("sockowner: a socket table row has %d fields, want at least 8: %q", len(f), line)
	}
	var row procRow
	var err error
	if row.local, err = parseProcAddr(f[1]); err != nil {
		return procRow{}, err
	}
	if row.remote, err = parseProcAddr(f[2]); err != nil {
		return procRow{}, err
	}
	tr, _, ok := strings.Cut(f[5], ":")
	timer, terr := strconv.ParseUint(tr, 16, 8)
	if !ok || terr != nil {
		return procRow{}, fmt.Errorf("sockowner: bad timer field %q in the socket table", f[5])
	}
	row.timer = byte(timer)
	uid, err := strconv.ParseUint(f[7], 10, 32)
	if err != nil {
		return procRow{}, fmt.Errorf("sockowner: bad uid %q in the socket table", f[7])
	}
	row.uid = uint32(uid)
	return row, nil
}

// parseProcAddr parses ADDR:PORT as the kernel prints it: the address as
// 32-bit words in hex, each word the host-order reading of four bytes in
// network order, and the port as a plain hex number.
func parseProcAddr(s string) (netip.AddrPort, error) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	port, perr := strconv.ParseUint(hexPort, 16, 16)
	if !ok || perr != nil || (len(hexAddr) != 8 && len(hexAddr) != 32) {
		return netip.AddrPort{}, fmt.Errorf("sockowner: bad address %q in the socket table", s)
	}
	var raw [16]byte
	b := raw[:len(hexAddr)/2]
	for i := 0; i < len(b); i += 4 {
		var word [4]byte
		if _, err := hex.Decode(word[:], []byte(hexAddr[2*i:2*i+8])); err != nil {
			return netip.AddrPort{}, errors.Join(fmt.Errorf("sockowner: bad address %q in the socket table", s), err)
		}
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(word[:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a, uint16(port)), nil
}
