package router

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"freelane/backend/llm"
)

// ResponseCache is the exact response cache: identical deterministic
// requests answered without calling a backend. The respcache package
// provides it.
type ResponseCache interface {
	// Lookup says what the cache does with req, routed to route (a name
	// of the backends the request resolved to; chain is the chain's own
	// name, "" for a pinned backend or a model id). outcome "" means the
	// cache has no part in it (off for the chain, or a request it does
	// not keep). A CacheHit comes with the answer; a CacheMiss or a
	// CacheRefreshed with the keeper that takes the answer the client
	// gets.
	Lookup(req *llm.Request, route, chain string) (outcome llm.CacheOutcome, hit CachedAnswer, keep CacheKeeper)
}

// CachedAnswer is an answer found in the response cache.
type CachedAnswer interface {
	// Origin is where the answer came from when it was made.
	Origin() CacheOrigin
	// Created is when it was made.
	Created() time.Time
	// Body is the answer as a whole response of req's dialect, with the
	// request's id.
	Body(req *llm.Request, id string) ([]byte, error)
	// Events are the answer as a stream of req's dialect, closing events
	// included but not the dialect's end marker.
	Events(req *llm.Request, id string) ([]llm.Event, error)
}

// CacheKeeper takes the answer of a request the cache keeps, as the
// client got it in its dialect.
type CacheKeeper interface {
	// Body keeps a whole answer.
	Body(body []byte, o CacheOrigin)
	// Event reads one event of a stream, in the order the client got
	// them.
	Event(data []byte)
	// Done keeps the stream read so far: it ended cleanly.
	Done(o CacheOrigin)
}

// CacheOrigin is what made a cached answer: the backend, the usage it
// reported and what the call cost.
type CacheOrigin struct {
	Backend string
	Usage   llm.Usage
	Cost    float64
}

// SetCache installs the response cache. Call it before serving.
func (r *Router) SetCache(c ResponseCache) { r.cache = c }

// cacheUse is one request's business with the response cache.
type cacheUse struct {
	// replay answers the request from a hit, for Complete or Stream.
	replay func(h CachedAnswer, tr *llm.Trace) error
	// keep, set on a miss or a refresh, takes the answer.
	keep CacheKeeper
	// end, set by a replay that held back the end of its answer, writes
	// it: the run calls it once the hit's trace is stored, as a backend's
	// answer waits (SetStoredWait).
	end func()
}

// finish writes what the replay held back.
func (cu *cacheUse) finish() {
	if cu.end != nil {
		cu.end()
		cu.end = nil
	}
}

// cacheRoute names the backends a request resolved to, for the cache's
// key: the chain, or the backends themselves when no chain named them,
// and the shortcut that narrowed them (a ":local" request is not answered
// with what a remote backend made for the plain chain).
func cacheRoute(route Route) string {
	var b strings.Builder
	if route.Chain != "" {
		b.WriteString("chain:")
		b.WriteString(route.Chain)
	} else {
		b.WriteString("backends:")
		for i, be := range route.Backends {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(be.name)
		}
	}
	if s := route.Shortcut.String(); s != "" {
		b.WriteString(" shortcut:")
		b.WriteString(s)
	}
	return b.String()
}

// fromCache asks the cache about req; true when a hit answered it, with
// the trace filled in. Nothing else is touched on a hit: no backend, no
// quota, no breaker.
func (r *Router) fromCache(req *llm.Request, route Route, tr *llm.Trace, cu *cacheUse) bool {
	outcome, hit, keep := r.cache.Lookup(req, cacheRoute(route), route.Chain)
	tr.Cache, req.Cache.Outcome = outcome, outcome
	if outcome != llm.CacheHit {
		cu.keep = keep
		return false
	}
	if err := cu.replay(hit, tr); err != nil {
		// An answer that cannot be written in the client's dialect is
		// not served from the cache; the backends answer it as if the
		// entry were not there.
		r.log.Warn("cached answer not replayed", "dialect", req.Dialect, "err", err)
		tr.Cache, req.Cache.Outcome = llm.CacheMiss, llm.CacheMiss
		cu.keep = keep
		return false
	}
	o := hit.Origin()
	tr.Usage, tr.Saved = o.Usage, o.Cost
	tr.Status, tr.Class = http.StatusOK, llm.OK
	tr.Notes = append(tr.Notes[:len(tr.Notes):len(tr.Notes)], fmt.Sprintf("answered from the response cache; made by %s %s ago",
		o.Backend, r.clock.Since(hit.Created()).Round(time.Second)))
	return true
}

// keepSink is a stream's sink that shows every event to the cache's
// keeper on the way to the client, once the cache wants the answer.
type keepSink struct {
	Sink
	cu   *cacheUse
	done bool
}

func (s *keepSink) Send(data []byte, flush bool) error {
	if s.cu.keep != nil {
		s.cu.keep.Event(data)
	}
	return s.Sink.Send(data, flush)
}

func (s *keepSink) Done() error {
	err := s.Sink.Done()
	s.done = err == nil
	return err
}

// replayStream writes a hit's events into sink as a committed stream, all
// but the last, which with the stream's end it leaves to cu.end.
func (cu *cacheUse) replayStream(req *llm.Request, sink Sink, h CachedAnswer, tr *llm.Trace) error {
	evs, err := h.Events(req, tr.ID)
	if err != nil {
		return err
	}
	evs = slices.DeleteFunc(evs, func(ev llm.Event) bool { return ev.Kind == llm.UsageOnly && !req.WantsUsage })
	tr.Committed = true
	if err := sink.Commit(tr.ID, nil, nil); err != nil {
		return nil
	}
	var last []byte
	if n := len(evs); n > 0 {
		last = evs[n-1].Data
		evs = evs[:n-1]
	}
	for i, ev := range evs {
		if err := sink.Send(ev.Data, i == len(evs)-1); err != nil {
			return nil
		}
	}
	cu.end = func() {
		if last != nil && sink.Send(last, true) != nil {
			return
		}
		_ = sink.Done()
	}
	return nil
}
