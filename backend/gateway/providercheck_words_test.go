package gateway

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"freelane/backend/modellist"
)

// The network errors a key check meets are told in words, never as Go's
// own text, which names the dialer, the local address and the system call.
func TestUnreachableWords(t *testing.T) {
	transport := func(err error) error {
		return &modellist.TransportError{Host: "api.example", Message: err.Error(), Err: err}
	}
	dial := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 443}, Err: err}
	}
	cases := []struct {
		err  error
		want string
	}{
		{transport(dial(&net.DNSError{Err: "no such host", Name: "api.exampel.com", IsNotFound: true})), "the name api.exampel.com is not known"},
		{transport(dial(&net.DNSError{Err: "server misbehaving", Name: "api.example.com", IsTemporary: true})), "could not be looked up; check the network"},
		{transport(dial(os.NewSyscallError("connect", syscall.ECONNREFUSED))), "nothing is listening there"},
		{transport(dial(os.NewSyscallError("connect", syscall.EHOSTUNREACH))), "no route to it"},
		{transport(dial(os.NewSyscallError("read", syscall.ECONNRESET))), "closed the connection"},
		{transport(&net.DNSError{Err: "i/o timeout", Name: "api.example.com", IsTimeout: true}), "did not answer within 15s"},
		{fmt.Errorf("modellist: reading api.example: %w", context.DeadlineExceeded), "did not answer within 15s"},
		{transport(fmt.Errorf("tls: %w", x509.UnknownAuthorityError{})), "TLS certificate is not valid"},
		{transport(fmt.Errorf("http: server gave HTTP response to HTTPS client")), "speaks plain http, not https"},
		{transport(fmt.Errorf("something odd")), "the connection failed or broke"},
	}
	for _, c := range cases {
		got := unreachableWords(c.err)
		if !strings.Contains(got, c.want) {
			t.Errorf("%v: %q lacks %q", c.err, got, c.want)
		}
		for _, raw := range []string{"dial tcp", "10.0.0.9", "connect:", "lookup ", "modellist:"} {
			if strings.Contains(got, raw) {
				t.Errorf("%v: %q holds Go's text %q", c.err, got, raw)
			}
		}
	}
}
