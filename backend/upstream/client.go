// Package upstream calls model servers: it sends FreeLane's requests in
// the upstream's dialect, enforces the per-provider time limits, refuses
// redirects, bounds what it reads and turns every answer into either usable
// output in the client's dialect or a classified *llm.Error. What differs
// between vendors (paths, headers, error shapes and rate-limit headers, the
// conversion to and from the neutral model) comes from the upstream's
// registry entry, its protocol.Dialect; when the client speaks the
// upstream's dialect, bodies and events pass through untouched.
package upstream

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"freelane/backend/clock"
	"freelane/backend/defaults"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/redact"
	"freelane/backend/sse"
)

// Limits on what an upstream may send, so a misbehaving server cannot make
// the router buffer without bound. A non-stream answer is held whole (it
// is checked before the client sees it), so maxBody is what one request
// may cost at worst: far above any chat answer, and enough for a large
// embeddings batch. A stream holds one event at a time, so maxEvent bounds
// a stream's memory whatever its length.
const (
	maxBody  = 32 << 20
	maxEvent = 4 << 20
	// maxErrorBody is how much of an error answer is kept; errorSlack is
	// read beyond it, longer than any key, for redaction before the cut.
	maxErrorBody = 64 << 10
	errorSlack   = 4 << 10
)

// Options configures one upstream provider.
type Options struct {
	Name    string // provider name, for logs only
	BaseURL string // e.g. https://api.groq.com/openai/v1
	APIKey  string // empty for keyless servers
	Headers map[string]string
	// Dialect is the upstream's dialect, as its package registers it: its
	// codec, and its Outbound part, which must have a Wire.
	Dialect protocol.Dialect
	// Codecs hold the clients' dialects, for answers to clients that speak
	// another dialect than the upstream.
	Codecs *protocol.Registry
	// Drop names request parameters the provider rejects; they are left
	// out of every request to it.
	Drop []string
	// Models are per-model quirks, by upstream model id.
	Models map[string]Model

	ConnectTimeout    time.Duration // TCP/TLS connect
	HeaderTimeout     time.Duration // from sending the request to response headers
	FirstTokenTimeout time.Duration // streams: from sending to the first content delta
	IdleTimeout       time.Duration // longest silence while reading a body
	// StreamUsage asks for stream_options.include_usage on streams the
	// client did not configure; switch it off for servers that reject it.
	StreamUsage bool

	Logger *slog.Logger
	// Redactor removes configured secrets from everything built from the
	// upstream's answers before it is cut to a message length. The
	// gateway shares one that knows every provider's current secrets. The
	// client also redacts its own key and header values, which a request
	// still in flight after a change may use when the shared one has
	// forgotten them.
	Redactor Redactor
	// Clock runs the first-token and idle timers and reads absolute
	// rate-limit reset times (default: the wall clock).
	Clock clock.Clock
	// Transport overrides the HTTP transport (tests, benchmarks).
	Transport http.RoundTripper
	// Preparer, when set, prepares translated requests with a call of its
	// own before they are sent (see protocol.Preparer); the gateway sets
	// it for providers with explicit_cache on, from the dialect's
	// Outbound.NewPreparer, and keeps it across reloads. Nil sends every
	// request as it is encoded.
	Preparer protocol.Preparer
	// CacheTTL is the provider's prompt-cache lifetime, for the Preparer
	// (0: its default).
	CacheTTL time.Duration
}

// Model is what the client must know about one model to send it requests
// it accepts.
type Model struct {
	// MaxOutput is the most output tokens the model allows (0: unknown);
	// larger requests are lowered to it, and dialects that require a
	// limit use it as the default.
	MaxOutput int
	// Caps are the model's capabilities when Known; a model that is known
	// not to reason is not sent reasoning parameters.
	Caps  llm.Caps
	Known bool
	// Drop names further parameters this model rejects.
	Drop []string
}

// reasoningParams are the request parameters that ask for reasoning.
var reasoningParams = []string{"reasoning_effort", "reasoning", "thinking"}

// Redactor removes secrets from upstream text (see package redact).
type Redactor interface {
	String(s string) string
	Bytes(b []byte) []byte
}

// Client is one provider. It is safe for concurrent use.
type Client struct {
	o Options
	// scope names the base URL and the key for the Preparer, as a hash.
	scope string
	// codec and wire are the upstream dialect's, taken out of o.Dialect.
	codec protocol.Codec
	wire  protocol.Wire
	http  *http.Client
	// edits are the request edits per model; def for models not listed.
	edits map[string]llm.Edits
	def   llm.Edits
	// header is the key and the provider's headers, set up once for the
	// requests that forward none of the caller's: building them per request
	// would cost a string and a slice each.
	header http.Header
}

// Accept values, shared by every request: a header value is only read
// once set, and each slice is full, so an Add would copy it.
var (
	acceptJSON   = []string{"application/json"}
	acceptStream = []string{"text/event-stream"}
)

// ownSecrets is a Redactor of the client's own key and header values.
func ownSecrets(o Options) *redact.Redactor {
	s := []redact.Secret{redact.Key(o.APIKey)}
	for _, v := range o.Headers {
		s = append(s, redact.Header(v))
	}
	return redact.New(s...)
}

// both redacts with the shared Redactor, then with the client's own,
// unless the shared one knows the client's secrets too, which it does
// until a change removes them: then each text is read once.
type both struct {
	shared Redactor
	own    *redact.Redactor
}

func (b both) String(s string) string {
	s = b.shared.String(s)
	if b.covered() {
		return s
	}
	return b.own.String(s)
}

func (b both) Bytes(p []byte) []byte {
	p = b.shared.Bytes(p)
	if b.covered() {
		return p
	}
	return b.own.Bytes(p)
}

func (b both) covered() bool {
	c, ok := b.shared.(interface{ Covers(*redact.Redactor) bool })
	return ok && c.Covers(b.own)
}

// New returns a Client for the provider. Zero timeouts get FreeLane's
// defaults, from package defaults.
func New(o Options) *Client {
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	o.ConnectTimeout = orDefault(o.ConnectTimeout, defaults.ConnectTimeout)
	o.HeaderTimeout = orDefault(o.HeaderTimeout, defaults.HeaderTimeout)
	o.FirstTokenTimeout = orDefault(o.FirstTokenTimeout, defaults.FirstTokenTimeout)
	o.IdleTimeout = orDefault(o.IdleTimeout, defaults.IdleTimeout)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Clock = clock.OrReal(o.Clock)
	if o.Redactor == nil {
		o.Redactor = ownSecrets(o)
	} else {
		o.Redactor = both{shared: o.Redactor, own: ownSecrets(o)}
	}
	tr := o.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: defaults.KeepAlive}).DialContext,
			TLSHandshakeTimeout:   o.ConnectTimeout,
			ResponseHeaderTimeout: o.HeaderTimeout,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   128,
			IdleConnTimeout:       defaults.IdleConnTimeout,
		}
	}
	// No Client.Timeout: it would also bound reading a stream, and a long
	// answer must never be cut by a whole-request timer. The
	// header, first-token and idle limits bound every wait instead.
	//
	// Redirects are never followed: the key, the custom headers and the
	// prompt go to base_url and nowhere else. net/http would carry the
	// custom headers to any host, and Authorization to the same host on
	// another port. A 3xx is returned as it is and becomes a failure that
	// names where the upstream pointed (see send).
	c := &Client{o: o, codec: o.Dialect.Codec, wire: o.Dialect.Outbound.Wire, http: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
	if o.Preparer != nil {
		sum := sha256.Sum256([]byte(o.BaseURL + "\x00" + o.APIKey))
		c.scope = hex.EncodeToString(sum[:])
	}
	if c.codec == nil || c.wire == nil {
		panic(fmt.Sprintf("upstream: provider %q has a dialect without a codec or an outbound wire", o.Name))
	}
	c.header = http.Header{}
	c.setHeaders(c.header)
	c.def = llm.Edits{AddUsage: o.StreamUsage, Drop: o.Drop}
	c.edits = make(map[string]llm.Edits, len(o.Models))
	for id, m := range o.Models {
		e := llm.Edits{AddUsage: o.StreamUsage, MaxOutput: m.MaxOutput}
		e.Drop = append(append([]string(nil), o.Drop...), m.Drop...)
		if m.Known && !m.Caps.Has(llm.CapReasoning) {
			e.Drop = append(e.Drop, reasoningParams...)
		}
		if len(e.Drop) == 0 {
			e.Drop = nil
		}
		c.edits[id] = e
	}
	return c
}

// Dialect is the upstream's dialect.
func (c *Client) Dialect() llm.Dialect { return c.codec.Dialect() }

// Endpoints are the kinds of request the upstream serves.
func (c *Client) Endpoints() []llm.Endpoint { return c.wire.Endpoints() }

func (c *Client) editsFor(model string) llm.Edits {
	if e, ok := c.edits[model]; ok {
		return e
	}
	return c.def
}

// translated reports whether answers must be converted for the client.
func (c *Client) translated(req *llm.Request) bool { return req.Dialect != c.codec.Dialect() }

// clientCodec is the codec answers are written in for req's client.
func (c *Client) clientCodec(req *llm.Request) (protocol.Codec, error) {
	cc, ok := c.o.Codecs.Codec(req.Dialect)
	if !ok {
		return nil, fmt.Errorf("upstream: no codec for the client's dialect %q", req.Dialect)
	}
	return cc, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// CloseIdle closes idle upstream connections, for shutdown and reloads.
func (c *Client) CloseIdle() { c.http.CloseIdleConnections() }

// body is the request body for model: the client's own bytes when the
// upstream speaks the client's dialect, otherwise the conversation encoded
// in the upstream's. With prepare, a Preparer may write the translated
// body instead; stale is then its judge of an error answer to it.
func (c *Client) body(ctx context.Context, req *llm.Request, model string, prepare bool) (body []byte, stale func(int, []byte) bool, err error) {
	e := c.editsFor(model)
	// The upstream learns the caller's session and user only as FreeLane's
	// keyed hashes of them.
	e.Session, e.User = req.Session, req.User
	if !c.translated(req) {
		return req.Body(model, e), nil, nil
	}
	conv, err := req.Conversation()
	if err != nil {
		// The router checks that a request translates before it calls a
		// backend of another dialect, so this is a backend of the client's
		// own that it reached anyway: the caller's request is at fault.
		return nil, nil, &llm.Error{Class: llm.Caller, Status: http.StatusBadRequest, Message: err.Error(), Err: err}
	}
	// Whether to stream is the request's, not the body's: some dialects
	// (Gemini) say it in the path. The shared conversation is not changed.
	if conv.Stream != req.Stream {
		cp := *conv
		cp.Stream = req.Stream
		conv = &cp
	}
	if prepare && c.o.Preparer != nil {
		p, ok := c.o.Preparer.Prepare(ctx, protocol.Preparation{Conv: conv, Model: model, Edits: e, Scope: c.scope,
			TTL: c.o.CacheTTL, Now: c.o.Clock.Now(), Call: c.call})
		if ok {
			return p.Body, p.Stale, nil
		}
	}
	body, err = c.codec.EncodeRequest(conv, model, e)
	if err != nil {
		return nil, nil, &llm.Error{Class: llm.Caller, Status: http.StatusBadRequest,
			Message: fmt.Sprintf("the request cannot be sent in the %s dialect: %v", c.codec.Dialect(), err), Err: err}
	}
	return body, nil, nil
}

// newRequest builds the request for model; with prepare, the Preparer
// may prepare it, and stale judges an error answer to what it prepared.
func (c *Client) newRequest(ctx context.Context, req *llm.Request, model string, prepare bool) (hr *http.Request, stale func(int, []byte) bool, err error) {
	body, stale, err := c.body(ctx, req, model, prepare)
	if err != nil {
		return nil, nil, err
	}
	hr, err = http.NewRequestWithContext(ctx, http.MethodPost, c.o.BaseURL+c.wire.Path(req.Endpoint, model, req.Stream), bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("upstream: building request: %w", err)
	}
	h := hr.Header
	h["Content-Type"] = acceptJSON
	if req.Stream {
		h["Accept"] = acceptStream
	} else {
		h["Accept"] = acceptJSON
	}
	if req.Forward != nil && !c.translated(req) {
		for k, v := range req.Forward {
			h[k] = v
		}
		// The dialect sets its headers knowing what was forwarded (a
		// caller's own version header stays), then the key and the
		// provider's headers win.
		c.setHeaders(h)
		return hr, stale, nil
	}
	for k, v := range c.header {
		h[k] = v
	}
	return hr, stale, nil
}

// setHeaders sets the key and the provider's headers.
func (c *Client) setHeaders(h http.Header) {
	c.wire.Header(h, c.o.APIKey)
	for k, v := range c.o.Headers {
		h.Set(k, v)
	}
}

// exchange builds the request and sends it; sending, when not nil, is
// called once the request is built, before it is sent. When a prepared
// request is refused because what was prepared is gone, the plain request
// is sent once instead.
func (c *Client) exchange(ctx context.Context, req *llm.Request, model string, sending func()) (*http.Response, error) {
	hr, stale, err := c.newRequest(ctx, req, model, true)
	if err != nil {
		return nil, err
	}
	if sending != nil {
		sending()
	}
	resp, err := c.send(ctx, hr)
	var le *llm.Error
	if err == nil || stale == nil || !errors.As(err, &le) || !stale(le.Status, le.Body) {
		return resp, err
	}
	if hr, _, err = c.newRequest(ctx, req, model, false); err != nil {
		return nil, err
	}
	return c.send(ctx, hr)
}

// errPrepareTimeout ends a Preparer's call that took too long.
var errPrepareTimeout = errors.New("upstream: the preparing call timed out")

// call is the Caller a Preparer is given: one POST, bounded as a whole by
// the provider's header timeout (it is an extra before the request, which
// is sent plain when it fails), its answer bounded like an error answer's
// and redacted.
func (c *Client) call(ctx context.Context, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := c.o.Clock.AfterFunc(c.o.HeaderTimeout, func() { cancel(errPrepareTimeout) })
	defer timer.Stop()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.o.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("upstream: building request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	c.setHeaders(hr.Header)
	resp, err := c.do(hr)
	if err != nil {
		return 0, nil, c.transport(ctx, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+errorSlack))
	if err != nil {
		return 0, nil, c.transport(ctx, err)
	}
	answer = c.o.Redactor.Bytes(answer)
	if len(answer) > maxErrorBody {
		answer = answer[:maxErrorBody]
	}
	return resp.StatusCode, answer, nil
}

// do sends one request through the client's transport. A redirect is
// returned as it came (the client never follows one), and a base URL
// never carries a user and password (the configuration refuses them), so
// a request needs none of http.Client's machinery: its per-request copy
// of the headers for redirects, its URL error wrapping.
func (c *Client) do(hr *http.Request) (*http.Response, error) {
	return c.http.Transport.RoundTrip(hr)
}

// send performs the request and classifies a failure to get a 2xx answer.
func (c *Client) send(ctx context.Context, hr *http.Request) (*http.Response, error) {
	resp, err := c.do(hr)
	if err != nil {
		return nil, c.transport(ctx, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	// A little more than is kept is read, so that a secret that crosses the
	// limit is redacted whole before the body is cut to it.
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+errorSlack))
	if rerr != nil && ctx.Err() != nil {
		return nil, c.transport(ctx, rerr)
	}
	// Some servers echo the key they rejected, and a hostile one can echo
	// anything it was sent. The body is passed through to clients, logged
	// and stored, so the secrets go before anything is read from it.
	body = c.o.Redactor.Bytes(body)
	if len(body) > maxErrorBody {
		body = body[:maxErrorBody]
	}
	now := c.o.Clock.Now()
	e := llm.ClassifyResponse(resp.StatusCode, resp.Header, body, now, c.o.Dialect.Outbound.RateLimits)
	e.Dialect = c.codec.Dialect()
	c.wire.Classify(e, resp.StatusCode, resp.Header, body, now)
	if resp.StatusCode/100 == 3 {
		// Transient: the request never reached a model, so another backend
		// should serve it, and the breaker takes a provider that keeps
		// redirecting out of the way. It is not the caller's fault, and
		// not Gone either, since a redirect may be a passing thing.
		e.Class = llm.Transient
		e.Body = nil
		e.Message = c.o.Redactor.String(redirectMessage(resp.StatusCode, resp.Header.Get("Location")))
	}
	return nil, e
}

// redirectMessage says where an upstream redirected to, and why FreeLane
// did not go there. The location is shown without its query or user
// information, which are none of the reader's business.
func redirectMessage(status int, location string) string {
	where := "elsewhere"
	if u, err := url.Parse(location); err == nil && location != "" {
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		where = llm.Truncate(u.String(), 120)
	}
	return fmt.Sprintf("HTTP %d: the upstream redirected to %s; FreeLane does not follow redirects, so the key and the prompt only go to base_url (set base_url to the new address if you trust it)", status, where)
}

// transport classifies a transport failure. Its text can name addresses
// the upstream chose, so the message is built from a redacted copy.
func (c *Client) transport(ctx context.Context, err error) *llm.Error {
	return llm.ClassifyTransport(ctx, scrubbed{err: err, msg: c.o.Redactor.String(err.Error())})
}

// scrubbed is an error whose text has been redacted; errors.Is and As still
// see the error underneath.
type scrubbed struct {
	err error
	msg string
}

func (s scrubbed) Error() string { return s.msg }
func (s scrubbed) Unwrap() error { return s.err }

// Complete sends a non-streaming request and returns the whole answer, or a
// classified error: also for a 200 that carries nothing usable.
func (c *Client) Complete(ctx context.Context, req *llm.Request, model string) (*llm.Response, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp, err := c.exchange(ctx, req, model, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	idle := newIdleReader(c.o.Clock, resp.Body, c.o.IdleTimeout, cancel)
	defer idle.stop()
	body, err := readAnswer(idle, resp.ContentLength)
	if errors.Is(err, errAnswerTooLarge) {
		return nil, llm.SoftError(llm.SubMalformed, "answer larger than %d MiB", maxBody>>20)
	}
	if err != nil {
		return nil, c.transport(ctx, err)
	}
	if c.translated(req) {
		return c.translate(req, model, resp, body)
	}
	// The client gets these bytes as they are, so the secrets go first;
	// an answer that holds none is returned without a copy.
	body = c.o.Redactor.Bytes(body)
	usage, err := c.wire.CheckAnswer(req.Endpoint, body)
	if err != nil {
		return nil, c.scrub(err)
	}
	return &llm.Response{Status: resp.StatusCode, Header: resp.Header, Body: body, Usage: usage}, nil
}

// translate converts an upstream answer for a client of another dialect.
func (c *Client) translate(req *llm.Request, model string, resp *http.Response, body []byte) (*llm.Response, error) {
	cc, err := c.clientCodec(req)
	if err != nil {
		return nil, err
	}
	a, err := c.codec.DecodeResponse(body)
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			return nil, c.scrub(le)
		}
		return nil, llm.SoftError(llm.SubMalformed, "unparseable answer: %s", llm.Truncate(c.o.Redactor.String(err.Error()), 80))
	}
	if !a.Usable() {
		return nil, llm.SoftError(llm.SubEmpty, "empty answer")
	}
	// Some free tiers put their quota error into the assistant's message;
	// a short answer that says so is not an answer.
	if t, short := a.ShortText(quotaNoticeMax); short && len(a.Parts) == 1 && llm.QuotaText(t) {
		return nil, llm.SoftError(llm.SubQuota, "quota exceeded (in the answer text)")
	}
	out, err := cc.EncodeResponse(a, protocol.ResponseOptions{ID: a.ID, Model: cmp.Or(a.Model, model), Created: c.o.Clock.Now().Unix()})
	if err != nil {
		return nil, llm.SoftError(llm.SubMalformed, "answer cannot be written in the %s dialect: %s", req.Dialect, llm.Truncate(err.Error(), 80))
	}
	// Redacting what the client gets, rather than what the upstream sent,
	// also covers text the translation decoded (escapes, base64 parts).
	out = c.o.Redactor.Bytes(out)
	var usage llm.Usage
	if a.Usage != nil {
		usage = *a.Usage
	}
	// The header is the upstream's, read for its rate limits; the client's
	// answer gets headers of its own.
	return &llm.Response{Status: resp.StatusCode, Header: resp.Header, Body: out, Usage: usage}, nil
}

// quotaNoticeMax is the longest answer text that is checked for a quota
// notice.
const quotaNoticeMax = 200

// scrub redacts the text of an error built from an upstream's answer.
func (c *Client) scrub(err error) error {
	var le *llm.Error
	if !errors.As(err, &le) {
		return err
	}
	le.Message = c.o.Redactor.String(le.Message)
	if le.Body != nil {
		le.Body = c.o.Redactor.Bytes(le.Body)
	}
	return le
}

// errAnswerTooLarge is an answer over maxBody.
var errAnswerTooLarge = errors.New("answer too large")

// readAnswer reads a non-stream answer of at most maxBody bytes. An answer
// that announces its length is read into one buffer of that size (and one
// announcing too much is refused before it is read); others grow with what
// arrives.
func readAnswer(r io.Reader, length int64) ([]byte, error) {
	if length > maxBody {
		return nil, errAnswerTooLarge
	}
	if length < 0 {
		return readUnannounced(r)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// readUnannounced reads an answer of unknown length in blocks of up to
// 1 MiB and joins them once at the end: what it allocates is twice the
// answer at most, and an answer over maxBody costs maxBody and one block.
// (io.ReadAll's growth allocates a varying multiple of the answer.)
func readUnannounced(r io.Reader) ([]byte, error) {
	var blocks [][]byte
	cur := make([]byte, 0, 64<<10)
	total := 0
	for {
		if len(cur) == cap(cur) {
			blocks = append(blocks, cur)
			cur = make([]byte, 0, min(2*cap(cur), 1<<20))
		}
		n, err := r.Read(cur[len(cur):cap(cur)])
		cur = cur[:len(cur)+n]
		total += n
		if total > maxBody {
			return nil, errAnswerTooLarge
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(blocks) == 0 {
		return cur, nil
	}
	body := make([]byte, 0, total)
	for _, b := range blocks {
		body = append(body, b...)
	}
	return append(body, cur...), nil
}

// idleReader cancels the attempt when no byte arrives for the idle timeout.
// Resetting one timer per read is far cheaper than a goroutine per read.
type idleReader struct {
	r     io.Reader
	d     time.Duration
	timer clock.Timer
}

func newIdleReader(clk clock.Clock, r io.Reader, d time.Duration, cancel context.CancelCauseFunc) *idleReader {
	return &idleReader{r: r, d: d, timer: clk.AfterFunc(d, func() { cancel(llm.ErrIdleTimeout) })}
}

func (i *idleReader) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	if n > 0 {
		i.timer.Reset(i.d)
	}
	return n, err
}

func (i *idleReader) stop() { i.timer.Stop() }

// Stream sends a streaming request. It returns once the upstream answered
// with a 2xx status; reading the events is up to the caller, who must Close
// the stream.
func (c *Client) Stream(ctx context.Context, req *llm.Request, model string) (llm.EventStream, error) {
	var enc protocol.StreamEncoder
	if c.translated(req) {
		cc, err := c.clientCodec(req)
		if err != nil {
			return nil, err
		}
		enc = cc.NewStreamEncoder(protocol.ResponseOptions{ID: newID(), Model: model,
			Created: c.o.Clock.Now().Unix()})
	}
	ctx, cancel := context.WithCancelCause(ctx)
	// The first token is awaited from the sending of the request: a
	// Preparer's call before it has a time limit of its own.
	var firstToken clock.Timer
	resp, err := c.exchange(ctx, req, model, func() {
		firstToken = c.o.Clock.AfterFunc(c.o.FirstTokenTimeout, func() { cancel(llm.ErrFirstTokenTimeout) })
	})
	if err != nil {
		if firstToken != nil {
			firstToken.Stop()
		}
		cancel(nil)
		return nil, err
	}
	idle := newIdleReader(c.o.Clock, resp.Body, c.o.IdleTimeout, cancel)
	return &stream{
		ctx: ctx, cancel: cancel, resp: resp, idle: idle, firstToken: firstToken,
		sse: sse.NewReader(idle, maxEvent), log: c.o.Logger, provider: c.o.Name, red: c.o.Redactor,
		dec: c.codec.NewStreamDecoder(), enc: enc,
	}, nil
}

// newID returns a random answer id for translated streams.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// stream reads one upstream SSE response. With enc nil the upstream speaks
// the client's dialect and events are relayed as they came; otherwise each
// is decoded into neutral deltas and encoded in the client's dialect.
//
// Each event's data is redacted whole before it is relayed, which finds
// every copy of a secret within one event at the cost of one pass over
// bytes the relay reads anyway. A secret split over two events is not
// found: an upstream echoing what it was sent writes it in one piece (an
// error, an echoed header), and one set on leaking it can as well split it
// into pieces shorter than any match within a single event, which no
// redactor can tell from text. Holding events back to join them would
// delay every token of every stream for that.
type stream struct {
	ctx        context.Context
	cancel     context.CancelCauseFunc
	resp       *http.Response
	idle       *idleReader
	firstToken clock.Timer
	sse        *sse.Reader
	log        *slog.Logger
	provider   string
	red        Redactor
	dec        protocol.StreamDecoder
	enc        protocol.StreamEncoder
	sawContent bool
	done       bool
	// ended is set when the upstream's answer is complete and only the
	// translated events still queued remain.
	ended     bool
	queue     []llm.Event
	deltas    []llm.Delta
	closeOnce sync.Once
}

func (s *stream) Header() http.Header { return s.resp.Header }

// readError classifies an error from reading the upstream's events; it is
// io.EOF itself at a clean end of the connection.
func (s *stream) readError(err error) error {
	if errors.Is(err, io.EOF) && s.ctx.Err() == nil {
		return io.EOF
	}
	if errors.Is(err, sse.ErrEventTooLarge) {
		return llm.SoftError(llm.SubMalformed, "stream event too large")
	}
	return llm.ClassifyTransport(s.ctx, scrubbed{err: err, msg: s.red.String(err.Error())})
}

// upstreamError redacts an error event's message.
func (s *stream) upstreamError(err error) error {
	var le *llm.Error
	if errors.As(err, &le) {
		le.Message = s.red.String(le.Message)
		if le.Body != nil {
			le.Body = s.red.Bytes(le.Body)
		}
		return le
	}
	return err
}

func (s *stream) content() {
	if !s.sawContent {
		s.sawContent = true
		s.firstToken.Stop()
	}
}

// end is the event that ends a stream.
func (s *stream) end() (llm.Event, error) {
	s.done = true
	return llm.Event{Kind: llm.Done}, nil
}

func (s *stream) Next() (llm.Event, error) {
	if s.enc != nil {
		return s.nextTranslated()
	}
	if s.done {
		return s.end()
	}
	for {
		ev, err := s.sse.Next()
		if err != nil {
			if err = s.readError(err); err == io.EOF {
				// A clean end without the dialect's end marker: the client
				// still gets one.
				return s.end()
			}
			return llm.Event{}, err
		}
		kind, usage, err := s.dec.Classify(ev.Name, ev.Data)
		if err != nil {
			if errors.Is(err, protocol.ErrMalformed) {
				// Dropped, never forwarded: a client parsing it would fail.
				s.log.Warn("dropped malformed stream event", "provider", s.provider, "bytes", len(ev.Data))
				continue
			}
			return llm.Event{}, s.upstreamError(err)
		}
		switch kind {
		case llm.Done:
			return s.end()
		case llm.Content:
			s.content()
		}
		// The data goes out as the upstream sent it, but for the secrets;
		// the SSE reader has already taken the line apart. See redactEvent.
		return llm.Event{Kind: kind, Data: s.red.Bytes(ev.Data), Usage: usage, More: s.sse.EventBuffered()}, nil
	}
}

// nextTranslated returns the next event converted for the client.
func (s *stream) nextTranslated() (llm.Event, error) {
	for len(s.queue) == 0 {
		if s.ended {
			return s.end()
		}
		ev, err := s.sse.Next()
		if err != nil {
			if err = s.readError(err); err == io.EOF {
				s.ended = true
				s.queue = s.enc.End(s.queue[:0])
				continue
			}
			return llm.Event{}, err
		}
		var end bool
		s.deltas, end, err = s.dec.Decode(s.deltas[:0], ev.Name, ev.Data)
		if errors.Is(err, protocol.ErrMalformed) {
			s.log.Warn("dropped malformed stream event", "provider", s.provider, "bytes", len(ev.Data))
			continue
		}
		if err != nil {
			return llm.Event{}, s.upstreamError(err)
		}
		s.queue = s.queue[:0]
		for _, d := range s.deltas {
			s.queue = s.enc.Encode(s.queue, d)
		}
		if end {
			s.ended = true
			s.queue = s.enc.End(s.queue)
		}
	}
	ev := s.queue[0]
	s.queue = s.queue[1:]
	ev.Data = s.red.Bytes(ev.Data)
	if ev.Kind == llm.Content {
		s.content()
	}
	ev.More = len(s.queue) > 0 || s.sse.EventBuffered()
	// Whatever is queued once the upstream ended is the stream's end.
	ev.Tail = s.ended
	return ev, nil
}

func (s *stream) Close() error {
	s.closeOnce.Do(func() {
		s.firstToken.Stop()
		s.idle.stop()
		// Cancelling before closing makes the transport drop the connection
		// of an unfinished stream instead of draining it.
		if !s.done {
			s.cancel(context.Canceled)
		}
		s.resp.Body.Close()
		s.cancel(nil)
		// Next is not called after Close, and the events it returned
		// were copied or written out by then.
		s.sse.Release()
	})
	return nil
}
