package discovery

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
)

// owners gathers the owners of the connections one probe used. Each
// connection is asked once; what they say together decides the server's
// Owner.
type owners struct {
	fn func(net.Conn) (uint32, error)

	mu    sync.Mutex
	asked map[net.Conn]bool
	uids  []uint32
	err   error
}

func newOwners(fn func(net.Conn) (uint32, error)) *owners {
	return &owners{fn: fn, asked: map[net.Conn]bool{}}
}

// note asks who holds the far end of c, once per connection.
func (o *owners) note(c net.Conn) {
	if o.fn == nil || c == nil {
		return
	}
	o.mu.Lock()
	seen := o.asked[c]
	o.asked[c] = true
	o.mu.Unlock()
	if seen {
		return
	}
	uid, err := o.fn(c)
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		// The platform cannot tell: the owner stays unknown.
	case err != nil:
		o.err = errors.Join(o.err, err)
	case !slices.Contains(o.uids, uid):
		o.uids = append(o.uids, uid)
	}
}

// result is the server's owner. A failed lookup, or connections owned by
// two accounts (the port changed hands during the probe), is an error:
// such a server's answers cannot be put down to anyone.
func (o *owners) result() (Owner, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return Owner{}, fmt.Errorf("discovery: reading the owner of a connection: %w", o.err)
	}
	switch len(o.uids) {
	case 0:
		return Owner{}, nil
	case 1:
		return Owner{UID: o.uids[0], Known: true}, nil
	}
	return Owner{}, fmt.Errorf("discovery: the connections to one port belong to %d different accounts %v", len(o.uids), o.uids)
}
