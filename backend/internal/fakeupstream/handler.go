package fakeupstream

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// kind is the endpoint a request is for.
type kind uint8

const (
	kindUnknown kind = iota
	kindChat
	kindText
	kindEmbed
	kindModels
	kindMessages       // Anthropic POST /v1/messages.
	kindGenerate       // Gemini :generateContent.
	kindStreamGenerate // Gemini :streamGenerateContent.
	kindCacheCreate    // Gemini POST /cachedContents.
)

// anthropic reports whether k is an endpoint of the Anthropic wire.
func (k kind) anthropic() bool { return k == kindMessages }

// gemini reports whether k is an endpoint of the Gemini wire.
func (k kind) gemini() bool { return k == kindGenerate || k == kindStreamGenerate }

// maxPooled is the largest buffer returned to the pool; bigger ones are left
// to the garbage collector so one huge request does not pin memory.
const maxPooled = 1 << 20

// Shared, read-only header values. Assigning them to the header map directly
// avoids an allocation per request; net/http never modifies them.
var (
	ctJSON  = []string{"application/json"}
	ctSSE   = []string{"text/event-stream"}
	noCache = []string{"no-cache"}
)

// apiRequest is the part of a request body the server looks at.
type apiRequest struct {
	Model         string          `json:"model"`
	Stream        bool            `json:"stream"`
	StreamOptions streamOptions   `json:"stream_options"`
	Messages      []message       `json:"messages"`
	Prompt        rawLen          `json:"prompt"`
	Input         json.RawMessage `json:"input"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type message struct {
	Content rawLen `json:"content"`
}

// rawLen decodes any JSON value into its rough length in characters, which
// is all the token estimate needs, without allocating.
type rawLen int

// UnmarshalJSON records the length of the raw value, without the quotes of
// a string; null counts as zero.
func (n *rawLen) UnmarshalJSON(b []byte) error {
	l := len(b)
	switch {
	case l >= 2 && b[0] == '"':
		l -= 2
	case string(b) == "null":
		l = 0
	}
	*n = rawLen(l)
	return nil
}

// exchange is the state of one request. Exchanges and their buffers are
// pooled so the happy path allocates little.
type exchange struct {
	s      *Server
	w      http.ResponseWriter
	fl     flushErrorer
	ctx    context.Context
	t      ticket
	req    apiRequest
	in     []byte // Request body.
	out    []byte // Event or body being written.
	prefix []byte // Start of every stream chunk, up to `"choices":[`.

	ant *antRequest // The Anthropic request, on kindMessages.
	gem *gemRequest // The Gemini request, on the Gemini kinds.

	kind         kind
	created      int64
	id           uint64
	promptTokens int
	includeUsage bool
	cancelled    bool
	defChunks    [3]string
}

// flushErrorer is implemented by net/http's response writer; unlike
// http.Flusher it reports a failed write.
type flushErrorer interface {
	FlushError() error
}

var exchanges = sync.Pool{New: func() any {
	return &exchange{in: make([]byte, 0, 1024), out: make([]byte, 0, 1024), prefix: make([]byte, 0, 256)}
}}

// release clears the exchange and returns it to the pool.
func (x *exchange) release() {
	in, out, prefix, msgs := x.in[:0], x.out[:0], x.prefix[:0], x.req.Messages[:0]
	if cap(in) > maxPooled {
		in = nil
	}
	if cap(out) > maxPooled {
		out = nil
	}
	if cap(msgs) > 1024 {
		msgs = nil
	}
	*x = exchange{in: in, out: out, prefix: prefix}
	x.req.Messages = msgs
	exchanges.Put(x)
}

// route maps a request to its endpoint and reports whether the method is
// the one the endpoint takes.
func route(method, path string) (kind, bool) {
	switch path {
	case "/v1/chat/completions":
		return kindChat, method == http.MethodPost
	case "/v1/completions":
		return kindText, method == http.MethodPost
	case "/v1/embeddings":
		return kindEmbed, method == http.MethodPost
	case "/v1/models":
		return kindModels, method == http.MethodGet
	case "/v1/messages":
		return kindMessages, method == http.MethodPost
	}
	if geminiCacheRoute(path) {
		return kindCacheCreate, method == http.MethodPost
	}
	if k := geminiRoute(path); k != kindUnknown {
		return k, method == http.MethodPost
	}
	return kindUnknown, false
}

// serve is the server's only handler.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	x := exchanges.Get().(*exchange)
	defer x.release()
	x.s, x.w, x.ctx = s, w, r.Context()
	x.fl, _ = w.(flushErrorer)

	k, allowed := route(r.Method, r.URL.Path)
	x.kind = k
	var err error
	x.in, err = readAll(x.in, r.Body, r.ContentLength)
	if err != nil {
		// The client went away while sending the body; there is nobody to
		// answer.
		return
	}
	var parseErr error
	counted := false
	switch {
	case !allowed || k == kindModels:
	case k.anthropic():
		x.ant, parseErr = parseAnthropic(x.in)
		if parseErr == nil {
			x.req.Model, x.req.Stream = x.ant.model, x.ant.stream
		}
		counted = parseErr == nil && x.req.Model != ""
	case k == kindCacheCreate:
		// A creation is not a call of the model: it counts toward no
		// script, and is logged under the model it is for.
		x.gem, parseErr = parseGemini(x.in)
		if parseErr == nil {
			if raw, ok := lookup(x.gem.body, geminiCacheFields, "model"); ok {
				m, _ := asString(raw)
				x.req.Model = strings.TrimPrefix(m, "models/")
			}
		}
	case k.gemini():
		x.req.Model = geminiModel(r.URL.Path)
		x.req.Stream = k == kindStreamGenerate
		x.gem, parseErr = parseGemini(x.in)
		counted = parseErr == nil && x.req.Model != ""
	default:
		x.req = apiRequest{Messages: x.req.Messages[:0]}
		parseErr = json.Unmarshal(x.in, &x.req)
		counted = parseErr == nil && x.req.Model != ""
	}

	var entry *Request
	if s.recording.Load() {
		entry = &Request{
			Path:   r.URL.Path,
			Model:  x.req.Model,
			Stream: x.req.Stream,
			Header: r.Header.Clone(),
			Body:   append([]byte(nil), x.in...),
		}
	}
	if !s.begin(&x.t, entry, x.req.Model, counted, x.in) {
		http.Error(w, "fakeupstream: server closing", http.StatusServiceUnavailable)
		return
	}
	defer func() { s.end(&x.t, x.cancelled) }()

	switch {
	case k == kindCacheCreate:
		x.createCache(r, allowed, parseErr)
		return
	case k.anthropic():
		if !x.admitAnthropic(r, allowed, parseErr) {
			return
		}
	case k.gemini():
		if !x.admitGemini(r, allowed, parseErr) || !x.useCache(r) {
			return
		}
	default:
		if !x.admitOpenAI(r, k, allowed, parseErr) {
			return
		}
	}

	b := &x.t.b
	if b.HeaderDelay > 0 && !s.wait(x.ctx, b.HeaderDelay) {
		x.gone()
		return
	}
	if b.Hold != nil && !s.hold(x.ctx, b.Hold) {
		x.gone()
		return
	}
	switch {
	case b.Reset:
		x.reset()
		return
	case b.Hang:
		s.block(x.ctx)
		x.gone()
		x.abort()
		return
	case b.Status != 0 && b.Status != http.StatusOK:
		x.errorAnswer(b.Status)
		return
	case b.Status == 0 && b.Code != "":
		x.errorAnswer(x.statusForCode(b.Code))
		return
	case b.Body != "":
		h := w.Header()
		h["Content-Type"] = ctJSON
		setHeaders(h, b.Headers)
		_, _ = io.WriteString(w, b.Body)
		return
	}

	x.created = s.clock.Now().Unix()
	x.id = s.ids.Add(1)
	x.includeUsage = x.req.StreamOptions.IncludeUsage && !b.NoUsage
	switch k {
	case kindEmbed:
		x.embeddings()
	case kindChat:
		chars := 0
		for _, m := range x.req.Messages {
			chars += int(m.Content)
		}
		x.promptTokens = tokens(chars)
		x.answer()
	case kindText:
		x.promptTokens = tokens(int(x.req.Prompt))
		x.answer()
	case kindMessages:
		x.promptTokens = tokens(x.ant.promptChars)
		x.anthropicAnswer()
	case kindGenerate, kindStreamGenerate:
		x.promptTokens = tokens(x.gem.promptChars) + x.gem.cacheTokens
		x.gem.sse = r.URL.Query().Get("alt") == "sse"
		x.geminiAnswer()
	}
}

// admitOpenAI checks the key, the endpoint and the body of an OpenAI
// request and answers the first problem it finds. It reports whether the
// request may go on to its scripted answer.
func (x *exchange) admitOpenAI(r *http.Request, k kind, allowed bool, parseErr error) bool {
	switch {
	case x.t.key != "" && !bearerOK(r.Header.Get("Authorization"), x.t.key):
		x.writeError(http.StatusUnauthorized, "invalid_api_key", nil)
	case k == kindUnknown:
		x.writeErrorMessage(http.StatusNotFound, "Invalid URL ("+r.Method+" "+r.URL.Path+")", "invalid_request_error", "unknown_url")
	case !allowed:
		x.writeErrorMessage(http.StatusMethodNotAllowed, "Method "+r.Method+" is not allowed for "+r.URL.Path, "invalid_request_error", "method_not_allowed")
	case k == kindModels:
		x.modelList()
	case parseErr != nil:
		x.writeErrorMessage(http.StatusBadRequest, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)", "invalid_request_error", "")
	case x.req.Model == "":
		x.writeErrorMessage(http.StatusBadRequest, "you must provide a model parameter", "invalid_request_error", "")
	default:
		return true
	}
	return false
}

// answer writes a completion or chat completion, streamed or not.
func (x *exchange) answer() {
	if x.req.Stream {
		x.stream()
		return
	}
	h := x.w.Header()
	h["Content-Type"] = ctJSON
	setHeaders(h, x.t.b.Headers)
	x.out = x.appendCompletion(x.out[:0])
	if _, err := x.w.Write(x.out); err != nil {
		x.gone()
	}
}

// stream writes a server-sent event stream and applies the stream faults.
func (x *exchange) stream() {
	b := &x.t.b
	h := x.w.Header()
	h["Content-Type"] = ctSSE
	h["Cache-Control"] = noCache
	setHeaders(h, b.Headers)
	x.w.WriteHeader(http.StatusOK)

	chat := x.kind == kindChat
	n := x.contentEvents()
	x.prefix = x.appendChunkPrefix(x.prefix[:0])
	if chat {
		if !x.event(evRole, 0) {
			return
		}
		if n > 0 && !x.toolCall() && !x.event(evBlank, 0) {
			return
		}
	} else if !x.flush() {
		return
	}

	cut, stall, errAt := stopPoint(b.CutAfter, n), stopPoint(b.StallAfter, n), errorPoint(b, n)
	for i := 0; ; i++ {
		// Here i content events have been sent.
		if i == cut {
			x.abort()
			return
		}
		if i == stall {
			x.s.block(x.ctx)
			x.gone()
			x.abort()
			return
		}
		if i == errAt {
			x.streamError()
			return
		}
		d := b.ChunkDelay
		if i == 0 {
			d = b.FirstTokenDelay
		}
		if i == n {
			if n == 0 && !x.s.wait(x.ctx, d) {
				x.gone()
				return
			}
			break
		}
		if !x.s.wait(x.ctx, d) {
			x.gone()
			return
		}
		if b.MalformedAt == i+1 && !x.malformed() {
			return
		}
		if !x.event(evContent, i) {
			return
		}
	}
	if b.MalformedAt > n && !x.malformed() {
		return
	}
	if !x.event(evFinish, 0) {
		return
	}
	if x.includeUsage && !x.send(x.appendUsageChunk(x.out[:0])) {
		return
	}
	if !b.NoDone {
		x.send(append(x.out[:0], "data: [DONE]\n\n"...))
	}
}

// stopPoint turns a CutAfter or StallAfter value into the number of content
// events after which it acts, or -1 when it is off.
func stopPoint(v, n int) int {
	switch {
	case v == 0:
		return -1
	case v < 0:
		return 0
	}
	return min(v, n)
}

// errorPoint is the number of content events after which the scripted
// in-stream error is sent, or -1 when there is none.
func errorPoint(b *Behavior, n int) int {
	if b.ErrorEvent == "" {
		return -1
	}
	return max(0, min(b.ErrorAfter, n))
}

// send writes one event and flushes it. It reports false, after noting
// whether the client left, when the write failed.
func (x *exchange) send(p []byte) bool {
	x.out = p
	if _, err := x.w.Write(p); err != nil {
		x.gone()
		return false
	}
	return x.flush()
}

// flush pushes everything written so far to the client.
func (x *exchange) flush() bool {
	if x.fl == nil {
		if f, ok := x.w.(http.Flusher); ok {
			f.Flush()
		}
		return true
	}
	if err := x.fl.FlushError(); err != nil {
		x.gone()
		return false
	}
	return true
}

// gone records that the handler stopped early because the client left,
// unless the server is closing, which is not the client's doing.
func (x *exchange) gone() {
	if !x.s.closing.Load() {
		x.cancelled = true
	}
}

// abort closes the connection without ending the response: no terminating
// chunk, so the client sees an unexpected EOF.
func (x *exchange) abort() {
	if hj, ok := x.w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// reset closes the connection with a TCP RST before any response bytes.
func (x *exchange) reset() {
	hj, ok := x.w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// errorAnswer writes the scripted error status with Body or a default body
// in the shape of the request's wire.
func (x *exchange) errorAnswer(status int) {
	b := &x.t.b
	if b.RetryDelay > 0 && !x.kind.gemini() {
		// Set before the scripted headers, which may replace it.
		x.w.Header().Set("Retry-After", retryAfter(b.RetryDelay))
	}
	if b.Body == "" {
		switch {
		case x.kind.anthropic():
			x.anthropicScriptedError(status)
		case x.kind.gemini():
			x.geminiScriptedError(status)
		default:
			x.writeError(status, b.Code, b.Headers)
		}
		return
	}
	h := x.w.Header()
	h["Content-Type"] = ctJSON
	setHeaders(h, b.Headers)
	x.w.WriteHeader(status)
	_, _ = io.WriteString(x.w, b.Body)
}

// writeError writes an OpenAI-shaped error that suits status and code.
func (x *exchange) writeError(status int, code string, headers map[string]string) {
	msg, typ, code := describeError(status, code, x.req.Model)
	h := x.w.Header()
	h["Content-Type"] = ctJSON
	setHeaders(h, headers)
	x.w.WriteHeader(status)
	x.out = appendError(x.out[:0], msg, typ, code)
	_, _ = x.w.Write(x.out)
}

// writeErrorMessage writes an OpenAI-shaped error with the given fields.
func (x *exchange) writeErrorMessage(status int, msg, typ, code string) {
	x.w.Header()["Content-Type"] = ctJSON
	x.w.WriteHeader(status)
	x.out = appendError(x.out[:0], msg, typ, code)
	_, _ = x.w.Write(x.out)
}

// modelList answers GET /models.
func (x *exchange) modelList() {
	x.w.Header()["Content-Type"] = ctJSON
	x.s.mu.Lock()
	body := x.s.modelList
	x.s.mu.Unlock()
	if body != nil {
		_, _ = x.w.Write(body)
		return
	}
	x.out = appendModels(x.out[:0], x.s.models())
	_, _ = x.w.Write(x.out)
}

// embeddings answers POST /embeddings with one deterministic vector per
// input item.
func (x *exchange) embeddings() {
	items, chars, ok := embeddingInputs(x.req.Input)
	if !ok {
		x.writeErrorMessage(http.StatusBadRequest, "'input' must be a non-empty string or array of strings", "invalid_request_error", "")
		return
	}
	x.promptTokens = tokens(chars)
	h := x.w.Header()
	h["Content-Type"] = ctJSON
	setHeaders(h, x.t.b.Headers)
	x.out = x.appendEmbeddings(x.out[:0], items)
	if _, err := x.w.Write(x.out); err != nil {
		x.gone()
	}
}

// embeddingInputs splits the "input" field into the raw JSON of each item and
// counts its characters. A string is one item, an array of strings or of
// token arrays is one item per element, and an array of numbers (one token
// array) is one item.
func embeddingInputs(raw json.RawMessage) (items []json.RawMessage, chars int, ok bool) {
	if len(raw) == 0 {
		return nil, 0, false
	}
	switch raw[0] {
	case '"':
		return []json.RawMessage{raw}, len(raw) - 2, true
	case '[':
	default:
		return nil, 0, false
	}
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, 0, false
	}
	if c := items[0][0]; c != '"' && c != '[' {
		return []json.RawMessage{raw}, len(raw), true
	}
	for _, it := range items {
		if it[0] != '"' && it[0] != '[' {
			return nil, 0, false
		}
		chars += len(it)
	}
	return items, chars, true
}

// setHeaders adds the scripted headers.
func setHeaders(h http.Header, extra map[string]string) {
	for k, v := range extra {
		h.Set(k, v)
	}
}

// bearerOK reports whether an Authorization header carries key as a bearer
// token.
func bearerOK(auth, key string) bool {
	const p = "Bearer "
	return len(auth) == len(p)+len(key) && strings.EqualFold(auth[:len(p)], p) && auth[len(p):] == key
}

// statusForCode is the status the request's wire answers an error code
// with.
func (x *exchange) statusForCode(code string) int {
	switch {
	case x.kind.anthropic():
		return anthropicStatusForCode(code)
	case x.kind.gemini():
		return geminiStatusForCode(code)
	}
	return statusForCode(code)
}

// retryAfter formats d as a Retry-After value: whole seconds, rounded up.
func retryAfter(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// tokens is the rough token count of chars characters.
func tokens(chars int) int {
	return (chars + 3) / 4
}

// readAll reads r into dst, reusing its capacity. hint is the expected
// length, or -1 when unknown.
func readAll(dst []byte, r io.Reader, hint int64) ([]byte, error) {
	dst = dst[:0]
	if hint > 0 && hint < 64<<20 && int64(cap(dst)) <= hint {
		dst = make([]byte, 0, hint+1)
	}
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}
