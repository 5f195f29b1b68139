package discovery

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"time"

	"freelane/backend/clock"
)

// WatchOptions configure a Watcher.
type WatchOptions struct {
	Options
	// Interval is the time between scans; 0 means one minute.
	Interval time.Duration
	// Clock paces the scans; nil means the wall clock.
	Clock clock.Clock
	// OnChange is called with the full list after the first scan and after
	// every later scan whose result differs from the one before. Calls
	// never overlap and come in scan order. It may be nil.
	OnChange func([]Server)
}

// Watcher scans the local ports at start and then every Interval, so that
// servers started, stopped or restarted while FreeLane runs are noticed.
type Watcher struct {
	o WatchOptions

	// scanMu makes scans one at a time, so that a scan asked for from the
	// dashboard and a scheduled one cannot report out of order.
	scanMu  sync.Mutex
	scanned bool

	mu   sync.Mutex
	last []Server

	// afterScan, when set, is called at the end of every scan; tests use
	// it to know a scheduled scan has finished.
	afterScan func()
}

// NewWatcher returns a Watcher; it does nothing until Run or ScanNow.
func NewWatcher(o WatchOptions) *Watcher {
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	o.Clock = clock.OrReal(o.Clock)
	return &Watcher{o: o}
}

// Run scans at once and then every Interval until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	t, tick := w.o.Clock.NewTicker(w.o.Interval)
	defer t.Stop()
	w.ScanNow(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			w.ScanNow(ctx)
		}
	}
}

// Servers returns the last scan's result.
func (w *Watcher) Servers() []Server {
	w.mu.Lock()
	defer w.mu.Unlock()
	return cloneServers(w.last)
}

// ScanNow scans at once, notifies OnChange as a scheduled scan would, and
// returns the result.
func (w *Watcher) ScanNow(ctx context.Context) []Server {
	w.scanMu.Lock()
	defer w.scanMu.Unlock()
	found := Scan(ctx, w.o.Options)
	if ctx.Err() != nil {
		// A scan cut short by shutdown says nothing about the servers.
		return cloneServers(found)
	}
	w.mu.Lock()
	changed := !w.scanned || !reflect.DeepEqual(normalize(w.last), normalize(found))
	w.last = found
	w.scanned = true
	w.mu.Unlock()
	if changed && w.o.OnChange != nil {
		w.o.OnChange(cloneServers(found))
	}
	if w.afterScan != nil {
		w.afterScan()
	}
	return cloneServers(found)
}

// normalize makes nil and empty slices compare equal.
func normalize(list []Server) []Server {
	if len(list) == 0 {
		return nil
	}
	out := cloneServers(list)
	for i := range out {
		if len(out[i].Models) == 0 {
			out[i].Models = nil
		}
		for j := range out[i].Models {
			if len(out[i].Models[j].Capabilities) == 0 {
				out[i].Models[j].Capabilities = nil
			}
		}
	}
	return out
}

// cloneServers deep-copies list, so that no caller can change another's.
func cloneServers(list []Server) []Server {
	if list == nil {
		return nil
	}
	out := make([]Server, len(list))
	for i, s := range list {
		s.Models = slices.Clone(s.Models)
		for j := range s.Models {
			s.Models[j].Capabilities = slices.Clone(s.Models[j].Capabilities)
		}
		out[i] = s
	}
	return out
}
