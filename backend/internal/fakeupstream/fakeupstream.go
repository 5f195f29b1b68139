// Package fakeupstream is a scriptable HTTP server that speaks the OpenAI,
// Anthropic Messages and Gemini wires, for integration tests and load
// benchmarks. It listens on a real TCP port on 127.0.0.1 and can reproduce
// every fault a free-tier LLM provider shows: error statuses with rate-limit
// headers, connection resets, hangs, slow first tokens, streams that are
// cut, stalled, malformed or broken by an in-stream error event, empty or
// blocked answers and tool calls.
//
// A test starts a server, scripts the behaviour of each model it will ask
// for and points the code under test at Server.URL (OpenAI),
// Server.AnthropicURL or Server.GeminiURL:
//
//	up := fakeupstream.Start()
//	defer up.Close()
//	up.Set("gpt-x", fakeupstream.Behavior{Status: 429, Headers: map[string]string{"Retry-After": "1"}}, fakeupstream.Behavior{})
//
// The first request naming "gpt-x" then gets a 429 and every later one a
// normal answer. Scripts are keyed by model whichever wire asks, and every
// Behavior field applies to every wire in that wire's own shape.
//
// The OpenAI endpoints, all under /v1, are POST /chat/completions and POST
// /completions (streamed as server-sent events when the body sets "stream",
// with a final usage chunk when it sets stream_options.include_usage), POST
// /embeddings (a deterministic vector of length 8 per input item) and GET
// /models. Scripts apply to the three POST endpoints; GET /models only
// checks the key. A body that is not valid JSON gets 400, an unknown path
// 404 and a wrong method 405, each with an OpenAI-shaped error.
//
// The Anthropic endpoint is POST /v1/messages (any query string, such as
// ?beta=true, is ignored). It wants the anthropic-version header and, when
// RequireKey is set, the key in x-api-key. The body is validated the way
// the real API validates it (required model, max_tokens and messages,
// alternating user and assistant roles, tool_result blocks answering the
// previous turn's tool_use blocks, image sources, thinking budgets, tool
// schemas, unknown fields) and a violation gets 400 invalid_request_error
// with a message worded like Anthropic's. Answers are a Message object or,
// with "stream": true, the real event sequence: message_start,
// content_block_start, ping, content_block_delta events, content_block_stop,
// message_delta and message_stop, each with its "event:" name.
//
// The Gemini endpoints are POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent, also under /v1/. The model comes from the path
// (an escaped slash, %2F, is decoded). Streams are server-sent events with
// ?alt=sse, each event a whole GenerateContentResponse ending in CRLF CRLF
// and no end marker, and a JSON array of responses without it, as Google
// sends them. The key, when RequireKey is set, is the x-goog-api-key header
// or the key query parameter. The body is validated like the real API
// (contents, roles "user" and "model", exactly one data field per part,
// function responses answering the previous turn's calls, inline data in
// base64, the OpenAPI subset allowed in function parameters, unknown
// fields) and a violation gets 400 INVALID_ARGUMENT. POST
// /v1beta/cachedContents creates an explicit cache as the real API does
// (refused below SetCacheMinTokens with "Cached content is too small"),
// and a generateContent request that names it in cachedContent has its
// tokens counted in promptTokenCount and cachedContentTokenCount; an
// unknown, expired or another key's cache is 403 "CachedContent not
// found", and one beside a systemInstruction, tools or a toolConfig 400.
//
// The happy path is built for throughput: the request is decoded once, the
// answer is assembled in pooled buffers, and the only lock is held for a few
// map operations, never while writing to the network. Turn the request log
// off with SetRecording(false) when benchmarking.
package fakeupstream

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/clock"
)

// maxLog is the number of requests the log keeps. Once it is full the oldest
// entries are overwritten, so a long benchmark uses bounded memory.
const maxLog = 10000

// Behavior is one scripted answer. The zero value is a normal, successful
// answer. Fields are applied in this order: HeaderDelay, Reset, Hang, Status,
// Body, then the normal answer shaped by the remaining fields. Every field
// applies to every wire; the docs describe OpenAI's shape first and then
// Anthropic's and Gemini's where they differ. A request the wire refuses
// (a wrong key, an invalid body) gets that refusal instead. Slices and maps
// are shared with the caller and must not be modified after Set or
// SetDefault.
type Behavior struct {
	// Status, if non-zero and not 200, is the HTTP status of the answer. The
	// body is Body or, when Body is empty, an OpenAI-shaped error
	// {"error":{"message":...,"type":...,"param":null,"code":...}} that
	// suits the status and Code (for example 429 rate_limit_exceeded,
	// 404 model_not_found, 401 invalid_api_key). On Anthropic the default
	// body is {"type":"error","error":{"type":...,"message":...}} with the
	// type Anthropic pairs with the status (400 invalid_request_error, 401
	// authentication_error, 403 permission_error, 404 not_found_error, 413
	// request_too_large, 429 rate_limit_error, 500 api_error, 529 and 503
	// overloaded_error). On Gemini it is {"error":{"code":...,"message":...,
	// "status":...}} with Google's status name (400 INVALID_ARGUMENT, 401
	// UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND, 429
	// RESOURCE_EXHAUSTED with quota details, 500 INTERNAL, 503 and 529
	// UNAVAILABLE, 504 DEADLINE_EXCEEDED).
	Status int
	// Code is the error code of the default error body, for example
	// "context_length_exceeded", "insufficient_quota" or "invalid_api_key".
	// It also picks a matching message and type. A Code without a Status
	// implies the status OpenAI uses for it (400 context_length_exceeded,
	// 401 invalid_api_key, 404 model_not_found, 429 rate_limit_exceeded and
	// insufficient_quota, 400 for any other code).
	//
	// The same codes work on the other wires in their words: on Anthropic
	// "context_length_exceeded" is 400 "prompt is too long: 250000 tokens >
	// 200000 maximum" and "insufficient_quota" the 400 about a too low
	// credit balance; on Gemini "invalid_api_key" is the 400 API_KEY_INVALID
	// the real API answers a bad key with. Anthropic's error types
	// ("overloaded_error" is 529) and Google's status names ("UNAVAILABLE"
	// is 503) are codes of their own wire.
	Code string
	// Body replaces the answer's body. With an error Status it is the error
	// body; without one it is sent as a 200 answer with Content-Type
	// application/json, for example "not json" or a 200 that carries
	// {"error":{"message":"quota exceeded"}}. It applies to streaming
	// requests too.
	Body string
	// Headers are extra response headers, for example {"Retry-After": "120"}
	// or {"x-ratelimit-reset-requests": "2m"}. They are set after the
	// defaults, so they may replace Content-Type.
	Headers map[string]string
	// Reset hijacks the connection and closes it with SO_LINGER 0 (a TCP
	// RST) before any response bytes are sent.
	Reset bool
	// Hang never sends headers: the handler blocks until the client goes
	// away or the server is closed.
	Hang bool
	// HeaderDelay is slept before anything else happens. The sleep ends
	// early, and the request is abandoned, when the client goes away.
	HeaderDelay time.Duration
	// Hold, when set, keeps the answer back until the channel is closed
	// (after HeaderDelay), so a test can have many requests in flight at
	// once and release them together. The client going away ends it early.
	Hold <-chan struct{}
	// FirstTokenDelay applies to streams. The headers, a role-only chunk
	// {"delta":{"role":"assistant"}} and a chunk with empty content "" are
	// sent and flushed at once; the first content chunk follows after this
	// delay. On legacy completion streams the headers alone are flushed
	// first. On Anthropic message_start, the text block's
	// content_block_start and ping are flushed first; on Gemini the
	// headers.
	FirstTokenDelay time.Duration
	// Chunks are the content pieces. The default is
	// []string{"Hello", " from ", MODEL} where MODEL is the requested model.
	// Non-stream answers join them. Streams send one per event: an
	// Anthropic text_delta, a Gemini chunk with one text part.
	Chunks []string
	// ChunkDelay is the pause between content chunks of a stream.
	ChunkDelay time.Duration
	// CutAfter, on streams, abruptly closes the connection after that many
	// content chunks: the connection is hijacked and closed, with no
	// terminating chunk and no [DONE]. Zero disables it; a negative value
	// cuts before the first content chunk; a value past the last chunk cuts
	// just before the finish chunk. On Anthropic that is before
	// content_block_stop; on Gemini, whose last chunk carries the finish,
	// it is after the last chunk, which a client only notices as a broken
	// transfer.
	CutAfter int
	// StallAfter, on streams, sends nothing more after that many content
	// chunks but keeps the connection open until the client leaves or the
	// server is closed. Zero, negative and large values work as for CutAfter.
	StallAfter int
	// MalformedAt, on streams, emits the malformed event
	// "data: {\"choices\":[{\"delta\":{\"content\": broken\n\n" just before
	// content chunk MalformedAt (1-based). A value past the last chunk emits
	// it just before the finish chunk (on Gemini after the last chunk).
	// Zero disables it. On Anthropic it is a content_block_delta event whose
	// data is cut short; on Gemini a chunk cut short.
	MalformedAt int
	// NoDone, on streams, ends normally with a finish_reason "stop" chunk
	// but leaves out "data: [DONE]". On Anthropic it leaves out
	// message_stop; on Gemini, which has no end marker, the last chunk has
	// no finishReason and no candidate token count.
	NoDone bool
	// Empty answers 200 with content "" and no tool calls. A stream sends the
	// role chunk, a finish chunk and [DONE]. On Anthropic the message has
	// no content block and stop_reason "end_turn" (a stream: message_start,
	// ping, message_delta, message_stop); on Gemini the candidate has no
	// parts and finishReason "STOP" (one chunk on streams).
	Empty bool
	// ToolCall answers with one call of the function get_weather with
	// arguments {"city":"Paris"} and finish_reason "tool_calls". A stream
	// sends a chunk that opens the call (id, type, name and empty arguments)
	// and then the arguments in two fragments, as OpenAI does; for
	// CutAfter, StallAfter, MalformedAt and the delays these three chunks
	// are the content chunks. It applies to chat completions, not to
	// legacy completions.
	//
	// On Anthropic the answer is a tool_use block with id "toolu_..." and
	// stop_reason "tool_use"; a stream sends content_block_start (with
	// input {}) and two input_json_delta fragments, the three content
	// events. On Gemini it is one functionCall part with args
	// {"city":"Paris"} and finishReason "STOP", sent whole in one chunk.
	ToolCall bool
	// ToolName, with ToolCall, names the called tool instead of
	// get_weather, so a test can have a coding agent run one of its own
	// tools. ToolArgs are its arguments as the text of a JSON object
	// (default {}); streams send them in two fragments cut in the middle.
	ToolName string
	ToolArgs string
	// ErrorEvent, on streams, sends an in-stream error event after
	// ErrorAfter content chunks and then ends the response without the
	// normal ending, as providers do when they fail mid-answer. It names
	// the error: ErrorOverloaded, ErrorRateLimit or ErrorServer; any other
	// non-empty value is used as the message of an overloaded error. The
	// event is OpenAI's data: {"error":{...}} chunk, Anthropic's
	// "event: error" with {"type":"error","error":{"type":"overloaded_error",
	// ...}} and Gemini's data: {"error":{"code":503,...,"status":
	// "UNAVAILABLE"}} chunk.
	ErrorEvent string
	// ErrorAfter is the number of content chunks sent before ErrorEvent.
	// Zero or negative sends the error before the first content chunk (after
	// the stream's opening events); a value past the last chunk sends it
	// just before the finish.
	ErrorAfter int
	// Blocked, for example "SAFETY" or "PROHIBITED_CONTENT", answers as a
	// provider's content filter does: Gemini a 200 with
	// promptFeedback {"blockReason": Blocked} and no candidates (one such
	// chunk on streams), OpenAI finish_reason "content_filter" with empty
	// content, Anthropic stop_reason "refusal" with no content block. It
	// overrides Chunks, ToolCall and Empty.
	Blocked string
	// RetryDelay, on error answers (Status or Code), is the wait the
	// provider asks for: Gemini puts it in a google.rpc.RetryInfo detail
	// ("retryDelay":"37s") and its message, OpenAI and Anthropic in a
	// Retry-After header in whole seconds, rounded up (Headers can replace
	// it). Zero leaves it out.
	RetryDelay time.Duration
	// NoUsage withholds the token usage, as some OpenAI-compatible servers
	// do: OpenAI answers and chunks carry "usage":null and a stream sends no
	// usage chunk even when asked, Anthropic's message and stream events
	// carry "usage":null, Gemini's responses "usageMetadata":null.
	NoUsage bool
	// CachedTokens adds that many prompt tokens read from a prompt cache to
	// the usage, each wire in its own words: OpenAI counts them in
	// prompt_tokens and again in prompt_tokens_details.cached_tokens,
	// Anthropic apart from input_tokens as cache_read_input_tokens, and
	// Gemini in promptTokenCount and again in cachedContentTokenCount.
	CachedTokens int
	// PrefixCache answers as a vendor's prompt cache does, by a rule a
	// test can predict: a body that begins as an earlier body to the same
	// model did (the longest common byte prefix of the last 32 such
	// bodies) has that share of its prompt tokens counted as cached.
	// OpenAI and Gemini count them so of any body. Anthropic caches only
	// up to a breakpoint: a body with no "cache_control" has none cached;
	// one with breakpoints has the shared share read from the cache
	// (cache_read_input_tokens, no longer in input_tokens) and the share
	// from there to its last breakpoint written to it
	// (cache_creation_input_tokens). CachedTokens adds to these.
	PrefixCache bool
}

// maxPrefixBodies is how many earlier bodies per model PrefixCache
// compares a body with.
const maxPrefixBodies = 32

// Values of Behavior.ErrorEvent.
const (
	// ErrorOverloaded is an overload: OpenAI server_error, Anthropic
	// overloaded_error, Gemini 503 UNAVAILABLE.
	ErrorOverloaded = "overloaded"
	// ErrorRateLimit is a rate or quota limit: OpenAI rate_limit_exceeded,
	// Anthropic rate_limit_error, Gemini 429 RESOURCE_EXHAUSTED.
	ErrorRateLimit = "rate_limit"
	// ErrorServer is an internal error: OpenAI server_error, Anthropic
	// api_error, Gemini 500 INTERNAL.
	ErrorServer = "server"
)

// Rule picks a request's answer from its body, whatever the order and the
// number of requests. Clients such as coding agents send requests of their
// own between the turns of a test (titles, quota probes, checks); a rule
// answers the turn it is meant for.
type Rule struct {
	// Contains, when not empty, must occur in the raw request body.
	Contains string
	// Lacks, when not empty, must not occur in it.
	Lacks string
	// Behavior is the answer to a request that matches.
	Behavior Behavior
}

func (r *Rule) matches(body []byte) bool {
	return (r.Contains == "" || bytes.Contains(body, []byte(r.Contains))) &&
		(r.Lacks == "" || !bytes.Contains(body, []byte(r.Lacks)))
}

// Request is one request the server received, as returned by Requests.
type Request struct {
	// Path is the URL path, for example "/v1/chat/completions", "/v1/messages"
	// or "/v1beta/models/gemini-x:streamGenerateContent", without the query.
	Path string
	// Model is the "model" field of the body, or for Gemini the model named
	// in the path; empty when there is none.
	Model string
	// Stream is the "stream" field of the body; for Gemini it reports a
	// :streamGenerateContent request.
	Stream bool
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// Cancelled reports that the client went away before the handler
	// finished. It is set when the handler notices, which may be a moment
	// after the client's call has returned.
	Cancelled bool
}

// Server is a running fake upstream. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL including "/v1", e.g. "http://127.0.0.1:43567/v1".
	// It is the base of the OpenAI and the Anthropic endpoints.
	URL string

	srv       *http.Server
	clock     clock.Clock
	serveDone chan struct{}
	done      chan struct{} // Closed by Close to wake waiting handlers.
	closing   atomic.Bool   // Set first thing in Close.
	recording atomic.Bool
	ids       atomic.Uint64
	wg        sync.WaitGroup // Running handlers.

	mu      sync.Mutex
	closed  bool
	scripts map[string][]Behavior
	// modelList, when set, is what GET /models answers, verbatim.
	modelList []byte
	rules     map[string][]Rule
	counts    map[string]int
	// bodies are the latest bodies to each model, for PrefixCache.
	bodies map[string][][]byte
	// caches are the Gemini explicit caches by name; cacheMin is the
	// fewest tokens one may hold, cacheFail a status every creation
	// fails with (0: none) and cacheMade the number created.
	caches    map[string]geminiCache
	cacheMin  int
	cacheFail int
	cacheMade int
	def       Behavior
	key       string
	log       []Request // Ring buffer of at most maxLog entries.
	logN      uint64    // Entries appended since the last Reset.
	gen       uint64    // Incremented by Reset so late updates miss the new log.
}

// Start listens on 127.0.0.1 on a free port and returns once the server
// accepts connections. It panics if it cannot listen, which only happens
// when the machine has no loopback interface or no free port.
func Start() *Server { return start(nil) }

// start is Start, serving TLS (and with it HTTP/2) when conf is set.
func start(conf *tls.Config) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakeupstream: listen: %v", err))
	}
	s := &Server{
		URL: "http://" + ln.Addr().String() + "/v1",
		// The fake stands for a remote server, whose own time no test can
		// move, so its delays and dates are real.
		clock:     clock.Real{},
		serveDone: make(chan struct{}),
		done:      make(chan struct{}),
		scripts:   make(map[string][]Behavior),
		rules:     make(map[string][]Rule),
		counts:    make(map[string]int),
		bodies:    make(map[string][][]byte),
		caches:    make(map[string]geminiCache),
		cacheMin:  DefaultCacheMinTokens,
	}
	s.recording.Store(true)
	s.srv = &http.Server{
		Handler: http.HandlerFunc(s.serve),
		// Hijacked and aborted connections make net/http log; the faults are
		// deliberate, so the log is discarded.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	if conf != nil {
		s.URL = "https://" + ln.Addr().String() + "/v1"
		s.srv.TLSConfig = conf
	}
	go func() {
		defer close(s.serveDone)
		if conf != nil {
			// ServeTLS offers HTTP/2 as well as HTTP/1.1, as a vendor's
			// endpoint does.
			_ = s.srv.ServeTLS(ln, "", "")
			return
		}
		_ = s.srv.Serve(ln)
	}()
	return s
}

// Close stops the server: it closes the listener and every connection,
// wakes handlers that hang, stall or sleep, and waits for all handlers to
// return. Calling it more than once is harmless.
func (s *Server) Close() {
	s.closing.Store(true)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	_ = s.srv.Close()
	close(s.done)
	<-s.serveDone
	s.wg.Wait()
}

// Set scripts the answers to requests naming model, on every endpoint: the
// k-th request (0-based) gets steps[min(k, len(steps)-1)], so the last step
// repeats. It resets the model's call count. Set with no steps removes the
// script, and the model gets the default behaviour again.
func (s *Server) Set(model string, steps ...Behavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(steps) == 0 {
		delete(s.scripts, model)
	} else {
		s.scripts[model] = append([]Behavior(nil), steps...)
	}
	delete(s.counts, model)
}

// SetRules sets the rules for requests naming model ("" for every model):
// the first rule that matches a request's body decides its answer, ahead
// of the model's script. The model's rules are tried before those of "".
// Requests still count toward the model's script. SetRules with no rules
// removes them.
func (s *Server) SetRules(model string, rules ...Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(rules) == 0 {
		delete(s.rules, model)
	} else {
		s.rules[model] = append([]Rule(nil), rules...)
	}
}

// SetDefault sets the behaviour for models that have no script. Until it is
// called that is a normal answer.
func (s *Server) SetDefault(b Behavior) {
	s.mu.Lock()
	s.def = b
	s.mu.Unlock()
}

// AnthropicURL returns the base URL of the Anthropic Messages API, e.g.
// "http://127.0.0.1:43567/v1"; the endpoint is AnthropicURL()+"/messages".
func (s *Server) AnthropicURL() string { return s.URL }

// GeminiURL returns the base URL of the Gemini API, e.g.
// "http://127.0.0.1:43567/v1beta"; a model's endpoint is
// GeminiURL()+"/models/MODEL:generateContent".
func (s *Server) GeminiURL() string {
	return s.URL[:len(s.URL)-len("/v1")] + "/v1beta"
}

// RequireKey makes every request that does not carry the key fail. OpenAI
// requests need "Authorization: Bearer KEY" and otherwise get 401
// invalid_api_key. Anthropic requests need "x-api-key: KEY" and otherwise
// get 401 authentication_error. Gemini requests need the x-goog-api-key
// header or the key query parameter; as on the real API a wrong key gets
// 400 INVALID_ARGUMENT (reason API_KEY_INVALID) and a missing one 403
// PERMISSION_DENIED. An empty key turns the check off. Rejected requests
// still count as calls and use up a script step.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
}

// SetModelList makes GET /models answer body verbatim, such as a list
// shaped like OpenRouter's with prices; nil goes back to the default list.
// The key is still checked.
func (s *Server) SetModelList(body []byte) {
	s.mu.Lock()
	s.modelList = body
	s.mu.Unlock()
}

// SetRecording turns the request log of Requests on or off. It is on after
// Start; benchmarks turn it off so requests are not copied. Calls keeps
// counting either way.
func (s *Server) SetRecording(on bool) {
	s.recording.Store(on)
}

// Calls returns the number of requests received that named model, on any
// endpoint, since Start, Reset or the last Set for that model.
func (s *Server) Calls(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[model]
}

// Requests returns the logged requests in the order they arrived. The log
// keeps the last 10,000 requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, 0, len(s.log))
	if len(s.log) < maxLog {
		return append(out, s.log...)
	}
	start := int(s.logN % maxLog)
	out = append(out, s.log[start:]...)
	return append(out, s.log[:start]...)
}

// Reset clears the scripts, the rules, the call counts, the Gemini caches
// and the request log. The default behaviour, the required key, the
// recording switch and the cache settings are kept.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.scripts)
	clear(s.rules)
	clear(s.counts)
	clear(s.bodies)
	clear(s.caches)
	s.cacheMade = 0
	s.log = nil
	s.logN = 0
	s.gen++
}

// models returns the ids GET /models lists: a fixed default id and every
// scripted model, sorted.
func (s *Server) models() []string {
	s.mu.Lock()
	ids := make([]string, 0, len(s.scripts)+1)
	for m := range s.scripts {
		ids = append(ids, m)
	}
	s.mu.Unlock()
	sort.Strings(ids)
	return append([]string{"fake-model"}, ids...)
}

// ticket is what begin hands a handler: its behaviour and where its log
// entry is, so end can mark it cancelled.
type ticket struct {
	b      Behavior
	key    string
	seq    uint64
	gen    uint64
	logged bool
	// With PrefixCache: size is the body's length, shared how many of its
	// first bytes an earlier body had, lastBreak where its last
	// "cache_control" ends (-1 for none).
	size, shared, lastBreak int
}

// cachedShare is n tokens scaled by the share bytes are of the body.
func (t *ticket) cachedShare(n, bytes int) int {
	if t.size == 0 || bytes <= 0 {
		return 0
	}
	return n * min(bytes, t.size) / t.size
}

// prefixTokens are how many of n prompt tokens the wire's prompt cache
// reads and writes under PrefixCache (see there); anthropic says whether
// the body is Anthropic's, which caches only up to its breakpoints.
func (t *ticket) prefixTokens(n int, anthropic bool) (read, write int) {
	if !t.b.PrefixCache {
		return 0, 0
	}
	if !anthropic {
		return t.cachedShare(n, t.shared), 0
	}
	if t.lastBreak < 0 {
		return 0, 0
	}
	read = t.cachedShare(n, min(t.shared, t.lastBreak))
	return read, max(t.cachedShare(n, t.lastBreak)-read, 0)
}

// begin registers a request that has arrived: it counts it under model when
// counted is true, logs entry when it is not nil and picks the behaviour. It
// reports false when the server is closing, in which case the handler must
// return at once without calling end.
func (s *Server) begin(t *ticket, entry *Request, model string, counted bool, body []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	// Add happens under mu while closed is false, so it is ordered before
	// the Wait in Close.
	s.wg.Add(1)
	t.b = s.def
	t.key = s.key
	if counted {
		k := s.counts[model]
		s.counts[model] = k + 1
		if steps, ok := s.scripts[model]; ok {
			t.b = steps[min(k, len(steps)-1)]
		}
		if r := s.rule(model, body); r != nil {
			t.b = r.Behavior
		}
	}
	if t.b.PrefixCache {
		s.prefixOf(t, model, body)
	}
	if entry != nil {
		t.seq, t.gen, t.logged = s.logN, s.gen, true
		if len(s.log) < maxLog {
			s.log = append(s.log, *entry)
		} else {
			s.log[s.logN%maxLog] = *entry
		}
		s.logN++
	}
	return true
}

// prefixOf measures body against the earlier bodies to model for
// PrefixCache and keeps it for the later ones. The caller holds mu.
func (s *Server) prefixOf(t *ticket, model string, body []byte) {
	t.size, t.lastBreak = len(body), -1
	if i := bytes.LastIndex(body, []byte(`"cache_control"`)); i >= 0 {
		// The breakpoint's block ends after its cache_control object.
		t.lastBreak = i + len(`"cache_control"`)
		if j := bytes.IndexByte(body[t.lastBreak:], '}'); j >= 0 {
			t.lastBreak += j + 1
		}
	}
	for _, prev := range s.bodies[model] {
		n := 0
		for n < len(prev) && n < len(body) && prev[n] == body[n] {
			n++
		}
		t.shared = max(t.shared, n)
	}
	kept := append(s.bodies[model], bytes.Clone(body))
	if len(kept) > maxPrefixBodies {
		kept = kept[1:]
	}
	s.bodies[model] = kept
}

// rule returns the first rule for model, then for every model, that body
// matches; nil when none does. The caller holds mu.
func (s *Server) rule(model string, body []byte) *Rule {
	for _, m := range [2]string{model, ""} {
		rs := s.rules[m]
		for i := range rs {
			if rs[i].matches(body) {
				return &rs[i]
			}
		}
		if model == "" {
			break
		}
	}
	return nil
}

// end marks the request's log entry cancelled if it was, and tells Close the
// handler is done.
func (s *Server) end(t *ticket, cancelled bool) {
	if cancelled && t.logged {
		s.mu.Lock()
		if t.gen == s.gen && s.logN-t.seq <= uint64(len(s.log)) {
			s.log[t.seq%maxLog].Cancelled = true
		}
		s.mu.Unlock()
	}
	s.wg.Done()
}

// wait sleeps for d, or until the client goes away or the server closes. It
// reports whether the full time passed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t, expired := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-expired:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// hold waits for release, or until the client goes away or the server
// closes. It reports whether release came.
func (s *Server) hold(ctx context.Context, release <-chan struct{}) bool {
	select {
	case <-release:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// block waits until the client goes away or the server closes.
func (s *Server) block(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.done:
	}
}
