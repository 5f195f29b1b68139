package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"

	"freelane/backend/internal/fakelocal"
)

// ownerBy answers every connection to port with uid (or err), and records
// the far ports of the connections it was asked about.
type ownerBy struct {
	uid uint32
	err error

	mu    sync.Mutex
	ports []int
}

func (o *ownerBy) owner(c net.Conn) (uint32, error) {
	o.mu.Lock()
	o.ports = append(o.ports, c.RemoteAddr().(*net.TCPAddr).Port)
	o.mu.Unlock()
	return o.uid, o.err
}

// The account of each server is read from the connections the scan made
// to it, and decides whether it may serve this account: its own, root's
// and the system accounts' servers may, another person's may not, and one
// whose owner the platform does not tell is trusted as before.
func TestOwnerOfEachServer(t *testing.T) {
	const self = 1500
	s := start(t, fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "qwen2.5:7b", Loaded: true}}})
	unsupported := fmt.Errorf("sockowner: no socket owners on this platform: %w", errors.ErrUnsupported)
	for _, c := range []struct {
		name    string
		o       *ownerBy
		want    Owner
		trusted bool
	}{
		{"own", &ownerBy{uid: self}, Owner{UID: self, Known: true}, true},
		{"root", &ownerBy{uid: 0}, Owner{UID: 0, Known: true}, true},
		{"system 120", &ownerBy{uid: 120}, Owner{UID: 120, Known: true}, true},
		{"another 1001", &ownerBy{uid: 1001}, Owner{UID: 1001, Known: true}, false},
		{"nobody 65534", &ownerBy{uid: 65534}, Owner{UID: 65534, Known: true}, false},
		{"unknown", &ownerBy{err: unsupported}, Owner{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Scan(context.Background(), Options{Ports: []int{s.Port()}, Owner: c.o.owner})
			if len(got) != 1 {
				t.Fatalf("found %+v", got)
			}
			if got[0].Owner != c.want {
				t.Errorf("owner %+v, want %+v", got[0].Owner, c.want)
			}
			if tr := got[0].Owner.TrustedBy(self); tr != c.trusted {
				t.Errorf("trusted by %d: %v, want %v", self, tr, c.trusted)
			}
			c.o.mu.Lock()
			defer c.o.mu.Unlock()
			if len(c.o.ports) == 0 {
				t.Fatal("the owner was never asked")
			}
			for _, p := range c.o.ports {
				if p != s.Port() {
					t.Errorf("asked about a connection to port %d, not the server's %d", p, s.Port())
				}
			}
		})
	}
}

// A server whose owner cannot be read (the lookup failed, not merely
// unsupported) is left out rather than trusted.
func TestOwnerLookupFailureLeavesServerOut(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "m"}}})
	o := &ownerBy{err: errors.New("no row for the connection in /proc/net/tcp")}
	if got := Scan(context.Background(), Options{Ports: []int{s.Port()}, Owner: o.owner}); len(got) != 0 {
		t.Fatalf("a server of unknown owner was kept: %+v", got)
	}
}

// A port whose connections belong to two accounts during one scan (it
// changed hands) gives answers nobody can be held to: it is left out.
func TestOwnerChangingDuringScanLeavesServerOut(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "a"}, {ID: "b"}, {ID: "c"}}})
	var mu sync.Mutex
	n := 0
	owner := func(c net.Conn) (uint32, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return uint32(1000 + n), nil
	}
	// Fresh connections for each request: the default client would reuse
	// one, and one connection has one owner.
	c := NewClient()
	c.Transport.(*http.Transport).DisableKeepAlives = true
	if got := Scan(context.Background(), Options{Ports: []int{s.Port()}, Owner: owner, Client: c}); len(got) != 0 {
		t.Fatalf("a server with two owners was kept: %+v", got)
	}
	if n < 2 {
		t.Fatalf("only %d connections were checked", n)
	}
}

// A connection kept from an earlier scan is checked again by the next
// one: the owner is known for every scan, not only the one that dialled.
func TestOwnerOfReusedConnection(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "m"}}})
	first := Scan(context.Background(), Options{Ports: []int{s.Port()}, Owner: (&ownerBy{uid: 0}).owner})
	second := Scan(context.Background(), Options{Ports: []int{s.Port()}, Owner: (&ownerBy{uid: 1001}).owner})
	if len(first) != 1 || len(second) != 1 || first[0].Owner.UID != 0 || second[0].Owner.UID != 1001 || !second[0].Owner.Known {
		t.Fatalf("first %+v, second %+v", first, second)
	}
}

// Without an Owner function every server's owner is unknown, and trusted.
func TestNoOwnerFunction(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.VLLM, Models: []fakelocal.Model{{ID: "v", Context: 4096}}})
	got := Scan(context.Background(), Options{Ports: []int{s.Port()}})
	if len(got) != 1 || got[0].Owner.Known || !got[0].Owner.TrustedBy(1500) {
		t.Fatalf("got %+v", got)
	}
}
