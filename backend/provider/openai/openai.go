// Package openai talks to upstreams that speak the OpenAI chat completions
// protocol: OpenAI itself, Groq, Cerebras, OpenRouter, Mistral, DeepSeek,
// Ollama, LM Studio, vLLM and many more. It sends FreeLane's requests, enforces
// the per-provider time limits and turns every answer into either usable
// output or a classified *llm.Error.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
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
	"freelane/backend/llm"
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
}

// Redactor removes secrets from upstream text (see package redact).
type Redactor interface {
	String(s string) string
	Bytes(b []byte) []byte
}

// Client is one provider. It is safe for concurrent use.
type Client struct {
	o    Options
	http *http.Client
}

// ownSecrets is a Redactor of the client's own key and header values.
func ownSecrets(o Options) *redact.Redactor {
	s := []redact.Secret{redact.Key(o.APIKey)}
	for _, v := range o.Headers {
		s = append(s, redact.Header(v))
	}
	return redact.New(s...)
}

// both redacts with the shared Redactor, then with the client's own.
type both struct{ shared, own Redactor }

func (b both) String(s string) string { return b.own.String(b.shared.String(s)) }
func (b both) Bytes(p []byte) []byte  { return b.own.Bytes(b.shared.Bytes(p)) }

// New returns a Client for the provider. Zero timeouts get FreeLane's
// defaults: connect 10 s, headers 30 s, first token 20 s, idle 30 s.
func New(o Options) *Client {
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	o.ConnectTimeout = orDefault(o.ConnectTimeout, 10*time.Second)
	o.HeaderTimeout = orDefault(o.HeaderTimeout, 30*time.Second)
	o.FirstTokenTimeout = orDefault(o.FirstTokenTimeout, 20*time.Second)
	o.IdleTimeout = orDefault(o.IdleTimeout, 30*time.Second)
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
			DialContext:           (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   o.ConnectTimeout,
			ResponseHeaderTimeout: o.HeaderTimeout,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   128,
			IdleConnTimeout:       90 * time.Second,
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
	return &Client{o: o, http: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// CloseIdle closes idle upstream connections, for shutdown and reloads.
func (c *Client) CloseIdle() { c.http.CloseIdleConnections() }

func (c *Client) newRequest(ctx context.Context, req *llm.Request, model string) (*http.Request, error) {
	body := req.Body(model, c.o.StreamUsage)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.o.BaseURL+"/"+string(req.Endpoint), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("openai: building request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hr.Header.Set("Accept", "text/event-stream")
	} else {
		hr.Header.Set("Accept", "application/json")
	}
	if c.o.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.o.APIKey)
	}
	for k, v := range c.o.Headers {
		hr.Header.Set(k, v)
	}
	return hr, nil
}

// send performs the request and classifies a failure to get a 2xx answer.
func (c *Client) send(ctx context.Context, hr *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(hr)
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
	e := llm.ClassifyResponse(resp.StatusCode, resp.Header, body, c.o.Clock.Now())
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
	hr, err := c.newRequest(ctx, req, model)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, hr)
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
	usage, err := checkAnswer(req.Endpoint, body, c.o.Redactor)
	if err != nil {
		return nil, err
	}
	return &llm.Response{Status: resp.StatusCode, Header: resp.Header, Body: body, Usage: usage}, nil
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

// seen records that a JSON value is there, and whether it is an empty
// array or string, without keeping a copy of it: an embeddings answer's
// data, or a long answer's text, is nearly the whole body, and checking an
// answer must not double what it costs.
type seen struct{ set, empty bool }

func (s *seen) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	s.set = string(b) != "null"
	s.empty = string(b) == "[]" || string(b) == `""`
	return nil
}

// quotaNoticeMax is the longest answer text that is checked for a quota
// notice (a free tier's error put in the assistant's message).
const quotaNoticeMax = 200

// content is a message's content as checkAnswer needs it: text or parts,
// whether it is empty, and the text itself only when it is short enough
// to be a quota notice.
type content struct {
	seen
	text  bool
	short string
}

func (c *content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if err := c.seen.UnmarshalJSON(b); err != nil {
		return err
	}
	if len(b) == 0 || b[0] != '"' {
		return nil
	}
	c.text = true
	// A character takes at most 6 bytes escaped, so a longer value holds
	// more than quotaNoticeMax bytes of text and need not be decoded.
	if len(b) > 2+6*quotaNoticeMax {
		return nil
	}
	return json.Unmarshal(b, &c.short)
}

// answer is the part of a non-streaming answer needed to tell a usable
// answer from an empty or broken one.
type answer struct {
	Choices []struct {
		Message *struct {
			Content          content `json:"content"`
			ToolCalls        seen    `json:"tool_calls"`
			FunctionCall     seen    `json:"function_call"`
			ReasoningContent seen    `json:"reasoning_content"`
			Reasoning        seen    `json:"reasoning"`
			Refusal          seen    `json:"refusal"`
		} `json:"message"`
		Text seen `json:"text"`
	} `json:"choices"`
	Data  seen       `json:"data"`
	Usage *llm.Usage `json:"usage"`
	Error seen       `json:"error"`
}

// checkAnswer decides whether a 200 body is a real answer (an empty or
// unparseable one is a soft failure) and extracts its usage.
// Text taken from the body for a message is redacted before it is cut; a
// usable answer is never scanned.
func checkAnswer(ep llm.Endpoint, body []byte, red Redactor) (llm.Usage, error) {
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return llm.Usage{}, llm.SoftError(llm.SubMalformed, "unparseable answer: %s", llm.Truncate(err.Error(), 80))
	}
	var usage llm.Usage
	if a.Usage != nil {
		usage = *a.Usage
	}
	if a.Error.set {
		msg := red.String(llm.ErrorMessage(body))
		if llm.QuotaText(msg) {
			return usage, llm.SoftError(llm.SubQuota, "quota exceeded (in a 200 answer): %s", llm.Truncate(msg, 120))
		}
		return usage, llm.SoftError(llm.SubMalformed, "error in a 200 answer: %s", llm.Truncate(msg, 120))
	}
	switch ep {
	case llm.Embeddings:
		if !a.Data.set || a.Data.empty {
			return usage, llm.SoftError(llm.SubEmpty, "empty embeddings")
		}
		return usage, nil
	case llm.Completions:
		for _, ch := range a.Choices {
			if ch.Text.set && !ch.Text.empty {
				return usage, nil
			}
		}
		return usage, llm.SoftError(llm.SubEmpty, "empty answer")
	}
	for _, ch := range a.Choices {
		m := ch.Message
		if m == nil {
			continue
		}
		if m.ToolCalls.set && !m.ToolCalls.empty || m.FunctionCall.set {
			return usage, nil
		}
		for _, s := range []seen{m.Refusal, m.ReasoningContent, m.Reasoning} {
			if s.set && !s.empty {
				return usage, nil
			}
		}
		c := m.Content
		if c.text || !c.set {
			if !c.set || c.empty {
				continue
			}
			// Some free tiers put their quota error into the assistant's
			// message; a short answer that says so is not an answer.
			if c.short != "" && len(c.short) < quotaNoticeMax && llm.QuotaText(c.short) {
				return usage, llm.SoftError(llm.SubQuota, "quota exceeded (in the answer text)")
			}
			return usage, nil
		}
		if !c.empty {
			return usage, nil // content parts
		}
	}
	return usage, llm.SoftError(llm.SubEmpty, "empty answer")
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
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
	ctx, cancel := context.WithCancelCause(ctx)
	firstToken := c.o.Clock.AfterFunc(c.o.FirstTokenTimeout, func() { cancel(llm.ErrFirstTokenTimeout) })
	hr, err := c.newRequest(ctx, req, model)
	if err != nil {
		firstToken.Stop()
		cancel(nil)
		return nil, err
	}
	resp, err := c.send(ctx, hr)
	if err != nil {
		firstToken.Stop()
		cancel(nil)
		return nil, err
	}
	idle := newIdleReader(c.o.Clock, resp.Body, c.o.IdleTimeout, cancel)
	return &stream{
		ctx: ctx, cancel: cancel, resp: resp, idle: idle, firstToken: firstToken,
		sse: sse.NewReader(idle, maxEvent), log: c.o.Logger, provider: c.o.Name, ep: req.Endpoint, red: c.o.Redactor,
	}, nil
}

// stream reads one upstream SSE response.
type stream struct {
	ctx        context.Context
	cancel     context.CancelCauseFunc
	resp       *http.Response
	idle       *idleReader
	firstToken clock.Timer
	sse        *sse.Reader
	log        *slog.Logger
	provider   string
	ep         llm.Endpoint
	red        Redactor
	sawContent bool
	done       bool
	closeOnce  sync.Once
}

func (s *stream) Header() http.Header { return s.resp.Header }

// chunk is the part of a streamed chunk the router looks at.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content          *string         `json:"content"`
			ReasoningContent *string         `json:"reasoning_content"`
			Reasoning        *string         `json:"reasoning"`
			Refusal          *string         `json:"refusal"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
			FunctionCall     json.RawMessage `json:"function_call"`
		} `json:"delta"`
		Text *string `json:"text"`
	} `json:"choices"`
	Usage *llm.Usage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

var (
	usageKey = []byte(`"usage"`)
	errorKey = []byte(`"error"`)
)

func nonEmpty(s *string) bool { return s != nil && *s != "" }

func (s *stream) Next() (llm.Event, error) {
	if s.done {
		return llm.Event{Kind: llm.Done}, nil
	}
	for {
		ev, err := s.sse.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && s.ctx.Err() == nil {
				// A clean end without [DONE]: the client still gets one.
				s.done = true
				return llm.Event{Kind: llm.Done}, nil
			}
			if errors.Is(err, sse.ErrEventTooLarge) {
				return llm.Event{}, llm.SoftError(llm.SubMalformed, "stream event too large")
			}
			return llm.Event{}, llm.ClassifyTransport(s.ctx, scrubbed{err: err, msg: s.red.String(err.Error())})
		}
		data := bytes.TrimSpace(ev.Data)
		if string(data) == "[DONE]" {
			s.done = true
			return llm.Event{Kind: llm.Done}, nil
		}
		more := s.sse.EventBuffered()
		// Once content has flowed, the router only needs to know that an
		// event is well-formed and whether it carries usage or an error;
		// checking that without decoding keeps long streams cheap.
		if s.sawContent && !bytes.Contains(data, usageKey) && !bytes.Contains(data, errorKey) {
			if json.Valid(data) {
				return llm.Event{Kind: llm.Content, Data: data, More: more}, nil
			}
			s.log.Warn("dropped malformed stream event", "provider", s.provider, "bytes", len(data))
			continue
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			// Dropped, never forwarded: a client parsing it would fail.
			s.log.Warn("dropped malformed stream event", "provider", s.provider, "bytes", len(data))
			continue
		}
		if present(c.Error) || string(ev.Name) == "error" {
			msg := s.red.String(llm.ErrorMessage(data))
			if llm.QuotaText(msg) {
				return llm.Event{}, &llm.Error{Class: llm.RateLimited, Status: http.StatusOK, Message: "quota exceeded mid-stream: " + llm.Truncate(msg, 120)}
			}
			return llm.Event{}, &llm.Error{Class: llm.Transient, Status: http.StatusOK, Message: "upstream error mid-stream: " + llm.Truncate(msg, 120)}
		}
		out := llm.Event{Kind: llm.Held, Data: data, Usage: c.Usage, More: more}
		if len(c.Choices) == 0 && c.Usage != nil {
			out.Kind = llm.UsageOnly
			return out, nil
		}
		for _, ch := range c.Choices {
			d := ch.Delta
			if nonEmpty(d.Content) || nonEmpty(d.ReasoningContent) || nonEmpty(d.Reasoning) || nonEmpty(d.Refusal) ||
				nonEmpty(ch.Text) || (present(d.ToolCalls) && string(d.ToolCalls) != "[]") || present(d.FunctionCall) {
				out.Kind = llm.Content
				break
			}
		}
		if out.Kind == llm.Content && !s.sawContent {
			s.sawContent = true
			s.firstToken.Stop()
		}
		return out, nil
	}
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
	})
	return nil
}
