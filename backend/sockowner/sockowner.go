// Package sockowner tells which account of this machine owns the socket at
// the other end of a TCP connection whose two ends are both on this
// machine.
//
// For a connection a server accepted, the other end is the client's
// socket, so PeerUID names the account that runs the client. For a
// connection a program dialed, the other end is the socket the server
// accepted, which keeps the uid of the listening socket, so PeerUID names
// the account that runs the server (already while the connection waits to
// be accepted).
//
// Ask while the connection is open: once the other end has closed its
// socket, the kernel keeps it only in time-wait, without an owner, and the
// lookup returns ErrNotFound rather than a uid.
//
// Only Linux gives an answer; elsewhere every lookup returns
// ErrUnsupported.
package sockowner

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrUnsupported is returned where this platform cannot tell who owns a
// socket (any system but Linux, or a Linux whose socket diagnostics and
// /proc/net are both unavailable).
var ErrUnsupported = fmt.Errorf("sockowner: this system does not tell who owns a socket: %w", errors.ErrUnsupported)

// ErrNotFound is returned when no open socket on this machine has the
// connection's addresses: the other end is not on this machine, or it has
// closed (a socket in time-wait belongs to nobody any more).
var ErrNotFound = errors.New("sockowner: no open socket on this machine is the other end of the connection")

// PeerUID returns the uid of the account that owns the socket at the other
// end of c, a TCP connection (a *net.TCPConn, or anything whose LocalAddr
// and RemoteAddr are *net.TCPAddr). It costs one kernel lookup; callers
// that ask often about one connection should keep the answer, which does
// not change while the connection is open.
func PeerUID(c net.Conn) (uint32, error) {
	local, lok := c.LocalAddr().(*net.TCPAddr)
	remote, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return 0, fmt.Errorf("sockowner: %T is not a TCP connection", c)
	}
	return PeerUIDAddrPort(local.AddrPort(), remote.AddrPort())
}

// PeerUIDAddrPort returns the uid of the account that owns the TCP socket
// whose own address is remote and whose peer is local: the other end of a
// connection whose addresses, seen from this end, are local and remote.
// IPv4 addresses may be given as IPv4-mapped IPv6 addresses.
func PeerUIDAddrPort(local, remote netip.AddrPort) (uint32, error) {
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	if !local.IsValid() || !remote.IsValid() || local.Addr().Is4() != remote.Addr().Is4() {
		return 0, fmt.Errorf("sockowner: %v and %v are not the two ends of one TCP connection", local, remote)
	}
	return peerUID(local, remote)
}
