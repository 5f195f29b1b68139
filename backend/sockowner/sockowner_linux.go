package sockowner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerUID asks the kernel's socket diagnostics (netlink sock_diag) first:
// one request naming the exact socket is one hash lookup in the kernel. If
// netlink is unavailable (a sandbox that forbids it, a kernel without
// inet_diag), it reads /proc/net/tcp and /proc/net/tcp6 instead.
func peerUID(local, remote netip.AddrPort) (uint32, error) {
	uid, err := diagUID(local, remote)
	if err == nil || errors.Is(err, ErrNotFound) && !errors.Is(err, errNoDiag) {
		return uid, err
	}
	uid, perr := procUID(local, remote)
	if errors.Is(perr, ErrUnsupported) && errors.Is(err, ErrNotFound) {
		// /proc is not there to say otherwise; netlink's answer stands.
		return 0, err
	}
	return uid, perr
}

// errNoDiag marks a netlink answer of ENOENT, which the kernel gives both
// for a socket it did not find and for a family it has no diagnostics
// module for; /proc then has the last word.
var errNoDiag = errors.New("sock_diag answered ENOENT")

// Sizes and offsets of the kernel's structures (linux/inet_diag.h).
const (
	nlmsgHdrLen   = 16 // struct nlmsghdr
	diagReqLen    = 56 // struct inet_diag_req_v2
	diagMsgLen    = 72 // struct inet_diag_msg
	sockIDOffset  = 8  // inet_diag_sockid within inet_diag_req_v2
	msgIDOffset   = 4  // inet_diag_sockid within inet_diag_msg
	msgTimerOff   = 2  // idiag_timer within inet_diag_msg
	msgUIDOffset  = 64 // idiag_uid within inet_diag_msg
	timerTimeWait = 3  // idiag_timer of a socket in time-wait
	// sockDiagByFamily is SOCK_DIAG_BY_FAMILY (linux/sock_diag.h).
	sockDiagByFamily = 20
	// noCookie is INET_DIAG_NOCOOKIE: match the socket by its addresses
	// alone.
	noCookie = ^uint32(0)
)

// diagUID looks the socket up with one SOCK_DIAG_BY_FAMILY request.
func diagUID(local, remote netip.AddrPort) (uint32, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, fmt.Errorf("sockowner: opening a sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	// The kernel answers while handling the send, so the answer is queued
	// before the read; the timeout only guards against a kernel that
	// never answers.
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, fmt.Errorf("sockowner: %w", err)
	}
	var req [nlmsgHdrLen + diagReqLen]byte
	marshalRequest(req[:], local, remote)
	// An unconnected netlink socket sends to the kernel, so write needs
	// no address.
	if _, err := unix.Write(fd, req[:]); err != nil {
		return 0, fmt.Errorf("sockowner: sending a sock_diag request: %w", err)
	}
	var buf [4096]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return 0, fmt.Errorf("sockowner: reading the sock_diag answer: %w", err)
	}
	return parseAnswer(buf[:n], local, remote)
}

// marshalRequest writes a netlink header and an inet_diag_req_v2 naming
// the peer's socket: its source is the connection's remote end and its
// destination the connection's local end. Ports are big-endian, addresses
// in network order, the rest in host order.
func marshalRequest(b []byte, local, remote netip.AddrPort) {
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], sockDiagByFamily)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], 1) // sequence number
	r := b[nlmsgHdrLen:]
	r[0] = family(remote.Addr())
	r[1] = unix.IPPROTO_TCP
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	marshalSockID(r[sockIDOffset:], remote, local)
	ne.PutUint32(r[sockIDOffset+36:], 0) // any interface
	ne.PutUint32(r[sockIDOffset+40:], noCookie)
	ne.PutUint32(r[sockIDOffset+44:], noCookie)
}

// marshalSockID writes the ports and addresses of an inet_diag_sockid.
func marshalSockID(id []byte, src, dst netip.AddrPort) {
	binary.BigEndian.PutUint16(id[0:], src.Port())
	binary.BigEndian.PutUint16(id[2:], dst.Port())
	putAddr(id[4:20], src.Addr())
	putAddr(id[20:36], dst.Addr())
}

// putAddr writes an address as idiag_src and idiag_dst hold it: an IPv4
// address in the first four bytes, an IPv6 address in all sixteen.
func putAddr(b []byte, a netip.Addr) {
	clear(b)
	if a.Is4() {
		v := a.As4()
		copy(b, v[:])
		return
	}
	v := a.As16()
	copy(b, v[:])
}

// sockID reads the ends of an inet_diag_sockid of the given family. An
// IPv6 socket that speaks IPv4 has IPv4-mapped addresses.
func sockID(fam byte, id []byte) (src, dst netip.AddrPort, ok bool) {
	n := 4
	switch fam {
	case unix.AF_INET:
	case unix.AF_INET6:
		n = 16
	default:
		return src, dst, false
	}
	s, _ := netip.AddrFromSlice(id[4 : 4+n])
	d, _ := netip.AddrFromSlice(id[20 : 20+n])
	return netip.AddrPortFrom(s, binary.BigEndian.Uint16(id[0:])), netip.AddrPortFrom(d, binary.BigEndian.Uint16(id[2:])), true
}

func family(a netip.Addr) byte {
	if a.Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// parseAnswer reads the uid from the kernel's answer, after checking that
// it describes the socket asked about and not, say, a listener on the
// same port that the kernel found once the socket itself had gone.
func parseAnswer(b []byte, local, remote netip.AddrPort) (uint32, error) {
	ne := binary.NativeEndian
	if len(b) < nlmsgHdrLen {
		return 0, errors.New("sockowner: short sock_diag answer")
	}
	switch ne.Uint16(b[4:]) {
	case unix.NLMSG_ERROR:
		if len(b) < nlmsgHdrLen+4 {
			return 0, errors.New("sockowner: short sock_diag error")
		}
		errno := syscall.Errno(-int32(ne.Uint32(b[nlmsgHdrLen:])))
		if errno == unix.ENOENT {
			return 0, fmt.Errorf("%w (%w)", ErrNotFound, errNoDiag)
		}
		return 0, fmt.Errorf("sockowner: sock_diag: %w", errno)
	case sockDiagByFamily:
	default:
		return 0, fmt.Errorf("sockowner: unexpected sock_diag answer of type %d", ne.Uint16(b[4:]))
	}
	m := b[nlmsgHdrLen:]
	if len(m) < diagMsgLen {
		return 0, errors.New("sockowner: short inet_diag_msg")
	}
	src, dst, ok := sockID(m[0], m[msgIDOffset:])
	if !ok || !sameEnd(src, remote) || !sameEnd(dst, local) {
		return 0, ErrNotFound
	}
	// A socket in time-wait has no owner; the kernel reports uid 0 for it,
	// which must not pass for root.
	if m[msgTimerOff] == timerTimeWait {
		return 0, ErrNotFound
	}
	return ne.Uint32(m[msgUIDOffset:]), nil
}

// procFiles are where procUID looks, for IPv4 and IPv6 sockets. An IPv4
// connection's peer may be an IPv6 socket speaking to a mapped address,
// so IPv4 looks in both.
var procFiles = struct{ v4, v6 string }{"/proc/net/tcp", "/proc/net/tcp6"}

// procUID finds the peer's socket in /proc/net/tcp and /proc/net/tcp6.
func procUID(local, remote netip.AddrPort) (uint32, error) {
	files := []string{procFiles.v6}
	if remote.Addr().Is4() {
		files = []string{procFiles.v4, procFiles.v6}
	}
	opened := false
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		opened = true
		uid, err := scanProc(f, local, remote)
		f.Close()
		if !errors.Is(err, ErrNotFound) {
			return uid, err
		}
	}
	if !opened {
		return 0, ErrUnsupported
	}
	return 0, ErrNotFound
}
