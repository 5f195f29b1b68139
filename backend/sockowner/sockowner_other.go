//go:build !linux

package sockowner

import "net/netip"

func peerUID(netip.AddrPort, netip.AddrPort) (uint32, error) { return 0, ErrUnsupported }
