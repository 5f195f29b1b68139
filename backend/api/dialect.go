package api

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/tokens"
)

// The inference surface is built from the registry of dialects: each
// dialect's Inbound names its routes, how its clients send their key and
// how their requests are told apart, and writes the answers that are its
// own (model lists, token counts). Nothing here names a dialect.

// surface is what the registry makes of the HTTP surface, worked out once
// when the server is made.
type surface struct {
	// dialects are the registered dialects that have clients, in registry
	// order: the order in which they claim a request.
	dialects []protocol.Dialect
	// owner is the dialect of each route, by its pattern.
	owner map[string]protocol.Dialect
	// prefixes are the guarded path prefixes ("/v1/").
	prefixes []string
	// keys are the headers a caller's key is read from, in order.
	keys []protocol.KeyHeader
	// corsAllow is the Access-Control-Allow-Headers of a preflight.
	corsAllow string
	// tokenRequired answers a request without the right inbound token.
	tokenRequired string
	// listed names the routes in the answer to an unknown path.
	listed string
}

// newSurface reads the registry. A route outside every prefix would skip
// the guard, and a call without the answer it needs would fail on every
// request, so both are programming errors and panic.
func newSurface(reg *protocol.Registry) surface {
	sf := surface{owner: map[string]protocol.Dialect{}}
	var listed, keyNames, cors []string
	seenKey := map[string]bool{}
	for _, d := range reg.Dialects() {
		in := d.Inbound
		if in == nil {
			continue
		}
		sf.dialects = append(sf.dialects, d)
		for _, p := range in.Prefixes {
			if len(p) < 2 || p[0] != '/' || p[len(p)-1] != '/' {
				panic(fmt.Sprintf("api: dialect %q: prefix %q must be a path of at least one segment that starts and ends with /", d.Name(), p))
			}
			if !contains(sf.prefixes, p) {
				sf.prefixes = append(sf.prefixes, p)
			}
		}
		for _, k := range in.KeyHeaders {
			c := http.CanonicalHeaderKey(k.Name)
			if seenKey[c+" "+k.Scheme] {
				continue
			}
			seenKey[c+" "+k.Scheme] = true
			sf.keys = append(sf.keys, k)
			keyNames = append(keyNames, k.String())
			cors = addHeader(cors, c)
		}
		for _, rt := range in.Routes {
			if rt.Listed != "" && !contains(listed, rt.Listed) {
				listed = append(listed, rt.Listed)
			}
		}
	}
	cors = addHeader(cors, "Content-Type")
	// Any client may steer routing, a web page's too.
	cors = addHeader(cors, TaskHeader)
	cors = addHeader(cors, GearHeader)
	cors = addHeader(cors, ConversationHeader)
	// And the response cache, with the header HTTP itself has for it.
	cors = addHeader(cors, CacheHeader)
	cors = addHeader(cors, "Cache-Control")
	for _, d := range sf.dialects {
		for _, h := range d.Inbound.CORSHeaders {
			cors = addHeader(cors, h)
		}
		for _, rt := range d.Inbound.Routes {
			checkRoute(d, rt, sf.prefixes)
			sf.owner[rt.Pattern] = d
		}
	}
	sf.corsAllow = strings.Join(cors, ", ")
	sf.tokenRequired = "this FreeLane requires its inbound token: set it as your tool's API key"
	if len(keyNames) > 0 {
		sf.tokenRequired += " (it is sent as " + joinList(keyNames, "or") + ")"
	}
	sf.tokenRequired += "; the token is server.token in FreeLane's config or its FREELANE_TOKEN environment variable"
	sf.listed = joinList(listed, "and")
	return sf
}

// checkRoute panics on a route the surface cannot serve safely.
func checkRoute(d protocol.Dialect, rt protocol.Route, prefixes []string) {
	_, path, ok := strings.Cut(rt.Pattern, " ")
	if !ok || !strings.HasPrefix(path, "/") {
		panic(fmt.Sprintf("api: dialect %q: route %q must be a method and a path", d.Name(), rt.Pattern))
	}
	under := false
	for _, p := range prefixes {
		under = under || strings.HasPrefix(path, p)
	}
	if !under {
		panic(fmt.Sprintf("api: dialect %q: route %q lies under no dialect's prefix, so it would not be guarded", d.Name(), rt.Pattern))
	}
	if rt.Serve == nil && rt.Resolve == nil && !answers(d.Inbound, rt.Call.Kind) {
		panic(fmt.Sprintf("api: dialect %q: route %q is a call its Inbound has no answer for", d.Name(), rt.Pattern))
	}
}

// answers reports whether in has the answer a call of kind k needs.
func answers(in *protocol.Inbound, k protocol.CallKind) bool {
	switch k {
	case protocol.CallGenerate:
		return true
	case protocol.CallCountTokens:
		return in.CountTokens != nil
	case protocol.CallListModels:
		return in.ListModels != nil
	case protocol.CallDescribeModel:
		return in.DescribeModel != nil
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// addHeader adds a header name to a list once, whatever its case.
func addHeader(list []string, h string) []string {
	for _, x := range list {
		if strings.EqualFold(x, h) {
			return list
		}
	}
	return append(list, h)
}

// joinList joins "a", "b" and "c" as "a, b or c", with conj for "or".
func joinList(items []string, conj string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + conj + " " + items[len(items)-1]
}

// guarded reports whether a path lies under a dialect's prefix, where
// every request passes the inference guard.
func (sf *surface) guarded(p string) bool {
	for _, pre := range sf.prefixes {
		if strings.HasPrefix(p, pre) || p == pre[:len(pre)-1] {
			return true
		}
	}
	return false
}

// claimed is the first dialect, in registry order, whose Claims holds
// for r.
func (sf *surface) claimed(r *http.Request) (protocol.Dialect, bool) {
	for _, d := range sf.dialects {
		if d.Inbound.Claims != nil && d.Inbound.Claims(r) {
			return d, true
		}
	}
	return protocol.Dialect{}, false
}

// clientDialect is the dialect a request speaks, in which FreeLane's own
// refusals of it are written: clients parse errors only in their own
// shape, so a client refused for its token must read its own envelope. It
// is the dialect that claims the request, else the one whose route it
// matched, else the first; ok is false only with no dialect at all.
func (s *Server) clientDialect(r *http.Request) (protocol.Dialect, bool) {
	if d, ok := s.sf.claimed(r); ok {
		return d, true
	}
	pattern := r.Pattern
	if pattern == "" {
		_, pattern = s.mux.Handler(r)
	}
	if d, ok := s.sf.owner[pattern]; ok {
		return d, true
	}
	if len(s.sf.dialects) > 0 {
		return s.sf.dialects[0], true
	}
	return protocol.Dialect{}, false
}

// answering is the dialect whose answer a model list route writes: the
// dialect that claims the request when it has that answer (has), else the
// route's own.
func (s *Server) answering(r *http.Request, route protocol.Dialect, has func(*protocol.Inbound) bool) protocol.Dialect {
	if d, ok := s.sf.claimed(r); ok && has(d.Inbound) {
		return d
	}
	return route
}

// callPath is the API path a routed request came in on, as its route
// names it, with the client's own data left out.
// It is built from the route pattern the request matched, not from the
// URL, so it is always one of a few known strings.
func callPath(r *http.Request) string {
	_, p, _ := strings.Cut(r.Pattern, " ")
	return p
}

// v1Error writes an error for a request under a dialect's prefix in its
// client's dialect. typ is the error type of FreeLane's own vocabulary,
// kept for the dialects that share it (Inbound.ErrorTypes); the others
// take theirs from the status.
func (s *Server) v1Error(w http.ResponseWriter, r *http.Request, status int, typ, code, msg, param string) {
	info := protocol.ErrorInfo{Status: status, Code: code, Message: msg, Param: param}
	d, ok := s.clientDialect(r)
	if !ok {
		WriteError(w, status, typ, code, msg, param)
		return
	}
	writeIn(w, d, typ, info)
}

// writeIn writes an error in d's envelope, with typ as its type where d
// uses FreeLane's own error types and the error names none.
func writeIn(w http.ResponseWriter, d protocol.Dialect, typ string, info protocol.ErrorInfo) {
	if d.Inbound != nil && d.Inbound.ErrorTypes && info.Type == "" {
		info.Type = typ
	}
	protocol.WriteError(w, d.Codec, info)
}

// forwarded picks the headers of h that go on to upstreams of d's
// dialect; nil when there are none.
func forwarded(d protocol.Dialect, h http.Header) http.Header {
	var out http.Header
	for _, k := range d.Inbound.Forward {
		if v := h.Values(k); len(v) > 0 {
			if out == nil {
				out = http.Header{}
			}
			out[http.CanonicalHeaderKey(k)] = v
		}
	}
	return out
}

// handler serves one route of dialect d.
func (s *Server) handler(d protocol.Dialect, rt protocol.Route) http.HandlerFunc {
	var h http.HandlerFunc
	switch {
	case rt.Serve != nil:
		hst := &host{s: s, d: d}
		h = func(w http.ResponseWriter, r *http.Request) { rt.Serve(hst, w, r) }
	case rt.Resolve != nil:
		h = func(w http.ResponseWriter, r *http.Request) {
			c, err := rt.Resolve(r)
			if err != nil {
				protocol.WriteError(w, d.Codec, protocol.RequestError(err))
				return
			}
			s.call(w, r, d, c)
		}
	default:
		c := rt.Call
		h = func(w http.ResponseWriter, r *http.Request) { s.call(w, r, d, c) }
	}
	if !rt.WhilePaused {
		h = s.unlessPaused(h)
	}
	return s.tapBodies(h)
}

// call serves one call of a client of dialect d.
func (s *Server) call(w http.ResponseWriter, r *http.Request, d protocol.Dialect, c protocol.Call) {
	if !answers(d.Inbound, c.Kind) {
		s.unknownEndpoint(w, r)
		return
	}
	switch c.Kind {
	case protocol.CallGenerate:
		s.generate(w, r, d, c)
	case protocol.CallCountTokens:
		s.countTokens(w, r, d, c)
	case protocol.CallListModels:
		s.listModels(w, r, d)
	case protocol.CallDescribeModel:
		s.describeModel(w, r, d)
	}
}

// parse reads a call's body in d's dialect.
func parse(d protocol.Dialect, c protocol.Call, body []byte) (*llm.Request, error) {
	if c.Parse != nil {
		return c.Parse(body)
	}
	return d.Codec.ParseRequest(c.Endpoint, body)
}

// parsedBody reads a call's body within the limits and parses it in the
// dialect. ok is false when the answer is already written: a body refused
// for its size or pace, or one the dialect cannot read. The caller
// releases held once it is done with the request.
func (s *Server) parsedBody(w http.ResponseWriter, r *http.Request, d protocol.Dialect, c protocol.Call) (held *heldBody, req *llm.Request, ok bool) {
	held, ok = s.requestBody(w, r)
	if !ok {
		return nil, nil, false
	}
	req, err := parse(d, c, held.data)
	if err != nil {
		held.release()
		protocol.WriteError(w, d.Codec, protocol.RequestError(err))
		return nil, nil, false
	}
	return held, req, true
}

// generate serves a routed call: the dialect parses the body, the router
// serves it, and answers and errors go back in the client's dialect.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, d protocol.Dialect, c protocol.Call) {
	held, req, ok := s.parsedBody(w, r, d, c)
	if !ok {
		return
	}
	defer held.release()
	req.Forward = forwarded(d, r.Header)
	req.Path = cmp.Or(c.Path, callPath(r))
	s.serve(w, r, d, req)
}

// countTokens answers a token count with an offline estimate of the
// request's input: the system prompt, every message part and the tools. No
// upstream is asked, so it costs nothing and works with any chain.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request, d protocol.Dialect, c protocol.Call) {
	held, req, ok := s.parsedBody(w, r, d, c)
	if !ok {
		return
	}
	defer held.release()
	conv, err := req.Conversation()
	if err != nil {
		protocol.WriteError(w, d.Codec, protocol.RequestError(err))
		return
	}
	writeBody(w, http.StatusOK, d.Inbound.CountTokens(tokens.Conversation(conv)))
}
