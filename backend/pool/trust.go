package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"freelane/backend/atomicfile"
	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/defaults"
	"freelane/backend/discovery"
	"freelane/backend/sockowner"
)

// socketOwner tells which account holds the far end of a loopback
// connection, the way discovery learns who runs each local server. It is
// the one place the pool takes socket owners from; an error matching
// errors.ErrUnsupported means the platform cannot tell, and every server
// is then trusted as before.
var socketOwner func(c net.Conn) (uid uint32, err error) = sockowner.PeerUID

// selfUID is the user id FreeLane runs as. Where the platform has none
// (Windows, -1) no owner is known either, so the value never decides.
func selfUID() uint32 {
	if id := os.Getuid(); id >= 0 {
		return uint32(id)
	}
	return ^uint32(0)
}

// allowFile keeps, in the data directory, the local servers of other
// accounts the user allowed to serve.
const allowFile = "local-servers.json"

// maxAllowed bounds the allowances kept; each is one server a person
// looked at and chose.
const maxAllowed = 64

// allowance lets the server of another account serve: the one found on
// Port, of Kind, run by UID. Another account listening on that port
// later, or another kind of server there, is not allowed by it.
type allowance struct {
	Port int    `json:"port"`
	Kind string `json:"kind"`
	UID  uint32 `json:"uid"`
}

// allowances are the allowances in use, kept in allowFile.
type allowances struct {
	path string
	mu   sync.Mutex
	list []allowance
}

// loadAllowances reads allowFile; a missing file is none, a damaged one
// is logged and read as none (nothing is allowed by a file FreeLane
// cannot read).
func loadAllowances(dir string, log *slog.Logger) *allowances {
	a := &allowances{path: filepath.Join(dir, allowFile)}
	f, err := os.Open(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		return a
	}
	if err != nil {
		log.Warn("the allowed local servers cannot be read; none is allowed", "file", a.path, "err", err)
		return a
	}
	defer f.Close()
	var doc struct {
		Allowed []allowance `json:"allowed"`
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err == nil {
		err = json.Unmarshal(data, &doc)
	}
	if err != nil {
		log.Warn("the allowed local servers cannot be read; none is allowed", "file", a.path, "err", err)
		return a
	}
	for _, e := range doc.Allowed {
		if validAllowance(e) && !slices.Contains(a.list, e) && len(a.list) < maxAllowed {
			a.list = append(a.list, e)
		}
	}
	return a
}

func validAllowance(e allowance) bool {
	return e.Port > 0 && e.Port <= 65535 && len(e.Kind) <= 32 && discovery.ValidID(e.Kind)
}

// has reports whether the server on port, of kind, run by uid, is allowed.
func (a *allowances) has(port int, kind string, uid uint32) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.list, allowance{Port: port, Kind: kind, UID: uid})
}

// set adds or removes e and writes the file; it reports whether anything
// changed.
func (a *allowances) set(e allowance, allow bool) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := slices.Index(a.list, e)
	switch {
	case allow && i >= 0, !allow && i < 0:
		return false, nil
	case allow && len(a.list) >= maxAllowed:
		return false, &control.Error{Status: http.StatusConflict, Param: "port",
			Message: fmt.Sprintf("at most %d local servers of other users can be allowed; withdraw one first", maxAllowed)}
	}
	next := slices.Clone(a.list)
	if allow {
		next = append(next, e)
	} else {
		next = slices.Delete(next, i, i+1)
	}
	data, err := json.MarshalIndent(map[string][]allowance{"allowed": next}, "", "  ")
	if err != nil {
		return false, err
	}
	if err := atomicfile.Write(a.path, append(data, '\n')); err != nil {
		return false, err
	}
	a.list = next
	return true, nil
}

// accountName is the name of the account with uid, when os/user knows
// it, made safe to show; "" otherwise.
func accountName(uid uint32) string {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil || len(u.Username) > 64 || !discovery.ValidID(u.Username) {
		return ""
	}
	return u.Username
}

// ownerWords names the account that runs a server, for messages.
func ownerWords(o discovery.Owner) string {
	if name := accountName(o.UID); name != "" {
		return fmt.Sprintf("%s, user id %d", name, o.UID)
	}
	return fmt.Sprintf("user id %d", o.UID)
}

// foreignWhy is the event's and the log's words for a server of another
// account that is not used.
func foreignWhy(s discovery.Server) string {
	return fmt.Sprintf("%s answers on port %d but is run by another user of this machine (%s); it gets no request unless you allow it on the Setup screen",
		s.Name, s.Port, ownerWords(s.Owner))
}

// Allow lets the server of another account found on port, of kind, run
// by uid, serve, or withdraws that permission (allow false). The
// permission is kept in the data directory.
func (p *Pool) Allow(port int, kind string, uid uint32, allow bool) error {
	e := allowance{Port: port, Kind: kind, UID: uid}
	if allow {
		p.mu.Lock()
		ls := p.local[port]
		match := ls != nil && ls.up && ls.foreign && ls.server.Kind == kind && ls.server.Owner.UID == uid
		p.mu.Unlock()
		if !match {
			return &control.Error{Status: http.StatusNotFound, Param: "port",
				Message: fmt.Sprintf("no local server of another user answers on port %d as %s run by user id %d; press Look again and allow it from the list",
					port, discovery.Sample(kind), uid)}
		}
	}
	changed, err := p.allowed.set(e, allow)
	if err != nil {
		return err
	}
	if !allow && !changed {
		return &control.Error{Status: http.StatusNotFound, Param: "port",
			Message: fmt.Sprintf("the local server on port %d (%s, user id %d) was not allowed", port, discovery.Sample(kind), uid)}
	}
	if changed {
		verb := "allowed"
		if !allow {
			verb = "no longer allowed"
		}
		p.log.Info("a local server of another user is "+verb, "port", port, "kind", kind, "uid", uid)
		p.reconsider()
	}
	return nil
}

// Transport is the transport for p when it is the provider of a server
// discovery found, or nil for any other provider. It checks every
// connection it makes: the server must still be run by the account the
// scan found, since another account could take the port between two
// scans and would then get the prompts until the next one.
func (v View) Transport(p config.Provider) http.RoundTripper {
	want, found := v.owners[p.Name]
	if !found || !want.Known {
		return nil
	}
	owner := v.lookup
	d := &net.Dialer{Timeout: p.Timeouts.Connect, KeepAlive: defaults.KeepAlive}
	return &http.Transport{
		// Loopback only: no proxy may see the prompts.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			uid, err := owner(c)
			if errors.Is(err, errors.ErrUnsupported) {
				return c, nil
			}
			if err != nil || uid != want.UID {
				c.Close()
				if err != nil {
					return nil, fmt.Errorf("who runs the local server at %s cannot be told, so it gets no request: %w", addr, err)
				}
				return nil, fmt.Errorf("the local server at %s is now run by user id %d, not by user id %d as when it was found; it gets no request", addr, uid, want.UID)
			}
			return c, nil
		},
		ResponseHeaderTimeout: p.Timeouts.Header,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       defaults.IdleConnTimeout,
	}
}
